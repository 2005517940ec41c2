"""Finding things in the app, through Pilot: the `/` menu, the command palette (a name
match ranks first; brackets shown as written; "Keys" shows smith's keys), /help's keys,
the first launch's welcome, /resume's list, the model kept across sessions, and every
overlay fitting, scrolling and saying how to close it at 80x24."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual.containers import Vertical, VerticalScroll
from textual.widgets import OptionList, Static

from smith.frontends.tui._complete import command_matches, needs_argument
from smith.frontends.tui._history import PromptHistory
from smith.frontends.tui._host import key_label
from smith.frontends.tui._resume import age, given_name
from smith.frontends.tui._screens import ChoiceScreen, InfoScreen, rank
from smith.plugins.product import COMMANDS
from tests.test_tui import _app, _app_with_sessions, _settle, _type, run, visible

SMALL = (80, 24)


def _info(app: Any) -> str:
    return str(app.screen.query_one("#info-body", Static).render())


# -- the / menu ------------------------------------------------------------------------


def test_commands_starting_with_what_was_typed_come_first_then_fuzzy_ones() -> None:
    names = [c.name for c, _ in command_matches("co", COMMANDS)]
    assert names[:3] == ["continue", "compact", "context"]  # prefix, in the plugin's order
    assert [c.name for c, _ in command_matches("rdo", COMMANDS)] == ["redo"]  # r-d-o in order
    (found, at), *_ = command_matches("hst", COMMANDS)
    assert found.name == "history" and at == (0, 2, 3)
    assert [c.name for c, _ in command_matches("", COMMANDS)] == [c.name for c in COMMANDS]
    assert command_matches("zzq", COMMANDS) == []
    by_name = {c.name: c for c in COMMANDS}
    assert needs_argument(by_name["restore"]) and not needs_argument(by_name["model"])
    assert not needs_argument(by_name["help"])


def test_the_menu_moves_runs_completes_and_keeps_the_focus(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=SMALL) as pilot:
            completion = app.editor.completion
            await pilot.press("/")
            assert completion.shown and completion.kind == "command"
            rows = str(completion.list.render()).splitlines()
            assert rows[0].startswith("▸ /help") and "the commands and keys" in rows[0]
            assert len(rows) == 9 and rows[-1].endswith("more: ↑↓ to see them")
            for _ in range(10):  # past the first window: it follows the chosen row
                await pilot.press("down")
            rows = str(completion.list.render()).splitlines()
            chosen = next(r for r in rows if r.startswith("▸"))
            assert chosen.startswith("▸ /undo") and not rows[0].startswith("  /help")
            await pilot.press("escape")  # closes it; the app goes on
            assert not completion.shown and app.is_running and app.editor.text == "/"
            app.editor.value = ""
            await pilot.press(*"/rest", "enter")  # restore needs an ENTRY: completed only
            assert app.editor.text == "/restore " and not completion.shown
            assert app.focused is app.editor and app.screen is app.screen_stack[0]
            app.editor.value = ""
            await pilot.press(*"/zzq", "tab")  # no match: Tab stays in the editor
            assert app.focused is app.editor and completion.shown
            app.editor.value = ""
            await pilot.press(*"/in")  # no name starts so: the fuzzy matches, best first
            assert [text for text, _ in completion.matches][:2] == ["/continue", "/thinking"]
            app.editor.value = ""
            await pilot.press(*"/plu", "enter")  # runs it: /plugins needs no argument
            await pilot.pause()
            assert isinstance(app.screen, InfoScreen) and "product" in _info(app)

    run(main())


def test_enter_completes_the_word_as_typed_even_before_the_menu_caught_up(
    tmp_path: Path,
) -> None:
    """Typed fast, a key reaches the text before its change reaches the menu: Enter
    must complete what is typed now, not the word the menu was drawn for."""

    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=SMALL) as pilot:
            editor, completion = app.editor, app.editor.completion
            await pilot.press(*"/hel")
            assert completion.shown and completion.matches[0][0] == "/help"
            editor.insert("p")  # its Changed message not handled yet: the menu is behind
            assert completion.key("enter") is False  # /help needs no argument: it sends
            assert editor.text == "/help"  # not "/helpp"

    run(main())


def test_the_menu_shows_only_for_a_slash_that_starts_the_message(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=SMALL) as pilot:
            completion = app.editor.completion
            await pilot.press(*"see", "space", "/")
            assert not completion.shown
            app.editor.value = ""
            await pilot.press("/", "/")  # `//` sends a slash
            assert not completion.shown
            app.editor.value = ""
            await pilot.press(*"/model", "space")  # the name is done: arguments follow
            assert not completion.shown

    run(main())


def test_walking_the_history_onto_a_command_opens_no_menu(tmp_path: Path) -> None:
    """Up and Down walk on past an entry that starts with / or holds an @path (the list
    would take the next Up or Down); typing opens the menu again."""
    history = PromptHistory(None)
    for text in ("/help", "see @README.md", "last"):
        history.add(text)

    async def main() -> None:
        app = _app(tmp_path, history=history)
        async with app.run_test(size=SMALL) as pilot:
            editor, completion = app.editor, app.editor.completion
            await pilot.press("up", "up")
            assert editor.text == "see @README.md" and not completion.shown
            await pilot.press("up")
            assert editor.text == "/help" and not completion.shown
            await pilot.press("down")
            assert editor.text == "see @README.md"
            await pilot.press("up", "backspace")
            assert editor.text == "/hel" and completion.shown and completion.kind == "command"

    run(main())


# -- the command palette ---------------------------------------------------------------


def test_a_name_match_ranks_above_a_description_match() -> None:
    from textual.fuzzy import Matcher

    by_name = {c.name: c for c in COMMANDS}
    match = Matcher("model").match
    assert rank(match, "model", by_name["model"]) > rank(match, "model", by_name["context"]) > 0
    fuzzy = Matcher("mdl").match  # a name match that is not a prefix still wins
    assert rank(fuzzy, "mdl", by_name["model"]) > rank(fuzzy, "mdl", by_name["context"])
    assert rank(Matcher("zzq").match, "zzq", by_name["model"]) == 0


def test_typing_model_in_the_palette_and_enter_opens_the_model_picker(tmp_path: Path) -> None:
    from textual.command import CommandPalette

    from smith.frontends.tui._picker import ModelPicker

    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("ctrl+p")
            await pilot.press(*"model")
            await pilot.pause(0.3)
            assert isinstance(app.screen, CommandPalette)
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, ModelPicker)  # not /context ("the model is told")

    run(main())


def test_brackets_in_the_palette_are_shown_as_written(tmp_path: Path) -> None:
    from textual.command import CommandList

    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=(120, 30)) as pilot:
            await pilot.press("ctrl+p")
            await pilot.press(*"diff")
            await pilot.pause(0.3)
            listing = app.screen.query_one(CommandList)
            shown = [str(listing.get_option_at_index(i).prompt)
                     for i in range(listing.option_count)]  # fmt: skip
            assert any("(or from ENTRY [to ENTRY])" in s for s in shown), shown

    run(main())


def test_the_palettes_keys_entry_shows_smiths_keys_and_escape_closes_it(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app(tmp_path, keys={"search": "ctrl+k"})
        async with app.run_test(size=SMALL) as pilot:
            await pilot.press("ctrl+p")
            await pilot.press(*"keys")
            await pilot.pause(0.3)
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, InfoScreen) and app.screen.title_text == "Keys"
            body = _info(app)
            assert "Ctrl+K  " in body and "find" in body  # as configured, not the default
            assert "Ctrl+R" in body and "Esc" in body and "steer" in body
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen is app.screen_stack[0] and app.focused is app.editor

    run(main())


def test_help_lists_the_commands_and_the_keys_as_bound(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app(tmp_path, keys={"help": "f2"})
        async with app.run_test(size=SMALL) as pilot:
            await pilot.press("f2")
            await pilot.pause()
            body = _info(app)
            assert "/resume [ID]" in body and "Keys" in body
            lines = body.splitlines()
            assert any(line.startswith("F2 ") and line.endswith("help") for line in lines)
            assert not any(line.startswith("F1 ") for line in lines)
            assert any(line.startswith("Ctrl+J, Shift+Enter") for line in lines)

    run(main())


def test_keys_are_written_for_people() -> None:
    assert key_label("ctrl+p,f1") == "Ctrl+P, F1"
    assert key_label("escape") == "Esc" and key_label("alt+enter, tab") == "Alt+Enter, Tab"


# -- every overlay fits 80x24, scrolls, says how to close ------------------------------


def _fits(app: Any) -> tuple[Any, Any]:
    """The overlay's box and hint: both on screen, the hint inside the box, saying Esc."""
    box = app.screen.query_one(Vertical)
    assert box.region.y >= 0 and box.region.bottom <= SMALL[1]
    assert box.region.x >= 0 and box.region.right <= SMALL[0]
    hint = app.screen.query_one(".hint", Static)
    assert "Esc" in str(hint.render())
    assert box.region.contains_region(hint.region) and hint.region.height >= 1
    return box, hint


def test_every_overlay_fits_80x24_scrolls_and_says_how_to_close_it(tmp_path: Path) -> None:
    from smith.frontends.tui._picker import ModelPicker
    from smith.frontends.tui._recall import HistorySearch
    from smith.frontends.tui._tree import TreeScreen

    history = PromptHistory(None)
    for i in range(60):
        history.add(f"prompt number {i}")

    async def main() -> None:
        app = _app(tmp_path, history=history)
        async with app.run_test(size=SMALL) as pilot:
            await _type(pilot, "/help")
            await pilot.pause()
            _fits(app)
            body = app.screen.query_one("#info-scroll", VerticalScroll)
            assert body.max_scroll_y > 0 and app.focused is body
            await pilot.press("pagedown")
            assert body.scroll_y > 0
            await pilot.press("escape")
            app.choose("Pick one " + "very long title " * 3, [(str(i), f"option {i}")
                       for i in range(60)], lambda key: None)  # fmt: skip
            await pilot.pause()
            assert isinstance(app.screen, ChoiceScreen)
            _fits(app)
            assert app.screen.query_one(OptionList).max_scroll_y > 0
            await pilot.press("escape")
            await pilot.pause()
            for opened, kind in ((lambda: _type(pilot, "/tree"), TreeScreen),
                                 (lambda: _type(pilot, "/model"), ModelPicker),
                                 (lambda: pilot.press("ctrl+r"), HistorySearch)):  # fmt: skip
                await opened()
                await pilot.pause()
                assert isinstance(app.screen, kind)
                _fits(app)
                await pilot.press("escape")
                await pilot.pause()
                assert app.screen is app.screen_stack[0]
            assert HistorySearch is not None

    run(main())


def test_the_pager_fits_80x24_and_says_how_to_close_it(tmp_path: Path) -> None:
    from smith.frontends.tui._pager import DiffScreen

    patch = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -0,0 +1,80 @@\n" + "".join(
        f"+line {i}\n" for i in range(80)
    )

    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=SMALL) as pilot:
            app.show_diff("Changes", "1 file", patch)
            await pilot.pause()
            assert isinstance(app.screen, DiffScreen)
            box = app.screen.query_one(Vertical)
            assert box.region.bottom <= SMALL[1] and box.region.right <= SMALL[0]
            text = "\n".join(str(s.render()) for s in app.screen.query(Static))
            assert "Esc or q: close" in text
            assert app.screen.query_one("#diff-body").max_scroll_y > 0
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, DiffScreen)

    run(main())


# -- the welcome -----------------------------------------------------------------------


@pytest.mark.parametrize("case", ["first", "history", "prompt", "no-history-file"])
def test_a_first_launch_shows_a_short_welcome(tmp_path: Path, case: str) -> None:
    history = PromptHistory(tmp_path / "history.jsonl" if case != "no-history-file" else None)
    if case == "history":
        history.add("an earlier prompt")
    kw: dict[str, Any] = {"prompt": "hello"} if case == "prompt" else {}

    async def main() -> None:
        app = _app(tmp_path, history=history, **kw)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            shown = visible(app)
            if case != "first":
                assert "Welcome to smith" not in shown
                return
            assert "Welcome to smith: demo answers, in" in shown and "project" in shown
            assert "/help" in shown and "F1" in shown and "Try:" in shown
            assert len(app.transcript.blocks) == 1

    run(main())


def test_no_welcome_when_resuming_a_session_with_messages(tmp_path: Path) -> None:
    from smith.session import Session

    project = tmp_path / "project"
    project.mkdir()
    session = Session.create(str(tmp_path / "s.smith"), name="tui", cwd=str(project))
    session.append("message", {"role": "user", "content": [{"type": "text", "text": "hi"}]})

    async def main() -> None:
        app = _app(tmp_path, session=session, history=PromptHistory(tmp_path / "h.jsonl"))
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            assert "Welcome to smith" not in visible(app) and "hi" in visible(app)

    run(main())


# -- /resume and the model across sessions ---------------------------------------------


def test_resume_lists_sessions_by_first_prompt_newest_first_skipping_empty_ones(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        app = _app_with_sessions(tmp_path)
        async with app.run_test(size=(120, 30)) as pilot:
            source = app.session_source
            assert source is not None
            first = app.session.id
            await _type(pilot, "list the files")
            await _settle(app)
            named = source.sessions.new("bugfix")  # type: ignore[attr-defined]
            named.append("message", {"role": "user", "content": [
                {"type": "text", "text": "why does the parser fail?\nmore lines"}]})  # fmt: skip
            named.close()
            source.new().close()  # opened and left: nothing to resume
            await _type(pilot, "/new")
            await pilot.pause(0.2)
            await _type(pilot, "/resume")
            await pilot.pause()
            assert isinstance(app.screen, ChoiceScreen)
            labels = [label for _, label in app.screen.options]
            ids = [key for key, _ in app.screen.options]
            assert len(labels) == 2 and ids[1] == first  # the named one is newer
            assert labels[0].startswith("bugfix: why does the parser fail?  · just now")
            assert labels[1].startswith("list the files  · just now · 4 messages, ")
            assert labels[1].endswith(" KB")
            await pilot.press("down", "enter")
            await pilot.pause(0.2)
            assert app.session.id == first and "you list the files" in visible(app)

    run(main())


def test_resume_labels() -> None:
    assert age(5) == "just now" and age(125) == "2 min ago" and age(7200) == "2 h ago"
    assert age(90_000) == "yesterday" and age(3 * 86_400) == "3 days ago"

    class Named:
        def __init__(self, name: str) -> None:
            self.name = name

    assert given_name(Named("smith 2026-12-05 14:06:06")) is None  # type: ignore[arg-type]
    assert given_name(Named("fork of smith 2026-12-05 14:06:06")) is None  # type: ignore[arg-type]
    assert given_name(Named("bugfix")) == "bugfix"  # type: ignore[arg-type]


def test_the_model_chosen_stays_across_sessions_unless_one_recorded_another(
    tmp_path: Path,
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": [{"text": "ok"}]}))
    scripted = f"scripted:{script}"

    async def main() -> None:
        app = _app_with_sessions(tmp_path)
        async with app.run_test(size=(120, 30)) as pilot:
            assert app.runtime is not None and app.runtime.model == "demo"
            first = app.session.id
            await _type(pilot, f"/model {scripted}")
            await pilot.pause()
            await _type(pilot, "/new")
            await pilot.pause(0.2)
            second = app.session.id
            assert app.runtime is not None and app.runtime.model == scripted  # kept
            await _type(pilot, "/model demo")
            await pilot.pause()
            await _type(pilot, f"/resume {first}")
            await pilot.pause(0.2)
            assert app.session.id == first
            assert app.runtime is not None and app.runtime.model == scripted  # as recorded
            assert "(as this session recorded)" in visible(app)
            await _type(pilot, f"/resume {second}")
            await pilot.pause(0.2)
            assert app.runtime is not None and app.runtime.model == "demo"

    run(main())


def test_a_recorded_model_that_no_longer_resolves_is_told_and_the_model_stays(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        app = _app_with_sessions(tmp_path)
        async with app.run_test(size=(120, 30)) as pilot:
            source = app.session_source
            assert source is not None
            other = source.new()
            other.append("model_change", {"provider": "gone", "model": "m",
                                          "setting": "gone/m"})  # fmt: skip
            other.close()
            await _type(pilot, f"/resume {other.id}")
            await pilot.pause(0.2)
            assert app.runtime is not None and app.runtime.model == "demo"
            assert "the model stays demo" in visible(app)

    run(main())


def test_template_commands_are_in_the_menu(tmp_path: Path) -> None:
    from smith.runtime import Template

    template = Template("review", "body", "review the change [carefully]", "[FOCUS]", "file")

    async def main() -> None:
        app = _app(tmp_path, templates={"review": template})
        async with app.run_test(size=SMALL) as pilot:
            await pilot.press(*"/rev")
            rows = str(app.editor.completion.list.render())
            assert "/review [FOCUS]" in rows and "review the change [carefully]" in rows

    run(main())


# -- how they look (SVG snapshots) -------------------------------------------------------


def _steady(app: Any) -> None:
    from textual.widgets import TextArea

    for screen in app.screen_stack:
        for field in screen.query(TextArea):
            field.cursor_blink = False


def test_the_slash_menu_at_80x24(snap_compare: Any, tmp_path: Path) -> None:
    """`/co` typed: the commands whose names start so, then the fuzzy matches, each with
    its usage and description, the first one chosen."""

    async def typed(pilot: Any) -> None:
        _steady(pilot.app)
        await pilot.press(*"/co")
        await pilot.pause()

    assert snap_compare(_app(tmp_path), terminal_size=SMALL, run_before=typed)


def test_help_at_80x24(snap_compare: Any, tmp_path: Path) -> None:
    """/help at the smallest size: a box within the screen, its body scrolled to the
    keys, the hint saying how to scroll and close it."""

    async def helped(pilot: Any) -> None:
        _steady(pilot.app)
        await pilot.press(*"/help", "enter")
        await pilot.pause()
        await pilot.press("end")
        await pilot.pause()

    assert snap_compare(_app(tmp_path), terminal_size=SMALL, run_before=helped)
