"""UI intents: the one way the runtime and plugins speak to a frontend.

An intent says what should be shown or asked, never how. Each kind declares what a
frontend that cannot honour it does (`UNSUPPORTED`): `drop` it (it was decoration),
`refuse` it with an event back to the sender (a question nobody can answer must not hang),
or `persist` it (it is durable, so a frontend that shows nothing still keeps it: the
transcript is the session). Nothing asks which frontend is active; a frontend that needs
an escape hatch declares it in `Capabilities`.

    for intent in intents_for(event):   # runtime events -> intents
        frontend.show(intent)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Unsupported = Literal["drop", "refuse", "persist"]


@dataclass(frozen=True)
class Intent:
    kind: str
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def unsupported(self) -> Unsupported:
        return UNSUPPORTED[self.kind]


UNSUPPORTED: dict[str, Unsupported] = {
    "transcript_append": "persist",  # a recorded message: it is in the session regardless
    "message_delta": "drop",  # the message's end carries all of it
    "tool_activity": "drop",  # start, progress and end of a tool call
    "status": "drop",  # model, thinking, cost, context use, queue, busy
    "notify": "drop",  # a passing notice
    "progress": "drop",
    "request_choice": "refuse",  # questions: refused when nobody can answer
    "request_confirm": "refuse",
    "request_text": "refuse",
    "overlay_open": "drop",
    "overlay_close": "drop",
}
KINDS = tuple(UNSUPPORTED)


@dataclass(frozen=True)
class Capabilities:
    """What a frontend declares it can do beyond the intents every frontend takes."""

    questions: bool = False  # can ask the user (request_* intents)
    overlays: bool = False
    escape_hatches: frozenset[str] = frozenset()


def intents_for(event: dict[str, Any]) -> list[Intent]:
    """The intents a runtime event (docs/events.md) stands for."""
    kind = event["type"]
    if kind == "message_end":
        data = {k: event.get(k) for k in ("message", "entry_id", "message_id")}
        return [Intent("transcript_append", data)]
    if kind == "message_start":
        return [Intent("message_delta", {"start": True, "role": event["role"],
                                         "message_id": event["message_id"]})]  # fmt: skip
    if kind == "message_delta":
        return [Intent("message_delta", {k: event[k] for k in ("message_id", "channel", "delta")})]
    if kind in ("tool_start", "tool_update", "tool_end"):
        return [Intent("tool_activity", {"phase": kind[5:], **event})]
    if kind == "input_handled":  # a plugin's command: its reply, if it gave one
        reply = event.get("reply")
        return [Intent("notify", {"level": "info", "text": reply})] if reply else []
    if kind in ("session_start", "agent_start", "agent_end", "turn_start", "turn_end",
                "queue_changed", "settled"):  # fmt: skip
        return [Intent("status", {"event": kind, **event})]
    if kind in ("compaction_start", "compaction_end"):
        return [Intent("progress", {"event": kind, **event})]
    if kind == "retry":
        return [Intent("notify", {"level": "warning", "text": f"retrying: {event['error']}"})]
    if kind == "error":
        return [Intent("notify", {"level": "error", "diagnostic": event["diagnostic"]})]
    return []


def refusal(intent: Intent, frontend: str) -> dict[str, Any]:
    """The event sent back for a question no one here can answer."""
    return {"type": "intent_refused", "intent": intent.kind, "frontend": frontend,
            "reason": "this frontend cannot ask the user"}  # fmt: skip


__all__ = ["KINDS", "UNSUPPORTED", "Capabilities", "Intent", "intents_for", "refusal"]
