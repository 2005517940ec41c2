"""The tools each plugin offers now: declared on its Plugin, changed at run time.

    sets = ToolSets(plugins)          # each plugin's declared tools (Plugin.tools)
    sets.set("mcp-client", [spec])    # RuntimeView.set_tools: its whole set, replaced
    sets.tools(), sets.origins()      # every plugin's, in plugin order; tool -> plugin
    LiveTools(builtin, sets)          # a tool host's tools, read anew at each lookup
    sets.within({"read", "task"})     # a child runtime's view: only the tools it names

One `ToolSets` belongs to an assembly (smith.runtime.build): its runtimes and tool hosts
share it, so what a plugin sets is what the next model request offers (a runtime
publishes the change as a new generation at its next safe point: smith.runtime._lifecycle)
and what the tool host serves (MCP's tools/list, `smith tools list` and `tools run`) at
once. Set from any thread (a handler's, a start task's): the sets are guarded by a lock,
and `version` counts the changes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from smith.effects import ToolSpec
    from smith.sdk import Plugin


class ToolSets:
    def __init__(self, plugins: Iterable[Plugin] = (), *, builtin: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._sets: dict[str, tuple[ToolSpec, ...]] = {}
        self._version = 0  # one more at each change
        # The built-in tools' names: a set naming one would be shadowed by it everywhere.
        self.builtin = frozenset(builtin)
        self.include(plugins)

    def include(self, plugins: Iterable[Plugin]) -> None:
        """Add the declared tools of the plugins not already here (a caller's own)."""
        with self._lock:
            for plugin in plugins:
                self._sets.setdefault(plugin.name, tuple(plugin.tools))

    def set(self, plugin: str, tools: Sequence[ToolSpec]) -> None:
        """Make `tools` the whole set `plugin` offers (an empty one removes them all).
        ValueError for two tools of one name, or a name another plugin's tool or a
        built-in tool has."""
        from smith.effects import ToolSpec

        given = tuple(tools)
        if not all(isinstance(t, ToolSpec) for t in given):
            raise TypeError("set_tools takes smith.effects.ToolSpec values")
        names = [t.name for t in given]
        if len(set(names)) != len(names):
            raise ValueError(f"two tools of one name in {', '.join(names)}")
        if shadowed := sorted(self.builtin.intersection(names)):
            raise ValueError(f"smith's own {', '.join(shadowed)} tool has that name")
        with self._lock:
            for other, specs in self._sets.items():
                taken = {t.name for t in specs} & set(names)
                if other != plugin and taken:
                    raise ValueError(
                        f"the {other} plugin offers a tool named {', '.join(sorted(taken))}"
                    )
            if self._sets.get(plugin) != given:
                self._sets[plugin] = given
                self._version += 1

    @property
    def version(self) -> int:
        """How many times a set changed (a runtime publishes a new generation on a change)."""
        return self._version

    def within(self, names: Iterable[str]) -> ToolSets:
        """These sets as a child runtime sees them: only the tools named `names`, read
        live (a tool a plugin offers later appears once named), its changes its parent's."""
        return _Within(self, frozenset(names))

    def of(self, plugin: str) -> tuple[ToolSpec, ...]:
        with self._lock:
            return self._sets.get(plugin, ())

    def tools(self) -> tuple[ToolSpec, ...]:
        """Every plugin's tools, in plugin order."""
        with self._lock:
            return tuple(t for specs in self._sets.values() for t in specs)

    def origins(self) -> dict[str, str]:
        """The plugin offering each tool, by tool name."""
        with self._lock:
            return {t.name: p for p, specs in self._sets.items() for t in specs}


class _Within(ToolSets):
    """A view of `whole` offering only the tools named `names` (ToolSets.within): it
    includes and sets nothing of its own (a child's plugins are its parent's)."""

    def __init__(self, whole: ToolSets, names: frozenset[str]) -> None:
        super().__init__(builtin=whole.builtin)
        self._whole = whole
        self._names = names

    def include(self, plugins: Iterable[Plugin]) -> None:
        pass  # the parent's runtime included them

    def set(self, plugin: str, tools: Sequence[ToolSpec]) -> None:
        self._whole.set(plugin, tools)

    @property
    def version(self) -> int:
        return self._whole.version

    def of(self, plugin: str) -> tuple[ToolSpec, ...]:
        return tuple(t for t in self._whole.of(plugin) if t.name in self._names)

    def tools(self) -> tuple[ToolSpec, ...]:
        return tuple(t for t in self._whole.tools() if t.name in self._names)

    def origins(self) -> dict[str, str]:
        return {n: p for n, p in self._whole.origins().items() if n in self._names}


class LiveTools(Mapping[str, "ToolSpec"]):
    """A tool host's tools by name: `builtin` (they win a name) and what the plugins offer
    now, read anew at every lookup, so a host serves a plugin's change at once."""

    __slots__ = ("builtin", "sets")

    def __init__(self, builtin: Mapping[str, ToolSpec], sets: ToolSets) -> None:
        self.builtin = dict(builtin)
        self.sets = sets

    def _now(self) -> dict[str, ToolSpec]:
        plugins = {t.name: t for t in self.sets.tools() if t.name not in self.builtin}
        return {**self.builtin, **plugins}

    def __getitem__(self, name: str) -> ToolSpec:
        return self._now()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._now())

    def __len__(self) -> int:
        return len(self._now())

    def origins(self) -> dict[str, str]:
        return {n: p for n, p in self.sets.origins().items() if n not in self.builtin}


__all__ = ["LiveTools", "ToolSets"]
