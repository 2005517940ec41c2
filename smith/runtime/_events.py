"""The runtime's event schema: what every mode observes (docs/events.md is the reference).

Events are plain JSON-serialisable dicts with a `type`. The same objects are printed by
`smith eval --json`, sent as RPC notifications and handed to plugin handlers.
"""

from __future__ import annotations

from typing import Any

Event = dict[str, Any]

TYPES = (
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
)


def event(type: str, **fields: Any) -> Event:
    assert type in TYPES, type
    return {"type": type, **fields}
