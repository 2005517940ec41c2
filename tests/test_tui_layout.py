"""Layouts (docs/ui.md, "Layouts"): the plugins' layouts order the app's regions and
`tui.layout NAME` picks one; a region a layout leaves out is hidden (its widget stays,
found by its id); a layout no plugin offers is a warning naming the value and where it
was set, and the app opens with the standard layout; a name two plugins bring is the
first's, with a warning naming both; `/layout NAME` arranges the running app."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from smith.frontends.tui._app import SmithApp
from smith.frontends.tui._layout import LEFT_OUT, Layouts
from smith.sdk import Plugin, resolve_plugins
from smith.ui import STANDARD_LAYOUT, layout_problem
from tests.conftest import Result, SmithEnv
from tests.test_tui import _app, run, visible

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "plugins"
SIZE = (100, 30)
# The widgets of the standard layout, top to bottom (the search field and the "new
# output below" line follow the transcript; the completion list is above the editor).
STANDARD_ORDER = ["transcript", "below", "search", "todo", "queue", "working", "completion",
                  "input", "status"]  # fmt: skip


def _order(app: SmithApp) -> list[str]:
    return [str(w.id) for w in app.screen.children if w.id]


def _hidden(app: SmithApp) -> set[str]:
    return {str(w.id) for w in app.screen.children if w.id and w.has_class(LEFT_OUT)}


def _with(*extra: Plugin) -> list[Plugin]:
    return [*resolve_plugins().active, *extra]


def _opened(app: SmithApp, check: Callable[[Any], Any]) -> Any:
    async def main() -> Any:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            return await check(pilot)

    return run(main())


def test_the_products_layouts_are_sound_and_tui_layout_defaults_to_standard() -> None:
    from smith.config import SCHEMA
    from smith.plugins.product import PLUGIN

    assert PLUGIN.layouts["standard"] == STANDARD_LAYOUT
    assert set(PLUGIN.layouts) == {"standard", "focus"}
    for name, regions in PLUGIN.layouts.items():
        assert layout_problem(regions) is None, name
    option = SCHEMA.get("tui.layout")
    assert option is not None and option.default == PLUGIN.settings["tui.layout"] == "standard"


def test_the_standard_layout_shows_every_region_in_its_order(tmp_path: Path) -> None:
    async def check(pilot: Any) -> tuple[list[str], set[str], str]:
        return _order(pilot.app), _hidden(pilot.app), pilot.app.layout.name

    order, hidden, name = _opened(_app(tmp_path), check)
    assert (order, hidden, name) == (STANDARD_ORDER, set(), "standard")


def test_a_layout_orders_the_regions_and_hides_those_it_leaves_out(tmp_path: Path) -> None:
    slim = Plugin("slim", layouts={"slim": ("status", "transcript", "input")})
    app = _app(tmp_path, plugins=_with(slim), layout="slim")

    async def check(pilot: Any) -> tuple[Any, ...]:
        app.query_one("#queue").set_class(True, "shown")  # something queued: still hidden
        app.query_one("#todo").set_class(True, "shown")
        await pilot.pause()
        status, transcript = app.query_one("#status"), app.query_one("#transcript")
        left_out = [app.query_one(f"#{id}") for id in ("todo", "queue", "working")]
        return (_order(app), _hidden(app), status.region.y, transcript.region.y,
                [w.display for w in left_out], str(status.render()))  # fmt: skip

    order, hidden, status_y, transcript_y, displayed, status = _opened(app, check)
    assert order == ["status", "transcript", "below", "search", "completion", "input", "todo",
                     "queue", "working"]  # fmt: skip
    assert hidden == {"todo", "queue", "working"}
    assert status_y == 0 < transcript_y  # the status line on top
    assert displayed == [False, False, False]
    assert "ready" in status  # still found by its id and kept up to date


def test_an_unknown_layout_is_a_warning_naming_it_and_where_it_was_set(
    tmp_path: Path,
) -> None:
    from smith.diagnostics import Source

    where = Source("file", "/home/me/.config/smith/config.kdl:3:12")
    app = _app(tmp_path, layout="papr", layout_source=where)

    async def check(pilot: Any) -> tuple[str, list[str], str]:
        return visible(pilot.app), _order(pilot.app), pilot.app.layout.name

    shown, order, name = _opened(app, check)
    flat = " ".join(shown.split())
    assert "tui.layout is 'papr', which no enabled plugin offers as a layout" in flat
    assert "/home/me/.config/smith/config.kdl:3:12" in flat
    assert "standard, focus" in flat  # the layouts there are
    assert (order, name) == (STANDARD_ORDER, "standard")  # and the app opens anyway


def test_a_layout_name_two_plugins_bring_is_the_firsts_with_a_warning(tmp_path: Path) -> None:
    mine = Plugin("mine", layouts={"focus": ("status", "transcript", "input")})
    broken = Plugin("broken", layouts={"tiny": ("status", "input")})
    app = _app(tmp_path, plugins=_with(mine, broken), layout="focus")

    async def check(pilot: Any) -> tuple[str, tuple[str, ...], list[str]]:
        layout = pilot.app.layout
        return visible(pilot.app), layout.regions, list(layout.available)

    shown, regions, available = _opened(app, check)
    flat = " ".join(shown.split())
    assert (
        "the plugin mine brings a layout 'focus', which the plugin product brings already" in flat
    )
    assert regions == ("transcript", "queue", "working", "input")  # the product's
    assert "the layout 'tiny' of the plugin broken leaves out transcript" in flat
    assert available == ["standard", "focus"]  # the broken one is not offered


def test_slash_layout_lists_the_layouts_and_arranges_the_running_app(tmp_path: Path) -> None:
    from smith.frontends.tui._screens import ChoiceScreen

    app = _app(tmp_path)

    async def send(pilot: Any, text: str) -> None:
        app.editor.value = text
        await pilot.press("enter")
        await pilot.pause()

    async def check(pilot: Any) -> tuple[Any, ...]:
        await send(pilot, "/layout")
        chooser = isinstance(app.screen, ChoiceScreen)
        await pilot.press("escape")
        await send(pilot, "/layout focus")
        focused = (_order(app), _hidden(app), app.query_one("#status").display)
        await send(pilot, "/layout nope")
        await send(pilot, "/layout standard")
        return chooser, focused, (_order(app), _hidden(app)), visible(app)

    chooser, focused, standard, shown = _opened(app, check)
    assert chooser
    assert focused == (["transcript", "below", "search", "queue", "working", "completion",
                        "input", "todo", "status"], {"todo", "status"}, False)  # fmt: skip
    assert standard == (STANDARD_ORDER, set())
    flat = " ".join(shown.split())
    assert "layout: focus, for this run" in flat
    assert "there is no layout nope: the layouts are focus, standard" in flat  # in use first


def test_the_paper_themes_layout_puts_the_status_line_on_top(
    smith: Callable[..., Result], senv: SmithEnv
) -> None:
    """The example package's `layout`, installed and picked in config.kdl, as `smith`
    launches the app (frontends/tui.run)."""
    from smith.config import resolve
    from smith.runtime import build

    r = smith("plugins", "install", str(EXAMPLES / "paper-theme"), "--yes")
    assert r.code == 0, r.err
    info = smith("plugins", "info", "paper-theme")
    assert "layouts: paper" in info.out, info.out
    senv.write_user_config('tui { theme "paper"; layout "paper"; }\n')
    project = senv.make_project()
    config = resolve(env=senv.env, flags={"model": "demo"}, cwd=str(project))
    assembly = build(config, cwd=str(project), surface="tui", env=senv.env)
    session = assembly.new_session("smith")
    app = SmithApp(assembly.runtime, session, plugins=assembly.plugin_list.active,
                   layout=str(config["tui.layout"]),
                   layout_source=config.origin("tui.layout").source)  # fmt: skip

    async def check(pilot: Any) -> tuple[list[str], int, int]:
        status, transcript = app.query_one("#status"), app.query_one("#transcript")
        return _order(app), status.region.y, transcript.region.y

    try:
        order, status_y, transcript_y = _opened(app, check)
    finally:
        session.close()
    assert order[:2] == ["status", "transcript"] and order[-1] == "input"
    assert status_y == 0 < transcript_y


def test_the_unknown_layout_warning_names_the_config_file_or_variable_that_set_it(
    senv: SmithEnv,
) -> None:
    from smith.config import resolve

    def warning(env: dict[str, str]) -> str:
        config = resolve(env={**senv.env, **env}, flags={}, cwd=str(senv.make_project()))
        layouts = Layouts(resolve_plugins(config).active, str(config["tui.layout"]),
                          config.origin("tui.layout").source)  # fmt: skip
        assert layouts.name == "standard"
        (problem,) = layouts.problems
        assert problem.code == "config.unknown-layout"
        return problem.render()

    written = senv.write_user_config('tui { layout "fokus"; }\n')
    said = warning({})
    assert f"{written}:1:14" in said and "'fokus'" in said and "did you mean 'focus'?" in said
    said = warning({"SMITH_TUI_LAYOUT": "wide"})
    assert "env SMITH_TUI_LAYOUT" in said and "standard, focus" in said


def test_the_first_screen_with_the_status_line_on_top(snap_compare: Any, tmp_path: Path) -> None:
    """How a package's layout looks: paper-theme's order (the status line first)."""
    from tests.test_tui_snapshots import SIZE as SNAP_SIZE
    from tests.test_tui_snapshots import _app as snapshot_app
    from tests.test_tui_snapshots import _steady

    app = snapshot_app(tmp_path)
    paper = ("status", "transcript", "todo", "queue", "working", "input")
    app.layout = Layouts([*app.plugins, Plugin("paper-theme", layouts={"paper": paper})], "paper")

    async def steady(pilot: Any) -> None:
        _steady(pilot.app)

    assert snap_compare(app, terminal_size=SNAP_SIZE, run_before=steady)
