"""`@` completion in the app's editor, through Pilot: open, filter, move, accept, close,
and an accepted path attached to the message that is sent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from smith.frontends.tui._app import SmithApp
from tests.conftest import SmithEnv
from tests.test_tui import SIZE, _app, _settle, run
from tests.test_tui_editor import _requests, _said, _scripted_app


async def _listed(pilot: Any, app: SmithApp) -> None:
    """Until the file list, read in a thread, has arrived and is shown."""
    files = app.editor.completion.files
    while files.reading or files.listing is None:
        await pilot.pause(0.01)
    await pilot.pause()


def _shown(app: SmithApp) -> list[str]:
    return [path for path, _ in app.editor.completion.matches]


def _rows(app: SmithApp) -> list[str]:
    return str(app.editor.completion.list.render()).splitlines()


def test_at_opens_the_list_typing_filters_it_and_escape_closes_it(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            completion = app.editor.completion
            assert not completion.list.has_class("shown")
            await pilot.press(*"see", "space", "@")
            await _listed(pilot, app)
            assert completion.list.has_class("shown")
            assert _shown(app) == ["src/", "README.md", "src/app.py"]  # shortest first
            assert _rows(app)[0] == "▸ src/"
            await pilot.press("a", "p")
            assert _shown(app) == ["src/app.py"]
            assert completion.matches[0][1] == (4, 5)  # 'a' and 'p' of app, highlighted
            await pilot.press("escape")
            assert not completion.list.has_class("shown") and app.is_running
            assert app.editor.text == "see @ap"
            await pilot.press("p")  # closed until the cursor leaves this word
            assert not completion.shown
            await pilot.press("space", "@", "r")
            assert completion.shown and _shown(app) == ["README.md", "src/", "src/app.py"]

    run(main())


def test_up_down_move_tab_accepts_and_a_directory_keeps_completing(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            completion = app.editor.completion
            await pilot.press("@")
            await _listed(pilot, app)
            await pilot.press("down", "down")
            assert completion.chosen == 2 and _rows(app)[2] == "▸ src/app.py"
            await pilot.press("up", "up")
            assert completion.chosen == 0 and app.editor.text == "@"  # not the history
            await pilot.press("tab")
            assert app.editor.text == "@src/" and app.focused is app.editor
            assert _shown(app) == ["src/app.py"]  # completing inside src/
            await pilot.press("tab")
            assert app.editor.text == "@src/app.py " and not completion.shown

    run(main())


def test_the_list_follows_the_cursor_and_hides_when_it_leaves_the_word(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            completion = app.editor.completion
            await pilot.press(*"x", "space", "@", "r", "m")
            await _listed(pilot, app)
            assert _shown(app) == ["README.md"]
            await pilot.press("left")  # still in the word: the query is "r"
            assert _shown(app) == ["README.md", "src/", "src/app.py"]
            await pilot.press("left", "left")  # before the @
            assert not completion.shown and not completion.list.has_class("shown")
            await pilot.press("end")
            assert _shown(app) == ["README.md"]
            await pilot.press("tab")
            assert app.editor.text == "x @README.md "

    run(main())


def test_an_email_address_or_a_word_with_two_ats_opens_nothing(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press(*"me@host", "space", "@a@")
            await pilot.pause()
            assert not app.editor.completion.shown

    run(main())


def test_enter_accepts_while_the_list_shows_then_sends_with_the_file_attached(
    senv: SmithEnv,
) -> None:
    app, session, log = _scripted_app(senv, [{"text": "ok"}])
    project = senv.root / "project"
    (project / "notes").mkdir()
    (project / "notes" / "plan.md").write_text("step one: pack the fruit\n")

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press(*"read", "space", "@")
            await _listed(pilot, app)
            await pilot.press(*"plan")
            assert _shown(app)[0] == "notes/plan.md"
            await pilot.press("enter")  # accepts: nothing is sent yet
            assert app.editor.text == "read @notes/plan.md " and not log.exists()
            await pilot.press("enter")
            await _settle(app)
        session.close()

    run(main())
    said = _said(_requests(log)[0])
    assert said[0] == "read @notes/plan.md"
    assert said[1].startswith('<attached path="notes/plan.md"')
    assert "step one: pack the fruit" in said[1]


def test_escape_with_the_list_open_does_not_abort_the_work(senv: SmithEnv) -> None:
    slow = {"text": "working", "delay_ms": 2500}  # still working once the list is read
    app, session, _ = _scripted_app(senv, [slow])

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press(*"go", "enter", "@")
            await _listed(pilot, app)
            assert app.runtime is not None and app.runtime.busy
            await pilot.press("escape")
            assert not app.editor.completion.shown and app.runtime.busy
            await _settle(app)
            entries = [e.content for e in session.entries() if e.kind == "message"]
            assert entries[-1]["content"][0]["text"] == "working"  # not aborted
        session.close()

    run(main())


def test_opening_on_a_stale_list_reads_it_again_and_keeps_the_choice(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """A file made after the list was read (by a turn, say) is offered once the list is
    opened again on a stale list; the old list shows until the new one is in."""
    from smith.frontends.tui import _files

    monkeypatch.setattr(_files, "FRESH", 0.0)  # every opening finds the list stale,
    monkeypatch.setattr(_files, "SLOWER", 0)  # however long reading it took

    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            completion = app.editor.completion
            await pilot.press("@")
            await _listed(pilot, app)
            held: list[Any] = []  # the next reading, run when the test says
            completion.files._spawn = lambda work, then: held.append((work, then))
            (tmp_path / "project" / "new.txt").write_text("fresh\n")
            await pilot.press("space", "@")
            assert completion.files.reading and len(held) == 1
            assert "new.txt" not in _shown(app) and completion.list.has_class("shown")
            await pilot.press("down")
            chosen = _shown(app)[completion.chosen]
            work, then = held.pop()
            then(work())
            assert not completion.files.reading
            assert "new.txt" in _shown(app) and _shown(app)[completion.chosen] == chosen

    run(main())


def test_a_path_wider_than_the_screen_is_one_row_showing_its_end(tmp_path: Path) -> None:
    deep = tmp_path / "project" / ("a_long_directory_name/" * 6)
    deep.mkdir(parents=True)
    (deep / "target.py").write_text("x\n")

    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=(60, 20)) as pilot:
            await pilot.press("@")
            await _listed(pilot, app)
            await pilot.press(*"target")
            rows = _rows(app)
            assert rows[0].startswith("▸ …") and rows[0].endswith("_directory_name/target.py")
            assert max(map(len, rows)) <= 60  # and each path a row of its own:
            assert app.editor.completion.list.size.height == len(_shown(app)) == len(rows)

    run(main())


def test_while_it_works_tab_and_enter_accept_rather_than_queue_or_steer(
    senv: SmithEnv,
) -> None:
    """While the agent works Tab queues a follow-up and Enter steers, but not while the
    list shows matches: then they take the path, and the queue stays empty."""
    app, session, _ = _scripted_app(senv, [{"text": "working", "delay_ms": 3000}])
    (senv.root / "project" / "plan.md").write_text("the plan\n")

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press(*"go", "enter", "@")
            await _listed(pilot, app)
            assert app.runtime is not None and app.runtime.busy
            await pilot.press(*"pla", "tab")
            assert app.editor.text == "@plan.md " and not app.runtime.status()["queue"]
            await pilot.press("backspace", "backspace", "backspace", "backspace", "enter")
            assert app.editor.text == "@plan.md " and not app.runtime.status()["queue"]
            assert app.runtime.busy  # all of it while the agent worked
            await _settle(app)
        session.close()

    run(main())
