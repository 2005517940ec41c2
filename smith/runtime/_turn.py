"""The services of one turn: what the loop gives a step instead of the runtime.

A step that takes a `Turn` (the tool batch, smith.runtime._batch) works through exactly
these and returns what it found; the loop (smith.runtime._loop) decides what to record,
emit and dispatch from it. `Turn.of(rt)` takes them from the runtime (LoopContext) when
the step starts: the generation then (model, tools) is the one the step works with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from smith.diagnostics import Diagnostic
    from smith.effects import EffectJournal, ToolContext, ToolSpec
    from smith.runtime._cost import CostMeter
    from smith.runtime._events import Event
    from smith.runtime._generation import Generation
    from smith.runtime._limits import Limits
    from smith.runtime._loopctx import LoopContext
    from smith.runtime._runner import ToolRunner
    from smith.runtime._secrets import SecretProxy
    from smith.session import Session
    from smith.ui import ToolUi
    from smith.vcs import FileHistory


@dataclass(frozen=True, slots=True)
class Turn:
    """What one turn's steps work through."""

    number: int  # the turn (1-based) within its prompt; what effects record as their cause
    gen: Generation  # model, provider, tools: as published when the step started
    session: Session  # where results are recorded (a branch cursor for a child runtime)
    context: ToolContext  # confinement, limits, environment of the tools
    secrets: SecretProxy  # what is redacted from what is recorded, sent and shown
    journal: EffectJournal
    history: FileHistory | None  # snapshots around mutating batches; None when off
    limits: Limits
    cost: CostMeter
    emit: Callable[[Event], None]
    error: Callable[[Diagnostic], None]
    # ToolContext.ui for a call of a tool: what it shows or asks goes out in the name of
    # the plugin that contributed the tool.
    port: Callable[[ToolContext, ToolSpec], ToolUi]

    _runner: ToolRunner | None = field(default=None, repr=False)  # made once, when first asked

    @property
    def runner(self) -> ToolRunner:
        """The one path each call runs through (smith.runtime._runner), over the
        services above: journal, secrets, limits, file history, errors. Made when a
        step first runs a call (a response that calls no tool needs none)."""
        if self._runner is None:
            from smith.runtime._runner import ToolRunner

            made = ToolRunner(self.journal, self.secrets, self.limits, history=self.history,
                              warn=self.error)  # fmt: skip
            object.__setattr__(self, "_runner", made)  # frozen, but this is made on demand
            return made
        return self._runner

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.gen.tools)

    @classmethod
    def of(cls, rt: LoopContext) -> Turn:
        """The services of the runtime's current turn."""

        def port(ctx: ToolContext, spec: ToolSpec) -> ToolUi:
            from smith.runtime._intents import ToolPort

            origin = next((p.name for p in rt.plugins if spec in p.tools), spec.name)
            return ToolPort(rt, ctx, origin)

        return cls(rt.turn, rt.current, rt.session, rt.context, rt.secrets, rt.journal,
                   rt.history, rt.limits, rt.cost, rt.emit, rt.error, port)  # fmt: skip
