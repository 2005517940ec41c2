"""The `tool_call` review of calls made outside a turn by a program (MCP's client).

A turn reviews its calls in smith.runtime._hooks (`review_calls`, batch by batch, each
call by `review_call`). A call the tool host runs for a program is reviewed by that same
`review_call`, with a `HostReview` in the place of the loop: the same handler invocation
(each in a thread of its own, under Limits.handler_deadline, its questions outside it),
the same rules (a handler that fails, passes its deadline or returns what tool_call does
not take denies; a plugin not ready denies; any deny wins; two different rewrites are a
conflict and the call does not run; a rewrite is validated again and masked), and the
same result for a call that does not run (`refused`: an error, `mutation: not-applied`,
`denied: {plugin, reason}`). What differs is who is asked: each caller gives its own
`Caller` (MCP's refuses every question: nobody there can answer).

The user's own direct actions, `!command` and `smith tools run`, are not reviewed (the
user is the one deciding): they pass `review=None` (smith.runtime._runner).

    review = host.review(caller)                 # one per caller (ToolHost.review)
    outcome = host.run(spec, args, cause={"mcp": call_id}, review=review)
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from smith.config import Config
    from smith.diagnostics import Diagnostic
    from smith.effects import ToolContext, ToolFacts, ToolSpec
    from smith.runtime._limits import Limits
    from smith.runtime._pluginstate import PluginState
    from smith.runtime._secrets import SecretProxy
    from smith.runtime._toolsets import ToolSets
    from smith.sdk import Plugin, RuntimeView
    from smith.ui import Asked, Detail, Reply, Shown


class Readiness(Protocol):
    def not_ready(self, plugin: Plugin) -> str | None: ...


class HookSide(Protocol):
    """What a hook's handlers are run against (smith.runtime._hooks): the loop's
    LoopContext in a turn, a HostReview outside one."""

    @property
    def plugins(self) -> tuple[Plugin, ...]: ...

    @property
    def lifecycle(self) -> Readiness: ...

    @property
    def limits(self) -> Limits: ...

    @property
    def secrets(self) -> SecretProxy: ...

    @property
    def turn(self) -> int: ...

    def view(self, plugin: Plugin | None = None, gate: Any = None) -> RuntimeView: ...

    def error(self, diagnostic: Diagnostic) -> None: ...

    def post(self, value: Shown, *, origin: str) -> None: ...


class Caller(Protocol):
    """Who made the calls a HostReview reviews: what a handler asks goes to `ask`
    (blocking, from a thread of the review's; a caller that cannot ask refuses), what it
    shows (Notify, Progress, Status) to `show`."""

    def ask(self, question: Asked, *, origin: str) -> Reply: ...

    def show(self, value: Shown, *, origin: str) -> None: ...


class NotStarted:
    """Readiness outside a runtime: a plugin with a `start` of its own is not started
    by a tool host (it starts with a runtime), so it is not ready and denies at
    tool_call; one without is ready at once."""

    def not_ready(self, plugin: Plugin) -> str | None:
        return None if plugin.start is None else "it is not started (no runtime runs here)"


class HostReview:
    """The loop's side of `review_call` for one caller of a tool host (see the module)."""

    turn = 0  # no turn: a program's call

    def __init__(
        self,
        plugins: tuple[Plugin, ...],
        settings: Callable[[Plugin], Mapping[str, object]],
        *,
        tools: Mapping[str, ToolSpec],
        context: ToolContext,
        session_id: str,
        states: PluginState | None,
        tool_sets: ToolSets | None,
        limits: Limits,
        secrets: SecretProxy,
        caller: Caller,
        warn: Callable[[Diagnostic], None],
        readiness: Readiness | None = None,
        config: Config | None = None,
    ) -> None:
        self.plugins = plugins
        self.settings = settings
        self.tools = tools
        self.context = context
        self.session_id = session_id
        self.states = states
        self.tool_sets = tool_sets
        self.limits = limits
        self.secrets = secrets
        self.caller = caller
        self.config = config
        self.warn = warn
        self.lifecycle: Readiness = readiness or NotStarted()

    @property
    def handled(self) -> bool:
        """Whether any plugin reviews calls (none: nothing is done per call)."""
        return any("tool_call" in p.handlers for p in self.plugins)

    def error(self, diagnostic: Diagnostic) -> None:
        self.warn(diagnostic)

    def post(self, value: Shown, *, origin: str) -> None:
        from smith.runtime._intents import undeclared

        refusal = undeclared(self.plugins, value, origin)
        if refusal is not None:
            self.warn(refusal)
            return
        self.caller.show(value, origin=origin)

    def view(self, plugin: Plugin | None = None, gate: Any = None) -> RuntimeView:
        from types import MappingProxyType

        from smith.runtime._view import Keeper, View

        name = plugin.name if plugin is not None else ""
        settings = MappingProxyType(dict(self.settings(plugin)) if plugin is not None else {})
        owned = frozenset(plugin.settings) if plugin is not None else frozenset()
        return View(0, "", "off", "", tuple(self.tools), 0, settings, self.session_id,
                    _Asker(self.caller, name, gate), Keeper(name, owned, None),
                    _Preview(self.tools, self.context), self.states, self.tool_sets,
                    self.config, self.context)  # fmt: skip

    def review(
        self, spec: ToolSpec, args: object, call_id: str
    ) -> tuple[object, str | None, Result | None]:
        """What the call runs with: its arguments (a plugin's rewrite, validated again),
        the plugin that rewrote them (None: nobody), and None; or, for a call that does
        not run, the result it gets (`refused`, as a turn's). Blocking: in the caller's
        thread, which runs no event loop."""
        from smith.runtime._callreview import review_call

        if not self.handled:
            return args, None, None
        call = {"id": call_id, "name": spec.name,
                "arguments": args if isinstance(args, dict) else {}}  # fmt: skip
        reviewed, result = asyncio.run(review_call(self, call, spec))
        if result is not None:
            result.pop("interrupt", None)  # no turn to end: the call is denied
            return args, None, result
        if "rewritten" not in reviewed:
            return args, None, None
        return reviewed["arguments"], str(reviewed["rewritten"]), None


Result = dict[str, Any]


class _Asker:
    """RuntimeView.ask of a handler the host runs: from the handler's thread, the
    question goes to the review's loop, which waits for the caller's answer in a worker
    thread, its deadline paused meanwhile (the gate), as a turn's HandlerAsker does."""

    def __init__(self, caller: Caller, origin: str, gate: Any) -> None:
        self.caller = caller
        self.origin = origin
        self.gate = gate
        self.loop = asyncio.get_running_loop()  # made on the review's loop

    async def __call__(self, question: Asked) -> Reply:
        future = asyncio.run_coroutine_threadsafe(self._asked(question), self.loop)
        return await asyncio.wrap_future(future)

    async def _asked(self, question: Asked) -> Reply:
        if self.gate is not None:
            self.gate.begin()
        try:
            return await asyncio.to_thread(self.caller.ask, question, origin=self.origin)
        finally:
            if self.gate is not None:
                self.gate.end()


class _Preview:
    """RuntimeView.preview and RuntimeView.tool over a host's tools."""

    def __init__(self, tools: Mapping[str, ToolSpec], context: ToolContext) -> None:
        self.tools = tools
        self.context = context

    def facts(self, name: str) -> ToolFacts | None:
        spec = self.tools.get(name)
        return spec.facts if spec is not None else None

    def __call__(self, name: str, arguments: Mapping[str, object]) -> Detail | None:
        from smith.runtime._view import preview_detail

        return preview_detail(self.tools.get(name), self.context, name, arguments)


__all__ = ["Caller", "HookSide", "HostReview", "NotStarted", "Readiness"]
