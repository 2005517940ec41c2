"""Selecting transcript text with the mouse and copying it (Pilot)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.style import Style
from textual.geometry import Region

from smith.frontends.tui._app import SmithApp
from smith.frontends.tui._transcript import Transcript
from tests.runtime_kit import Fake, Gate, say
from tests.test_tui import SIZE, _app, _settle, _type, run, visible

ANSWER = "alpha **line** one\n\nbeta line \x1b[31mtwo\n\ngamma line three"


def _row(app: SmithApp, text: str) -> int:
    return next(y for y, line in enumerate(visible(app).splitlines()) if text in line)


def _selected(app: SmithApp) -> str:
    """The transcript's text on screen shown in the selection's colours."""
    t = app.query_one(Transcript)
    bg = app.screen.get_component_rich_style("screen--selection").bgcolor
    strips = t.render_lines(Region(0, 0, t.size.width, t.size.height))
    shown = [seg for strip in strips for seg in strip
             if isinstance(seg.style, Style) and seg.style.bgcolor == bg]  # fmt: skip
    assert all(seg.style.color != bg for seg in shown if seg.style and seg.text.strip())  # legible
    return "".join(seg.text for seg in shown)


async def _drag(pilot: Any, start: tuple[int, int], end: tuple[int, int]) -> None:
    t = pilot.app.query_one(Transcript)
    await pilot.mouse_down(t, offset=start)
    await pilot.hover(t, offset=end)
    await pilot.mouse_up(t, offset=end)
    await pilot.pause()


def test_a_drag_selects_what_is_shown_and_ctrl_c_copies_it_as_plain_text(
    tmp_path: Path,
) -> None:
    filler = "\n\n".join(f"later paragraph {i}" for i in range(40))
    gate = Gate()
    fake = Fake(say(ANSWER), [gate, *say(filler)])

    async def main() -> None:
        app = _app(tmp_path, (fake, "m"))
        async with app.run_test(size=SIZE) as pilot:
            await _type(pilot, "hello")
            await _settle(app)
            await _type(pilot, "more")
            await gate.reached.wait()
            await pilot.pause()
            # From "line" in the first paragraph to the end of "gamma" in the third.
            await _drag(pilot, (6, _row(app, "alpha")), (4, _row(app, "gamma")))
            assert _selected(app).split() == ["line", "one", "beta", "line", "␛[31mtwo", "gamma"]
            assert app.focused is app.query_one("#input")  # typing goes on where it was
            # New output below pushes the text up and off the screen, then the view
            # scrolls back to it: the selection stays on the same words.
            gate.opened.set()
            await _settle(app)
            await pilot.pause()
            assert "alpha" not in visible(app) and _selected(app) == ""
            t = app.query_one(Transcript)
            t.scroll_to(y=0, animate=False)
            await pilot.pause()
            assert _selected(app).split() == ["line", "one", "beta", "line", "␛[31mtwo", "gamma"]
            await pilot.press("ctrl+c")
            await pilot.pause()
            assert app.is_running  # copying is all Ctrl+C did
            # As shown: markdown rendered (no asterisks), the escape inert, no styles.
            assert app.clipboard == "line one\n\nbeta line ␛[31mtwo\n\ngamma"
            assert _selected(app) == ""  # the selection is let go once copied
            await pilot.press("ctrl+c", "ctrl+c")  # nothing selected: it quits again (twice)
            await pilot.pause()
            assert not app.is_running

    run(main())


def test_ctrl_c_copies_only_while_something_is_selected(tmp_path: Path) -> None:
    gate = Gate()
    fake = Fake(say("first answer here"), [gate, *say("never finished")])

    async def main() -> None:
        app = _app(tmp_path, (fake, "m"))
        async with app.run_test(size=SIZE) as pilot:
            await _type(pilot, "one")
            await _settle(app)
            await pilot.pause()
            await _type(pilot, "two")
            await gate.reached.wait()
            assert app.runtime is not None and app.runtime.busy
            row = _row(app, "first answer")
            await _drag(pilot, (0, row), (4, row))
            await pilot.press("ctrl+c")
            await pilot.pause()
            assert app.clipboard == "first" and app.runtime.busy  # copied, not aborted
            await pilot.press("ctrl+c")
            await _settle(app)
            assert not app.runtime.busy and app.is_running  # this one aborted the turn
            gate.opened.set()

    run(main())


def test_a_drag_past_the_transcript_selects_to_its_visible_end_only(tmp_path: Path) -> None:
    long = "\n\n".join(f"row {i}" for i in range(200))

    async def main() -> None:
        app = _app(tmp_path, (Fake(say(long)), "m"))
        async with app.run_test(size=SIZE) as pilot:
            await _type(pilot, "go")
            await _settle(app)
            t = app.query_one(Transcript)
            t.scroll_to(y=40, animate=False)
            await pilot.pause()
            first = visible(app).split()[0:2]
            await pilot.mouse_down(t, offset=(0, 0))
            await pilot.hover("#status", offset=(5, 0))  # below the transcript
            await pilot.mouse_up("#status", offset=(5, 0))
            await pilot.pause()
            text = app.screen.get_selected_text() or ""
            lines = [line for line in text.splitlines() if line]
            # What was on screen, not the 150 rows further down.
            assert lines[0] == " ".join(first) and len(lines) < t.size.height

    run(main())


def test_ctrl_c_copies_text_selected_in_the_input(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app(tmp_path, (Fake(), "m"))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press(*"hello", "shift+left", "shift+left")
            await pilot.press("ctrl+c")
            await pilot.pause()
            assert app.clipboard == "lo" and app.is_running

    run(main())
