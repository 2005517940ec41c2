"""The runtime's event schema: what every mode observes (docs/events.md is the reference).

Events are plain JSON-serialisable dicts with a `type`. The same objects are printed by
`smith eval --json`, sent as RPC notifications and handed to plugin handlers.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from smith.session import Entry, Session

Event = dict[str, Any]

# The submission whose work is running in this context (docs/events.md, "Submissions"):
# set by the runtime for the task of a prompt, a `!command` or a compaction asked for
# alone; every event emitted there (Runtime.emit) carries it as `submission`.
SUBMISSION: ContextVar[str | None] = ContextVar("smith_submission", default=None)

TYPES = (
    "session_start",  # once per runtime, before its first turn: {session, resumed, entries}
    "agent_start",  # a prompt began processing: {prompt_id}
    "turn_start",  # one provider round begins: {turn}
    "message_start",  # {role, message_id}
    "message_delta",  # {message_id, channel: text|thinking, delta}
    "message_end",  # {message_id, message} (authoritative, as recorded)
    "tool_start",  # {tool_call_id, name, arguments}
    "tool_update",  # {tool_call_id, name, update}
    "tool_end",  # {tool_call_id, name, result: {text, details, ok}, outcome, is_error}
    "turn_end",  # {turn, stop}
    "agent_end",  # {prompt_id, stop, message?, error?}
    "compaction_start",  # {reason}
    "compaction_end",  # {reason, ok, summary?, error?}
    "queue_changed",  # {queue: [{id, mode, text}]}
    "retry",  # {attempt, delay, error}
    "failover",  # {from_model, to_model, error}
    "error",  # {diagnostic: {...}}
    "settled",  # the runtime is idle: {queue} items still queued (kept after an abort)
    "input_handled",  # a plugin took user input as a command: {plugin, mode, text, reply}
    "environment",  # the environment block was recorded: {entry_id, text, cwd, date, ...}
    "instructions",  # an instruction file reached later was recorded: {entry_id, path, ...}
    # UI intents (smith.ui, docs/ui.md): a plugin's notice, progress or status, and how
    # each question ended (also recorded in the session, entry kind `question`).
    "ui",  # {intent: notify|progress|status|hatch, origin, ...the intent's fields}
    "intent_answered",  # {ask_id, intent, origin, text, choice, frontend}
    "intent_refused",  # {ask_id, intent, origin, text, frontend, reason}
    "todo",  # a plugin's todo list, whole (smith.ui.Todos; the plan plugin's todo tool)
    "mode",  # the runtime's mode changed: {mode, previous, plan} (smith.runtime._mode)
    "entry",  # an entry was appended to the session: {id, parent, kind}
    # Hooks: handed to plugin handlers only, never emitted (smith.runtime._hooks).
    "input",  # before a user message is recorded: {text, mode}
    "tool_call",  # before a call runs: {tool_call_id, name, arguments, turn}
    "tool_result",  # after the batch ran: {tool_call_id, name, arguments, result, is_error}
)


def event(type: str, **fields: Any) -> Event:
    assert type in TYPES, type
    return {"type": type, **fields}


def publish_entries(session: Session, emit: Callable[[Event], None]) -> Callable[[], None]:
    """Emit an `entry` event for every entry appended to `session` from now on (until the
    returned function is called). An entry appended in a tool's thread is emitted on
    the event loop that ran the tool (events reach frontends there), with the
    submission of the work that appended it."""
    import asyncio

    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = None  # learnt at the first append made on one

    submitted: str | None = None  # the submission of the latest append on the loop

    def appended(entry: Entry) -> None:
        nonlocal loop, submitted
        ev = {"type": "entry", "id": entry.id, "parent": entry.parent, "kind": entry.kind}
        submission = SUBMISSION.get()
        try:
            loop = asyncio.get_running_loop()
            submitted = submission
        except RuntimeError:  # a worker thread: hand it to the loop's thread, with the
            if submission is None:  # submission whose work runs there (a tool's thread
                submission = submitted  # may not carry the context)
            if submission is not None:
                ev["submission"] = submission
            if loop is not None and loop.is_running():
                loop.call_soon_threadsafe(emit, ev)
                return
        if submission is not None:
            ev["submission"] = submission
        emit(ev)

    return session.observe(appended)
