"""What the transcript shows of work (issue 27, items 3, 4, 12 and 15): a running
command's last lines live under its call, an aborted command's output kept, previews of
results (a diff's first lines, a test run's last ones), the user's `!command` echoed with
all its output, `@path` attachments as a line, one clear line for an abort, notices for
/compact and /diff, slash commands back at the bottom, Markdown while it streams, and
Shift+Enter as xterm's modifyOtherKeys sends it. Pilot tests, then the same in a real
terminal (tmux, tests/test_tui_terminal.py's harness)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.markdown import Markdown

from smith.effects import EffectJournal, builtin_tools, run_tool
from smith.frontends.tui._branches import BranchMap, label
from smith.frontends.tui._keys import KeyParser, kitty_form
from smith.frontends.tui._mentions import attachment_lines, typed_text
from smith.frontends.tui._render import render_markdown
from smith.frontends.tui._transcript import Transcript
from smith.providers import End, TextDelta
from smith.runtime import SessionTree
from smith.session import Session
from tests.conftest import SmithEnv, tool_world
from tests.runtime_kit import Fake, Gate, call, say
from tests.test_tui import SIZE, _app, _project, _settle, _type, visible
from tests.test_tui_terminal import Tmux, _requests_of, _restored, terminal, terminal_env

BASH = builtin_tools()["bash"]


async def _until(pilot: Any, predicate: Any, what: str, rounds: int = 400) -> None:
    """Let the app run until `predicate()` holds (a condition, not a delay)."""
    for _ in range(rounds):
        if predicate():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"{what}; the transcript shows:\n{visible(pilot.app)}")


# -- a command's output: live, kept on abort -------------------------------------------


def test_an_aborted_command_keeps_what_it_printed(tmp_path: Path) -> None:
    """The bash tool's recorded result of an aborted call holds its output so far, then
    the note that it was aborted (it held only the note)."""
    session, ctx, _ = tool_world(tmp_path)
    seen: list[dict[str, object]] = []
    ctx.progress = seen.append  # type: ignore[assignment]
    outcome: list[Any] = []
    command = "printf 'first-line\\nsecond-line\\n'; sleep 300"

    def work() -> None:
        outcome.append(run_tool(EffectJournal(session), BASH, {"command": command}, ctx))

    worker = threading.Thread(target=work)
    worker.start()
    for _ in range(3000):  # its output has been read (reported) before the abort
        if any("second-line" in str(u.get("tail")) for u in seen):
            break
        worker.join(0.01)
    ctx.cancelled.set()  # type: ignore[attr-defined]
    worker.join(30)
    (out,) = outcome
    assert out.outcome == "cancelled"
    assert out.result.text == "first-line\nsecond-line\n[cancelled: the call was aborted]"
    assert out.result.details["cancelled"] is True
    assert out.result.details["command"] == command


def test_a_running_command_shows_its_last_lines_under_its_call(tmp_path: Path) -> None:
    """tool_update's tail reaches the app: the running call's line has the output's last
    lines under it (five at most) before the command ends; then its result takes over."""
    project = _project(tmp_path)
    go = project / "go"
    lines = "; ".join(f"echo out-{i}" for i in range(1, 9))
    command = f"{lines}; while [ ! -e go ]; do sleep 0.05; done; echo finished"
    fake = Fake(call(("bash", {"command": command})), say("done"))

    async def main() -> None:
        app = _app(tmp_path, (fake, "m"))
        async with app.run_test(size=(100, 40)) as pilot:
            await _type(pilot, "run it")
            rows = lambda: [row.strip() for row in visible(app).splitlines()]  # noqa: E731
            await _until(pilot, lambda: "out-8" in rows(), "no live output")
            shown = visible(app)
            assert "… bash echo out-1" in shown
            rows = [row.strip() for row in shown.splitlines()]
            assert [f"out-{i}" in rows for i in range(1, 9)] == [False] * 3 + [True] * 5
            go.write_text("")
            await _settle(app)
            await pilot.pause()
            assert "finished" in visible(app) and "✓ bash" in visible(app)

    asyncio.run(asyncio.wait_for(main(), 60))


def test_an_abort_while_a_command_runs_says_so_once_and_keeps_the_output(
    tmp_path: Path,
) -> None:
    fake = Fake(call(("bash", {"command": "echo kept-output; sleep 300"})), say("never"))

    async def main() -> None:
        app = _app(tmp_path, (fake, "m"))
        async with app.run_test(size=(100, 40)) as pilot:
            await _type(pilot, "run it")
            await _until(pilot, lambda: "kept-output" in visible(app), "no live output")
            await pilot.press("escape")
            await _settle(app)
            await pilot.pause()
            shown = visible(app)
            assert "✗ bash  echo kept-output; sleep 300  aborted" in shown
            assert "kept-output" in shown.split("aborted", 1)[1]
            assert shown.count("interrupted: the turn was stopped") == 1
            assert shown.index("aborted") < shown.index("interrupted:")  # the last word
            assert "[abort]" not in shown

    asyncio.run(asyncio.wait_for(main(), 60))


def test_an_abort_while_the_answer_streams_is_one_clear_line(tmp_path: Path) -> None:
    gate = Gate()
    fake = Fake([TextDelta("half an answer"), gate, End("success")])

    async def main() -> None:
        app = _app(tmp_path, (fake, "m"))
        async with app.run_test(size=SIZE) as pilot:
            await _type(pilot, "go")
            await gate.reached.wait()
            await pilot.press("escape")
            await _settle(app)
            await pilot.pause()
            shown = visible(app)
            assert shown.count("interrupted: the turn was stopped") == 1
            assert "[abort]" not in shown and "half an answer" in shown

    asyncio.run(asyncio.wait_for(main(), 60))


# -- the user's own command -------------------------------------------------------------


def test_bang_shows_the_command_and_all_its_output_folded_when_long(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=(100, 70)) as pilot:
            await _type(pilot, "!printf 'alpha-%s\\nbeta-%s\\ngamma-%s\\n' x y z")
            await _until(pilot, lambda: "exit 0" in visible(app), "it did not end")
            shown = visible(app)
            assert "$ printf 'alpha-%s\\nbeta-%s\\ngamma-%s\\n' x y z" in shown
            assert all(w in shown for w in ("alpha-x", "beta-y", "gamma-z", "exit 0"))
            await _settle(app)
            await _type(pilot, "!seq 1 100")
            await _until(pilot, lambda: "more lines" in visible(app), "no folded output")
            rows = [row.strip() for row in visible(app).splitlines()]
            assert "20" in rows and "81" in rows and "100" in rows  # the first and last 20
            assert "… 60 more lines (click or Ctrl+O to show)" in rows
            assert "50" not in rows
            await pilot.press("ctrl+o")
            await pilot.pause()
            t = app.query_one(Transcript)
            t.scroll_to(y=t.max_scroll_y - 60, animate=False, immediate=True)
            await pilot.pause()
            assert "50" in [row.strip() for row in visible(app).splitlines()]  # expanded

    asyncio.run(asyncio.wait_for(main(), 60))


def test_a_resumed_session_shows_the_users_commands_as_they_ran(tmp_path: Path) -> None:
    """A `!command` is drawn from its record when the session is opened again: the
    command, its output and how it ended, once (live, its record replaces its block)."""

    async def run(session: Session, commands: list[str]) -> str:
        app = _app(tmp_path, session=session)
        async with app.run_test(size=(100, 40)) as pilot:
            for command in commands:
                await _type(pilot, command)
                ended = "exit 3" if command.startswith("!printf") else "quiet-9"
                await _until(pilot, lambda e=ended: e in visible(app), "it did not end")
                await _settle(app)
                await pilot.pause()
            return visible(app)

    session = Session.create(str(tmp_path / "s.smith"), name="tui", cwd=str(tmp_path))
    said = ["!printf 'one\\ntwo\\n'; exit 3", "!!echo quiet-$((3*3))"]
    live = asyncio.run(asyncio.wait_for(run(session, said), 60))
    session.close()
    again = Session.open(str(tmp_path / "s.smith"))
    shown = asyncio.run(asyncio.wait_for(run(again, []), 60))
    kinds = [e.kind for e in again.entries()]
    again.close()
    for screen in (live, shown):
        assert screen.count("$ printf 'one\\ntwo\\n'; exit 3") == 1, screen
        assert screen.count("$ echo quiet-$((3*3))") == 1, screen  # !!: shown, not told
        rows = [row.strip() for row in screen.splitlines()]
        assert "one" in rows and "two" in rows and "exit 3" in screen, screen
        assert "quiet-9" in rows, screen
        assert "The user ran this command" not in screen
    assert kinds.count("shell") == 1 and kinds.count("shell_private") == 1


# -- @path attachments ------------------------------------------------------------------

ATTACHED_TEXT = '<attached path="src/calc.py" lines="1-19 of 19">\ndef add(a, b):\n</attached>'
ATTACHED = {
    "role": "user",
    "content": [
        {"type": "text", "text": "explain @src/calc.py"},
        {"type": "text", "text": ATTACHED_TEXT},
    ],
    "attached": [{"path": "src/calc.py", "lines": "1-19 of 19", "bytes": 300, "cut": False}],
}


def test_an_attachment_is_a_line_in_the_transcript_and_left_out_of_tree_labels(
    tmp_path: Path,
) -> None:
    entries = [{"id": "u1", "parent": None, "ts": 1, "kind": "message", "content": ATTACHED}]
    project = _project(tmp_path)
    session = Session.from_entries(entries, info={"id": "a", "name": "a", "cwd": str(project)})
    assert label(BranchMap(SessionTree(session)).prompt(0)) == "explain @src/calc.py"

    async def main() -> None:
        app = _app(tmp_path, session=session)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            shown = visible(app)
            assert "you explain @src/calc.py" in shown
            assert "↳ read src/calc.py, 19 lines" in shown
            assert "<attached" not in shown and "def add" not in shown

    asyncio.run(asyncio.wait_for(main(), 60))


def test_attachment_lines_say_what_was_read() -> None:
    assert typed_text(ATTACHED) == "explain @src/calc.py"
    assert attachment_lines(ATTACHED) == ["read src/calc.py, 19 lines"]
    cut = {**ATTACHED, "attached": [{"path": "big.py", "lines": "1-2000 of 5000", "cut": True}]}
    assert attachment_lines(cut) == ["read big.py, lines 1-2000 of 5000, cut"]
    image = {**ATTACHED, "attached": [{"path": "shot.png", "image": "image/png", "bytes": 9}]}
    assert attachment_lines(image) == ["attached shot.png (an image)"]
    older = {k: v for k, v in ATTACHED.items() if k != "attached"}  # no notes: the tags
    assert attachment_lines(older) == ["read src/calc.py, 19 lines"]
    typed = {"role": "user", "content": [{"type": "text", "text": '<attached path="x">'}]}
    assert typed_text(typed) == '<attached path="x">'  # what was typed stays, always


# -- notices, commands, scrolling -------------------------------------------------------


def test_compact_diff_and_a_command_while_scrolled_up(tmp_path: Path) -> None:
    from smith.effects import ToolContext
    from smith.frontends.tui._app import SmithApp
    from smith.runtime import Runtime
    from smith.vcs import HistorySettings

    many = [
        {"id": f"e{i}", "parent": f"e{i - 1}" if i else None, "ts": 1, "kind": "message",
         "content": {"role": "user", "content": [{"type": "text", "text": f"message {i}"}]}}
        for i in range(80)
    ]  # fmt: skip
    project = _project(tmp_path)
    session = Session.from_entries(many, info={"id": "c", "name": "c", "cwd": str(project)})

    def factory(session: Session) -> Runtime:  # with file history, as the app has it
        ctx = ToolContext(root=str(project), cwd=str(project), session=session)
        return Runtime(session, model="demo", tools=[], context=ctx,
                       history=HistorySettings(str(tmp_path / "home")))  # fmt: skip

    async def main() -> None:
        app = SmithApp(factory, session)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            t = app.query_one(Transcript)
            t.scroll_to(y=0, animate=False, immediate=True)
            await pilot.pause()
            assert not t.following
            await _type(pilot, "/diff")
            await pilot.pause()
            assert t.following and t.at_bottom()  # back at the bottom, where it answers
            shown = visible(app)
            assert "no file changes to show" in shown and "error" not in shown, shown
            await _type(pilot, "/compact keep the approvals")
            await pilot.pause()
            assert "compacting the context, keeping: the approvals…" in visible(app)

    asyncio.run(asyncio.wait_for(main(), 60))


# -- Markdown while it streams ----------------------------------------------------------


def test_markdown_is_drawn_as_it_streams(tmp_path: Path) -> None:
    """A heading, emphasis and a table are drawn as Markdown before their paragraph (or
    the answer) ends, short or long, after thinking too."""
    gate, gate2 = Gate(), Gate()
    table = "| name | size |\n|------|------|\n| calc | 19 |\n"
    early = "# Findings\n\nthe **parser** keeps _order_\n\n" + table
    later = "\n" + "word " * 100 + "\n\n## Later heading\n\nthe **last** one"  # settled
    fake = Fake([TextDelta(early), gate, TextDelta(later), gate2, End("success")])

    async def main() -> None:
        app = _app(tmp_path, (fake, "m"))
        async with app.run_test(size=(100, 40)) as pilot:
            await _type(pilot, "go")
            await gate.reached.wait()
            await _until(pilot, lambda: "Findings" in visible(app), "nothing streamed")
            shown = visible(app)
            assert "# Findings" not in shown and "**parser**" not in shown
            assert "parser keeps order" in shown
            assert "| name |" not in shown and "calc" in shown  # a table, drawn
            gate.opened.set()
            await gate2.reached.wait()
            await _until(pilot, lambda: "the last one" in visible(app), "no later paragraph")
            t = app.query_one(Transcript)
            assert any(b.key.endswith("-0") for b in t.blocks)  # a part settled before it
            shown = visible(app)
            assert "## Later" not in shown and "Later heading" in shown
            gate2.opened.set()
            await _settle(app)

    asyncio.run(asyncio.wait_for(main(), 60))


def test_the_shared_markdown_parser_draws_as_rich_does() -> None:
    text = "# T\n\n**b** _i_ `c` ~~s~~\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```py\nx = 1\n```\n"

    def drawn(renderable: object) -> str:
        console = Console(width=60, color_system="truecolor", record=True)
        console.print(renderable)
        return console.export_html()

    rich = Markdown(text, hyperlinks=False, code_theme="monokai")
    assert drawn(render_markdown(text)) == drawn(rich)


# -- Shift+Enter as modifyOtherKeys sends it --------------------------------------------


def test_modify_other_keys_sequences_are_read_by_their_names() -> None:
    parser = KeyParser()
    keys = [e.key for e in parser.feed("a\x1b[27;2;13~\x1b[27;5;13~\x1b[27;3;13~b")]
    assert keys == ["a", "shift+enter", "ctrl+enter", "alt+enter", "b"]
    typed = [(e.key, e.character) for e in parser.feed("\x1b[27;2;65~")]
    assert typed == [("A", "A")]  # a printable key types its character, as before
    assert kitty_form("\x1b[27;2;13~") == "\x1b[13;2u"
    assert kitty_form("\x1b[A") == "\x1b[A"


# -- in a real terminal (tmux) ----------------------------------------------------------


@pytest.fixture
def tmux(senv: SmithEnv) -> Iterator[Tmux]:
    """A tmux pane of 120x50 in a new project (tests/test_tui_terminal.py's, taller)."""
    project = senv.make_project()
    (project / "README.md").write_text("# a project\n")
    with terminal(project, terminal_env(senv), size=(120, 50)) as t:
        yield t


def _scripted(tmux: Tmux, senv: SmithEnv, responses: list[dict[str, Any]]) -> Path:
    """smith on a scripted model in the tmux pane, open and ready; its requests' log."""
    log = senv.root / "requests.jsonl"
    script = senv.root / "script.json"
    script.write_text(json.dumps({"responses": responses, "requests_log": str(log)}))
    tmux("send-keys", "-t", "s", f"smith --model scripted:{script}", "Enter")
    assert tmux.wait(lambda: tmux.flag("alternate_on") == "1" and "Ask smith" in tmux.screen())
    return log


def _send(tmux: Tmux, text: str) -> None:
    tmux("send-keys", "-t", "s", "-l", text)
    tmux("send-keys", "-t", "s", "Enter")


def _rows(tmux: Tmux) -> list[str]:
    return [row.strip() for row in tmux.screen().splitlines()]


def test_a_slow_command_streams_under_its_call_and_an_abort_keeps_it(
    tmux: Tmux, senv: SmithEnv
) -> None:
    """While a command runs its last lines show under its call; Escape stops it, its
    result keeps what it printed, and one line says the turn was stopped."""
    command = "for i in 1 2 3; do echo live-$i; done; sleep 120"
    run = {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}
    log = _scripted(tmux, senv, [run])
    _send(tmux, "run the slow one")
    assert tmux.wait(lambda: "live-3" in _rows(tmux)), tmux.screen()
    screen = tmux.screen()
    assert "… bash for i in 1 2 3" in screen and "live-1" in _rows(tmux)  # still running
    assert "✓ bash" not in screen and "✗ bash" not in screen
    tmux("send-keys", "-t", "s", "Escape")
    assert tmux.wait(lambda: "interrupted: the turn was stopped" in tmux.screen()), tmux.screen()
    assert tmux.wait(lambda: "aborted" in tmux.screen()), tmux.screen()
    screen = tmux.screen()
    assert "live-3" in _rows(tmux) and "[abort]" not in screen
    assert screen.count("interrupted: the turn was stopped") == 1
    assert len(_requests_of(log)) == 1
    tmux("send-keys", "-t", "s", "C-d")
    _restored(tmux)


def test_bang_output_an_edit_preview_an_attachment_and_shift_enter(
    tmux: Tmux, senv: SmithEnv
) -> None:
    """`!cmd` shows every line; an edit's result previews its diff with +2 -0; an @path
    is a line saying what was read; Shift+Enter sent as modifyOtherKeys adds a line."""
    (tmux.root / "src").mkdir()
    (tmux.root / "src" / "calc.py").write_text("".join(f"# line {i}\n" for i in range(1, 20)))
    edit = {"path": "src/calc.py", "old_text": "# line 1\n",
            "new_text": "# line 1\n# added-one\n# added-two\n"}  # fmt: skip
    log = _scripted(tmux, senv, [{"tool_calls": [{"name": "edit", "arguments": edit}]},
                                 {"text": "edited"}, {"text": "ok"}])  # fmt: skip
    _send(tmux, "!printf 'alpha-%s\\nbeta-%s\\ngamma-%s\\n' x y z")
    assert tmux.wait(lambda: "$ printf 'alpha-%s" in tmux.screen()), tmux.screen()  # ended
    assert {"alpha-x", "beta-y", "gamma-z"} <= set(_rows(tmux)), tmux.screen()

    tmux("send-keys", "-t", "s", "-l", "change @src/calc.py")
    tmux("send-keys", "-t", "s", "Escape")  # the completion list, if open
    tmux("send-keys", "-t", "s", "Enter")
    assert tmux.wait(lambda: "edited" in _rows(tmux)), tmux.screen()
    screen = tmux.screen()
    assert "↳ read src/calc.py, 19 lines" in screen and "<attached" not in screen
    assert "✓ edit  src/calc.py +2 -0" in screen
    assert "+# added-one" in screen and "+# added-two" in screen  # the preview

    tmux("send-keys", "-t", "s", "-l", "first")
    tmux("send-keys", "-t", "s", "-l", "\x1b[27;2;13~")  # Shift+Enter, as xterm sends it
    tmux("send-keys", "-t", "s", "-l", "second")
    assert tmux.wait(lambda: "second" in tmux.screen()), tmux.screen()
    tmux("send-keys", "-t", "s", "Enter")
    assert tmux.wait(lambda: len(_requests_of(log)) == 3), tmux.screen()
    users = [m for m in _requests_of(log)[2]["messages"]  # type: ignore[attr-defined]
             if m["role"] == "user" and not m.get("context")]  # fmt: skip
    assert users[-1]["content"][0]["text"] == "first\nsecond"
    tmux("send-keys", "-t", "s", "C-d")
    _restored(tmux)
