"""`smith web` in a browser: the same app as in a terminal (its working line, palette,
overlays), in a titled tab, where Ctrl+C copies what is selected and never ends the app
and Shift+Enter is a new line. The browser is Debian's chromium driven by playwright
(tests/web_kit.py)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import SmithEnv
from tests.web_kit import TIMEOUT, Served, alive, browser_page, screen_shows, sent_prompts, serving

# What the page sends the app for Ctrl+C (textual-serve's message, as JSON.stringify has it).
CTRL_C = json.dumps(["stdin", "\x03"], separators=(",", ":"))


@pytest.fixture
def serve(senv: SmithEnv) -> Iterator[Callable[..., Served]]:
    with serving(senv) as start:
        yield start


def test_a_browser_asks_the_demo_model(serve: Callable[..., Served], tmp_path: Path) -> None:
    served = serve("--model", "demo")
    with browser_page(served) as (page, _):
        page.keyboard.type("list the files")
        page.keyboard.press("Enter")
        page.wait_for_function(
            "/has \\d+ entr/.test(smithScreen()) && smithScreen().includes('✓ ls')",
            timeout=30_000,
        )
        assert "hello-from-the-browser.txt" in page.evaluate("smithScreen()")
        shot = page.screenshot(path=tmp_path / "smith-web.png")
        assert len(shot) > 10_000  # a drawn terminal, not a blank page
    assert served.stop() == 0


@pytest.mark.parametrize("newline", ["Control+j", "Shift+Enter"])
def test_a_two_line_prompt_typed_in_the_browser_is_sent_whole(
    serve: Callable[..., Served], senv: SmithEnv, newline: str
) -> None:
    """Ctrl+J, and Shift+Enter (xterm.js sends it as a plain Enter; the page sends it as
    kitty's `CSI 13;2u`), are a new line in the browser's terminal; Enter sends both lines
    (what was sent is the project's prompt history)."""
    served = serve("--model", "demo")
    with browser_page(served) as (page, _):
        page.keyboard.type("list the files")
        page.keyboard.press(newline)
        page.keyboard.type("and say hi")
        page.keyboard.press("Enter")
        assert sent_prompts(senv) == ["list the files\nand say hi"]
    assert served.stop() == 0


def test_a_question_in_the_browser_is_the_apps_overlay(
    serve: Callable[..., Served], senv: SmithEnv
) -> None:
    """A plugin's question in the browser is the app's overlay (docs/ui.md: `smith web`
    serves the same app, so its policy for UI intents is the app's); the app process
    loads the test plugin (tests/ui_plugin.py)."""
    from tests.ui_plugin import with_plugin

    senv.env.update(with_plugin(senv.env))  # what the server, and so each app, runs with
    served = serve("--model", "demo")
    with browser_page(served) as (page, _):
        page.keyboard.type("/ask Pick a fruit")
        page.keyboard.press("Enter")
        screen_shows(page, "asker asks: Pick a fruit")
        screen_shows(page, "Banana")
        page.keyboard.press("ArrowDown")
        page.keyboard.press("Enter")
        screen_shows(page, "/ask: b")
    assert served.stop() == 0


def test_at_completes_a_path_in_the_browser(serve: Callable[..., Served], senv: SmithEnv) -> None:
    """The completion list is the app's own, so the browser's terminal shows it too: `@`
    and part of a name list the file, Tab takes it, Enter sends it as completed (what was
    sent is the project's prompt history)."""
    served = serve("--model", "demo")
    with browser_page(served) as (page, _):
        page.keyboard.type("read @hello-fr")
        screen_shows(page, "om-the-browser.txt")  # the rest of the name: drawn by the list
        page.keyboard.press("Tab")
        page.keyboard.press("Enter")
        assert sent_prompts(senv) == ["read @hello-from-the-browser.txt"]
    assert served.stop() == 0


def test_the_tab_is_titled_and_the_server_warns_of_nothing(senv: SmithEnv) -> None:
    """The tab says smith and the project (a name that is markup stays text), and the
    server's terminal stays quiet about what smith web itself puts in each app's
    environment (it said `SMITH_WEB_APP is not a smith setting` when an app ended)."""
    with serving(senv, senv.make_project("<b>&amp; 'p'")) as serve:
        served = serve("--model", "demo")
        with browser_page(served) as (page, _):
            assert page.title() == "smith — <b>&amp; 'p'"
            page.keyboard.type("list the files")
            page.keyboard.press("Enter")
            screen_shows(page, "✓ ls")
        assert served.stop() == 0
    said = served.out.read_text().splitlines()[1:] + served.err.read_text().splitlines()
    assert said == ["smith: serving the app at the URL above; anyone with it can use this "
                    "project. Ctrl+C stops."]  # fmt: skip


def test_a_configuration_warning_is_said_once_and_in_the_tab(
    serve: Callable[..., Served], senv: SmithEnv
) -> None:
    """A warning of the configuration is the server's once, at launch, and the tab's: the
    server's terminal said it again whenever a tab closed (the app's stderr)."""
    senv.env["SMITH_MODLE"] = "demo"  # what the server, and so each app, runs with
    served = serve("--model", "demo")
    with browser_page(served) as (page, _):
        screen_shows(page, "SMITH_MODLE is not a smith setting")
    assert served.stop() == 0
    said = served.out.read_text() + served.err.read_text()
    assert said.count("warning: env SMITH_MODLE") == 1, said


def test_ctrl_c_copies_the_terminals_own_selection(
    serve: Callable[..., Served], senv: SmithEnv
) -> None:
    """Text selected in the browser's terminal (Shift+drag: a plain drag is the app's)
    is copied by Ctrl+C, which then does not reach the app: the draft stays."""
    served = serve("--model", "demo")
    with browser_page(served, permissions=["clipboard-read", "clipboard-write"]) as (page, _):
        page.keyboard.type("keep this draft")
        screen_shows(page, "keep this draft")
        page.keyboard.down("Shift")
        page.mouse.move(2, 2)
        page.mouse.down()
        page.mouse.move(1278, 718, steps=4)  # the whole terminal
        page.mouse.up()
        page.keyboard.up("Shift")
        page.focus(".xterm-helper-textarea")
        page.keyboard.press("Control+c")
        assert "keep this draft" in page.evaluate("navigator.clipboard.readText()")
        assert CTRL_C not in page.evaluate("smithSent")
        page.keyboard.press("Enter")  # the draft was still there: it is sent
        assert sent_prompts(senv) == ["keep this draft"]
    assert served.stop() == 0


def test_ctrl_c_in_the_browser_never_ends_the_app(serve: Callable[..., Served]) -> None:
    """Ctrl+C twice in a row on an empty editor (what quits in a terminal) leaves the app
    running and saying how to quit; it still answers what is typed afterwards."""
    served = serve("--model", "demo")
    with browser_page(served) as (page, pid):
        page.keyboard.press("Control+c")
        page.keyboard.press("Control+c")
        screen_shows(page, "/quit")  # the notice: how to quit instead
        assert page.evaluate("smithSent").count(CTRL_C) == 2
        page.keyboard.type("list the files")
        page.keyboard.press("Enter")
        screen_shows(page, "✓ ls")
        assert alive(pid) and served.apps() == [pid]
    assert served.stop() == 0


def test_the_working_line_shows_in_the_browser(
    serve: Callable[..., Served], tmp_path: Path
) -> None:
    """While the agent works, the line above the editor says what it is doing, for how
    long and how to stop it, in the browser too; Escape stops the turn."""
    script = tmp_path / "slow.json"
    story = " ".join(f"word{i}" for i in range(200))
    script.write_text(json.dumps({"responses": [{"text": story, "delay_ms": 200, "stop": "end"}]}))
    served = serve("--model", f"scripted:{script}")
    with browser_page(served) as (page, _):
        page.keyboard.type("tell me a long story")
        page.keyboard.press("Enter")
        page.wait_for_function(r"/\d+s · esc to interrupt/.test(smithScreen())", timeout=TIMEOUT)
        page.keyboard.press("Escape")
        screen_shows(page, "interrupted")
    assert served.stop() == 0


def test_ctrl_c_copies_the_apps_selection_in_the_browser(serve: Callable[..., Served]) -> None:
    """A plain drag selects in the app, and Ctrl+C copies it there too: the app's copy
    (OSC 52) reaches the browser's clipboard, and the app goes on."""
    served = serve("--model", "demo")
    with browser_page(served, permissions=["clipboard-read", "clipboard-write"]) as (page, pid):
        page.keyboard.type("list the files")
        page.keyboard.press("Enter")
        screen_shows(page, "✓ ls")
        page.mouse.move(2, 2)
        page.mouse.down()
        page.mouse.move(1000, 400, steps=6)
        page.mouse.up()
        page.focus(".xterm-helper-textarea")
        page.keyboard.press("Control+c")
        page.wait_for_function(
            "navigator.clipboard.readText().then((t) => t.includes('list the files'))",
            timeout=TIMEOUT,
        )
        assert served.apps() == [pid]
    assert served.stop() == 0


def test_palette_text_in_brackets_is_shown(serve: Callable[..., Served]) -> None:
    """The command palette's descriptions are text, never markup: /diff's says
    `(or from ENTRY [to ENTRY])`, whose `[to ENTRY]` was taken for a style and dropped."""
    served = serve("--model", "demo")
    with browser_page(served) as (page, _):
        page.keyboard.press("Control+p")
        page.keyboard.type("diff")
        screen_shows(page, "(or from ENTRY [to ENTRY])")
    assert served.stop() == 0
