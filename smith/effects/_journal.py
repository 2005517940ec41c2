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
from smith.session import new_id, pair_calls

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


def unfinished(mutating: bool) -> str:
    """The one rule for the mutation state of an effect whose end is not known (the tool
    crashed, was interrupted, did not stop in time, or the process died between its
    intent and its completion): unknown when it may change something, not-applied when
    it cannot. Every path that ends a call without knowing its effect uses it: run_tool,
    the tool runner (smith.runtime._runner), reconcile on resume, replay."""
    return "unknown" if mutating else "not-applied"


def bounded(value: object, limit: int = MAX_TEXT) -> object:
    """`value` with secrets replaced and long strings cut (with a marker of the size)."""
    if isinstance(value, str):
        text = scrub(value)
        if len(text) > limit:
            return f"{text[:limit]}\n[... cut: {len(text)} characters in all]"
        return text
    if isinstance(value, dict):
        return {scrub(str(k)): bounded(v, limit) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [bounded(v, limit) for v in value]
    return value


class Effect:
    """An effect whose intent is recorded."""

    __slots__ = ("cause", "entry", "id", "mutating", "name")

    def __init__(self, id: str, name: str, mutating: bool, cause: dict[str, object]) -> None:
        self.id = id
        self.name = name
        self.mutating = mutating
        self.cause = cause
        self.entry: str | None = None  # the id of its effect_intent entry, once recorded

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
            entry = self.session.append(INTENT, record, pair=effect.id, durable=True)
        except (OSError, ValueError) as exc:
            raise JournalError(INTENT_FAILED(name=name, reason=str(exc)), "not-applied") from exc
        effect.entry = entry.id
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
        records = self.session.records
        open_ = {records.pair(int(i)): None for i in records.of_kind(INTENT)}
        for i in records.of_kind(COMPLETION):
            open_.pop(records.pair(int(i)), None)
        open_.pop(None, None)
        return [str(p) for p in open_]

    def reconcile(self) -> list[dict[str, object]]:
        """Record every unfinished effect as unknown (never re-run); return their intents.

        An effect that could not change anything (its intent says not mutating) is
        recorded as not-applied rather than unknown. Each completion goes on the branch
        its intent is on: at the selection through this journal's session when the
        intent is on the selected branch, else at the end of its own branch (a child
        runtime's: `branch_end`) through a `smith.session.Branch`, written aside, so a
        child's branch reads "this effect's outcome is unknown" and the parent's holds
        none of it. Lost calls are then answered on each such aside branch (those after
        where it leaves the selected one), then on the selected branch, where a call
        whose intent has a child runtime's branch below it names that branch in its
        result's details (`branch`: {at, leaf}), as a finished task call's does.
        """
        pending = set(self.pending())
        intents = [e for e in self.session.entries(INTENT) if e.pair in pending]
        found = []
        aside: dict[str, Session] = {}  # a branch end -> the cursor appending there
        selected: set[int] | None = None
        for entry in intents:
            intent = entry.content
            assert isinstance(intent, dict)
            if selected is None:
                selected = set(self.session.branch_indices().tolist())
            cursor = self.session
            if entry.index not in selected:
                end = branch_end(self.session, entry.index)
                cursor = aside.pop(end) if end in aside else _aside_cursor(self.session, end)
            mutation = unfinished(bool(intent.get("mutating", True)))
            cursor.append(
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
            if cursor is not self.session and cursor.leaf is not None:
                aside[cursor.leaf] = cursor
            found.append(intent)
        end_leftover_processes(self.session, found)
        for leaf in aside:  # first: a sub-agent's call answered here names where it ends
            answer_lost_calls(_unshared(self.session, leaf))
        answer_lost_calls(self.session)
        return found


# What a cursor writes while the calls of its batch run (their intents, progress,
# completions, file-history snapshots, questions, results): below an effect_intent entry,
# anything else starts a child runtime's branch forked there (its environment, prompt).
_CONTINUES = frozenset((INTENT, PROGRESS, COMPLETION, "vcs", "question"))


def branch_end(session: Session, index: int) -> str:
    """The id of the last entry of the branch the entry at record `index` was written on
    (its cursor's leaf when the process stopped): from it, down through what that
    cursor wrote after it, leaving out child branches forked at one of its intents. Reads
    the records after `index` (descendants are always later records)."""
    records = session.records
    below: dict[int, list[int]] = {}
    for i in range(index + 1, len(records)):
        if not records.shadowed(i):
            below.setdefault(records.parent(i), []).append(i)
    at = index
    while kids := below.get(at):
        own = [k for k in kids if _continues(session, k)]
        if own:
            at = own[0]
        elif records.kind(at) != INTENT:
            at = kids[0]
        else:
            break  # only child branches below this intent: the cursor ended here
    return records.id(at)


def child_branch(session: Session, index: int) -> dict[str, str] | None:
    """The branch of a child runtime forked at the effect intent at record `index` (a
    sub-agent's task call: smith.runtime._children), as a task result names it
    (`{"at": the intent, "leaf": where the child's cursor ended}`); None without one."""
    records = session.records
    for i in range(index + 1, len(records)):
        if records.parent(i) == index and not records.shadowed(i) and not _continues(session, i):
            return {"at": records.id(index), "leaf": branch_end(session, i)}
    return None


def _continues(session: Session, index: int) -> bool:
    kind = session.records.kind(index)
    if kind == "message":  # a tool result (paired by its call); a prompt is not
        return session.records.pair(index) is not None
    return kind in _CONTINUES


def _aside_cursor(session: Session, end: str) -> Session:
    from smith.session import Branch

    return Branch(session, end)


def _unshared(session: Session, leaf: str) -> Session:
    """A cursor at `leaf` reading only the entries after the last one it shares with
    the selected branch (an apart Branch forked there)."""
    from smith.session import Branch

    records = session.records
    selected = set(session.branch_indices().tolist())
    at = session.entry(leaf).index
    while at >= 0 and at not in selected:
        at = records.parent(at)
    if at < 0:
        return Branch(session, leaf)
    cursor = Branch(session, records.id(at), apart=True)
    cursor.select(leaf)
    return cursor


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
    call_1), and one whose effect recorded its completion gets the recorded result.

    Read from the records' pairing ids (smith.session.calls_pair), so a long session
    costs its records, not its content: only what concerns a lost call is decoded (its
    message, for the names; the effects recorded after it). Calls of messages recorded
    without their pairing ids are paired when a request is built (smith.runtime's
    context) instead."""
    records = session.records
    messages = records.of_kind("message", session.branch_indices())
    open_: dict[str, int] = {}  # call id -> index of the message that made the call
    lost: list[tuple[str, int]] = []
    for i, pair in zip(messages.tolist(), records.pairs(messages), strict=True):
        if pair is None:
            continue
        ids = pair_calls(pair)
        if ids is None:
            open_.pop(pair, None)  # a result answers the latest call with its id
            continue
        for cid in ids:
            if cid in open_:  # the same id again: the earlier call is unanswered
                lost.append((cid, open_.pop(cid)))
            open_[cid] = i
    lost += list(open_.items())
    if not lost:
        return 0
    # Record indices grow along a branch (a child is appended after its parent), so what
    # was recorded after the earliest lost call is what has a greater index.
    since = min(at for _, at in lost)
    effects: dict[tuple[str, int], str] = {}  # (call id, its message) -> the effect's id
    intents: dict[tuple[str, int], int] = {}  # -> its intent's record index
    for entry in session.branch(kind=INTENT):
        content = entry.content if entry.index > since and entry.pair else None
        cause = content.get("cause") if isinstance(content, dict) else None
        if isinstance(cause, dict):
            cid = str(cause.get("tool_call"))
            calls = [at for c, at in lost if c == cid and at < entry.index]
            if calls:
                effects[(cid, max(calls))] = str(entry.pair)
                intents[(cid, max(calls))] = entry.index
    completions: dict[str, dict[str, object]] = {}
    wanted = set(effects.values())
    for entry in session.branch(kind=COMPLETION):
        if entry.index > since and entry.pair in wanted and isinstance(entry.content, dict):
            completions[str(entry.pair)] = entry.content
    for call_id, at in sorted(lost, key=lambda c: c[1]):
        message = session.at(at).content
        parts = message.get("content") if isinstance(message, dict) else None
        name = next(
            (
                str(p.get("name"))
                for p in parts or ()
                if isinstance(p, dict) and p.get("type") == "tool_call" and p.get("id") == call_id
            ),
            "tool",
        )
        effect = effects.get((call_id, at))
        completion = completions.get(effect) if effect is not None else None
        result = lost_result(call_id, name, effect is not None, completion)
        branch = child_branch(session, intents[(call_id, at)]) if effect is not None else None
        if branch is not None:  # a sub-agent's call: its result names the child's branch
            details = result.get("details")
            result["details"] = {**(details if isinstance(details, dict) else {}), "branch": branch}
        session.append("message", result, pair=call_id)
    return len(lost)
