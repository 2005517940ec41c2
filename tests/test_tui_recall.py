"""Ctrl+R over the prompt history, Tab as the follow-up key every terminal has, and the
history file kept bounded."""

from __future__ import annotations

import json
from pathlib import Path

from textual import events
from textual.widgets import OptionList, Static

from tests.conftest import SmithEnv
from tests.test_tui import SIZE, _app, _settle, run
from tests.test_tui_editor import _requests, _said, _scripted_app


def _history(tmp_path: Path, entries: list[str]) -> object:
    from smith.frontends.tui._history import PromptHistory

    history = PromptHistory(tmp_path / "history.jsonl")
    for entry in entries:
        history.add(entry)
    return history


def test_ctrl_r_filters_the_history_by_words_and_enter_takes_one_back(tmp_path: Path) -> None:
    from smith.frontends.tui._recall import HistorySearch

    history = _history(tmp_path, ["run the tests", "fix the parser\nand its tests", "deploy"])

    async def main() -> None:
        app = _app(tmp_path, history=history)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press(*"draft", "ctrl+r")
            screen = app.screen
            assert isinstance(screen, HistorySearch)
            listing = screen.query_one(OptionList)
            rows = [str(listing.get_option_at_index(i).prompt) for i in range(3)]
            assert rows == ["deploy", "fix the parser  (+1 line)", "run the tests"]  # newest first
            await pilot.press(*"TESTS", "space", *"fix")  # every word, any case, any order
            assert listing.option_count == 1
            await pilot.press("enter")
            assert not isinstance(app.screen, HistorySearch)
            assert app.editor.text == "fix the parser\nand its tests"
            assert app.focused is app.editor

            await pilot.press("ctrl+r", *"nothing like it")
            assert "no entry has every word" in str(listing_of(app).get_option_at_index(0).prompt)
            await pilot.press("enter")  # nothing to take: the overlay stays
            assert isinstance(app.screen, HistorySearch)
            await pilot.press("escape")  # and Escape leaves the editor as it was
            assert app.editor.text == "fix the parser\nand its tests"

    run(main())


def listing_of(app: object) -> OptionList:
    return app.screen.query_one(OptionList)  # type: ignore[attr-defined, no-any-return]


def test_ctrl_r_with_no_history_says_so(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app(tmp_path, history=_history(tmp_path, []))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("ctrl+r")
            assert "nothing sent yet" in str(listing_of(app).get_option_at_index(0).prompt)

    run(main())


def test_tab_queues_a_follow_up_while_it_works_and_keeps_its_meaning_when_idle(
    senv: SmithEnv,
) -> None:
    """Alt+Enter reaches the app only through the kitty keyboard protocol; Tab is the
    follow-up key of every terminal, and only while the agent works."""
    slow = {"text": "looking", "tool_calls": [{"name": "ls", "arguments": {"path": "."}}]}
    app, session, log = _scripted_app(senv, [{**slow, "delay_ms": 300}, {"text": "done"},
                                             {"text": "followed"}])  # fmt: skip

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press(*"idle", "tab")
            assert app.editor.text == "idle"  # not sent: Tab moved the focus
            assert app.focused is not app.editor
            app.editor.focus()
            app.editor.clear_text()
            await pilot.press(*"start", "enter")
            while not (app.runtime is not None and app.runtime.busy):
                await pilot.pause(0.01)
            app.post_message(events.Paste("afterwards"))
            await pilot.press("tab")
            await pilot.pause()
            queue = str(app.query_one("#queue", Static).render())
            assert "queued (follow-up): afterwards" in queue
            await _settle(app)
        session.close()

    run(main())
    requests = _requests(log)
    assert _said(requests[-1]) == ["start", "afterwards"]  # after the turn, not inside it
    assert len(requests) == 3


def test_every_key_setting_reaches_the_app() -> None:
    """Each tui.keys.* option is read by the app (tui.keys.editor once was not)."""
    from smith.config import SCHEMA
    from smith.frontends.tui import KEY_ACTIONS

    options = {o.key.removeprefix("tui.keys.") for o in SCHEMA if o.key.startswith("tui.keys.")}
    assert options == set(KEY_ACTIONS)


def test_the_history_file_is_trimmed_to_the_newest_entries_and_huge_ones_stay_out(
    tmp_path: Path,
) -> None:
    from smith.frontends.tui._history import KEEP, MAX_ENTRY, PromptHistory

    path = tmp_path / "history.jsonl"
    path.write_text(
        "".join(json.dumps({"text": f"p{i}", "ts": i}) + "\n" for i in range(2 * KEEP + 1))
    )
    history = PromptHistory(path)
    assert history.entries[0] == f"p{KEEP + 1}" and history.entries[-1] == f"p{2 * KEEP}"
    lines = path.read_text().splitlines()
    assert len(lines) == KEEP and json.loads(lines[-1])["text"] == f"p{2 * KEEP}"
    assert path.stat().st_mode & 0o777 == 0o600

    history.add("x" * (MAX_ENTRY + 1))
    assert history.entries[-1] == "x" * (MAX_ENTRY + 1)  # this run keeps it
    assert len(path.read_text().splitlines()) == KEEP  # the file does not
    assert PromptHistory(path).entries[-1] == f"p{2 * KEEP}"
