"""Running one tool call on the effect boundary.

Arguments are checked against the tool's JSON Schema first: invalid arguments never reach
an effect and come back as an error result the model can correct. Then the intent is
recorded (durably; if that fails the tool does not run), the tool runs, and its
completion is recorded with the outcome and mutation state. A completion that cannot be
recorded is terminal: JournalError carries the diagnostic with the best known state.
"""

from __future__ import annotations

import functools

from smith import memory
from smith.effects._journal import EffectJournal, JournalError, unfinished
from smith.effects._tool import ToolCancelled, ToolContext, ToolError, ToolResult, ToolSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["JournalError", "Outcome", "run_tool", "validate"]


class Outcome:
    """A tool call's result and, when it ran, its effect record."""

    __slots__ = ("effect_id", "outcome", "result")

    def __init__(self, result: ToolResult, effect_id: str | None, outcome: str) -> None:
        self.result = result
        self.effect_id = effect_id
        self.outcome = outcome

    def to_dict(self) -> dict[str, object]:
        effect = (
            None
            if self.effect_id is None
            else {"id": self.effect_id, "outcome": self.outcome, "mutation": self.result.mutation}
        )
        return {"result": self.result.to_dict(), "effect": effect}


def _unencodable(value: object, where: str = "") -> list[str]:
    """Strings that cannot be stored (lone surrogates from a broken JSON escape)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return [
                f"{where or 'the arguments'}: contains characters that are not valid "
                "Unicode (a lone surrogate)"
            ]
        return []
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _unencodable(v, f"{where}/{k}".lstrip("/"))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _unencodable(v, f"{where}/{i}")]
    return []


@functools.cache
def _validator(spec: ToolSpec) -> Callable[[object], list[str]]:
    # jsonschema's messages; jsonschema itself only for schemas past a few keywords
    from smith.effects._validate import compiled

    return compiled(spec.parameters)


def validate(spec: ToolSpec, args: object) -> list[str]:
    """Readable problems with `args` for `spec`, or []."""
    return _unencodable(args) + _validator(spec)(args)


def run_tool(
    journal: EffectJournal,
    spec: ToolSpec,
    args: object,
    ctx: ToolContext,
    *,
    cause: dict[str, object] | None = None,
    prepare: Callable[[dict[str, object]], dict[str, object]] | None = None,
) -> Outcome:
    """Validate, record the intent, run, record the completion. `prepare` turns the
    recorded arguments into the ones the tool runs with (the secret proxy restores
    placeholders there), so what is recorded never holds more than what was validated.
    With memory accounting on, the call is a kernel scope of its own (smith.memory)."""
    with memory.scope("kernel", spec.name):
        return _run_tool(journal, spec, args, ctx, cause, prepare)


def _run_tool(
    journal: EffectJournal,
    spec: ToolSpec,
    args: object,
    ctx: ToolContext,
    cause: dict[str, object] | None,
    prepare: Callable[[dict[str, object]], dict[str, object]] | None,
) -> Outcome:
    problems = validate(spec, args)
    if problems:
        text = f"invalid arguments for {spec.name}: " + "; ".join(problems)
        return Outcome(ToolResult(text, ok=False), None, "error")
    assert isinstance(args, dict)
    effect = journal.begin(spec.name, args, mutating=spec.mutating, cause=cause)
    ctx.intent = effect.entry  # where a child agent this call starts forks (spawn_child)
    ctx.generation = journal.generation  # what effects the call causes are journaled with
    ctx.started = lambda identity: journal.progress(effect, {"processes": identity})
    try:
        result = spec.run(ctx, prepare(args) if prepare else args)
        outcome = "ok" if result.ok else "error"
    except ToolError as exc:
        result = ToolResult(exc.message, details=exc.details, mutation=exc.mutation, ok=False)
        outcome = "error"
    except ToolCancelled as exc:
        mutation = exc.mutation if spec.mutating else "not-applied"
        note = "[cancelled: the call was aborted]"
        text = f"{exc.text.rstrip(chr(10))}\n{note}" if exc.text.strip() else note
        result = ToolResult(text, details=exc.details, mutation=mutation, ok=False)
        outcome = "cancelled"
    except Exception as exc:
        from smith.diagnostics import SmithError

        if not isinstance(exc, SmithError):
            # Something unexpected while running: whether it changed anything is unknown.
            journal.finish(
                effect,
                outcome="error",
                mutation=unfinished(spec.mutating),
                output={"error": f"{type(exc).__name__}: {exc}"},
            )
            raise
        result = ToolResult(exc.diagnostic.what + "; " + exc.diagnostic.fix, ok=False)
        outcome = "error"
    except BaseException:  # interrupted (Ctrl-C, cancellation): record what is known
        journal.finish(
            effect,
            outcome="cancelled",
            mutation=unfinished(spec.mutating),
            output={"note": "interrupted while running"},
        )
        raise
    journal.finish(
        effect,
        outcome=outcome,
        mutation=result.mutation,
        output=result.to_dict(),
        summary=str(args.get("path", spec.name)),
    )
    return Outcome(result, effect.id, outcome)
