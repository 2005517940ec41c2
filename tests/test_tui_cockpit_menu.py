"""Finding things in a real terminal (tmux) at the smallest supported size, 80x24: typing
`/` opens a menu of commands that filters as it is typed, Tab and Enter complete or run
the chosen one and Tab never takes the focus out of the editor; /help fits, scrolls and
says how to close it; a first launch shows the welcome."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.conftest import SmithEnv
from tests.test_tui_terminal import Tmux, _restored, terminal, terminal_env

COMMANDS = r"/(help|new|resume|continue|tree|fork|compact|context|model|thinking|undo)\b"
HELP_ROW = r"/help\s{2,}the commands and keys"  # the menu's row (the welcome names /help too)


@pytest.fixture
def small(senv: SmithEnv) -> Iterator[Tmux]:
    project = senv.make_project()
    (project / "README.md").write_text("# a project\n")
    with terminal(project, terminal_env(senv), size=(80, 24)) as t:
        t("send-keys", "-t", "s", "smith --model demo", "Enter")
        opened = t.wait(lambda: t.flag("alternate_on") == "1" and "Ask smith" in t.screen())
        assert opened, f"the app did not open; the pane shows:\n{t.screen()}"
        yield t


def _keys(t: Tmux, *keys: str) -> None:
    t("send-keys", "-t", "s", *keys)


def _typed(t: Tmux, text: str) -> None:
    t("send-keys", "-t", "s", "-l", text)


def _editor_line(t: Tmux) -> str:
    """The editor's text row: the row between its borders (the one starting with ▊/│)."""
    rows = t.screen().splitlines()
    return next((r for r in reversed(rows) if r.strip() and not r.startswith(("▔", "▁"))
                 and "ready" not in r and "demo ·" not in r), "")  # fmt: skip


def test_slash_shows_a_menu_that_filters_and_tab_completes_in_the_editor(small: Tmux) -> None:
    t = small
    assert "Welcome to smith" in t.screen()  # a first launch in this project
    _typed(t, "/")
    assert t.wait(lambda: len(set(re.findall(COMMANDS, t.screen()))) >= 5), t.screen()
    screen = t.screen()
    assert re.search(HELP_ROW, screen)  # each with its description
    assert "more: ↑↓ to see them" in screen
    _typed(t, "mo")
    assert t.wait(lambda: "show or change the model" in t.screen()), t.screen()
    assert "/resume [ID]" not in t.screen() and not re.search(HELP_ROW, t.screen())
    _keys(t, "Tab")
    assert t.wait(lambda: "show or change the model" not in t.screen()), t.screen()
    _typed(t, "xyz")  # the focus stayed in the editor: the keys went on typing there
    assert t.wait(lambda: "/model xyz" in t.screen()), t.screen()
    _keys(t, *["BSpace"] * 10)
    assert t.wait(lambda: "Ask smith" in t.screen()), t.screen()  # the editor is empty
    _typed(t, "/he")
    assert t.wait(lambda: re.search(HELP_ROW, t.screen()) is not None), t.screen()
    _keys(t, "Enter")  # runs the chosen command: /help needs no argument
    assert t.wait(lambda: "Commands and keys" in t.screen()), t.screen()
    _keys(t, "Escape")
    assert t.wait(lambda: "Commands and keys" not in t.screen()), t.screen()
    _keys(t, "C-d")
    _restored(t)


def test_tab_with_no_match_keeps_the_focus_and_escape_closes_the_menu(small: Tmux) -> None:
    t = small
    _typed(t, "/zzq")
    assert t.wait(lambda: "no command matches '/zzq'" in t.screen()), t.screen()
    _keys(t, "Tab")
    _typed(t, "w")  # still in the editor
    assert t.wait(lambda: "/zzqw" in t.screen()), t.screen()
    _keys(t, "Escape")
    assert t.wait(lambda: "no command matches" not in t.screen()), t.screen()
    assert "/zzqw" in t.screen()  # the text stays; the app is still running
    _keys(t, *["BSpace"] * 5)
    assert t.wait(lambda: "Ask smith" in t.screen()), t.screen()  # the editor is empty
    _keys(t, "C-d")
    _restored(t)


def test_help_at_80x24_fits_scrolls_and_says_how_to_close_it(small: Tmux) -> None:
    t = small
    _typed(t, "/help")
    _keys(t, "Enter")
    assert t.wait(lambda: "Commands and keys" in t.screen()), t.screen()
    screen = t.screen()
    assert "Esc close" in screen and "scroll" in screen  # the hint, inside the box
    assert "/help" in screen and "runs a shell command" not in screen  # the end is below
    for _ in range(10):  # to the end, however many commands the plugins add
        _keys(t, "PageDown")
        if t.wait(lambda: "runs a shell command" in t.screen(), seconds=0.5):
            break
    assert t.wait(lambda: "runs a shell command" in t.screen()), t.screen()
    screen = t.screen()
    assert "Ctrl+R" in screen and "Esc close" in screen  # the keys, and still the hint
    rows = screen.splitlines()
    assert len(rows) <= 24 and all(len(r) <= 80 for r in rows)
    _keys(t, "Escape")
    assert t.wait(lambda: "Commands and keys" not in t.screen()), t.screen()
    _keys(t, "C-d")
    _restored(t)
