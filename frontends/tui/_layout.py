"""The app's layout: its regions top to bottom (smith.ui.LAYOUT_REGIONS), as the
layouts the plugins contribute (`Plugin.layouts`, plugin.kdl `layout`) name them and
`tui.layout NAME` picks one (docs/ui.md, "Layouts").

Every region's widgets are composed, whatever the layout: one the layout leaves out is
hidden (the `left-out` class), never removed, so the code that finds a widget by its id
(the status line, the queue, the todo panel) keeps working. The "new output below" line
and the search field belong to the transcript and follow it; the editor's completion
list belongs to the input and stays right above it. `/layout NAME` arranges the running
app again (`Layouts.use`), for this run only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

from smith.diagnostics import Diagnostic, DiagnosticKind, Source, did_you_mean
from smith.ui import LAYOUT_REGIONS, STANDARD_LAYOUT, layout_problem

if TYPE_CHECKING:
    from typing import Any

    from textual.screen import Screen
    from textual.widget import Widget

    from smith.sdk import Plugin

STANDARD = "standard"
# The class of a widget whose region the layout leaves out: the app's CSS hides it, over
# the widget's own `.shown`.
LEFT_OUT = "left-out"

# The ids of each region's widgets, in their order.
REGION_WIDGETS: Mapping[str, tuple[str, ...]] = {
    "transcript": ("transcript", "below", "search"),
    "todo": ("todo",),
    "queue": ("queue",),
    "working": ("working",),
    "input": ("completion", "input"),
    "status": ("status",),
}

UNKNOWN_LAYOUT = DiagnosticKind(
    "config.unknown-layout",
    what="tui.layout is '{name}', which no enabled plugin offers as a layout",
    why="the app arranges its regions by a plugin's layout; the enabled plugins offer {known}",
    fix="{hint}: set tui.layout to one of them (at {where}), or install or enable the "
    "plugin that brings '{name}' (`smith plugins list`); meanwhile the app uses the "
    "standard layout",
    severity="warning",
)
BAD_LAYOUT = DiagnosticKind(
    "plugin.bad-layout",
    what="the layout '{name}' of the plugin {plugin} {problem}",
    why="a layout names the app's regions top to bottom ({regions}), each once, with the "
    "transcript and the input in every one",
    fix="correct the layout in the plugin {plugin} (docs/ui.md, Layouts); the app offers "
    "it only once it is",
    severity="warning",
)
LAYOUT_TWICE = DiagnosticKind(
    "plugin.layout-twice",
    what="the plugin {plugin} brings a layout '{name}', which the plugin {first} brings already",
    why="tui.layout picks a layout by its name, so the first plugin's (in plugin order) "
    "is the one used",
    fix="rename the layout in one of the plugins, or disable one of them "
    "(`smith plugins disable NAME`)",
    severity="warning",
)


class Layouts:
    """The layouts the app's plugins offer (the first plugin's wins a name), the one in
    use, and what was wrong with them (warnings the app shows when it opens)."""

    def __init__(
        self, plugins: Iterable[Plugin], name: str | None = None, source: Source | None = None
    ) -> None:
        self.available: dict[str, tuple[str, ...]] = {}
        self.owners: dict[str, str] = {}
        self.problems: list[Diagnostic] = []
        for plugin in plugins:
            for offered, regions in plugin.layouts.items():
                self._take(plugin.name, offered, tuple(regions))
        if STANDARD not in self.available:  # the product plugin is disabled
            self.available[STANDARD], self.owners[STANDARD] = STANDARD_LAYOUT, "smith"
        self.name = name or STANDARD
        if self.name not in self.available:
            where = source or Source("tui", "tui.layout")
            known = list(self.available)
            self.problems.append(UNKNOWN_LAYOUT(
                field="tui.layout", value=self.name, source=where, name=self.name,
                known=", ".join(known), where=str(where),
                hint=did_you_mean(self.name, known, otherwise="check the name"),
            ))  # fmt: skip
            self.name = STANDARD

    def _take(self, plugin: str, name: str, regions: tuple[str, ...]) -> None:
        problem = layout_problem(regions)
        if problem is not None:
            self.problems.append(BAD_LAYOUT(value=name, source=Source("plugin", plugin),
                                            name=name, plugin=plugin, problem=problem,
                                            regions=", ".join(LAYOUT_REGIONS)))  # fmt: skip
        elif name in self.available:
            self.problems.append(LAYOUT_TWICE(value=name, source=Source("plugin", plugin),
                                              name=name, plugin=plugin,
                                              first=self.owners[name]))  # fmt: skip
        else:
            self.available[name], self.owners[name] = regions, plugin

    @property
    def regions(self) -> tuple[str, ...]:
        """The regions of the layout in use, top to bottom."""
        return self.available[self.name]

    def order(self, widgets: Iterable[Widget]) -> Iterator[Widget]:
        """The app's widgets (as composed) in the layout's order, those of the regions it
        leaves out last and hidden; a widget of no region keeps its place at the end."""
        by_id = {w.id: w for w in widgets}
        yield from self._arranged(by_id)
        yield from (w for w in by_id.values() if not _regional(w.id))

    def use(self, name: str, screen: Screen[Any]) -> bool:
        """Arrange the running app's `screen` by the layout `name` (for this run: nothing
        is saved); False if no plugin offers it."""
        if name not in self.available:
            return False
        self.name = name
        present = {w.id: w for w in screen.children if _regional(w.id)}
        previous: Widget | None = None
        for widget in self._arranged(present):
            if previous is None:
                screen.move_child(widget, before=0)
            else:
                screen.move_child(widget, after=previous)
            previous = widget
        return True

    def listing(self) -> list[tuple[str, str]]:
        """(name, what it shows) of each layout, the one in use first."""
        names = sorted(self.available, key=lambda n: (n != self.name, n))
        return [(n, f"{n}: {' '.join(self.available[n])} ({self.owners[n]})") for n in names]

    def _arranged(self, by_id: Mapping[str | None, Widget]) -> Iterator[Widget]:
        shown = self.regions
        for region in [*shown, *(r for r in REGION_WIDGETS if r not in shown)]:
            for id in REGION_WIDGETS[region]:
                widget = by_id.get(id)
                if widget is not None:
                    widget.set_class(region not in shown, LEFT_OUT)
                    yield widget


def _regional(id: str | None) -> bool:
    return any(id in ids for ids in REGION_WIDGETS.values())


__all__ = ["LEFT_OUT", "REGION_WIDGETS", "Layouts"]
