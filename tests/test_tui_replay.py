"""`smith replay` in the app: a recorded session plays back, read-only, at its recorded
pace scaled by --speed, only the turns asked for, and nothing runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual.widgets import Static

from smith.frontends.replay._playback import Turns
from smith.frontends.replay._timeline import reconstruct
from smith.frontends.tui._replay import ReplayApp, steps_of
from smith.session import Session
from tests.runtime_kit import Fake, World, call, say
from tests.test_tui import SIZE, visible


def _recorded(tmp_path: Path) -> Session:
    world = World(tmp_path)
    fake = Fake(
        call(("read", {"path": "src/app.py"}), text="Looking."),
        say("app returns hello."),
        say("second answer"),
        say("third answer"),
    )
    world.converse(fake, prompts=("what is app?", "and then?", "last one"))
    return world.reopened()


def _starts(session: Session) -> dict[str, int]:
    return {
        str(item.event["prompt_id"])[2:]: item.run
        for item in reconstruct(session).items
        if item.event is not None and item.event["type"] == "agent_start"
    }


def _play(session: Session, turns: Turns, speed: float | None) -> tuple[str, str, list[float]]:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async def main() -> tuple[str, str]:
        app = ReplayApp(session, steps_of(session, _starts(session), turns), speed=speed,
                        max_gap=10.0, sleep=sleep)  # fmt: skip
        async with app.run_test(size=SIZE) as pilot:
            for _ in range(100):
                await pilot.pause()
                if app.finished:
                    break
            assert app.finished
            assert app.editor.disabled
            await pilot.press("h", "i", "enter")  # the input is read-only: nothing runs
            await pilot.pause()
            assert app.runtime is not None and not app.runtime.busy
            assert len(app.session) == len(app.steps)
            return visible(app), str(app.query_one("#status", Static).render())

    shown, status = asyncio.run(asyncio.wait_for(main(), 60))
    return shown, status, slept


def test_the_whole_session_plays_back_read_only(tmp_path: Path) -> None:
    session = _recorded(tmp_path)
    shown, status, _ = _play(session, Turns(), None)
    for text in ("what is app?", "app returns hello.", "second answer", "third answer"):
        assert text in shown
    assert "read" in shown and "src/app.py" in shown  # the tool call and its result
    assert "turn 3 of 3" in status and "finished" in status and "instant" in status


def test_a_turn_range_shows_only_those_turns(tmp_path: Path) -> None:
    session = _recorded(tmp_path)
    shown, _, _ = _play(session, Turns(2, 3), None)
    assert "second answer" in shown and "third answer" in shown
    assert "what is app?" not in shown and "app returns hello." not in shown


def test_speed_scales_the_recorded_gaps(tmp_path: Path) -> None:
    session = Session.create(str(tmp_path / "timed.smith"), name="timed", cwd=str(tmp_path))
    t0 = 1_700_000_000_000
    timeline = [(0, "user", "one"), (2_000, "assistant", "first"),
                (5_000, "user", "two"), (65_000, "assistant", "second")]  # fmt: skip
    for offset, role, text in timeline:
        message: dict[str, object] = {"role": role, "content": [{"type": "text", "text": text}]}
        if role == "assistant":
            message.update(stop="success", usage=None, provider="fake", model="m")
        session.append("message", message, ts=t0 + offset)
    session.close()
    recorded = Session.load(session.path)
    shown, _, slept = _play(recorded, Turns(), 4.0)
    assert slept == [0.5, 0.75, 10.0]  # 2 s and 3 s at 4x; a minute capped at --max-gap
    assert "second" in shown


def test_the_recorded_file_is_never_written(tmp_path: Path) -> None:
    """The replayed session is an in-memory copy: the recorded file is never written."""
    session = _recorded(tmp_path)
    before = Path(session.path).read_bytes()
    _play(session, Turns(), None)
    assert Path(session.path).read_bytes() == before
