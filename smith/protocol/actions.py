"""What a plugin's handler returns, declared once: the actions of a safe point (each sets
one slot of the runtime's next generation: the model, the thinking level, the system
prompt, a tool, a setting, queued input) and the hook actions (a decision about one
input, tool call or result). Frozen msgspec Structs, tagged by `action`; smith.sdk
exports them (docs/plugins.md), the runtime validates and applies them
(smith.runtime._generation, _hooks), and `smith rpc --schema` lists them under
`$defs/Action` and `$defs/HookAction`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Union

import msgspec


class _Action(msgspec.Struct, tag_field="action", forbid_unknown_fields=True, frozen=True):
    pass


# -- actions ------------------------------------------------------------------------
# Each action names the slot of the runtime it sets; two different values for one slot
# in one batch are a conflict.


class SetModel(_Action, tag="set_model", frozen=True):
    """Use `model` (a model setting: "provider/model", "scripted:PATH") from the next request on."""

    model: str  # a model setting such as "scripted:PATH" or "provider/model"

    def slot(self) -> str:
        return "model"


class SetThinking(_Action, tag="set_thinking", frozen=True):
    """Set the thinking level of the next requests (off, minimal, low, medium, high, xhigh)."""

    level: str  # one of smith.config THINKING_LEVELS

    def slot(self) -> str:
        return "thinking"


class SetSystemPrompt(_Action, tag="set_system_prompt", frozen=True):
    """Replace the system prompt of the new generation with `text`."""

    text: str

    def slot(self) -> str:
        return "system"


class AppendSystemPrompt(_Action, tag="append_system_prompt", frozen=True):
    """Adds to the system prompt of the new generation (several may combine)."""

    text: str

    def slot(self) -> str:
        return f"system+{self.text}"


class AddTool(_Action, tag="add_tool", frozen=True):
    """Offer the model a tool (`tool`: its spec as the runtime runs it) from the new
    generation on."""

    tool: Any  # a smith.effects ToolSpec (the tool as the runtime runs it)

    def slot(self) -> str:
        return f"tool:{self.tool.name}"


class RemoveTool(_Action, tag="remove_tool", frozen=True):
    """Stop offering the model the tool `name` from the new generation on."""

    name: str

    def slot(self) -> str:
        return f"tool:{self.name}"


class SetSetting(_Action, tag="set_setting", frozen=True):
    """A runtime-only sampling setting (temperature, max_tokens); never persisted."""

    key: str
    value: Any

    def slot(self) -> str:
        return f"setting:{self.key}"


class Enqueue(_Action, tag="enqueue", frozen=True):
    """Queue user input as if the user had typed it (mode `steer` or `follow_up`)."""

    mode: str
    text: str

    def slot(self) -> str:
        return f"enqueue:{self.mode}:{self.text}"


Action = Union[  # noqa: UP007 (a runtime union msgspec and JSON Schema read)
    SetModel, SetThinking, SetSystemPrompt, AppendSystemPrompt, AddTool, RemoveTool,
    SetSetting, Enqueue,
]  # fmt: skip
ACTION_TYPES = (
    SetModel, SetThinking, SetSystemPrompt, AppendSystemPrompt, AddTool, RemoveTool,
    SetSetting, Enqueue,
)  # fmt: skip


# -- hook actions -------------------------------------------------------------------
# Decisions about one input, call or result. Rules (the same for every hook): handlers
# run in plugin order; a handler that fails or passes its deadline counts as allow;
# two plugins asking for different things is a conflict, reported naming both, and then
# the input or result is taken as it was and the call does not run. A deny wins.


class Allow(_Action, tag="allow", frozen=True):
    """tool_call: let the call run as the model asked (the same as returning None)."""

    def slot(self) -> str:
        return "allow"


class DenyCall(_Action, tag="deny_call", frozen=True):
    """tool_call: do not run the call; the model gets an error result with `reason` and
    the plugin's name, and the session records the call as not applied. The first deny
    in plugin order wins over every allow and rewrite. `interrupt`: the user stopped the
    turn here (Escape on its approval, `Reply.interrupt`): the result tells the model the
    user interrupted, the other calls of the batch do not run, and the turn ends as an
    abort ends it (no further request to the model)."""

    reason: str
    interrupt: bool = False


class RewriteArguments(_Action, tag="rewrite_arguments", frozen=True):
    """tool_call: run the call with `arguments` instead (validated again against the
    tool's schema; invalid ones are refused and nothing runs). The assistant message
    keeps what the model sent; the effect record and the tool result say what ran."""

    arguments: Mapping[str, Any]


class ReplaceResult(_Action, tag="replace_result", frozen=True):
    """tool_result: the model sees `text` as the call's result. The recorded output is
    the tool's own; the session keeps both, so a resumed session sends `text` again."""

    text: str


class TransformInput(_Action, tag="transform_input", frozen=True):
    """input: record and send `text` as the user's message (the original is noted when
    it differs). `attach`: (name, text) pairs sent after it as an `@path`'s file is, each
    a text part `<attached path="NAME" lines="...">`, cut at the result limit, noted in
    the message's `attached` with the plugin's name (an MCP resource a mention named).
    One that only attaches (`text` the input's own) adds to another plugin's answer and
    conflicts with none."""

    text: str
    attach: tuple[tuple[str, str], ...] = ()


class HandleInput(_Action, tag="handle_input", frozen=True):
    """input: the message is a command the plugin handled: it is not recorded as a user
    message and starts no turn; `reply`, if any, is shown (event `input_handled`).
    `error`: the command failed, and why (shown as an error; `smith eval` exits 1)."""

    reply: str | None = None
    error: str | None = None


HookAction = Union[  # noqa: UP007
    Allow, DenyCall, RewriteArguments, ReplaceResult, TransformInput, HandleInput
]


HOOK_ACTIONS: Mapping[str, tuple[type, ...]] = {
    "tool_call": (Allow, DenyCall, RewriteArguments),
    "tool_result": (ReplaceResult,),
    "input": (TransformInput, HandleInput),
}


def ill_typed(action: object) -> str | None:
    """Why `action`'s fields are not of their declared types (a Struct built in Python is
    not checked, as one decoded from data is), or None when they are."""
    try:
        msgspec.convert(msgspec.to_builtins(action), type(action))
    except (msgspec.ValidationError, TypeError) as exc:
        return str(exc)
    return None


def from_data(item: object) -> Action | HookAction:
    """The action or hook action `item` (JSON-like data in the protocol's form, tagged by
    `action`) stands for; ValueError saying why when it stands for none (an unknown tag,
    a missing or ill-typed field): how a sandboxed plugin's JSON answer is read."""
    try:
        return msgspec.convert(item, Action | HookAction)  # type: ignore[no-any-return]
    except msgspec.ValidationError as exc:
        raise ValueError(str(exc)) from exc
