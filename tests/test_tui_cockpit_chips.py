"""A paste chip is atomic in the editor (issue 27, item 6, review findings 8-11): a paste
or an edit with the cursor (or a selection) inside a chip goes around the whole chip, a
broken remnant of a chip is never sent as a placeholder, a sent paste is forgotten (typed
chip text stays as typed), and /queue gives a queued paste back as its chip."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual import events

from tests.conftest import SmithEnv
from tests.runtime_kit import Fake, Gate, say
from tests.test_tui import SIZE, _app, _settle, _type, run, visible
from tests.test_tui_editor import _requests, _said, _scripted_app

LINES = "".join(f"pasted line {i}\n" for i in range(1, 51))  # 50 lines: shown as a chip
SEVEN = "".join(f"other {i}\n" for i in range(1, 8))  # 7 lines: a chip too


def _paste(app: Any, text: str) -> None:
    app.post_message(events.Paste(text))


def test_a_paste_inside_a_chip_goes_after_it_and_both_are_sent(senv: SmithEnv) -> None:
    app, session, log = _scripted_app(senv, [{"text": "ok"}])

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            _paste(app, LINES)
            await pilot.pause()
            await pilot.press(*["left"] * 6)
            _paste(app, SEVEN)
            await pilot.pause()
            assert app.editor.text == "[pasted #1 50 lines][pasted #2 7 lines]"
            await pilot.press("enter")
            await _settle(app)
        users = [e.content for e in session.entries("message") if e.content["role"] == "user"]
        assert [p["text"] for u in users for p in u["content"]] == [LINES + SEVEN]
        session.close()

    run(main())
    assert _said(_requests(log)[0]) == [LINES + SEVEN]


def test_a_partial_edit_of_a_chip_edits_around_the_whole_chip(tmp_path: Path) -> None:
    chip = "[pasted #1 50 lines]"

    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            editor = app.editor
            await pilot.press(*"see", "space")
            _paste(app, LINES)
            await pilot.pause()
            await pilot.press("ctrl+w")  # the word left of the cursor is the chip's `]`
            assert editor.text == "see "
            await pilot.press("ctrl+z")  # one edit: the whole chip comes back
            assert editor.text == f"see {chip}" and editor.value == f"see {LINES}"
            await pilot.press(*["left"] * 3, *"xy")  # typed inside: after the chip
            assert editor.text == f"see {chip}xy" and editor.value == f"see {LINES}xy"
            await pilot.press(*["left"] * 5, "backspace")  # inside: the whole chip
            assert editor.text == "see xy"
            await pilot.press("ctrl+z", "home", "right", "right", "delete")
            assert editor.text == f"se {chip}xy"
            await pilot.press(*["right"] * 5, "delete")  # inside, forward: the whole chip
            assert editor.text == "se xy"
            await pilot.press("ctrl+z")
            assert editor.text == f"se {chip}xy"
            # A selection covering part of a chip covers all of it.
            await pilot.press("home", *["shift+right"] * 6, *"I")
            assert editor.text == "Ixy"
            await pilot.press("ctrl+z")
            assert editor.text == f"se {chip}xy" and editor.value == f"se {LINES}xy"
            await pilot.press("end", *["shift+left"] * 4, "ctrl+x")
            assert editor.text == "se "
            await pilot.press("ctrl+v")
            assert editor.text == f"se {chip}xy" and editor.value == f"se {LINES}xy"

    run(main())


def test_a_broken_chip_is_refused_with_a_notice_rather_than_sent(senv: SmithEnv) -> None:
    app, session, log = _scripted_app(senv, [{"text": "ok"}])

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            editor = app.editor
            _paste(app, LINES)
            await pilot.pause()
            broken = "[pasted #1 50 lines please review"  # made by no edit of the editor's
            editor.load_text(broken)
            await pilot.press("end", "enter")
            await pilot.pause()
            assert editor.text == broken  # kept, not sent
            assert "Ctrl+Z undoes the edit, or delete the whole chip" in visible(app)
            await pilot.press("ctrl+u", "enter")  # nothing to send
            assert not list(session.entries("message"))
        session.close()

    run(main())
    assert not log.exists() or not _requests(log)


def test_a_sent_paste_is_forgotten_so_typed_chip_text_stays_as_typed(senv: SmithEnv) -> None:
    app, session, log = _scripted_app(senv, [{"text": "one"}, {"text": "two"}])
    chip = "[pasted #1 50 lines]"

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            _paste(app, LINES)
            await pilot.pause()
            await pilot.press("enter")
            await _settle(app)
            await pilot.press(*chip, "enter")
            await _settle(app)
            await pilot.press("up")  # as typed
            assert app.editor.text == chip and app.editor.value == chip
            await pilot.press("up")  # the paste comes back with its entry, as its chip
            assert app.editor.text == chip and app.editor.value == LINES
        session.close()

    run(main())
    assert _said(_requests(log)[1])[-1] == chip


def test_a_queued_paste_is_shown_and_taken_back_as_its_chip(tmp_path: Path) -> None:
    gate = Gate()
    fake = Fake([gate, *say("first")], say("second"))

    async def main() -> None:
        app = _app(tmp_path, (fake, "m"))
        async with app.run_test(size=SIZE) as pilot:
            await _type(pilot, "start")
            await gate.reached.wait()
            await pilot.press(*"see", "space")
            _paste(app, LINES)
            await pilot.pause()
            await pilot.press("enter")  # queued while it works
            await pilot.pause()
            await _type(pilot, "/queue")
            await pilot.pause()
            assert "pasted line 2" not in visible(app)
            await pilot.press("enter")
            await pilot.pause()
            editor = app.editor
            assert editor.text == "see [pasted #1 50 lines]" and editor.value == f"see {LINES}"
            gate.opened.set()
            await _settle(app)

    run(main())
