"""The TUI through Textual's Pilot: what a user sees and does."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from textual.geometry import Region
from textual.widgets import Static

from smith.effects import ToolContext, builtin_tools
from smith.frontends.tui._app import SmithApp
from smith.frontends.tui._transcript import Heights, Transcript
from smith.providers import End, TextDelta
from smith.runtime import Runtime
from smith.runtime._setup import DEMO_BANNER
from smith.session import Session
from tests.runtime_kit import Fake, Gate, say

SIZE = (100, 30)


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "README.md").write_text("# demo project\n")
    (project / "src" / "app.py").write_text("def app():\n    return 'hello'\n")
    return project


def _app(tmp_path: Path, model: Any = "demo", *, banner: str | None = None,
         session: Session | None = None, **kw: Any) -> SmithApp:  # fmt: skip
    project = _project(tmp_path) if not (tmp_path / "project").exists() else tmp_path / "project"
    if session is None:
        session = Session.create(str(tmp_path / "s.smith"), name="tui", cwd=str(project))

    def factory(session: Session) -> Runtime:
        ctx = ToolContext(root=str(project), cwd=str(project), session=session)
        return Runtime(session, model=model, tools=list(builtin_tools().values()), context=ctx)

    return SmithApp(factory, session, banner=banner, **kw)


def visible(app: SmithApp) -> str:
    """The transcript's rows on screen, as text."""
    t = app.query_one(Transcript)
    strips = t.render_lines(Region(0, 0, t.size.width, t.size.height))
    return "\n".join("".join(seg.text for seg in strip) for strip in strips)


def status(app: SmithApp) -> str:
    return str(app.query_one("#status", Static).render())


async def _type(pilot: Any, text: str) -> None:
    await pilot.press(*[c if c != " " else "space" for c in text])
    await pilot.press("enter")


async def _settle(app: SmithApp) -> None:
    assert app.runtime is not None
    await app.runtime.wait_idle()
    await asyncio.sleep(0)


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_the_demo_banner_status_and_a_first_answer(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app(tmp_path, banner=DEMO_BANNER)
        async with app.run_test(size=SIZE) as pilot:
            assert "offline demo model" in visible(app)
            line = status(app)
            assert "demo" in line and "cost $0.0000" in line and "ready" in line
            assert "queue" not in line  # said only when something is queued
            await _type(pilot, "list the files")
            await _settle(app)
            await pilot.pause()
            assert "cost $0.0000" in status(app)  # the same after an answer: nothing spent
            screen = visible(app)
            assert "you list the files" in screen
            assert "✓ ls" in screen and "README.md" in screen and "src/" in screen

    run(main())


def test_scrolled_up_the_view_never_jumps_and_a_key_returns_to_the_latest(
    tmp_path: Path,
) -> None:
    gate = Gate()
    long = "\n\n".join(f"paragraph {i} " + "word " * 30 for i in range(30))
    fake = Fake(say(long), [gate, *say("the newest answer")])

    async def main() -> None:
        app = _app(tmp_path, (fake, "m"))
        async with app.run_test(size=SIZE) as pilot:
            await _type(pilot, "write a lot")
            await _settle(app)
            await pilot.pause()
            t = app.query_one(Transcript)
            assert t.following and t.max_scroll_y > 20
            await _type(pilot, "more")  # sending returns to the bottom; then scroll up
            await gate.reached.wait()
            t.scroll_to(y=5, animate=False)
            await pilot.pause()
            assert not t.following
            gate.opened.set()  # new output streams in below
            await _settle(app)
            await pilot.pause()
            assert t.scroll_y == 5  # it did not move
            assert app.query_one("#below").has_class("shown")
            assert "the newest answer" not in visible(app)
            await pilot.press("ctrl+l")
            await pilot.pause()
            assert t.following and t.scroll_y == t.max_scroll_y
            assert not app.query_one("#below").has_class("shown")
            assert "the newest answer" in visible(app)

    run(main())


def test_escape_sequences_from_a_file_are_shown_inert(tmp_path: Path) -> None:
    project = _project(tmp_path)
    hostile = "\x1b[2J\x1b]0;pwned\x07\x1b]8;;http://evil\x1b\\link\x1b[31mred\x9b1m\r\n"
    (project / "evil.txt").write_text(hostile)

    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await _type(pilot, "read evil.txt")
            await _settle(app)
            await pilot.pause()
            t = app.query_one(Transcript)
            strips = t.render_lines(Region(0, 0, t.size.width, t.size.height))
            texts = "".join(seg.text for strip in strips for seg in strip)
            assert "␛[2J" in texts and "␛]0;pwned" in texts
            assert not any(c in texts for c in "\x1b\x07\x9b\r")

    run(main())


def test_input_stays_live_and_queued_input_is_shown_while_the_agent_works(
    tmp_path: Path,
) -> None:
    gate = Gate()
    fake = Fake([gate, *say("first")], say("second"))

    async def main() -> None:
        app = _app(tmp_path, (fake, "m"))
        async with app.run_test(size=SIZE) as pilot:
            await _type(pilot, "start")
            await gate.reached.wait()
            await _type(pilot, "and then this")
            await pilot.pause()
            queue = app.query_one("#queue", Static)
            assert queue.has_class("shown") and "and then this" in str(queue.render())
            assert "queue 1" in status(app) and "working" in status(app)
            gate.opened.set()
            await _settle(app)
            await pilot.pause()
            assert not queue.has_class("shown")
            assert "second" in visible(app)

    run(main())


def test_a_large_session_opens_rendering_only_what_is_visible(tmp_path: Path) -> None:
    project = _project(tmp_path)
    entries = []
    parent = None
    for i in range(20_000):
        role = "user" if i % 2 == 0 else "assistant"
        entries.append(
            {
                "id": f"e{i}",
                "parent": parent,
                "ts": 1_700_000_000_000 + i,
                "kind": "message",
                "content": {"role": role, "content": [{"type": "text", "text": f"message {i}"}]},
            }
        )
        parent = f"e{i}"  # fmt: skip
    session = Session.from_entries(entries, info={"id": "big", "name": "big", "cwd": str(project)})
    decoded: list[int] = []

    async def main() -> None:
        app = _app(tmp_path, (Fake(), "m"), session=session)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            t = app.query_one(Transcript)
            rendered = [b for b in t.blocks if b.strips is not None]
            decoded.append(len(rendered))
            assert "message 19999" in visible(app)
            t.scroll_to(y=t.max_scroll_y // 2, animate=False)
            await pilot.pause()
            assert "message " in visible(app)

    run(main())
    assert len(session) == 20_000
    assert decoded[0] < 40  # the screen's worth, not 20,000


def test_row_to_block_mapping_survives_height_changes() -> None:
    heights = Heights()
    for value in [3, 1, 4, 1, 5, 9, 2, 6]:
        heights.append(value)
    rows = [i for i, h in enumerate([3, 1, 4, 1, 5, 9, 2, 6]) for _ in range(h)]
    assert [heights.find(r) for r in range(len(rows))] == rows
    heights.set(2, 0)
    heights.set(5, 1)
    values = [3, 1, 0, 1, 5, 1, 2, 6]
    rows = [i for i, h in enumerate(values) for _ in range(h)]
    assert [heights.find(r) for r in range(len(rows))] == rows
    assert heights.total() == sum(values) and heights.before(4) == 5
    heights.pop()
    assert heights.total() == sum(values[:-1])


def test_the_status_shows_cost_once_known(tmp_path: Path) -> None:
    from smith.providers import Pricing, Usage

    fake = Fake(say("priced", usage=Usage(1_000_000, 0, 0, 0)), pricing=Pricing(3.0, 15.0, 0, 0))

    async def main() -> None:
        app = _app(tmp_path, (fake, "m"))
        async with app.run_test(size=SIZE) as pilot:
            assert "cost $0.0000" in status(app)  # nothing spent yet
            await _type(pilot, "hi")
            await _settle(app)
            await pilot.pause()
            assert "cost $3.0000" in status(app)

    run(main())
    json.dumps({})  # keep json imported for future snapshot data


def _app_with_sessions(tmp_path: Path, model: Any = "demo", **kw: Any) -> SmithApp:
    from smith.frontends.tui import Sessions

    project = _project(tmp_path)
    sessions = Sessions(str(tmp_path / "home"), str(project))
    session = sessions.new()

    def factory(session: Session) -> Runtime:
        ctx = ToolContext(root=str(project), cwd=str(project), session=session)
        return Runtime(session, model=model, tools=list(builtin_tools().values()), context=ctx)

    return SmithApp(factory, session, session_source=sessions, **kw)


def test_help_is_an_overlay_that_owns_focus_until_closed(tmp_path: Path) -> None:
    from smith.frontends.tui._screens import InfoScreen

    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await _type(pilot, "/help")
            await pilot.pause()
            assert isinstance(app.screen, InfoScreen)
            body = str(app.screen.query_one("#info-body", Static).render())
            assert "/compact" in body and "/resume [ID]" in body and "/quit" in body
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, InfoScreen)
            assert app.focused is app.query_one("#input")
            await pilot.press("f1")  # the product plugin's key for help
            await pilot.pause()
            assert isinstance(app.screen, InfoScreen)

    run(main())


def test_commands_report_problems_as_notices(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            for text in ("/nope", "/helpp", "/model nowhere:model", "/undo", "/diff"):
                await _type(pilot, text)
            await pilot.pause()
            screen = visible(app)
            assert "there is no command /nope" in screen
            assert "did you mean /help" in screen
            assert "no provider is called 'nowhere'" in screen
            assert "file history is off" in screen

    run(main())


def test_undo_redo_diff_and_history_work_from_the_input(tmp_path: Path) -> None:
    from smith.vcs import HistorySettings

    project = _project(tmp_path)
    settings = HistorySettings(str(tmp_path / "home"))

    def factory(session: Session) -> Runtime:
        ctx = ToolContext(root=str(project), cwd=str(project), session=session)
        tools = list(builtin_tools().values())
        return Runtime(session, model="demo", tools=tools, context=ctx, history=settings)

    session = Session.create(str(tmp_path / "s.smith"), name="tui", cwd=str(project))

    async def main() -> None:
        app = SmithApp(factory, session)
        async with app.run_test(size=SIZE) as pilot:
            await _type(pilot, "write notes.txt: remember the milk")
            await _settle(app)
            assert (project / "notes.txt").read_text() == "remember the milk\n"
            await _type(pilot, "/diff")
            await pilot.pause()
            from smith.frontends.tui._pager import DiffScreen

            assert isinstance(app.screen, DiffScreen)  # the pager, file by file
            body = "\n".join(str(s.render()) for s in app.screen.query(Static))
            assert "+remember the milk" in body and "notes.txt  +1 -0" in body
            await pilot.press("escape")
            await _type(pilot, "/history")
            await pilot.pause()
            body = str(app.screen.query_one("#info-body", Static).render())
            assert "write notes.txt" in body and "1 file  +1" in body
            await pilot.press("escape")
            await _type(pilot, "/undo")
            await pilot.pause()
            assert not (project / "notes.txt").exists()
            assert "undone: notes.txt" in visible(app)
            await _type(pilot, "/redo")
            await pilot.pause()
            assert (project / "notes.txt").read_text() == "remember the milk\n"

    run(main())


def test_thinking_level_is_picked_from_a_list(tmp_path: Path) -> None:
    from smith.frontends.tui._screens import ChoiceScreen

    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await _type(pilot, "/thinking")
            await pilot.pause()
            assert isinstance(app.screen, ChoiceScreen)
            for _ in range(4):  # off minimal low medium [high]
                await pilot.press("down")
            await pilot.press("enter")
            await pilot.pause()
            assert "thinking high" in status(app)

    run(main())


def test_the_command_palette_lists_the_plugin_commands(tmp_path: Path) -> None:
    from textual.command import CommandPalette

    from smith.frontends.tui._screens import InfoScreen

    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("ctrl+p")
            await pilot.pause()
            assert isinstance(app.screen, CommandPalette)
            await pilot.press("/", "p", "l", "u", "g")
            await pilot.pause(0.3)
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, InfoScreen)
            assert "product" in str(app.screen.query_one("#info-body", Static).render())

    run(main())


def test_new_fork_and_resume_switch_the_session(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app_with_sessions(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            first = app.session.id
            await _type(pilot, "list the files")
            await _settle(app)
            await _type(pilot, "/fork")
            await pilot.pause(0.2)
            await _settle(app)
            forked = app.session
            assert forked.id != first and forked.info.get("forked_from") == first
            assert "you list the files" in visible(app)  # the history came along
            await _type(pilot, "/new")
            await pilot.pause(0.2)
            assert app.session.id not in (first, forked.id)
            assert "you list the files" not in visible(app)
            await _type(pilot, f"/resume {first}")
            await pilot.pause(0.2)
            assert app.session.id == first and "you list the files" in visible(app)

    run(main())


def test_resuming_a_damaged_session_says_what_was_skipped(tmp_path: Path) -> None:
    from smith.config import resolve
    from smith.frontends.tui import Sessions
    from smith.runtime import build

    project = _project(tmp_path)
    env = {"SMITH_HOME": str(tmp_path / "home"), "SMITH_CONFIG_HOME": str(tmp_path / "cfg")}
    config = resolve(env=env, flags={"model": "demo"}, cwd=str(project))
    # As the app is run: its runtimes come from the assembly, which says what it finds.
    told: list[str] = []
    assembly = build(
        config, cwd=str(project), surface="tui", warn=lambda d: told.append(d.render())
    )
    sessions = Sessions(config.home, config.project_root)

    async def main() -> None:
        app = SmithApp(assembly.runtime, sessions.new(), session_source=sessions)
        assembly.warn = lambda d: app.tell(d.render(), error=True)
        assert app.session_source is not None
        other = app.session_source.new()
        for word in ("FIRSTMARK", "SECONDMARK"):
            other.append("message", {"role": "user", "content": [{"type": "text", "text": word}]})
        other.close()
        data = bytearray(Path(other.path).read_bytes())
        at = data.index(b"FIRSTMARK")
        data[at : at + 3] = b"\xff\xfe\xfd"  # 3 flipped bytes inside that frame
        Path(other.path).write_bytes(bytes(data))
        async with app.run_test(size=(140, 30)) as pilot:
            await _type(pilot, f"/resume {other.id}")
            await pilot.pause(0.2)
            shown = visible(app)
            assert app.session.id == other.id and "SECONDMARK" in shown
            assert "damaged frame" in shown and "sessions repair" in shown

    run(main())


def test_keys_can_be_overridden_and_resizing_keeps_a_valid_layout(tmp_path: Path) -> None:
    long = "\n\n".join(f"paragraph {i}" for i in range(60))

    async def main() -> None:
        app = _app(tmp_path, (Fake(say(long)), "m"), keys={"latest": "ctrl+k"}, theme="nord")
        async with app.run_test(size=SIZE) as pilot:
            assert app.theme == "nord"
            await _type(pilot, "go")
            await _settle(app)
            t = app.query_one(Transcript)
            t.scroll_to(y=0, animate=False)
            await pilot.pause()
            await pilot.press("ctrl+k")
            await pilot.pause()
            assert t.following
            await pilot.resize_terminal(60, 16)
            await pilot.pause()
            assert app.query_one("#input").region.bottom <= 16
            assert t.size.height > 0 and "paragraph 59" in visible(app)

    run(main())


def test_search_finds_older_matches_and_highlights_them(tmp_path: Path) -> None:
    answers = [say(f"answer number {i} " + "filler line\n\n" * 8) for i in range(6)]
    answers[1] = say("the needle is here\n\n" + "filler line\n\n" * 8)
    answers[4] = say("another needle there\n\n" + "filler line\n\n" * 8)
    fake = Fake(*answers)

    async def main() -> None:
        app = _app(tmp_path, (fake, "m"))
        async with app.run_test(size=SIZE) as pilot:
            for i in range(6):
                await _type(pilot, f"question {i}")
                await _settle(app)
            await pilot.press("ctrl+f")
            await pilot.pause()
            assert app.focused is app.query_one("#search")
            await _type(pilot, "needle")
            await pilot.pause()
            t = app.query_one(Transcript)
            assert not t.following and "another needle there" in visible(app)
            strips = t.render_lines(Region(0, 0, t.size.width, t.size.height))
            styled = [seg for strip in strips for seg in strip if "needle" in seg.text.lower()]
            assert styled and all(seg.style and seg.style.reverse for seg in styled)
            await pilot.press("enter")  # the next, older match
            await pilot.pause()
            assert "the needle is here" in visible(app)
            await pilot.press("escape")
            await pilot.pause()
            assert not app.query_one("#search").has_class("shown")
            assert app.focused is app.query_one("#input")

    run(main())


def test_thinking_and_tool_output_expand_on_click_or_ctrl_o(tmp_path: Path) -> None:
    from smith.providers import ThinkingDelta

    thinking = "\n".join(f"step {i} of my reasoning" for i in range(12))
    fake = Fake([ThinkingDelta(thinking), *say("done")])

    async def main() -> None:
        app = _app(tmp_path, (fake, "m"))
        async with app.run_test(size=SIZE) as pilot:
            await _type(pilot, "think")
            await _settle(app)
            await pilot.pause()
            assert "step 0 of my reasoning (+11 lines" in visible(app)
            assert "step 11" not in visible(app)
            await pilot.press("ctrl+o")
            await pilot.pause()
            assert "step 11 of my reasoning" in visible(app)
            await pilot.press("ctrl+o")
            await pilot.pause()
            assert "step 11" not in visible(app)
            row = next(y for y, line in enumerate(visible(app).splitlines()) if "step 0" in line)
            await pilot.click("#transcript", offset=(4, row))
            await pilot.pause()
            assert "step 11 of my reasoning" in visible(app)

    run(main())


def test_links_are_plain_unless_hyperlinks_are_turned_on(monkeypatch: Any) -> None:
    from rich.console import Console

    from smith.frontends.tui import _render

    message = {"role": "assistant", "content": [{"type": "text", "text": "see [docs](http://x.y)"}]}
    console = Console(width=60, color_system="truecolor")

    def links() -> list[str]:
        renderable = _render.render_message(message)
        assert renderable is not None
        return [seg.style.link for seg in console.render(renderable)
                if seg.style is not None and seg.style.link]  # fmt: skip

    assert links() == []
    monkeypatch.setattr(_render, "HYPERLINKS", True)
    assert links() and links()[0] == "http://x.y"


def test_terminal_overrides_come_from_configuration(monkeypatch: Any) -> None:
    import os

    from smith.frontends.tui import _render, _terminal_settings

    # A private copy of the environment: the settings must not leak into other tests.
    monkeypatch.setattr(
        os,
        "environ",
        {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TEXTUAL_COLOR_SYSTEM")},
    )
    monkeypatch.setattr(_render, "HYPERLINKS", False)
    _terminal_settings({"tui.color": "none", "tui.hyperlinks": True})
    assert os.environ.get("NO_COLOR") == "1" and _render.HYPERLINKS is True
    del os.environ["NO_COLOR"]
    _terminal_settings({"tui.color": "256", "tui.hyperlinks": False})
    assert os.environ.get("TEXTUAL_COLOR_SYSTEM") == "256" and _render.HYPERLINKS is False


def test_a_queued_message_can_be_taken_back_and_edited(tmp_path: Path) -> None:
    gate = Gate()
    fake = Fake([gate, *say("first")], say("second"))

    async def main() -> None:
        app = _app(tmp_path, (fake, "m"))
        async with app.run_test(size=SIZE) as pilot:
            await _type(pilot, "start")
            await gate.reached.wait()
            await _type(pilot, "tpyo here")
            await _type(pilot, "/queue")
            await pilot.pause()
            await pilot.press("enter")  # the only queued item
            await pilot.pause()
            field = app.editor
            assert field.value == "tpyo here" and app.focused is field
            assert app.runtime is not None and len(app.runtime.queue) == 0
            gate.opened.set()
            await _settle(app)

    run(main())


def test_a_short_session_stays_at_the_bottom_after_a_stream(tmp_path: Path) -> None:
    # Removing the live block can hide the scrollbar for a moment; following must still
    # end at the bottom once the recorded message (rendered taller) arrives.
    text = "\n\n".join(f"line {i}" for i in range(30))

    async def main() -> None:
        app = _app(tmp_path, (Fake(say(text), say(text)), "m"))
        async with app.run_test(size=SIZE) as pilot:
            for prompt in ("one", "two"):
                await _type(pilot, prompt)
                await _settle(app)
                await pilot.pause()
                t = app.query_one(Transcript)
                assert t.following and t.scroll_y == t.max_scroll_y > 0
                assert "line 29" in visible(app)

    run(main())


def test_brackets_in_names_and_queued_text_are_shown_as_written(tmp_path: Path) -> None:
    project = _project(tmp_path)
    name = "notes [/] and [@click=app.quit]x"
    session = Session.create(str(tmp_path / "odd.smith"), name=name, cwd=str(project))
    gate = Gate()

    async def main() -> None:
        app = _app(tmp_path, (Fake([gate, *say("x")], say("y")), "m"), session=session)
        async with app.run_test(size=SIZE) as pilot:
            assert name in status(app)
            await _type(pilot, "start")
            await gate.reached.wait()
            await _type(pilot, "look at a[/]b")
            await pilot.pause()
            assert "look at a[/]b" in str(app.query_one("#queue", Static).render())
            gate.opened.set()
            await _settle(app)

    run(main())


def test_a_notice_during_a_stream_leaves_no_stale_partial_reply(tmp_path: Path) -> None:
    gate = Gate()
    fake = Fake([TextDelta("partial"), gate, TextDelta(" rest"), End("success")], say("next"))

    async def main() -> None:
        app = _app(tmp_path, (fake, "m"))
        async with app.run_test(size=SIZE) as pilot:
            await _type(pilot, "go")
            await gate.reached.wait()
            await pilot.pause(0.05)  # the live block is drawn
            await _type(pilot, "/thinking low")  # a notice lands below the live block
            gate.opened.set()
            await _settle(app)
            await pilot.pause()
            screen = visible(app)
            assert screen.count("partial") == 1 and "partial rest" in screen
            await _type(pilot, "again")
            await _settle(app)
            await pilot.pause()
            assert "next" in visible(app)
            blocks = app.query_one(Transcript).blocks
            assert [b.key for b in blocks if b.key.startswith("live-")] == []

    run(main())


def test_notices_each_keep_their_own_line(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            for text in ("/nope1", "/nope2", "/nope3"):
                await _type(pilot, text)
            await pilot.pause()
            screen = visible(app)
            assert all(f"/nope{i}" in screen for i in (1, 2, 3))

    run(main())


def test_odd_recorded_content_is_shown_not_fatal(tmp_path: Path) -> None:
    project = _project(tmp_path)
    contents: list[Any] = [
        {"role": "user", "content": "a plain string"},
        {"role": "assistant", "content": ["bare string", {"type": "text", "text": None}]},
        {"role": "assistant", "content": [{"type": "tool_call", "name": 5, "arguments": {}}]},
        {"role": "mystery", "content": []},
        "not even a dict",
    ]
    entries = [{"id": f"e{i}", "parent": f"e{i - 1}" if i else None, "ts": 1, "kind": "message",
                "content": c} for i, c in enumerate(contents)]  # fmt: skip
    session = Session.from_entries(entries, info={"id": "odd", "name": "odd", "cwd": str(project)})

    async def main() -> None:
        app = _app(tmp_path, (Fake(), "m"), session=session)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert "a plain string" in visible(app) and "→ 5" in visible(app)

    run(main())


def test_keys_do_the_right_thing_in_the_search_bar_and_under_overlays(tmp_path: Path) -> None:
    from textual.widgets import Input

    from smith.frontends.tui._screens import InfoScreen

    async def main() -> None:
        app = _app(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("ctrl+f", "a", "b", "left")
            await pilot.press("ctrl+d")  # deletes in the search bar; does not quit
            await pilot.pause()
            assert app.is_running and app.query_one("#search", Input).value == "a"
            await pilot.press("escape")
            await _type(pilot, "/help")
            await pilot.press("ctrl+f")  # the overlay owns the keys
            await pilot.pause()
            assert isinstance(app.screen, InfoScreen)
            assert not app.query_one("#search").has_class("shown")

    run(main())


def test_switching_sessions_while_busy_is_orderly(tmp_path: Path) -> None:
    gate = Gate()

    async def main() -> None:
        app = _app_with_sessions(tmp_path, (Fake([gate, *say("x")]), "m"))
        async with app.run_test(size=SIZE) as pilot:
            await _type(pilot, "start")
            await gate.reached.wait()
            first = app.session.id
            app.run_command("new", "")
            app.run_command("model", "")  # during the switch: refused with a notice
            await pilot.pause(0.3)
            assert app.session.id != first and app.runtime is not None
            assert "switching sessions" in visible(app) or app.runtime.model == "fake:m"
            await pilot.press("ctrl+f", "x", "enter")  # search after the rebuild: no crash
            await pilot.pause()
            assert app.is_running

    run(main())


def test_a_long_answer_streams_in_settled_parts_then_shows_as_recorded(tmp_path: Path) -> None:
    paragraphs = [f"paragraph {i}: " + "word " * 60 for i in range(12)]
    deltas = [TextDelta(p + "\n\n") for p in paragraphs]
    gate = Gate()
    fake = Fake([*deltas, gate, End("success")])

    async def main() -> None:
        app = _app(tmp_path, (fake, "m"))
        async with app.run_test(size=SIZE) as pilot:
            await _type(pilot, "write")
            await gate.reached.wait()
            await pilot.pause(0.1)
            t = app.query_one(Transcript)
            live = [b.key for b in t.blocks if b.key.startswith("live-")]
            assert len(live) >= 2  # settled parts plus the tail being written
            assert "paragraph 11:" in visible(app)
            gate.opened.set()
            await _settle(app)
            await pilot.pause()
            assert [b.key for b in t.blocks if b.key.startswith("live-")] == []
            assert "paragraph 11:" in visible(app)

    run(main())


def test_the_status_shows_live_memory_when_accounting_is_on(tmp_path: Path) -> None:
    from smith import memory

    async def main() -> str:
        app = _app(tmp_path, show_memory=True)
        async with app.run_test(size=SIZE) as pilot:
            await _type(pilot, "list files")
            await _settle(app)
            await pilot.pause()
            return status(app)

    shown = run(main())
    if memory.enabled():  # SMITH_MEMORY_ACCOUNTING=1 runs the suite with accounting on
        assert re.search(r"mem [\d.]+ (B|KiB|MiB) \(turn -?[\d.]+ (B|KiB|MiB)\)", shown), shown
    else:
        assert "mem " not in shown


def test_the_diff_pager_goes_file_by_file(tmp_path: Path) -> None:
    import json as _json

    from smith.frontends.tui._pager import DiffScreen, split_files
    from smith.vcs import HistorySettings

    project = _project(tmp_path)
    script = tmp_path / "two.json"
    writes = [{"name": "write", "arguments": {"path": f"f{n}.py", "content": f"x = {n}\n"}}
              for n in range(2)]  # fmt: skip
    script.write_text(_json.dumps({"responses": [{"tool_calls": writes}, {"text": "done"}]}))
    settings = HistorySettings(str(tmp_path / "home"))

    def factory(session: Session) -> Runtime:
        ctx = ToolContext(root=str(project), cwd=str(project), session=session)
        tools = list(builtin_tools().values())
        model = f"scripted:{script}"
        return Runtime(session, model=model, tools=tools, context=ctx, history=settings)

    session = Session.create(str(tmp_path / "s.smith"), name="tui", cwd=str(project))

    async def main() -> None:
        app = SmithApp(factory, session)
        async with app.run_test(size=SIZE) as pilot:
            await _type(pilot, "write two files")
            await _settle(app)
            await _type(pilot, "/diff")
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, DiffScreen)
            assert [path for path, _ in screen.files] == ["f0.py", "f1.py"]
            await pilot.press("n")
            assert screen.at == 1
            await pilot.press("n", "p")
            assert screen.at == 0
            await pilot.press("q")
            await pilot.pause()
            assert not isinstance(app.screen, DiffScreen)

    run(main())
    assert split_files("") == [] and split_files("+x\n") == [("changes", "+x\n")]
