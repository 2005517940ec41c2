"""Never losing work in the app (issue 27, items 5-7): Ctrl+C clears a draft and quits
only on a second press, a draft outlives the app, a paste is sent exactly as pasted
whatever happened to its chip, and quitting says how to resume the session.

Unit tests of the chip mapping, Pilot tests of the editor, then tmux tests of the real
terminal (the harness of test_tui_terminal)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from textual import events

from tests.conftest import SmithEnv, smith_executable
from tests.test_tui import SIZE, _app, _settle, run
from tests.test_tui_editor import _requests, _said, _scripted_app
from tests.test_tui_terminal import Tmux, _restored, terminal, terminal_env

LINES = "".join(f"pasted line {i}\n" for i in range(1, 51))  # 50 lines: shown as a chip
OTHER = "".join(f"other line {i}\n" for i in range(1, 51))  # as long, another text

# -- the chip mapping ----------------------------------------------------------------------


def test_two_pastes_of_the_same_length_get_chips_of_their_own() -> None:
    from smith.frontends.tui._pastes import Pastes

    pastes = Pastes()
    first, second = pastes.add(LINES), pastes.add(OTHER)
    assert (first, second) == ("[pasted #1 50 lines]", "[pasted #2 50 lines]")
    assert pastes.expand(f"{second} then {first}") == f"{OTHER} then {LINES}"


def test_only_whole_chips_that_were_pasted_are_expanded_in_one_pass() -> None:
    from smith.frontends.tui._pastes import Pastes

    pastes = Pastes()
    pasted = "a chip inside: [pasted #1 7 lines]\n" + "x\n" * 6
    chip = pastes.add(pasted)
    assert chip == "[pasted #1 7 lines]"
    typed = "[pasted #2 50 lines] [pasted #1 6 lines] [pasted #1 7 lines [pasted 7 lines]"
    assert pastes.expand(typed) == typed  # never pasted, or not whole: as typed
    assert pastes.present(typed) == {}
    # The paste's own chip-like text is sent as pasted, not expanded again.
    assert pastes.expand(f"<{chip}>") == f"<{pasted}>"


def test_adopted_pastes_are_renumbered_unless_they_are_the_same_paste() -> None:
    from smith.frontends.tui._pastes import Pastes

    pastes = Pastes()
    mine = pastes.add(LINES)
    text = pastes.adopt(f"{mine} and [pasted #9 1 lines]", {mine: OTHER})
    assert text == "[pasted #2 50 lines] and [pasted #9 1 lines]"  # #1 here is another
    assert pastes.expand(text) == f"{OTHER} and [pasted #9 1 lines]"
    assert pastes.adopt(mine, {mine: LINES}) == mine  # the same paste: the same chip


def test_history_entries_keep_their_pastes_and_old_lines_still_read(tmp_path: Path) -> None:
    from smith.frontends.tui._history import Prompt, PromptHistory, pastes_of

    path = tmp_path / "history.jsonl"
    path.write_text(json.dumps({"text": "an old entry\nof two lines", "ts": 1}) + "\n")
    history = PromptHistory(path)
    history.add(Prompt("see [pasted #1 50 lines]", {"[pasted #1 50 lines]": LINES}))
    again = PromptHistory(path).entries
    assert again == ["an old entry\nof two lines", "see [pasted #1 50 lines]"]
    assert pastes_of(again[0]) == {} and pastes_of(again[1]) == {"[pasted #1 50 lines]": LINES}
    assert json.loads(path.read_text().splitlines()[1])["pastes"] == {"[pasted #1 50 lines]": LINES}


def test_a_draft_file_is_private_torn_ones_are_none_and_an_odd_id_keeps_nothing(
    tmp_path: Path,
) -> None:
    from smith.frontends.tui._history import Drafts, Prompt, pastes_of

    drafts = Drafts(tmp_path / "drafts")
    half = Prompt("half [pasted #1 50 lines]", {"[pasted #1 50 lines]": LINES})
    assert drafts.save("s-1", half) is None
    path = tmp_path / "drafts" / "s-1.json"
    assert path.stat().st_mode & 0o777 == 0o600
    loaded, cleared = drafts.load("s-1") or ("", True)
    assert loaded == "half [pasted #1 50 lines]" and not cleared
    assert pastes_of(loaded) == {"[pasted #1 50 lines]": LINES}
    path.write_text('{"text": "torn')
    assert drafts.load("s-1") is None
    assert drafts.save("../escape", Prompt("x")) is not None  # not a session id: not kept
    assert not (tmp_path / "escape.json").exists()
    drafts.save("s-1", Prompt(""))  # an empty editor: no draft
    assert not path.exists()


# -- the editor through Pilot ----------------------------------------------------------------


def _paste(app: Any, text: str) -> None:
    app.post_message(events.Paste(text))


def test_a_chip_deleted_and_undone_or_redone_is_sent_whole(senv: SmithEnv) -> None:
    """The acceptance probe: Backspace deletes the chip, Ctrl+Z brings it back; then
    Ctrl+Z undoes the paste and Ctrl+Y redoes it. The model gets every line each time."""
    app, session, log = _scripted_app(senv, [{"text": "one"}, {"text": "two"}])

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            _paste(app, LINES)
            await pilot.pause()
            await pilot.press("backspace", "ctrl+z", "enter")
            await _settle(app)
            _paste(app, OTHER)
            await pilot.pause()
            await pilot.press("ctrl+z")
            assert app.editor.text == ""
            await pilot.press("ctrl+y", "enter")
            await _settle(app)
        session.close()

    run(main())
    first, second = _requests(log)
    assert _said(first) == [LINES]
    assert _said(second)[-1] == OTHER


def test_a_chip_cut_and_pasted_back_and_two_equal_pastes_are_sent_whole(senv: SmithEnv) -> None:
    app, session, log = _scripted_app(senv, [{"text": "ok"}])

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            editor = app.editor
            _paste(app, LINES)
            await pilot.pause()
            await pilot.press("space", *"and", "space")
            _paste(app, OTHER)
            await pilot.pause()
            assert editor.text == "[pasted #1 50 lines] and [pasted #2 50 lines]"
            await pilot.press("home", *["shift+right"] * len("[pasted #1 50 lines]"))
            await pilot.press("ctrl+x")
            assert editor.text == " and [pasted #2 50 lines]"
            await pilot.press("end", "space", *"then", "space")
            editor.insert(app.clipboard)  # Ctrl+V's text paste (the clipboard's chip)
            await pilot.press("space", *"[pasted", "space", *"#3", "space", *"50", "space")
            await pilot.press(*"lines]", "enter")  # typed to look like a chip: as typed
            await _settle(app)
        session.close()

    run(main())
    typed = "[pasted #3 50 lines]"
    assert _said(_requests(log)[0]) == [f"and {OTHER} then {LINES} {typed}"]


def test_the_session_records_the_paste_and_up_shows_the_chip_again(senv: SmithEnv) -> None:
    from smith.frontends.tui._history import PromptHistory

    app, session, log = _scripted_app(senv, [{"text": "one"}, {"text": "two"}])
    app.history = PromptHistory.for_project(str(senv.data_home), str(senv.root / "p"))

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press(*"see", "space")
            _paste(app, LINES)
            await pilot.pause()
            await pilot.press("enter")
            await _settle(app)
            await pilot.press("up")
            assert app.editor.text == "see [pasted #1 50 lines]"  # not 51 lines
            await pilot.press("enter")
            await _settle(app)
        users = [e.content for e in session.entries("message") if e.content["role"] == "user"]
        assert [p["text"] for u in users for p in u["content"]] == [f"see {LINES}"] * 2

    run(main())
    assert _said(_requests(log)[1]) == [f"see {LINES}", f"see {LINES}"]


def test_ctrl_c_clears_a_draft_that_undo_and_up_bring_back(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            editor = app.editor
            await pilot.press(*"my", "space")
            _paste(app, LINES)
            await pilot.pause()
            await pilot.press("ctrl+c")
            assert editor.text == "" and app.is_running
            await pilot.press("ctrl+z")
            assert editor.text == "my [pasted #1 50 lines]"
            assert editor.value == f"my {LINES}"
            await pilot.press("ctrl+c", "up")
            assert editor.text == "my [pasted #1 50 lines]" and editor.value == f"my {LINES}"
            assert app.is_running

    run(main())


def test_an_empty_editor_quits_on_the_second_ctrl_c_within_the_window(tmp_path: Path) -> None:
    from smith.frontends.tui._interrupt import QUIT_WINDOW, QuitKey

    now = [100.0]

    async def main() -> None:
        app = _app(tmp_path)
        app.quit_key = QuitKey(clock=lambda: now[0])
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("ctrl+c")
            await pilot.pause()
            assert app.is_running
            assert any("again to quit" in str(n.message) for n in app._notifications)
            now[0] += QUIT_WINDOW + 0.5  # too late: this press asks again
            await pilot.press("ctrl+c")
            await pilot.pause()
            assert app.is_running
            now[0] += QUIT_WINDOW - 0.5
            await pilot.press("ctrl+c")
            await pilot.pause()
            assert not app.is_running

    run(main())


def test_in_the_browser_ctrl_c_never_quits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from smith.frontends.tui import _interrupt

    monkeypatch.setattr(_interrupt, "in_browser", lambda app: True)

    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("ctrl+c", "ctrl+c", "ctrl+c")
            await pilot.pause()
            assert app.is_running
            said = [str(n.message) for n in app._notifications]
            assert any("Ctrl+D on an empty editor or /quit" in s for s in said)

    run(main())


def test_a_draft_with_a_paste_outlives_the_app_and_is_gone_once_sent(senv: SmithEnv) -> None:
    from smith.frontends.tui._history import PromptHistory

    project = senv.make_project()
    home = str(senv.data_home)
    fake_script = [{"text": "ok"}]
    app, session, log = _scripted_app(senv, fake_script)
    app.history = PromptHistory.for_project(home, str(project))
    drafts = app.history.drafts

    async def first() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press(*"half", "space")
            _paste(app, LINES)
            await pilot.pause()

    run(first())
    assert drafts.kept(session.id)
    again, _, _ = _scripted_app(senv, fake_script)
    again.session = session  # the same session, opened again (as --continue does)
    again.history = PromptHistory.for_project(home, str(project))

    async def second() -> None:
        async with again.run_test(size=SIZE) as pilot:
            assert again.editor.text == "half [pasted #1 50 lines]"
            await pilot.press("enter")
            await _settle(again)
            assert not drafts.kept(session.id)  # sent: no longer a draft

    run(second())
    assert _said(_requests(log)[0]) == [f"half {LINES}"]


# -- in a real terminal -----------------------------------------------------------------------


def _start(tmux: Tmux, script: Path, args: str = "") -> None:
    tmux("send-keys", "-t", "s", f"smith --model scripted:{script} {args}".strip(), "Enter")
    assert tmux.wait(lambda: tmux.flag("alternate_on") == "1" and "ready" in tmux.screen())


def _script(senv: SmithEnv, responses: list[dict[str, Any]]) -> tuple[Path, Path]:
    log, script = senv.root / "requests.jsonl", senv.root / "script.json"
    script.write_text(json.dumps({"responses": responses, "requests_log": str(log)}))
    return script, log


@pytest.fixture
def term(senv: SmithEnv) -> Any:
    project = senv.make_project()
    with terminal(project, terminal_env(senv)) as t:
        yield t


def _smith(tmux: Tmux, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([smith_executable(), *args], cwd=tmux.root, env=tmux.env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def _joined(tmux: Tmux) -> str:
    """The screen with wrapped lines joined."""
    return tmux("capture-pane", "-p", "-J", "-t", "s")


def _latest(tmux: Tmux) -> str:
    """The id of the project's newest session."""
    listed = json.loads(_smith(tmux, "sessions", "list", "--json").stdout)["sessions"]
    return str(listed[0]["id"])


def _paste_in(tmux: Tmux, senv: SmithEnv, text: str) -> None:
    (senv.root / "paste.txt").write_text(text)
    tmux("load-buffer", str(senv.root / "paste.txt"))
    tmux("paste-buffer", "-p", "-t", "s")  # bracketed, as the app asked


def test_ctrl_c_clears_a_draft_up_recovers_it_and_two_presses_quit_with_a_hint(
    term: Tmux, senv: SmithEnv
) -> None:
    script, _ = _script(senv, [{"text": "noted"}])
    _start(term, script)
    term("send-keys", "-t", "s", "-l", "keep this draft")
    assert term.wait(lambda: "keep this draft" in term.screen())
    term("send-keys", "-t", "s", "C-c")
    assert term.wait(lambda: "draft cleared" in term.screen()), term.screen()
    assert "keep this draft" not in term.screen() and term.smith_pids()
    term("send-keys", "-t", "s", "Up")
    assert term.wait(lambda: "keep this draft" in term.screen()), term.screen()
    term("send-keys", "-t", "s", "Enter")
    assert term.wait(lambda: "noted" in term.screen() and "ready" in term.screen())
    term("send-keys", "-t", "s", "C-c")
    assert term.wait(lambda: "press Ctrl+C again to quit" in term.screen()), term.screen()
    assert term.smith_pids()
    term("send-keys", "-t", "s", "C-c")
    _restored(term)
    assert f"entries); resume it with: smith --resume {_latest(term)}" in _joined(term)


def test_a_draft_with_a_paste_survives_quitting_and_continue(term: Tmux, senv: SmithEnv) -> None:
    """Quitting with Ctrl+C (the draft cleared, then twice) keeps the cleared draft: Up
    brings it back after `--continue`. A draft still in the editor when the terminal is
    closed (SIGHUP) is in the editor again after `--resume ID`."""
    script, log = _script(senv, [{"text": "noted"}])  # each run reads it from the start
    _start(term, script)
    term("send-keys", "-t", "s", "-l", "hello")
    term("send-keys", "-t", "s", "Enter")
    assert term.wait(lambda: "noted" in term.screen() and "ready" in term.screen())
    term("send-keys", "-t", "s", "-l", "unsent ")
    _paste_in(term, senv, LINES)
    assert term.wait(lambda: "unsent [pasted #1 50 lines]" in term.screen()), term.screen()
    term("send-keys", "-t", "s", "C-c", "C-c", "C-c")
    _restored(term)
    assert "with your cleared draft, which Up shows)" in _joined(term), _joined(term)
    term("send-keys", "-t", "s", "clear", "Enter")
    _start(term, script, "--continue")
    term("send-keys", "-t", "s", "Up")
    assert term.wait(lambda: "unsent [pasted #1 50 lines]" in term.screen()), term.screen()
    term("send-keys", "-t", "s", "Enter")
    assert term.wait(lambda: len(_requests(log)) == 2), term.screen()
    assert _said(_requests(log)[1])[-1] == f"unsent {LINES}"

    term("send-keys", "-t", "s", "-l", "left in the editor ")
    _paste_in(term, senv, OTHER)
    assert term.wait(lambda: "left in the editor [pasted #2 50 lines]" in term.screen())
    sid = _latest(term)
    for pid in term.smith_pids():
        os.kill(pid, signal.SIGHUP)  # the terminal closed
    assert term.wait(lambda: not term.smith_pids(), 15)
    term("send-keys", "-t", "s", "clear", "Enter")
    _start(term, script, f"--resume {sid}")
    assert term.wait(lambda: "left in the editor [pasted #1 50 lines]" in term.screen())
    term("send-keys", "-t", "s", "Enter")
    assert term.wait(lambda: len(_requests(log)) == 3), term.screen()
    assert _said(_requests(log)[2])[-1] == f"left in the editor {OTHER}"
    term("send-keys", "-t", "s", "C-d")
    _restored(term)


def test_paste_backspace_undo_enter_reaches_the_model_and_the_session_whole(
    term: Tmux, senv: SmithEnv
) -> None:
    script, log = _script(senv, [{"text": "got it"}])
    _start(term, script)
    _paste_in(term, senv, LINES)
    assert term.wait(lambda: "[pasted #1 50 lines]" in term.screen()), term.screen()
    term("send-keys", "-t", "s", "BSpace")
    assert term.wait(lambda: "[pasted #1 50 lines]" not in term.screen())
    term("send-keys", "-t", "s", "C-z")
    assert term.wait(lambda: "[pasted #1 50 lines]" in term.screen()), term.screen()
    term("send-keys", "-t", "s", "Enter")
    assert term.wait(lambda: "got it" in term.screen() and "ready" in term.screen())
    assert _said(_requests(log)[0]) == [LINES]
    term("send-keys", "-t", "s", "Up")
    assert term.wait(lambda: "[pasted #1 50 lines]" in term.screen()), term.screen()
    assert "pasted line 2\n" not in term.screen()  # the chip, not 51 lines
    term("send-keys", "-t", "s", "C-c", "C-c", "C-c")  # the draft, then twice to quit
    _restored(term)
    dump = _smith(term, "sessions", "dump", _latest(term))
    assert LINES in "".join(
        p.get("text", "") for line in dump.stdout.splitlines()
        for p in (json.loads(line).get("content") or {}).get("content", [])
        if isinstance(p, dict)
    ), dump.stdout[:500] + dump.stderr  # fmt: skip
    assert "[pasted" not in dump.stdout
