"""Every event the runtime emits, declared once (docs/events.md is generated from these).

Each class is one event `type` (its tag); its docstring says when it is emitted, its
fields what it carries. A field with a default may be absent. `submission` is on every
event: the id of the prompt, `!command` or compaction that caused it, when one did.
"""

from __future__ import annotations

from typing import Any, Literal, Union, get_args

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


class SessionStart(_Event, tag="session_start", frozen=True):
    """Once per runtime, at its first prompt, before the first turn."""

    session: str
    resumed: bool
    entries: int


class AgentStart(_Event, tag="agent_start", frozen=True):
    """A prompt starts being processed."""

    prompt_id: str
    submissions: list[str] | None = None


class TurnStart(_Event, tag="turn_start", frozen=True):
    """A provider round begins."""

    turn: int


class MessageStart(_Event, tag="message_start", frozen=True):
    """A message begins."""

    role: Literal["user", "assistant"]
    message_id: str


class MessageDelta(_Event, tag="message_delta", frozen=True):
    """New text of the message."""

    message_id: str
    channel: Literal["text", "thinking"]
    delta: str


class MessageEnd(_Event, tag="message_end", frozen=True):
    """The message is complete and recorded."""

    message_id: str
    message: dict[str, Any]
    entry_id: str | None = None


class ToolStart(_Event, tag="tool_start", frozen=True):
    """A tool call is about to run; or the user's own `!command`, run as bash."""

    tool_call_id: str
    name: str
    arguments: Any
    rewritten_by: str | None = None
    shell: dict[str, Any] | None = None


class ToolUpdate(_Event, tag="tool_update", frozen=True):
    """Progress of a running call, at most every 0.5 s."""

    tool_call_id: str
    name: str
    update: Any


class ToolEnd(_Event, tag="tool_end", frozen=True):
    """The call has ended."""

    tool_call_id: str
    name: str
    result: dict[str, Any]
    outcome: str | None
    is_error: bool
    shell: dict[str, Any] | None = None


class TurnEnd(_Event, tag="turn_end", frozen=True):
    """The round and its tool batch are complete."""

    turn: int
    stop: str | None


class AgentEnd(_Event, tag="agent_end", frozen=True):
    """The prompt's processing stopped."""

    prompt_id: str
    stop: str | None
    message: dict[str, Any] | None = None
    error: str | None = None
    submissions: list[str] | None = None


class CompactionStart(_Event, tag="compaction_start", frozen=True):
    """Compaction begins."""

    reason: str
    focus: str | None = None


class CompactionEnd(_Event, tag="compaction_end", frozen=True):
    """Compaction ended."""

    reason: str
    ok: bool
    summary: str | None = None
    entry_id: str | None = None
    first_kept: str | None = None
    tokens_before: int | None = None
    error: str | None = None


class QueueChanged(_Event, tag="queue_changed", frozen=True):
    """Queued input was added, delivered or removed."""

    queue: list[QueueItem]


class Retry(_Event, tag="retry", frozen=True):
    """A retryable provider error; trying again."""

    attempt: int
    delay: float
    error: Any


class Failover(_Event, tag="failover", frozen=True):
    """A group's model failed before any output; the next model of the group answers."""

    from_model: str
    to_model: str
    error: Any


class Error(_Event, tag="error", frozen=True):
    """Something went wrong that did not stop the loop, or a warning."""

    diagnostic: dict[str, Any]


class Settled(_Event, tag="settled", frozen=True):
    """The runtime is idle."""

    queue: int


class InputHandled(_Event, tag="input_handled", frozen=True):
    """A plugin took user input as a command: no user message, no turn."""

    entry_id: str
    plugin: str
    mode: str
    text: str
    reply: str | None


class Environment(_Event, tag="environment", frozen=True):
    """A prompt started with an environment block other than the one in the context."""

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
    """An instruction file reached after a tool batch was recorded."""

    entry_id: str
    path: str
    directory: str
    text: str


class Ui(_Event, tag="ui", frozen=True):
    """A plugin's handler, command or tool showed something; not recorded."""

    intent: Literal["notify", "progress", "status"]
    origin: str
    level: str | None = None
    text: str | None = None
    label: str | None = None
    done: float | None = None
    total: float | None = None
    key: str | None = None


class IntentAnswered(_Event, tag="intent_answered", frozen=True):
    """A plugin's question was answered."""

    ask_id: str | None
    intent: str | None
    origin: str | None
    text: str | None
    choices: list[Choice] | None
    choice: str | None
    frontend: str | None
    note: str | None = None


class IntentRefused(_Event, tag="intent_refused", frozen=True):
    """A plugin's question ended without an answer."""

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
    Instructions, Ui, IntentAnswered, IntentRefused, Result,
]  # fmt: skip
HookEvent = Union[Input, ToolCall, ToolResult]  # noqa: UP007

# Each emitted event type and its declaration, in the order docs/events.md lists them.
EVENTS: dict[str, type[_Event]] = {str(cls.__struct_config__.tag): cls for cls in get_args(Event)}
HOOK_EVENTS: dict[str, type[_Event]] = {
    str(cls.__struct_config__.tag): cls for cls in get_args(HookEvent)
}
