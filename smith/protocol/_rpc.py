"""Every method of `smith rpc` (docs/rpc.md), declared once: its parameters, as a msgspec
Struct the schema and the docs are generated from, and what the docs say of it. The
server's own table (smith.frontends.rpc) names the same methods and parameters; a test
keeps the two equal."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Union

import msgspec


class ImageData(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """An image as data: `media_type` and base64 `data`, or a `path`; `name` to show."""

    media_type: str | None = None
    data: str | None = None
    path: str | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class Method:
    """One method: its name, the section of docs/rpc.md it is listed in, its parameters
    (name, type, required) and the docs' text for its parameters and result."""

    name: str
    section: str
    params: tuple[tuple[str, Any, bool], ...]
    params_doc: str
    result_doc: str


METHODS: tuple[Method, ...] = (
    Method(
        "prompt",
        "The conversation",
        (("text", str, True), ("images", list[ImageData], False)),
        ("`text` (string, required, not blank), `images` (array, optional)"),
        (
            '`{"status": "started", "id"}`, or while the agent works `{"status": '
            '"queued", "id"}`: queued as a follow-up (a plugin\'s `/NAME` command is answered at '
            "once then: started). `id` is the prompt's submission id: "
            "every event it causes carries it as `submission` (docs/events.md, "
            'Submissions). Each image is `{"media_type": "image/png", "data": BASE64}` or '
            '`{"path": FILE}` (relative to the working directory), either with an '
            'optional `"name"` to show; see Images below'
        ),
    ),
    Method(
        "steer",
        "The conversation",
        (("text", str, True), ("images", list[ImageData], False)),
        ("`text`, `images`"),
        (
            "like `prompt`; while the agent works it is queued as a steer, delivered "
            "after the current provider round and its tool calls, before the next request"
        ),
    ),
    Method(
        "follow_up",
        "The conversation",
        (("text", str, True), ("images", list[ImageData], False)),
        ("`text`, `images`"),
        (
            "like `prompt`; while the agent works it is delivered when the agent would "
            "otherwise stop"
        ),
    ),
    Method(
        "shell",
        "The conversation",
        (("command", str, True), ("context", bool, False)),
        ("`command` (string, required, not blank), `context` (boolean, default true)"),
        (
            '`{"status": "started", "tool_call_id"}`: the user\'s own command (the app\'s '
            "`!command`; `context` false: `!!command`) runs in the project's shell "
            "through the bash tool, as an effect of the user: journaled, secrets restored "
            "for it, snapshotted so `vcs.undo` takes its file changes back (a unit of its "
            "own). Its `tool_start`/`tool_end` events (name `bash`, `tool_call_id`) carry "
            '`"shell": {"context"}`. With `context` its output is recorded as a `shell` '
            "note, told to the model before the next message (docs/context.md); without, "
            "the model never sees it. Refused while the agent works (`runtime.busy`); a "
            "blank command is `runtime.empty-command` (-32602)"
        ),
    ),
    Method(
        "abort",
        "The conversation",
        (),
        ("none"),
        (
            '`{"aborted": bool}`: false when nothing was running. The turn ends with '
            "`agent_end` stop `abort`; queued input stays queued"
        ),
    ),
    Method(
        "wait_idle",
        "The conversation",
        (),
        ("none"),
        (
            'when the runtime has settled (after its `settled` event): `{"busy": false, '
            '"queue": [queue item]}`'
        ),
    ),
    Method(
        "compact",
        "The conversation",
        (("focus", str, False),),
        ("`focus` (string, optional: what the summary must keep above all)"),
        (
            '`{"status": "started"}`, or `"scheduled"` while the agent works (compaction '
            "runs at the next safe point); `compaction_start`/`compaction_end` events "
            "follow"
        ),
    ),
    Method(
        "get_state",
        "State",
        (),
        ("none"),
        (
            '`{"busy", "model", "thinking", "generation", "tools": [name], "queue": '
            '[queue item], "cost", "session": session info, "context": {"tokens", '
            '"system", "limit"}, "damage", "memory", "cwd", "images": {"accepted", '
            '"max_bytes"}, "plugins": [name], "mode", "protocol"}`. `mode` is `normal` or '
            "`plan` (docs/plan.md). `protocol` is the version of "
            "the protocol (`smith rpc --schema`). `cost` is the session's cost meter "
            "(`usd`, `complete`, token counts; `usd` null when unknown): a resumed "
            "session's earlier calls are counted, priced when they were made with the "
            "current model (a session of more than 2,000 entries has them counted when it "
            'first runs, `"earlier": "pending"` until then). `context.tokens` estimates '
            "the context since the last compaction, counted from the session's records "
            "(nothing is decoded for it); `context.system` estimates the system prompt "
            "and tool definitions every request sends, as `smith context` counts them; "
            "`context.limit` is the window compaction works against (`context.limit`, "
            "else the model's catalog entry; null if unknown); `damage` says what reading "
            "the session had to leave out (damaged frames skipped, an unfinished frame "
            'ignored), else null; `memory` is `{"session", "turn"}` live bytes with '
            "memory accounting on, else null; `cwd` is the working directory tools and "
            "image paths resolve against; `images.accepted` says whether the current "
            "model takes image input, `images.max_bytes` is the largest image it may be "
            "sent (`images.max-bytes`); `plugins` names the plugins running in the "
            "runtime, in load order"
        ),
    ),
    Method(
        "get_context",
        "State",
        (),
        ("none"),
        (
            '`{"parts": [{"name", "source", "sent", "tokens", "text"}], "tokens"}`: what '
            "the model is told now besides the conversation, part by part in the order a "
            "request sends it, as `smith context --json` and the app's `/context` show it "
            "(docs/context.md)"
        ),
    ),
    Method(
        "get_messages",
        "State",
        (("leaf", str, False),),
        ("`leaf` (string: an entry id; default the selected branch)"),
        (
            '`{"session", "leaf", "messages": [{"entry_id", "ts", "message"}]}`: every '
            "recorded message of the branch, oldest first, in the form of docs/events.md "
            "(compacted messages included: providers see less)"
        ),
    ),
    Method(
        "get_tree",
        "State",
        (),
        ("none"),
        (
            '`{"session", "leaf", "leaves": [id], "entries": [{"id", "parent", "kind", '
            '"ts", "role"?, "preview"?}]}`: every entry of every branch; messages have '
            "their `role` and first line"
        ),
    ),
    Method(
        "queue.list",
        "State",
        (),
        ("none"),
        ('`{"queue": [queue item]}`'),
    ),
    Method(
        "queue.remove",
        "State",
        (("id", str, True),),
        ("`id` (string, required)"),
        ('`{"removed": bool}`: false when it is no longer queued (it may have been delivered)'),
    ),
    Method(
        "queue.clear",
        "State",
        (),
        ("none"),
        ('`{"removed": count}`'),
    ),
    Method(
        "session.new",
        "Sessions",
        (("name", str, False),),
        ("`name` (string; default `rpc DATE TIME`)"),
        ("session info of the new, empty session, now the current one"),
    ),
    Method(
        "session.switch",
        "Sessions",
        (("session", str, True),),
        (
            "`session` (string, required: a name or id of this project, or an id or "
            "unambiguous id prefix of any project)"
        ),
        ("session info of the session now current"),
    ),
    Method(
        "session.fork",
        "Sessions",
        (("entry", str, False), ("name", str, False)),
        ("`entry` (string; default the selected leaf), `name` (string; default `fork of NAME`)"),
        (
            "session info of a new session holding the path to `entry`, now current, with "
            "`forked_from`"
        ),
    ),
    Method(
        "session.select",
        "Sessions",
        (("leaf", str, True),),
        ("`leaf` (string, required: an entry id)"),
        (
            "session info with that entry selected: the conversation continues from it (a "
            "new branch)"
        ),
    ),
    Method(
        "session.list",
        "Sessions",
        (),
        ("none"),
        (
            '`{"sessions": [{"id", "name", "entries", "modified" (ms), "current"}]}`: '
            "this project's sessions, newest first"
        ),
    ),
    Method(
        "model.set",
        "Model and thinking",
        (("model", str, True),),
        ("`model` (string, required: `provider/model`, `provider:model`, an alias or a group)"),
        (
            '`{"model", "generation"}`; used from the next provider request (also '
            "mid-turn). An unknown model is -32602 with the diagnostic "
            "(`model.unknown-provider`, ...)"
        ),
    ),
    Method(
        "model.list",
        "Model and thinking",
        (),
        ("none"),
        (
            '`{"models": [...]}`: configured aliases `{"spec", "kind": "alias", "target", '
            '"from"}` and groups `{"spec", "kind": "group", "members", "from"}`, the '
            'catalog\'s models `{"spec", "kind": "model", "provider", "id", '
            '"context_window", "max_output", "thinking", "usable"}` (`usable`: the '
            "provider has a credential; nothing is sent anywhere to find out), and the "
            "offline `demo` and `scripted:PATH`; each with `current`"
        ),
    ),
    Method(
        "thinking.set",
        "Model and thinking",
        (("level", str, True),),
        ("`level` (string, required: `off`, `minimal`, `low`, `medium`, `high`, `xhigh`)"),
        ('`{"thinking", "generation"}`'),
    ),
    Method(
        "mode.set",
        "Model and thinking",
        (("mode", str, True), ("prompt", bool, False)),
        (
            "`mode` (string, required: `plan` or `normal`), `prompt` (boolean, default true: "
            "leaving plan mode, send the plan as the next prompt)"
        ),
        (
            '`{"mode", "previous", "plan", "submission"}`: `plan` is the last answer given '
            "in plan mode (on leaving it, else null), `submission` the id of the prompt it "
            "was sent as; a `mode` event follows a change (docs/plan.md)"
        ),
    ),
    Method(
        "vcs.undo",
        "File history",
        (("force", bool, False),),
        ("`force` (boolean)"),
        (
            '`{"op", "entry", "target", "tree", "changed": [{"path", "change"}], '
            '"overwritten", "conversation", "title"}`'
        ),
    ),
    Method(
        "vcs.redo",
        "File history",
        (("force", bool, False),),
        ("`force` (boolean)"),
        ("the same shape"),
    ),
    Method(
        "vcs.restore",
        "File history",
        (("entry", str, True), ("conversation", bool, False), ("force", bool, False)),
        (
            "`entry` (string, required), `conversation` (boolean: also continue the "
            "session from that entry), `force` (boolean)"
        ),
        ("the same shape"),
    ),
    Method(
        "vcs.diff",
        "File history",
        (("a", str, False), ("b", str, False)),
        ("`a`, `b` (strings: entry ids; none: the newest turn)"),
        ('`{"from", "to", "title", "files", "insertions", "deletions", "patch", "files_changed"}`'),
    ),
    Method(
        "vcs.history",
        "File history",
        (),
        ("none"),
        (
            '`{"session", "turns": [{"entry", "prompt", "text", "files", "insertions", '
            '"deletions", "undone", "pruned", ...}]}`'
        ),
    ),
    Method(
        "plugins.list",
        "The process",
        (),
        ("none"),
        (
            '`{"plugins": [{"name", "version", "source", "state", "contributions"}]}`: '
            "every plugin the server loaded, in load order, the same object `smith "
            "plugins list --json` prints. `source` is `built-in` (or a plugin's path), "
            "`state` is `enabled` or `disabled` (then `disabled_by` names the "
            "`plugins.disabled` setting and where it was set), `contributions` maps each "
            "kind the plugin contributes (`providers`, `commands`, `keybindings`, "
            "`themes`, `prompts`, `queue_policies`, `tools`, `settings`, `handlers`) to "
            "its names; kinds it contributes nothing of are left out"
        ),
    ),
    Method(
        "memory.report",
        "The process",
        (),
        ("none"),
        (
            '`{"enabled", "scopes": [{"scope", "kind", "state", "count", "frees", '
            '"blocks", "allocated", "live", "peak", "ceiling", "ceiling_hits"}]}`: '
            "allocations by lifetime scope (process, session, turn, kernel, frame, io; "
            "docs/memory.md). `enabled` is false and `scopes` empty unless smith runs "
            "with `--memory-accounting` or `SMITH_MEMORY_ACCOUNTING=1`"
        ),
    ),
    Method(
        "shutdown",
        "The process",
        (),
        ("none"),
        (
            '`{"session": id}`, sent after the running turn (if any) was aborted and '
            "recorded, every pending answer (such as `wait_idle`) was sent, and the "
            "session was closed. The process then exits with status 0. Requests after it "
            "get `rpc.closed`"
        ),
    ),
)
BY_NAME = {m.name: m for m in METHODS}


def _request(method: Method) -> type[msgspec.Struct]:
    """The request of `method` as a Struct: `{"jsonrpc": "2.0", "id"?, "method", "params"}`,
    its params by name (an object) or by position (an array)."""
    title = "".join(part.title() for part in method.name.replace(".", "_").split("_"))
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
    for name, kind, required in method.params:
        fields.append((name, kind) if required else (name, kind | None, None))
    params = msgspec.defstruct(f"{title}Params", fields, kw_only=True,
                               forbid_unknown_fields=True, frozen=True)  # fmt: skip
    given: Any = Union[params, list[Any]]  # noqa: UP007
    wrap: list[tuple[str, Any] | tuple[str, Any, Any]] = [
        ("jsonrpc", Literal["2.0"]),
        ("id", Union[int, str, None], None),  # noqa: UP007 (absent: a notification)
        ("params", given) if any(r for _, _, r in method.params) else ("params", given, None),
    ]
    return msgspec.defstruct(f"{title}Request", wrap, tag_field="method", tag=method.name,
                             kw_only=True, forbid_unknown_fields=True, frozen=True)  # fmt: skip


REQUESTS: dict[str, type[msgspec.Struct]] = {m.name: _request(m) for m in METHODS}
Request: Any = Union[tuple(REQUESTS.values())]  # noqa: UP007 (every method's request)
