"""The plugins' lifecycle in one runtime: start, ready, tool set changes, session_end, stop.

    lifecycle = Lifecycle(rt, sets)   # Runtime.__init__ (sets: the assembly's ToolSets)
    lifecycle.not_ready(plugin)   # why its handlers are not called yet (None: ready)
    lifecycle.at_safe_point()     # publish what the plugins' tool sets changed
    await lifecycle.close()       # Runtime.close: session_end, then each plugin's stop

A plugin's `start(view)` runs as a task of its own on the runtime's loop when the runtime
is built (or, built outside a loop, at its first safe point), under START_DEADLINE: the
runtime does not wait for it, so a plugin slow to start never delays the first frame or
the first prompt. Until it returns the plugin is `starting`, then `ready`; one that raises
or passes the deadline is `failed`, with its diagnostic (reported as an `error` event).
Only a ready plugin's handlers are called: at a safe point or the input and tool_result
hooks one that is not ready is passed over; at `tool_call` it denies the call, as a
reviewer that broke does (nothing unreviewed runs). The tools it declares are offered
from the start; the tools it sets (RuntimeView.set_tools, smith.runtime._toolsets) are
published as a new generation at the next safe point. A plugin without `start` is ready
at once. When the runtime closes, the handlers of `session_end` run (the runtime closes
its session: when a frontend switches sessions it closes the runtime of the old one),
then each started plugin's `stop()`, each under STOP_DEADLINE: one past it is abandoned
with a `plugin.stop-abandoned` warning, so closing never hangs on a plugin.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from smith.diagnostics import DiagnosticKind, Source

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from smith.diagnostics import Diagnostic
    from smith.runtime._runtime import Runtime
    from smith.runtime._toolsets import ToolSets
    from smith.sdk import Plugin

log = logging.getLogger("smith.runtime")

START_DEADLINE = 30.0  # seconds a plugin's start may take before it counts as failed
STOP_DEADLINE = 5.0  # seconds a plugin's stop may take before it is abandoned

PLUGIN_START_FAILED = DiagnosticKind(
    "plugin.start-failed",
    what="plugin '{plugin}' failed to start: {reason}",
    why="a plugin's start must return within {deadline} s without raising; until it does "
    "its handlers are not called",
    fix="fix or disable the plugin (plugins.disabled); smith runs on without its handlers",
)
PLUGIN_STOP_ABANDONED = DiagnosticKind(
    "plugin.stop-abandoned",
    what="plugin '{plugin}' did not stop cleanly: {reason}",
    why="closing waits {deadline} s at most for each plugin's stop, so it never hangs on one",
    fix="fix the plugin's stop; what it had not released by then was left as it was",
    severity="warning",
)


@dataclass(frozen=True, slots=True)
class Status:
    """Where a plugin is in its lifecycle: starting, ready, failed (with why), stopped."""

    state: str
    diagnostic: Diagnostic | None = None

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {"status": self.state}
        if self.diagnostic is not None:
            data["diagnostic"] = self.diagnostic.to_dict()
        return data


class Lifecycle:
    def __init__(
        self, rt: Runtime, tool_sets: ToolSets | None = None, parent: Lifecycle | None = None
    ) -> None:
        from smith.runtime._toolsets import ToolSets

        self.rt = rt
        # The tools each plugin offers now: the assembly's sets, shared with its hosts.
        self.tool_sets = tool_sets if tool_sets is not None else ToolSets()
        self.tool_sets.include(rt.plugins)
        self.start_deadline = START_DEADLINE
        self.stop_deadline = STOP_DEADLINE
        # A child runtime's plugins are its parent's, started and stopped by it once: the
        # child reads their state and never starts, stops or ends a session of them.
        self.parent = parent
        self.status: dict[str, Status] = (
            parent.status
            if parent is not None
            else {p.name: Status("ready" if p.start is None else "starting") for p in rt.plugins}
        )
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._begun = parent is not None
        self._closed = False
        self._published = self.tool_sets.version
        # The names of the plugins' tools in the published generation (all, at first).
        self._offered = set(self.tool_sets.origins())
        self.begin()  # the tasks run once the runtime is built

    def begin(self) -> None:
        """Start every plugin that has a start, in the background (once, on a loop)."""
        if self._begun:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # built outside a loop: at the first safe point
        self._begun = True
        for plugin in self.rt.plugins:
            if plugin.start is not None:
                self._tasks[plugin.name] = loop.create_task(self._start(plugin))

    async def _start(self, plugin: Plugin) -> None:
        assert plugin.start is not None
        try:
            started: Awaitable[None] = plugin.start(self.rt.view(plugin))
            task = asyncio.ensure_future(started)
            done, _ = await asyncio.wait({task}, timeout=self.start_deadline)
            if not done:
                task.cancel()
                reason = f"not ready within {self.start_deadline:g} s"
            elif (exc := task.exception()) is None:
                self.status[plugin.name] = Status("ready")
                return
            else:
                reason = f"{type(exc).__name__}: {exc}"
        except asyncio.CancelledError:
            self.status[plugin.name] = Status("stopped")
            raise
        except Exception as exc:  # start was not even a coroutine
            reason = f"{type(exc).__name__}: {exc}"
        failed = PLUGIN_START_FAILED(value=plugin.name, source=Source("plugin", plugin.name),
                                     plugin=plugin.name, reason=reason,
                                     deadline=f"{self.start_deadline:g}")  # fmt: skip
        self.status[plugin.name] = Status("failed", failed)
        self.rt.error(failed)

    def not_ready(self, plugin: Plugin) -> str | None:
        """Why `plugin`'s handlers are not called now; None: it is ready."""
        status = self.status.get(plugin.name)
        if status is None or status.state == "ready":
            return None  # a plugin this runtime did not list (a test's): as before
        return "it is still starting" if status.state == "starting" else f"it is {status.state}"

    def at_safe_point(self) -> None:
        """Start the plugins if that could not be done yet; publish what their tool sets
        changed since the last generation, as a new one."""
        self.begin()
        sets = self.tool_sets
        if sets.version == self._published:
            return
        self._published = sets.version
        current = self.rt.current
        kept = [t for t in current.tools if t.name not in self._offered]
        taken = {t.name for t in kept}
        offered = [t for t in sets.tools() if t.name not in taken]
        self._offered = {t.name for t in offered}
        tools = (*kept, *offered)
        if tools != current.tools:
            self.rt.publish(replace(current, tools=tools))

    async def close(self) -> None:
        """session_end's handlers, then each started plugin's stop (see the module)."""
        if self._closed:
            return
        self._closed = True
        if self.parent is not None:  # a child's: the parent's plugins go on
            return
        from smith.runtime._hooks import dispatch

        if self.rt.session_started:  # handlers only: no event is emitted for it (yet)
            await dispatch(self.rt, {"type": "session_end", "session": self.rt.session.id})
        for name, task in self._tasks.items():
            if not task.done():
                task.cancel()
                self.status[name] = Status("stopped")
        for plugin in self.rt.plugins:
            status = self.status[plugin.name]
            if plugin.stop is not None and status.state in ("ready", "failed"):
                await self._stop(plugin)

    async def _stop(self, plugin: Plugin) -> None:
        assert plugin.stop is not None
        try:
            task = asyncio.ensure_future(plugin.stop())
            done, _ = await asyncio.wait({task}, timeout=self.stop_deadline)
            if done and task.exception() is None:
                self.status[plugin.name] = Status("stopped")
                return
            if not done:
                task.cancel()  # abandoned: not awaited, so one ignoring it holds nothing
                reason = f"it did not return within {self.stop_deadline:g} s"
            else:
                exc = task.exception()
                reason = f"{type(exc).__name__}: {exc}"
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
        warning = PLUGIN_STOP_ABANDONED(value=plugin.name, source=Source("plugin", plugin.name),
                                        plugin=plugin.name, reason=reason,
                                        deadline=f"{self.stop_deadline:g}")  # fmt: skip
        log.warning("%s", warning.render())
        self.status[plugin.name] = Status("stopped", warning)
        self.rt.error(warning)

    def to_dict(self, listed: dict[str, Any]) -> dict[str, Any]:
        """`listed` (PluginList.to_dict) with each running plugin's status."""
        plugins = [
            {**p, **self.status[p["name"]].to_dict()} if p["name"] in self.status else p
            for p in listed["plugins"]
        ]
        return {**listed, "plugins": plugins}


__all__ = ["START_DEADLINE", "STOP_DEADLINE", "Lifecycle", "Status"]
