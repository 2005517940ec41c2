"""What the agent loop sees of its runtime: `LoopContext`, a narrow interface.

The loop and its steps (_loop, _steps, _response, _compaction, _hooks) are written
against this Protocol, not against `Runtime`: mypy holds them to exactly these members,
so the loop cannot reach into the runtime's private state (its task, subscribers, idle
event) and a different host (a sub-agent, a test double) only has to provide this.
`Runtime` provides it; tests/test_architecture.py checks that the loop modules name no
`Runtime`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Mapping

    from smith.diagnostics import Diagnostic, Surface
    from smith.effects import EffectJournal, ToolContext
    from smith.memory import RuntimeScopes
    from smith.providers import Provider
    from smith.runtime._context import ContextCache, ContextPolicy
    from smith.runtime._cost import CostMeter
    from smith.runtime._events import Event
    from smith.runtime._generation import Generation
    from smith.runtime._lifecycle import Lifecycle
    from smith.runtime._limits import Limits
    from smith.runtime._project import ProjectContext
    from smith.runtime._queue import InputQueue
    from smith.runtime._secrets import SecretProxy
    from smith.runtime._templates import Template
    from smith.sdk import Plugin, RuntimeView
    from smith.session import Session
    from smith.ui import Asked, Reply, Shown
    from smith.vcs import FileHistory


class LoopContext(Protocol):
    """The runtime as the agent loop uses it."""

    # What the loop runs over (fixed for the runtime's life).
    session: Session
    surface: Surface  # who asked: named in diagnostics
    context: ToolContext  # confinement, limits, environment of the tools
    secrets: SecretProxy
    limits: Limits
    context_policy: ContextPolicy
    context_cache: ContextCache
    cost: CostMeter
    journal: EffectJournal
    history: FileHistory | None  # snapshots around mutating batches; None when off
    project: ProjectContext | None  # environment and instruction notes; None: none
    queue: InputQueue  # queued steering and follow-up input
    memory: RuntimeScopes
    plugins: tuple[Plugin, ...]
    handled: frozenset[str]  # the event types some plugin handles
    lifecycle: Lifecycle  # which plugins are ready; their tool sets published at safe points
    entries_at_start: int
    templates: Mapping[str, Template]  # prompt templates by name (`/NAME args`)

    # What the loop keeps as it goes.
    turn: int
    last_message: dict[str, Any] | None
    compaction_failed_at: int | None
    session_started: bool

    @property
    def current(self) -> Generation: ...

    @property
    def tool_names(self) -> tuple[str, ...]: ...

    @property
    def abort_reason(self) -> str | None: ...

    def emit(self, ev: Event) -> None: ...

    def error(self, diagnostic: Diagnostic) -> None: ...

    async def dispatch(self, ev: Event) -> bool: ...

    def check_abort(self) -> None: ...

    def abort(self, reason: str = "abort") -> bool: ...

    def take_compact_request(self) -> bool: ...

    @property
    def compact_focus(self) -> str | None: ...

    def view(self, plugin: Plugin | None = None, gate: Any = None) -> RuntimeView: ...

    def post(self, value: Shown, *, origin: str) -> None: ...  # a plugin's Notify/...

    async def ask(self, question: Asked, *, origin: str) -> Reply: ...  # to the frontend

    def resolve(self, model: str) -> tuple[Provider, str]: ...

    def publish(
        self, gen: Generation, *, model_changed: bool = False, thinking_changed: bool = False
    ) -> None: ...
