"""The app tells the user, when its terminal is not in front, that a turn ended or an
answer is needed (frontends/tui/_notify.py): OSC 9, OSC 777 or the bell, never when the
terminal has focus or `tui.notify` is off."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from smith.frontends.tui._notify import sequence
from tests.test_tui import SIZE, _app


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"TERM_PROGRAM": "WezTerm"}, "\x1b]9;done\x07"),
        ({"TERM": "xterm-kitty"}, "\x1b]9;done\x07"),
        ({"WT_SESSION": "x"}, "\x1b]9;done\x07"),
        ({"VTE_VERSION": "7200"}, "\x1b]777;notify;smith;done\x07"),
        ({"TERM": "rxvt-unicode"}, "\x1b]777;notify;smith;done\x07"),
        ({"TERM_PROGRAM": "WezTerm", "TMUX": "/tmp/tmux-0/default,1,0"}, "\a"),
        ({"TERM": "xterm-256color"}, "\a"),
    ],
)
def test_the_sequence_suits_the_terminal(env: dict[str, str], expected: str) -> None:
    assert sequence("done", env) == expected


def test_text_from_outside_cannot_end_the_sequence() -> None:
    assert sequence("a\x07b\x1b]0;title\x9c", {"TERM_PROGRAM": "iTerm.app"}) == (
        "\x1b]9;a b ]0;title \x07"
    )


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, focus: bool, notify: bool,
         env: dict[str, str]) -> tuple[list[str], int]:  # fmt: skip
    for key in ("TERM_PROGRAM", "TERM", "TMUX", "VTE_VERSION", "WT_SESSION"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    written: list[str] = []
    rings = [0]

    async def main() -> None:
        app = _app(tmp_path, notify=notify)
        app.bell = lambda: rings.__setitem__(0, rings[0] + 1)  # type: ignore[method-assign]
        async with app.run_test(size=SIZE) as pilot:
            driver: Any = app._driver
            driver.write = written.append
            app.app_focus = focus  # (a key press would bring the focus back)
            app._send("list the files")
            assert app.runtime is not None
            await app.runtime.wait_idle()
            await pilot.pause()

    asyncio.run(asyncio.wait_for(main(), 60))
    return [w for w in written if w.startswith("\x1b]")], rings[0]


def test_a_turn_ending_away_from_the_terminal_is_notified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    osc, rings = _run(tmp_path, monkeypatch, focus=False, notify=True,
                      env={"TERM_PROGRAM": "WezTerm"})  # fmt: skip
    assert osc == ["\x1b]9;smith: done (end)\x07"] and rings == 0


def test_elsewhere_the_bell_rings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    osc, rings = _run(tmp_path, monkeypatch, focus=False, notify=True, env={"TMUX": "x"})
    assert osc == [] and rings == 1


@pytest.mark.parametrize(("focus", "notify"), [(True, True), (False, False)])
def test_nothing_is_said_in_front_or_when_turned_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, focus: bool, notify: bool
) -> None:
    osc, rings = _run(tmp_path, monkeypatch, focus=focus, notify=notify,
                      env={"TERM_PROGRAM": "WezTerm"})  # fmt: skip
    assert osc == [] and rings == 0
