"""The durable effect boundary: an intent before every host effect, a completion after.

    effect = journal.begin("write", {"path": "a.txt", ...}, cause={"tool_call": "call_1"})
    ... run it ...
    journal.finish(effect, outcome="ok", mutation="applied", output={...})

Both records are session entries (kinds `effect_intent` and `effect_completion`, paired
by the effect id) appended with fsync: an intent is on disk before the effect starts, and
if it cannot be written the effect does not run. A completion records the outcome and
the mutation state: applied, not-applied or unknown. An intent with no completion (the
process died, the completion could not be written) is unknown: `reconcile` records it as
such on resume and it is never retried. Inputs and outputs are bounded, and registered
secrets are replaced before anything is recorded.
"""

from __future__ import annotations

from smith.diagnostics import DiagnosticKind, scrub
from smith.effects._leftovers import end_leftover_processes
from smith.session._session import new_id

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.session import Session

INTENT = "effect_intent"
COMPLETION = "effect_completion"
PROGRESS = "effect_progress"  # what is known while it runs (the processes it started)
MUTATIONS = ("applied", "not-applied", "unknown")
OUTCOMES = ("ok", "error", "cancelled", "unknown")
MAX_TEXT = 256 * 1024  # per string in a recorded input or output

INTENT_FAILED = DiagnosticKind(
    "effect.intent-failed",
    what="the {name} effect was not run: its intent could not be recorded ({reason})",
    why="smith runs nothing it has not first recorded durably, so that a crash can never "
    "hide an effect",
    fix="free disk space or fix the session file's permissions, then try again",
)
COMPLETION_FAILED = DiagnosticKind(
    "effect.completion-failed",
    what="the {name} effect ran, but its result could not be recorded ({reason}); its "
    "mutation state is {mutation}",
    why="the session is the durable record of what happened, and it could not be written",
    fix="do not trust the session's view of this effect: check the files it touched "
    "({summary}), free disk space or fix permissions, then resume the session",
)


def bounded(value: object, limit: int = MAX_TEXT) -> object:
    """`value` with secrets replaced and long strings cut (with a marker of the size)."""
    if isinstance(value, str):
        text = scrub(value)
        if len(text) > limit:
            return f"{text[:limit]}\n[... cut: {len(text)} characters in all]"
        return text
    if isinstance(value, dict):
        return {str(k): bounded(v, limit) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [bounded(v, limit) for v in value]
    return value


class Effect:
    """An effect whose intent is recorded."""

    __slots__ = ("cause", "id", "mutating", "name")

    def __init__(self, id: str, name: str, mutating: bool, cause: dict[str, object]) -> None:
        self.id = id
        self.name = name
        self.mutating = mutating
        self.cause = cause

    def __repr__(self) -> str:
        return f"<Effect {self.id} {self.name}>"


class JournalError(Exception):
    """Raised with the diagnostic when the journal itself cannot be written."""

    def __init__(self, diagnostic: object, mutation: str) -> None:
        from smith.diagnostics import Diagnostic, SmithError

        assert isinstance(diagnostic, Diagnostic)
        super().__init__(diagnostic.headline())
        self.error = SmithError(diagnostic)
        self.mutation = mutation


class EffectJournal:
    """Records effects in a session. `generation` is the plugin generation in force."""

    def __init__(self, session: Session, *, generation: int = 0) -> None:
        self.session = session
        self.generation = generation

    def begin(
        self,
        name: str,
        input: dict[str, object],
        *,
        kind: str = "tool",
        mutating: bool = True,
        cause: dict[str, object] | None = None,
    ) -> Effect:
        effect = Effect(f"fx-{new_id(6)}", name, mutating, dict(cause or {}))
        record = {
            "effect": effect.id,
            "kind": kind,
            "name": name,
            "mutating": mutating,
            "cause": effect.cause,
            "generation": self.generation,
            "input": bounded(input),
        }
        try:
            self.session.append(INTENT, record, pair=effect.id, durable=True)
        except (OSError, ValueError) as exc:
            raise JournalError(INTENT_FAILED(name=name, reason=str(exc)), "not-applied") from exc
        return effect

    def finish(
        self,
        effect: Effect,
        *,
        outcome: str,
        mutation: str,
        output: dict[str, object],
        summary: str = "",
    ) -> None:
        assert outcome in OUTCOMES and mutation in MUTATIONS, (outcome, mutation)
        record = {
            "effect": effect.id,
            "outcome": outcome,
            "mutation": mutation,
            "output": bounded(output),
        }
        try:
            self.session.append(COMPLETION, record, pair=effect.id, durable=True)
        except (OSError, ValueError) as exc:
            diagnostic = COMPLETION_FAILED(
                name=effect.name, reason=str(exc), mutation=mutation, summary=summary or effect.name
            )
            raise JournalError(diagnostic, mutation) from exc

    def progress(self, effect: Effect, record: dict[str, object]) -> None:
        """Record, durably, what is known of a running effect: the processes it started
        (`processes`), so that they can be ended if the effect is found unfinished."""
        content = {"effect": effect.id, **record}
        self.session.append(PROGRESS, bounded(content), pair=effect.id, durable=True)

    def pending(self) -> list[str]:
        """Ids of effects with an intent and no completion, read from the records alone."""
        open_: dict[str, None] = {}
        for entry in self.session.entries():
            kind = entry.kind
            if kind == INTENT and entry.pair:
                open_[entry.pair] = None
            elif kind == COMPLETION and entry.pair:
                open_.pop(entry.pair, None)
        return list(open_)

    def reconcile(self) -> list[dict[str, object]]:
        """Record every unfinished effect as unknown (never re-run); return their intents.

        An effect that could not change anything (its intent says not mutating) is
        recorded as not-applied rather than unknown.
        """
        pending = set(self.pending())
        intents = [
            e.content for e in self.session.entries() if e.kind == INTENT and e.pair in pending
        ]
        found = []
        for intent in intents:
            assert isinstance(intent, dict)
            mutation = "unknown" if intent.get("mutating", True) else "not-applied"
            self.session.append(
                COMPLETION,
                {
                    "effect": intent["effect"],
                    "outcome": "unknown",
                    "mutation": mutation,
                    "output": {
                        "note": "no completion was recorded (the process stopped or "
                        "could not record it); this effect is not retried"
                    },
                    "recovered": True,
                },
                pair=str(intent["effect"]),
                durable=True,
            )
            found.append(intent)
        end_leftover_processes(self.session, found)
        answer_lost_calls(self.session)
        return found


def lost_result(
    call_id: str, name: str, started: bool, completion: dict[str, object] | None = None
) -> dict[str, object]:
    """The tool result recorded for a call whose own result was lost, so every later
    request pairs each call with a result (vendors refuse a request that does not). With
    the call's `completion` (its effect ended and said so before the result could be
    recorded) the result is the recorded one, marked recovered; otherwise an error whose
    outcome is unknown, saying what is known."""
    if completion is not None and not completion.get("recovered"):
        return _recovered_result(call_id, name, completion)
    known = (
        "it was started (its effect intent is recorded) but no completion was recorded, so "
        "whether it changed anything is not known; check before relying on it"
        if started
        else "it did not start (no effect intent is recorded)"
    )
    return {
        "role": "tool_result",
        "tool_call_id": call_id,
        "tool_name": name,
        "content": [
            {
                "type": "text",
                "text": f"outcome unknown: the result of this {name} call was lost (smith "
                f"stopped, was interrupted or could not record it); {known}.",
            }
        ],
        "is_error": True,
        "outcome": "unknown",
        "details": {"recovered": True},
    }


def _recovered_result(call_id: str, name: str, completion: dict[str, object]) -> dict[str, object]:
    """The result of a call whose effect completion is recorded, from that record."""
    output = completion.get("output")
    output = output if isinstance(output, dict) else {}
    outcome = str(completion.get("outcome", "unknown"))
    mutation = str(completion.get("mutation", "unknown"))
    said = output.get("text", output.get("note", output.get("error", "")))
    details = output.get("details")
    ok = outcome == "ok" and output.get("ok", True) is True
    return {
        "role": "tool_result",
        "tool_call_id": call_id,
        "tool_name": name,
        "content": [
            {
                "type": "text",
                "text": f"[this {name} call ended ({outcome}, its change {mutation}) but smith "
                "stopped before recording its result; this is the result its effect record "
                f"holds]\n{said}",
            }
        ],
        "is_error": not ok,
        "outcome": outcome,
        "details": {**(details if isinstance(details, dict) else {}), "recovered": True},
    }


def answer_lost_calls(session: Session) -> int:
    """Record a result for every tool call on the selected branch that has none (a kill
    -9, an abort or a crash between the call and its result); return how many. A call is
    answered only by a result after it (a server that numbers calls gives every turn a
    call_1), and one whose effect recorded its completion gets the recorded result."""
    open_: dict[str, list[str | None]] = {}  # call id -> [name, its effect's id]
    lost: list[tuple[str, str, str | None]] = []  # (call id, name, effect id)
    completions: dict[str, dict[str, object]] = {}
    for entry in session.branch():
        kind = entry.kind
        if kind == INTENT and open_ and entry.pair:
            cause = entry.content.get("cause") if isinstance(entry.content, dict) else None
            call = open_.get(str(cause.get("tool_call"))) if isinstance(cause, dict) else None
            if call is not None:
                call[1] = entry.pair
            continue
        if kind == COMPLETION and entry.pair and any(c[1] == entry.pair for c in open_.values()):
            if isinstance(entry.content, dict):
                completions[entry.pair] = entry.content
            continue
        message = entry.content if kind == "message" else None
        if not isinstance(message, dict):
            continue
        if message.get("role") == "tool_result":
            open_.pop(str(message.get("tool_call_id")), None)
        elif message.get("role") == "assistant":
            for part in message.get("content") or ():
                if isinstance(part, dict) and part.get("type") == "tool_call":
                    cid = str(part.get("id"))
                    if cid in open_:  # the same id again: the earlier call is unanswered
                        lost.append(_lost(cid, open_.pop(cid)))
                    open_[cid] = [str(part.get("name")), None]
    lost += [_lost(cid, call) for cid, call in open_.items()]
    for call_id, name, effect in lost:
        completion = completions.get(effect) if effect is not None else None
        result = lost_result(call_id, name, effect is not None, completion)
        session.append("message", result, pair=call_id)
    return len(lost)


def _lost(call_id: str, call: list[str | None]) -> tuple[str, str, str | None]:
    return call_id, str(call[0]), call[1]
