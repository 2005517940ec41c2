"""What a branch's records say about one call, one effect and one provider round, for
the timeline (smith.frontends.replay._timeline): an effect's intent and completion, a
round's calls and how each ended, and the `tool_end` results and stop reasons a live
run showed for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smith.session import Entry

UNKNOWN_TEXT = "[no completion was recorded: what this call did is unknown; it is not re-run]"


class Effect:
    """One recorded effect: its intent and, when it was recorded, its completion."""

    __slots__ = ("call", "cause", "completion", "ended", "entry", "id", "input", "kind",
                 "name", "ts")  # fmt: skip

    def __init__(self, entry: Entry, content: dict[str, Any]) -> None:
        self.id = str(content.get("effect", entry.pair or entry.id))
        self.entry = entry.id  # the intent's entry: where the workspace state is looked up
        self.ts = entry.ts
        self.name = str(content.get("name", ""))
        self.kind = str(content.get("kind", "tool"))
        self.input: dict[str, Any] = as_dict(content.get("input"))
        self.cause: dict[str, Any] = as_dict(content.get("cause"))
        self.completion: dict[str, Any] | None = None
        self.ended: int | None = None  # when its completion was recorded (ms)
        self.call: str | None = None  # the tool call it ran for, if any

    @property
    def complete(self) -> bool:
        """It finished and said how (not cancelled part-way, not recovered as unknown)."""
        c = self.completion
        return c is not None and c.get("outcome") not in ("unknown", "cancelled")


class Call:
    __slots__ = ("effect", "ended", "id", "name", "recorded", "result")

    def __init__(self, part: dict[str, Any]) -> None:
        self.id = str(part.get("id", ""))
        self.name = str(part.get("name", ""))
        self.effect: Effect | None = None
        self.result: dict[str, Any] | None = None  # its tool_result message (looked ahead)
        self.ended = False  # its tool_end was emitted
        self.recorded = False  # its tool_result entry has been passed


class Round:
    """One provider round: its assistant message and the calls it asked for."""

    __slots__ = ("begun", "calls", "message", "number")

    def __init__(self, number: int, message: dict[str, Any]) -> None:
        self.number = number
        self.message = message
        self.begun = False  # its tool batch has recorded something (a snapshot aside)
        self.calls: dict[str, Call] = {}
        parts = message.get("content")
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict) and part.get("type") == "tool_call":
                call = Call(part)
                self.calls[call.id] = call


def as_dict(value: object) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def unknown_end(call_id: str, name: str) -> dict[str, Any]:
    result = {
        "text": UNKNOWN_TEXT,
        "details": {},
        "ok": False,
        "outcome": "unknown",
        "mutation": "unknown",
    }
    return {
        "tool_call_id": call_id,
        "name": name,
        "result": result,
        "outcome": "unknown",
        "is_error": True,
    }


def shown_id(effect: Effect) -> str:
    """The call id a standalone effect's events had live: the user's own command's
    (`!command`, cause `shell`), else the effect's own id."""
    shell = effect.cause.get("shell")
    return shell if isinstance(shell, str) else effect.id


def marked(effect: Effect) -> dict[str, Any]:
    """The `shell` marker of the user's own command's events, as live; else nothing."""
    if not isinstance(effect.cause.get("shell"), str):
        return {}
    return {"shell": {"context": effect.cause.get("context") is not False}}


def result_of(completion: dict[str, Any]) -> dict[str, Any]:
    """A tool result as the live `tool_end` had it, from an effect's completion record."""
    output = as_dict(completion.get("output"))
    return {
        "text": str(output.get("text", output.get("error", output.get("note", "")))),
        "details": as_dict(output.get("details")),
        "ok": output.get("ok", completion.get("outcome") == "ok") is True,
        "outcome": str(completion.get("outcome", "unknown")),
        "mutation": str(completion.get("mutation", "unknown")),
    }


def stop_of(turn: Round | None) -> tuple[str, str | None]:
    """Why a prompt stopped, as far as its last round's records say."""
    if turn is None:
        return "unknown", None
    message = turn.message
    stop = message.get("stop")
    results = [c.result for c in turn.calls.values()]
    if stop == "abort" or any(
        r is not None and r.get("outcome") in ("cancelled", "unknown") for r in results
    ):
        return "abort", None
    if stop == "error":
        error = message.get("error")
        return "error", str(error) if error else None
    if any(
        r is not None and not r.get("is_error") and as_dict(r.get("details")).get("done") is True
        for r in results
    ):
        return "done", None
    if stop == "limit" and not turn.calls:
        return "limit", None
    if stop == "success" and not turn.calls:
        return "end", None
    return "unknown", None
