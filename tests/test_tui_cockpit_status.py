"""Knowing what the agent is doing, in a real terminal (tmux) at 80x24 (issue 27, items 1,
2 and 17): the working indicator with its elapsed time and interrupt key during a slow
scripted response, the status line's state and model at 80 columns, and the end of the
first answer on screen."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from smith.frontends.tui._transcript import Transcript
from tests.conftest import SmithEnv
from tests.test_tui import visible
from tests.test_tui_terminal import Tmux, terminal, terminal_env

FILES = ("README.md", "calc.py", "cli.py", "notes.txt", "setup.cfg", "test_calc.py", "zeta.py")


@pytest.fixture
def small(senv: SmithEnv) -> Iterator[Tmux]:
    """An 80x24 terminal in a project of seven files (the demo lists them)."""
    project = senv.make_project()
    for name in FILES:
        (project / name).write_text(f"{name}\n")
    with terminal(project, terminal_env(senv), size=(80, 24)) as t:
        yield t


def _launch(t: Tmux, args: str) -> None:
    t("send-keys", "-t", "s", f"smith {args}", "Enter")
    assert t.wait(lambda: t.flag("alternate_on") == "1" and "ready" in t.screen()), t.screen()


def _bottom(screen: str) -> str:
    """The status line: the screen's last line with text."""
    return [line for line in screen.splitlines() if line.strip()][-1]


def test_the_status_line_at_80_columns_says_ready_and_the_model(small: Tmux) -> None:
    _launch(small, "--model demo")
    status = _bottom(small.screen())
    assert status.startswith("demo · ready"), status
    assert len(status.rstrip()) <= 80


def test_the_indicator_shows_what_it_does_for_how_long_and_how_to_stop(
    small: Tmux, tmp_path: Path
) -> None:
    script = tmp_path / "slow.json"
    words = " ".join(f"word{i}" for i in range(40))
    script.write_text(json.dumps({"responses": [{"text": words, "delay_ms": 150}]}))
    _launch(small, f"--model scripted:{script}")
    assert "ready" in _bottom(small.screen())
    small("send-keys", "-t", "s", "tell me a story", "Enter")
    seen: list[str] = []

    def counting() -> bool:
        seen.append(small.screen())
        return bool(re.search(r"^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] writing · [1-9]s · esc to interrupt", seen[-1], re.M))

    assert small.wait(counting, 20), seen[-1]
    line = next(x for x in seen[-1].splitlines() if "esc to interrupt" in x)
    rows = seen[-1].splitlines()
    assert rows.index(line) < next(i for i, x in enumerate(rows) if "Ask smith" in x)  # above
    assert "working" in _bottom(seen[-1])
    assert small.wait(lambda: "word39" in small.screen() and "ready" in _bottom(small.screen()))
    assert "esc to interrupt" not in small.screen()  # settled: the line is gone


def test_the_first_answer_is_seen_to_its_end_at_80x24(small: Tmux) -> None:
    """The demo's file list ends the answer; it stayed below the editor until a resize."""
    _launch(small, "--model demo")
    small("send-keys", "-t", "s", "list the files", "Enter")

    def ended() -> bool:
        screen = small.screen()
        return "ready" in _bottom(screen) and "entries (0 directories" in screen

    assert small.wait(ended), small.screen()
    screen = small.screen()
    answer = screen[screen.rindex("entries (0 directories") :]
    assert "more lines" in answer, screen  # its last line, above the editor
    assert answer.index("more lines") < answer.index("Ask smith")


def test_a_following_view_shows_the_end_of_a_block_scrolled_in() -> None:
    """Pilot: blocks added together whose estimates fit the view, the last starting just
    below it once the others are drawn (as a first turn's records at 80x24 were): the
    frame that scrolls to the bottom draws that block at its real height too, so the
    view ends where the content does (it ended at the block's estimate)."""
    from rich.text import Text
    from textual.app import App, ComposeResult

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield Transcript(id="transcript")

    def block(n: int, name: str) -> Text:
        return Text("\n".join(f"{name} {i}" for i in range(n)))

    async def main() -> None:
        app = Host()
        async with app.run_test(size=(80, 20)) as pilot:
            t = app.query_one(Transcript)
            # rows with each block's gap: 2, 9, 9, then 13 from row 20, the view's height
            for key, n in (("a", 1), ("b", 8), ("c", 8), ("last", 12)):
                t.add(key, lambda n=n, key=key: block(n, key))
            await pilot.pause()
            await pilot.pause()
            assert t.virtual_size.height == t.heights.total()
            assert t.scroll_y == t.max_scroll_y > 0
            rows = [line for line in visible(app).splitlines() if line.strip()]  # type: ignore[arg-type]
            assert rows[-1].strip() == "last 11"

    asyncio.run(asyncio.wait_for(main(), 60))
