"""Every event the runtime emits, declared once (docs/events.md is generated from these).

Each class is one event `type` (its tag); its docstring says when it is emitted, its
fields what it carries. A field with a default may be absent. `submission` is on every
event: the id of the prompt, `!command` or compaction that caused it, when one did.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Union, get_args

import msgspec


class _Event(msgspec.Struct, tag_field="type", forbid_unknown_fields=True, kw_only=True,
             frozen=True):  # fmt: skip
    submission: str | None = None


class Choice(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """One choice of a question: its key and label; `reason`: a reason may come with it."""

    key: str
    label: str
    reason: bool | None = None


class QueueItem(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """Input waiting in the queue (its text with secrets masked)."""

    id: str
    mode: str
    text: str
    images: list[str] | None = None


class EntryAppended(_Event, tag="entry", frozen=True):
    """an entry was appended to the session (a message, a tool's effect records, a model
    change, ...): what a frontend shows follows from these and the `entries` operation
    """

    fields_doc: ClassVar[str] = "`id`, `parent` (null: a root), `kind` (docs/sessions.md)"

    id: str
    parent: str | None
    kind: str


class SessionStart(_Event, tag="session_start", frozen=True):
    """once per runtime, at its first prompt, before the first turn"""

    fields_doc: ClassVar[str] = "`session`, `resumed` (whether the session had entries), `entries`"

    session: str
    resumed: bool
    entries: int


class AgentStart(_Event, tag="agent_start", frozen=True):
    """a prompt starts being processed"""

    fields_doc: ClassVar[str] = (
        "`prompt_id`, `submissions` (only when the run took several queued inputs: every one's id)"
    )

    prompt_id: str
    submissions: list[str] | None = None


class TurnStart(_Event, tag="turn_start", frozen=True):
    """a provider round begins"""

    fields_doc: ClassVar[str] = "`turn` (1, 2, ...)"

    turn: int


class MessageStart(_Event, tag="message_start", frozen=True):
    """a message begins"""

    fields_doc: ClassVar[str] = "`role` (`user` or `assistant`), `message_id`"

    role: Literal["user", "assistant"]
    message_id: str


class MessageDelta(_Event, tag="message_delta", frozen=True):
    """new text of the message"""

    fields_doc: ClassVar[str] = "`message_id`, `channel` (`text` or `thinking`), `delta`"

    message_id: str
    channel: Literal["text", "thinking"]
    delta: str


class MessageEnd(_Event, tag="message_end", frozen=True):
    """the message is complete and recorded"""

    fields_doc: ClassVar[str] = "`message_id`, `message`, `entry_id` (assistant)"

    message_id: str
    message: dict[str, Any]
    entry_id: str | None = None


class ToolStart(_Event, tag="tool_start", frozen=True):
    """a tool call of the message is about to run; or the user's own `!command`
    (`!!command`: `context` false), run as `bash` outside any turn (docs/context.md)
    """

    fields_doc: ClassVar[str] = (
        "`tool_call_id`, `name`, `arguments` (as it runs), `rewritten_by` (only when a "
        'plugin rewrote them), `shell` (only for the user\'s own command: `{"context"}`)'
    )

    tool_call_id: str
    name: str
    arguments: Any
    rewritten_by: str | None = None
    shell: dict[str, Any] | None = None


class ToolUpdate(_Event, tag="tool_update", frozen=True):
    """progress of a running call (bash: at most every 0.5 s, at its first output, then
    when more arrived, also once it goes quiet; task: each event of its sub-agent)
    """

    fields_doc: ClassVar[str] = (
        "`tool_call_id`, `name`, `update` (bash: `output_bytes`, `tail`: the last 800 "
        "characters, secrets masked; task: `child`, the sub-agent's event, docs/agents.md)"
    )

    tool_call_id: str
    name: str
    update: Any


class ToolEnd(_Event, tag="tool_end", frozen=True):
    """the call has ended"""

    fields_doc: ClassVar[str] = (
        "`tool_call_id`, `name`, `result` (`text`, `details`, `ok`, `mutation`, "
        "`outcome`), `outcome`, `is_error`, `shell` (as on its `tool_start`), "
        "`duration_ms` (the call's wall time, from its start to its result; replay's is "
        "the time between its recorded intent and completion; absent for a call that "
        "did not run)"
    )

    tool_call_id: str
    name: str
    result: dict[str, Any]
    outcome: str | None
    is_error: bool
    shell: dict[str, Any] | None = None
    duration_ms: float | None = None


class TurnEnd(_Event, tag="turn_end", frozen=True):
    """the round and its tool batch are complete"""

    fields_doc: ClassVar[str] = "`turn`, `stop` (the message's stop)"

    turn: int
    stop: str | None


class AgentEnd(_Event, tag="agent_end", frozen=True):
    """the prompt's processing stopped"""

    fields_doc: ClassVar[str] = (
        "`prompt_id`, `stop`, `message` (the last assistant message), `error`, "
        "`submissions` (when the run served several: the prompt's and each delivered "
        "steer's or follow-up's id)"
    )

    prompt_id: str
    stop: str | None
    message: dict[str, Any] | None = None
    error: str | None = None
    submissions: list[str] | None = None


class CompactionStart(_Event, tag="compaction_start", frozen=True):
    """compaction begins"""

    fields_doc: ClassVar[str] = "`reason` (`manual` or `auto`), `focus` (only for `/compact FOCUS`)"

    reason: str
    focus: str | None = None


class CompactionEnd(_Event, tag="compaction_end", frozen=True):
    """compaction ended"""

    fields_doc: ClassVar[str] = (
        "`reason`, `ok`, and `summary`, `entry_id`, `first_kept`, `tokens_before` (the "
        "context's estimated tokens before it) or `error`"
    )

    reason: str
    ok: bool
    summary: str | None = None
    entry_id: str | None = None
    first_kept: str | None = None
    tokens_before: int | None = None
    error: str | None = None


class QueueChanged(_Event, tag="queue_changed", frozen=True):
    """queued input was added, delivered or removed"""

    fields_doc: ClassVar[str] = (
        '`queue`: `[{id, mode, text}]` (and `images`: `["shot.png 34 KB", ...]` for an '
        "item with images)"
    )

    queue: list[QueueItem]


class Retry(_Event, tag="retry", frozen=True):
    """a retryable provider error; trying again"""

    fields_doc: ClassVar[str] = "`attempt`, `delay` (s), `error`"

    attempt: int
    delay: float
    error: Any


class Failover(_Event, tag="failover", frozen=True):
    """a group's model failed before any output (rate limited, or still failing after its
    retries); the next model of the group answers instead
    """

    fields_doc: ClassVar[str] = "`from_model`, `to_model`, `error`"

    from_model: str
    to_model: str
    error: Any


class Error(_Event, tag="error", frozen=True):
    """something went wrong that did not stop the loop (`severity` `error`), or a warning
    (`warning`, e.g. `text.replaced`)
    """

    fields_doc: ClassVar[str] = "`diagnostic` (`code`, `severity`, `what`, `why`, `fix`, ...)"

    diagnostic: dict[str, Any]


class Settled(_Event, tag="settled", frozen=True):
    """the runtime is idle"""

    fields_doc: ClassVar[str] = "`queue` (items still queued)"

    queue: int


class InputHandled(_Event, tag="input_handled", frozen=True):
    """a plugin took user input as a command: no user message was recorded and no turn
    started, only an `input_handled` entry (the model never sees it; replay shows it);
    frontends show `reply`
    """

    fields_doc: ClassVar[str] = (
        "`entry_id`, `plugin`, `mode` (`prompt`, `steer` or `follow_up`), `text`, `reply` "
        "(or `null`), `error` (only when the command failed: why; the key is left out when "
        "it succeeded)"
    )

    entry_id: str
    plugin: str
    mode: str
    text: str
    reply: str | None
    error: str | None = None


class Environment(_Event, tag="environment", frozen=True):
    """a prompt started with an environment block other than the one in the context: it was
    recorded (an `environment` entry) just before the prompt's message and is sent from
    there on ([docs/context.md](context.md)); between `agent_start` and the prompt's
    `message_start`
    """

    fields_doc: ClassVar[str] = (
        "`entry_id`, `text` (the block as the model is sent it), `cwd`, `root`, "
        "`platform`, `shell`, `smith`, `model`, `date`, `timezone`, `git`, "
        "`safety` (the block's line on the sandbox and approval; empty when none)"
    )

    entry_id: str
    text: str
    cwd: str
    root: str
    platform: str
    shell: str
    smith: str
    model: str
    date: str
    timezone: str
    git: dict[str, Any] | None
    safety: str | None = None


class Instructions(_Event, tag="instructions", frozen=True):
    """after a tool batch that first reached a directory below the project root with an
    instruction file (AGENTS.md): the file was recorded (an `instructions` entry) and is
    sent from there on
    """

    fields_doc: ClassVar[str] = "`entry_id`, `path`, `directory`, `text` (as sent)"

    entry_id: str
    path: str
    directory: str
    text: str


class Ui(_Event, tag="ui", frozen=True):
    """a plugin's handler, command or tool showed something (docs/ui.md); not recorded"""

    fields_doc: ClassVar[str] = (
        "`intent` (`notify`, `progress`, `status` or `hatch`), `origin` (the plugin), and "
        "the intent's fields: `level` (`info`, `warning`, `error`) and `text` (notify); "
        "`label`, `done`, `total` (progress; either may be `null`); `key`, `text` "
        "(status; empty text clears it); `capability` (`clipboard`, `open-url`, `bell`) "
        "and `value` (hatch: an escape hatch the plugin declared, for the client to do "
        "or ignore)"
    )

    intent: Literal["notify", "progress", "status", "hatch"]
    origin: str
    level: str | None = None
    text: str | None = None
    label: str | None = None
    done: float | None = None
    total: float | None = None
    key: str | None = None
    capability: str | None = None
    value: str | None = None


class TodoItem(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """One item of a todo list: what is to be done and how far it is."""

    content: str
    status: Literal["pending", "in_progress", "completed"]


class Todo(_Event, tag="todo", frozen=True):
    """the agent's todo list changed (the `todo` tool of the plan plugin: the whole list,
    as it is now; docs/plan.md); not recorded itself: the call's result is
    """

    fields_doc: ClassVar[str] = (
        "`origin` (the plugin), `items` (`[{content, status}]`, status `pending`, "
        "`in_progress` or `completed`)"
    )

    origin: str
    items: list[TodoItem]


class Mode(_Event, tag="mode", frozen=True):
    """the runtime's mode changed (`set_mode`, `--plan`; recorded, entry kind `mode`):
    `plan` runs only read-only tools (docs/plan.md)
    """

    fields_doc: ClassVar[str] = (
        "`mode` (`normal` or `plan`), `previous`, `plan` (leaving plan mode: the plan, the "
        "last answer given in it, or null)"
    )

    mode: Literal["normal", "plan"]
    previous: Literal["normal", "plan"]
    plan: str | None = None


class IntentAnswered(_Event, tag="intent_answered", frozen=True):
    """a plugin's question was answered"""

    fields_doc: ClassVar[str] = (
        "`ask_id`, `intent` (`request_choice` or `request_confirm`), `origin`, `text`, "
        "`choices` (`[{key, label}]`), `choice` (the key), `frontend` (who answered), "
        "`note` (the user's reason, only when given)"
    )

    ask_id: str | None
    intent: str | None
    origin: str | None
    text: str | None
    choices: list[Choice] | None
    choice: str | None
    frontend: str | None
    note: str | None = None


class IntentRefused(_Event, tag="intent_refused", frozen=True):
    """a plugin's question ended without an answer: the frontend cannot ask, nobody
    answered in time, the user dismissed it or interrupted, an abort withdrew it
    """

    fields_doc: ClassVar[str] = (
        "`ask_id`, `intent`, `origin`, `text`, `choices`, `frontend`, `reason`, "
        "`interrupt` (`true`, only when the user interrupted: Escape at an approval, "
        '`ui.ask`\'s `{"interrupt": true}`; the call is denied and the turn ends)'
    )

    ask_id: str | None
    intent: str | None
    origin: str | None
    text: str | None
    choices: list[Choice] | None
    frontend: str | None
    reason: str | None
    interrupt: bool | None = None


class SessionRef(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """The session a `smith eval` result was recorded in."""

    id: str
    name: str | None
    temporary: bool


class Result(_Event, tag="result", frozen=True):
    """`smith eval --json`'s last line (eval's own record, not a runtime event)."""

    ok: bool
    exit_code: int
    stop: str | None
    error: str | None
    text: str
    message: dict[str, Any] | None
    session: SessionRef
    cost: Any


class ReplayedSession(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """The session `smith replay` plays."""

    id: str
    name: str | None


class ReplayStart(_Event, tag="replay_start", frozen=True):
    """`smith replay --json`'s first line (replay's own record, not a runtime event)"""

    fields_doc: ClassVar[str] = "`session` (`id`, `name`), `turns` (the prompts recorded)"

    session: ReplayedSession
    turns: int


class ReplayEnd(_Event, tag="replay_end", frozen=True):
    """`smith replay --json`'s last line: the state the records add up to"""

    fields_doc: ClassVar[str] = (
        "`state` (turns, rounds, messages, effects, snapshots, model, ...), `reexecute` "
        "(with --reexecute: how many effects came out the same, diverged, unknown, skipped)"
    )

    state: dict[str, Any]
    reexecute: dict[str, int] | None


# -- hook events: handed to plugin handlers only, never emitted ---------------------------


class Input(_Event, tag="input", frozen=True):
    """Before a user message is recorded (hook only)."""

    text: str
    mode: str


class ToolCall(_Event, tag="tool_call", frozen=True):
    """Before a call runs (hook only)."""

    tool_call_id: str
    name: str
    arguments: Any
    turn: int


class ToolResult(_Event, tag="tool_result", frozen=True):
    """After the batch ran (hook only)."""

    tool_call_id: str
    name: str
    arguments: Any
    result: dict[str, Any]
    is_error: bool


Event = Union[  # noqa: UP007 (a runtime union msgspec and JSON Schema read)
    SessionStart, AgentStart, TurnStart, MessageStart, MessageDelta, MessageEnd,
    ToolStart, ToolUpdate, ToolEnd, TurnEnd, AgentEnd, CompactionStart, CompactionEnd,
    QueueChanged, Retry, Failover, Error, Settled, InputHandled, Environment,
    Instructions, Ui, Todo, Mode, IntentAnswered, IntentRefused, EntryAppended, Result,
    ReplayStart, ReplayEnd,
]  # fmt: skip
HookEvent = Union[Input, ToolCall, ToolResult]  # noqa: UP007

# Each emitted event type and its declaration, in the order docs/events.md lists them.
EVENTS: dict[str, type[_Event]] = {str(cls.__struct_config__.tag): cls for cls in get_args(Event)}
HOOK_EVENTS: dict[str, type[_Event]] = {
    str(cls.__struct_config__.tag): cls for cls in get_args(HookEvent)
}
