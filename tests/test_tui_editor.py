"""The app's editor through Pilot: multi-line input, completion, paste, steering."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from textual import events
from textual.widgets import Static

from tests.conftest import SmithEnv
from tests.runtime_kit import Fake, say
from tests.test_tui import SIZE, _app, _settle, run


def _user_texts(fake: Fake) -> list[str]:
    """The text of each user message of the last request (smith's notes left out)."""
    messages = fake.requests[-1].messages
    users: list[Any] = [m for m in messages if m["role"] == "user" and not m.get("context")]
    return [p["text"] for m in users for p in m["content"]]


def test_enter_sends_ctrl_j_and_shift_enter_insert_newlines_and_the_editor_grows(
    tmp_path: Path,
) -> None:
    fake = Fake(say("ok"))

    async def main() -> None:
        app = _app(tmp_path, (fake, "m"), editor_lines=4)
        async with app.run_test(size=SIZE) as pilot:
            editor = app.editor
            assert editor.size.height == 1  # one row of text (and its border)
            await pilot.press(*"one", "ctrl+j", *"two", "shift+enter", *"three")
            await pilot.pause()
            assert editor.text == "one\ntwo\nthree" and editor.size.height == 3
            transcript_height = app.transcript.size.height
            await pilot.press("ctrl+j", "ctrl+j", "ctrl+j")
            await pilot.pause()
            assert editor.size.height == 4  # tui.editor.max-lines, then it scrolls
            assert app.transcript.size.height == transcript_height - 1
            await pilot.press("backspace", "backspace", "backspace", "enter")
            await _settle(app)
            assert editor.text == "" and editor.size.height == 1
            assert _user_texts(fake) == ["one\ntwo\nthree"]

    run(main())


def test_a_command_name_is_suggested_and_right_takes_it(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            editor = app.editor
            await pilot.press(*"/hel")
            await pilot.pause()
            assert editor.suggestion == "p"
            await pilot.press("right")
            assert editor.text == "/help" and editor.suggestion == ""
            await pilot.press("ctrl+j", *"/he")
            await pilot.pause()
            assert editor.suggestion == ""  # only a one-line command is completed

    run(main())


def test_ctrl_d_deletes_forward_and_quits_only_on_an_empty_editor(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press(*"ab", "left", "ctrl+d")
            assert app.editor.text == "a" and app.is_running
            await pilot.press("backspace", "ctrl+d")
            await pilot.pause()
            assert not app.is_running

    run(main())


def test_ctrl_c_copies_the_editors_selection(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            copied: list[str] = []
            app.copy_to_clipboard = copied.append  # type: ignore[method-assign]
            await pilot.press(*"hello", "shift+home", "ctrl+c")
            assert copied == ["hello"] and app.is_running

    run(main())


def _scripted_app(senv: SmithEnv, responses: list[dict[str, Any]]) -> tuple[Any, Any, Path]:
    """The app over a real assembly whose model is a scripted one logging its requests."""
    from smith.config import resolve
    from smith.frontends.tui._app import SmithApp
    from smith.runtime import build

    log = senv.root / "requests.jsonl"
    script = senv.root / "script.json"
    script.write_text(json.dumps({"responses": responses, "requests_log": str(log)}))
    project = senv.make_project()
    config = resolve(env=senv.env, flags={"model": f"scripted:{script}"}, cwd=str(project))
    assembly = build(config, cwd=str(project), surface="tui", env=senv.env)
    session = assembly.new_session("smith")
    return SmithApp(assembly.runtime, session), session, log


def _requests(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def _said(request: dict[str, Any]) -> list[str]:
    users = [m for m in request["messages"] if m["role"] == "user" and not m.get("context")]
    return [p["text"] for m in users for p in m["content"]]


def test_a_long_paste_is_one_chip_in_the_editor_and_is_sent_whole(senv: SmithEnv) -> None:
    pasted = "".join(f"line {i}:\t<{'x' * (i % 7)}> ✓\r\n" for i in range(1, 201))
    app, session, log = _scripted_app(senv, [{"text": "ok"}])

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press(*"see:", "space")
            app.post_message(events.Paste(pasted))
            await pilot.pause()
            assert app.editor.text == "see: [pasted #1 200 lines]"
            assert app.editor.size.height == 1  # collapsed: one row, not 200
            await pilot.press("space", *"thanks", "enter")
            await _settle(app)
        session.close()

    run(main())
    whole = pasted.replace("\r\n", "\n")  # the terminal's line ends, as newlines
    assert _said(_requests(log)[0]) == [f"see: {whole} thanks"]


def test_a_short_paste_is_inserted_as_text(senv: SmithEnv) -> None:
    app, session, log = _scripted_app(senv, [{"text": "ok"}])

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            app.post_message(events.Paste("a\nb\n\nc  d"))
            await pilot.pause()
            assert app.editor.text == "a\nb\n\nc  d" and not app.editor.pastes
            await pilot.press("enter")
            await _settle(app)
        session.close()

    run(main())
    assert _said(_requests(log)[0]) == ["a\nb\n\nc  d"]


def test_while_it_works_enter_steers_and_alt_enter_queues_a_follow_up(senv: SmithEnv) -> None:
    """A slow model: Enter's message joins the turn after the tool batch, before the next
    request; Alt+Enter's waits until the agent would stop. The queue says which is which."""
    slow = {"text": "looking", "tool_calls": [{"name": "ls", "arguments": {"path": "."}}]}
    app, session, log = _scripted_app(
        senv, [{**slow, "delay_ms": 300}, {"text": "steered"}, {"text": "followed"}]
    )

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press(*"start", "enter")
            while not (app.runtime is not None and app.runtime.busy):
                await pilot.pause(0.01)
            # Pasted, so that the slow response is still streaming when the keys come.
            app.post_message(events.Paste("now this"))
            await pilot.press("enter")
            app.post_message(events.Paste("later\nand more\nand more"))
            await pilot.press("alt+enter")
            await pilot.pause()
            assert app.runtime.busy
            queue = str(app.query_one("#queue", Static).render())
            assert "queued (steer): now this" in queue
            assert "queued (follow-up): later  (+2 lines)" in queue  # one line each
            assert "and more" not in queue
            await _settle(app)
        session.close()

    run(main())
    requests = _requests(log)
    assert len(requests) == 3
    assert _said(requests[1]) == ["start", "now this"]  # in the turn, after the ls batch
    assert _said(requests[2]) == ["start", "now this", "later\nand more\nand more"]


def test_the_steer_and_follow_up_keys_come_from_configuration(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app(tmp_path, keys={"steer": "ctrl+s", "follow-up": "ctrl+q,f5"})
        async with app.run_test(size=SIZE):
            editor = app.editor
            assert editor.submit_keys == {
                "enter": "prompt",
                "ctrl+s": "steer",
                "ctrl+q": "follow_up",
                "f5": "follow_up",
            }
            assert "Ctrl+S steers, Ctrl+Q queues" in str(editor.placeholder)

    run(main())


def test_up_and_down_at_the_editors_edges_walk_the_projects_history(tmp_path: Path) -> None:
    """What was sent is kept per project across runs; Up at the first row goes back,
    Down at the last forward and then to what was being written; in between they move
    the cursor."""
    from smith.frontends.tui._history import PromptHistory

    home = str(tmp_path / "home")
    project = str(tmp_path / "project")

    async def first() -> None:
        app = _app(tmp_path, history=PromptHistory.for_project(home, project))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press(*"/help", "enter", "escape")
            app.post_message(events.Paste("two\nlines"))
            await pilot.press("enter")
            await _settle(app)

    async def second() -> None:
        (tmp_path / "s.smith").unlink()  # a new session: the history is the project's
        app = _app(tmp_path, history=PromptHistory.for_project(home, project))
        async with app.run_test(size=SIZE) as pilot:
            editor = app.editor
            await pilot.press(*"draft", "up")
            assert editor.text == "two\nlines" and editor.cursor_location == (1, 5)
            await pilot.press("up")  # the first row: the cursor moves
            assert editor.text == "two\nlines" and editor.cursor_location[0] == 0
            await pilot.press("up")
            assert editor.text == "/help"
            await pilot.press("up")  # the oldest: it stays
            assert editor.text == "/help"
            await pilot.press("down")
            assert editor.text == "two\nlines"
            await pilot.press("down")
            assert editor.text == "draft"
            await pilot.press("down")
            assert editor.text == "draft"

    run(first())
    run(second())
    other = PromptHistory.for_project(home, str(tmp_path / "elsewhere"))
    assert other.entries == []  # another project's history is its own
    assert PromptHistory.for_project(home, project).entries == ["/help", "two\nlines"]


def test_backspace_after_a_paste_chip_deletes_it_whole(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            editor = app.editor
            await pilot.press(*"a", "space")
            app.post_message(events.Paste("x\n" * 10))
            await pilot.pause()
            assert editor.text == "a [pasted #1 10 lines]" and editor.value == "a " + "x\n" * 10
            await pilot.press("backspace")
            assert editor.text == "a " and editor.value == "a "
            app.post_message(events.Paste("y\n" * 10))
            await pilot.pause()
            await pilot.press("home", "right", "right", "delete")
            assert editor.text == "a " and editor.value == "a "
            await pilot.press("backspace")
            assert editor.text == "a"  # ordinary text: one character

    run(main())


def test_keys_typed_right_after_enter_belong_to_the_next_message(senv: SmithEnv) -> None:
    """A terminal delivers `now this⏎later` at once: the editor empties when Enter sends,
    so what follows is not swept into the message sent (it once was, sent as one)."""
    app, session, log = _scripted_app(senv, [{"text": "ok"}])

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            editor = app.editor
            editor.value = "now this"
            for key, char in (("enter", "\r"), ("l", "l"), ("a", "a")):
                editor.post_message(events.Key(key, char))  # queued together
            await pilot.pause()
            assert editor.text == "la"
            await _settle(app)
        session.close()

    run(main())
    assert _said(_requests(log)[0]) == ["now this"]
