"""How the main screens look (SVG snapshots, pytest-textual-snapshot). After a deliberate
change of looks, review and update them with `pytest tests/test_tui_snapshots.py
--snapshot-update`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from smith.effects import ToolContext, builtin_tools
from smith.frontends.tui._app import SmithApp
from smith.runtime import Runtime
from smith.runtime._setup import DEMO_BANNER
from smith.session import Session

SIZE = (100, 30)


def _app(tmp_path: Path) -> SmithApp:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "README.md").write_text("# demo project\n")
    (project / "src" / "app.py").write_text("def app():\n    return 'hello'\n")
    session = Session.create(str(tmp_path / "s.smith"), name="snapshots", cwd=str(project))

    def factory(session: Session) -> Runtime:
        ctx = ToolContext(root=str(project), cwd=str(project), session=session)
        return Runtime(session, model="demo", tools=list(builtin_tools().values()), context=ctx)

    return SmithApp(factory, session, banner=DEMO_BANNER)


async def _ask(pilot: Any, text: str) -> None:
    await pilot.press(*[c if c != " " else "space" for c in text], "enter")
    await pilot.app.runtime.wait_idle()
    await pilot.pause()


def test_first_screen(snap_compare: Any, tmp_path: Path) -> None:
    assert snap_compare(_app(tmp_path), terminal_size=SIZE)


def test_an_answer_through_a_tool(snap_compare: Any, tmp_path: Path) -> None:
    async def ask(pilot: Any) -> None:
        await _ask(pilot, "list the files")

    assert snap_compare(_app(tmp_path), terminal_size=SIZE, run_before=ask)


def test_help_overlay(snap_compare: Any, tmp_path: Path) -> None:
    async def ask(pilot: Any) -> None:
        await _ask(pilot, "/help")

    assert snap_compare(_app(tmp_path), terminal_size=SIZE, run_before=ask)
