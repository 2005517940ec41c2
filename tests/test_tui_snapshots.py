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


def _app(
    tmp_path: Path, entries: list[dict[str, Any]] | None = None, model: Any = "demo"
) -> SmithApp:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "README.md").write_text("# demo project\n")
    (project / "src" / "app.py").write_text("def app():\n    return 'hello'\n")
    if entries is None:
        session = Session.create(str(tmp_path / "s.smith"), name="snapshots", cwd=str(project))
    else:
        info = {"id": "snap", "name": "snapshots", "cwd": str(project)}
        session = Session.from_entries(entries, info=info)

    def factory(session: Session) -> Runtime:
        ctx = ToolContext(root=str(project), cwd=str(project), session=session)
        return Runtime(session, model=model, tools=list(builtin_tools().values()), context=ctx)

    return SmithApp(factory, session, banner=DEMO_BANNER if model == "demo" else None)


def _steady(app: SmithApp) -> None:
    """Cursors that do not blink: what a snapshot shows must not depend on how long it
    took to get there."""
    from textual.widgets import Input, TextArea

    for screen in app.screen_stack:
        for field in [*screen.query(Input), *screen.query(TextArea)]:
            field.cursor_blink = False


async def _ask(pilot: Any, text: str) -> None:
    _steady(pilot.app)
    await pilot.press(*[c if c != " " else "space" for c in text], "enter")
    await pilot.app.runtime.wait_idle()
    await pilot.pause()
    _steady(pilot.app)  # and those of an overlay it opened


def test_first_screen(snap_compare: Any, tmp_path: Path) -> None:
    async def steady(pilot: Any) -> None:
        _steady(pilot.app)

    assert snap_compare(_app(tmp_path), terminal_size=SIZE, run_before=steady)


def test_an_answer_through_a_tool(snap_compare: Any, tmp_path: Path) -> None:
    async def ask(pilot: Any) -> None:
        await _ask(pilot, "list the files")

    assert snap_compare(_app(tmp_path), terminal_size=SIZE, run_before=ask)


def test_help_overlay(snap_compare: Any, tmp_path: Path) -> None:
    async def ask(pilot: Any) -> None:
        await _ask(pilot, "/help")

    assert snap_compare(_app(tmp_path), terminal_size=SIZE, run_before=ask)


def test_branch_tree_overlay(snap_compare: Any, tmp_path: Path) -> None:
    from tests.test_tui_overlays import BRANCHED

    async def ask(pilot: Any) -> None:
        await _ask(pilot, "/tree")

    assert snap_compare(_app(tmp_path, BRANCHED), terminal_size=SIZE, run_before=ask)


def test_model_picker_overlay(snap_compare: Any, tmp_path: Path) -> None:
    async def ask(pilot: Any) -> None:
        await _ask(pilot, "/model")

    assert snap_compare(_app(tmp_path), terminal_size=SIZE, run_before=ask)


def test_search_bar_active(snap_compare: Any, tmp_path: Path) -> None:
    async def ask(pilot: Any) -> None:
        await _ask(pilot, "list the files")
        await pilot.press("ctrl+f", *"README", "enter")
        await pilot.pause()
        _steady(pilot.app)

    assert snap_compare(_app(tmp_path), terminal_size=SIZE, run_before=ask)


def test_selected_text(snap_compare: Any, tmp_path: Path) -> None:
    async def ask(pilot: Any) -> None:
        await _ask(pilot, "list the files")
        await pilot.mouse_down("#transcript", offset=(4, 1))
        await pilot.hover("#transcript", offset=(20, 3))
        await pilot.mouse_up("#transcript", offset=(20, 3))
        await pilot.pause()

    assert snap_compare(_app(tmp_path), terminal_size=SIZE, run_before=ask)


def test_context_overlay(snap_compare: Any, tmp_path: Path) -> None:
    """/context: what the model is told, part by part, with sources and sizes (the same
    table as `smith context`; a runtime without project context sends no environment
    block, so the picture does not depend on the machine or the day)."""

    async def ask(pilot: Any) -> None:
        await _ask(pilot, "/context")
        for _ in range(100):  # the table is read off the app's loop
            await pilot.pause(0.02)
            if len(pilot.app.screen_stack) > 1:
                break
        _steady(pilot.app)

    assert snap_compare(_app(tmp_path), terminal_size=SIZE, run_before=ask)


def test_changes_and_commands_collapsed(snap_compare: Any, tmp_path: Path) -> None:
    """Summary lines: `edit PATH +2 -1`, `write PATH +2`, `bash CMD exit N 1.2 s` (a
    recorded session: its durations are fixed)."""
    from tests.test_tui_review import REVIEW

    async def steady(pilot: Any) -> None:
        _steady(pilot.app)

    assert snap_compare(_app(tmp_path, REVIEW), terminal_size=(100, 40), run_before=steady)


def test_a_diff_expanded(snap_compare: Any, tmp_path: Path) -> None:
    """Ctrl+O: the diffs in the files' syntax colours, the commands' output."""
    from tests.test_tui_review import REVIEW

    async def expand(pilot: Any) -> None:
        _steady(pilot.app)
        await pilot.press("ctrl+o")
        await pilot.pause()

    assert snap_compare(_app(tmp_path, REVIEW), terminal_size=(100, 40), run_before=expand)


def test_editor_with_a_collapsed_paste(snap_compare: Any, tmp_path: Path) -> None:
    """Two lines typed around a 120-line paste: the editor shows the paste as one chip
    and has grown to the two rows of its text."""
    from textual import events

    async def write(pilot: Any) -> None:
        _steady(pilot.app)
        await pilot.press(*"look", "space", *"at:", "space")
        pilot.app.post_message(events.Paste("".join(f"row {i}\n" for i in range(120))))
        await pilot.pause()
        await pilot.press("ctrl+j", *"and", "space", *"fix", "space", *"it")
        await pilot.pause()

    assert snap_compare(_app(tmp_path), terminal_size=SIZE, run_before=write)


def test_the_completion_list(snap_compare: Any, tmp_path: Path) -> None:
    """`@a` typed: the paths with an a above the editor, best first, the matched
    characters highlighted and the first one chosen."""
    (tmp_path / "project" / "docs").mkdir(parents=True)
    (tmp_path / "project" / "docs" / "manual.md").write_text("# manual\n")
    app = _app(tmp_path)

    async def complete(pilot: Any) -> None:
        _steady(pilot.app)
        await pilot.press(*"explain", "space", "@")
        files = pilot.app.editor.completion.files
        while files.reading or files.listing is None:
            await pilot.pause(0.01)
        await pilot.press("a")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=complete)


def test_editor_with_an_image_chip(snap_compare: Any, tmp_path: Path) -> None:
    """A typed question with a pasted image path: the editor shows the image as a chip
    naming the file and its size (the model takes images, so nothing warns)."""
    from textual import events

    from tests.test_images import Seeing, png

    app = _app(tmp_path, model=(Seeing(), "vision"))
    (tmp_path / "project" / "shot.png").write_bytes(png(pad=34_000))

    async def write(pilot: Any) -> None:
        _steady(pilot.app)
        await pilot.press(*"what", "space", *"is", "space", *"wrong", "space", *"here?", "space")
        pilot.app.post_message(events.Paste("shot.png"))
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=write)


def test_a_sent_message_with_an_image(snap_compare: Any, tmp_path: Path) -> None:
    """The message as sent: its text refers to `[image 1]`, and the transcript shows the
    image's chip after it; the answer follows."""
    from textual import events

    from tests.runtime_kit import say
    from tests.test_images import Seeing, png

    app = _app(tmp_path, model=(Seeing(say("A red square on white.")), "vision"))
    (tmp_path / "project" / "shot.png").write_bytes(png(pad=34_000))

    async def send(pilot: Any) -> None:
        _steady(pilot.app)
        await pilot.press(*"what", "space", *"is", "space", *"this?", "space")
        pilot.app.post_message(events.Paste("shot.png"))
        await pilot.pause()
        await pilot.press("enter")
        await pilot.app.runtime.wait_idle()
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=send)
