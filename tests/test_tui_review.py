"""Reviewing changes and commands in the transcript: an edit or write is a summary line
over a syntax-coloured diff, a bash call its command, exit status and duration over its
output; collapsed until clicked or Ctrl+O."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from rich.color import Color
from textual.geometry import Region

from smith.effects import ToolContext, builtin_tools
from smith.frontends.tui._render import render_tool_activity
from smith.frontends.tui._review import call_line, counts, duration, lexer_for
from smith.frontends.tui._transcript import Transcript
from smith.session import Session
from tests.test_tui import SIZE, _app, _project, run, visible

EDIT_DIFF = (
    "--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,3 @@\n def app():\n"
    "-    return 'hello'\n+    # greet the world\n+    return 'hello, world'\n"
)
WRITE_DIFF = "--- /dev/null\n+++ b/src/new.py\n@@ -0,0 +1,2 @@\n+import os\n+print(os.sep)\n"


def _entry(id: str, parent: str | None, content: dict[str, Any]) -> dict[str, Any]:
    return {"id": id, "parent": parent, "ts": 1, "kind": "message", "content": content}


def _result(call: str, name: str, text: str, details: dict[str, Any], error: bool = False
            ) -> dict[str, Any]:  # fmt: skip
    return {"role": "tool_result", "tool_call_id": call, "tool_name": name,
            "content": [{"type": "text", "text": text}], "is_error": error,
            "outcome": "ok", "details": details}  # fmt: skip


def _call(id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "tool_call", "id": id, "name": name, "arguments": arguments}


# A recorded session: fixed details (durations included), so what is shown is the same
# on every machine and every run.
REVIEW = [
    _entry("u1", None, {"role": "user", "content": [{"type": "text", "text": "greet"}]}),
    _entry(
        "a1",
        "u1",
        {
            "role": "assistant",
            "content": [
                _call("c1", "edit", path="src/app.py", old_text="x", new_text="y"),
                _call("c2", "write", path="src/new.py", content="import os\nprint(os.sep)\n"),
                _call("c3", "bash", command="pytest -q"),
                _call("c4", "bash", command="false"),
            ],
        },
    ),
    _entry(
        "r1",
        "a1",
        _result(
            "c1",
            "edit",
            "edited src/app.py (1 replacement)\n" + EDIT_DIFF,
            {"path": "src/app.py", "diff": EDIT_DIFF, "replacements": 1},
        ),
    ),
    _entry(
        "r2",
        "r1",
        _result(
            "c2",
            "write",
            "created src/new.py (24 bytes)",
            {"path": "src/new.py", "bytes": 24, "created": True, "diff": WRITE_DIFF},
        ),
    ),
    _entry(
        "r3",
        "r2",
        _result(
            "c3",
            "bash",
            "..\n2 passed in 0.01s\n",
            {"command": "pytest -q", "exit_status": 0, "duration": 1.234},
        ),
    ),
    _entry(
        "r4",
        "r3",
        _result(
            "c4",
            "bash",
            "[exit status 1]",
            {"command": "false", "exit_status": 1, "duration": 0.004},
            error=True,
        ),
    ),
    _entry("a2", "r4", {"role": "assistant", "content": [{"type": "text", "text": "done"}]}),
]


def review_app(tmp_path: Path) -> Any:
    project = _project(tmp_path)
    session = Session.from_entries(REVIEW, info={"id": "r", "name": "review", "cwd": str(project)})
    return _app(tmp_path, session=session)


def test_summary_lines_for_edits_writes_and_commands(tmp_path: Path) -> None:
    async def main() -> None:
        app = review_app(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            shown = visible(app)
            assert "✓ edit  src/app.py +2 -1" in shown
            assert "✓ write  created src/new.py  +2 lines" in shown
            assert "✓ bash  pytest -q  exit 0  1.2 s" in shown
            assert "✗ bash  false  exit 1  0.00 s" in shown
            assert "[exit status 1]" not in shown  # the summary line says it
            assert "→ edit src/app.py" in shown and "→ bash pytest -q" in shown
            # Collapsed, a preview: a diff's first lines (not its file names, which the
            # summary says), a command's last lines.
            assert "+    return 'hello, world'" in shown and "+print(os.sep)" in shown
            assert "2 passed in 0.01s" in shown
            assert "+++ b/src/app.py" not in shown

    run(main())


def _styles_of(app: Any, text: str) -> list[Any]:
    """The styles of the segments on the first row on screen holding `text`."""
    t = app.query_one(Transcript)
    for strip in t.render_lines(Region(0, 0, t.size.width, t.size.height)):
        if text in "".join(seg.text for seg in strip):
            return [seg.style for seg in strip if seg.style is not None]
    raise AssertionError(f"{text!r} is not on screen")


def test_expanding_shows_the_diff_in_syntax_colour_and_the_output(tmp_path: Path) -> None:
    async def main() -> None:
        app = review_app(tmp_path)
        async with app.run_test(size=(100, 50)) as pilot:
            await pilot.pause()
            await pilot.press("ctrl+o")
            await pilot.pause()
            shown = visible(app)
            assert "+    return 'hello, world'" in shown
            assert "-    return 'hello'" in shown
            assert "+print(os.sep)" in shown
            assert "2 passed in 0.01s" in shown
            assert "(click or Ctrl+O" not in shown
            styles = _styles_of(app, "hello, world")
            # an added line: its own background, and Python's keywords and strings coloured
            assert any(s.bgcolor == Color.parse("#12301a") for s in styles)
            colours = {s.color.name for s in styles if s.color is not None}
            assert len(colours) >= 3, colours  # the +, the keyword, the string
            assert "+++ b/src/app.py" in shown  # all of it, its file names too
            await pilot.press("ctrl+o")
            await pilot.pause()
            assert "+++ b/src/app.py" not in visible(app)

    run(main())


def test_a_click_expands_one_change(tmp_path: Path) -> None:
    async def main() -> None:
        app = review_app(tmp_path)
        async with app.run_test(size=(100, 50)) as pilot:
            await pilot.pause()
            row = next(y for y, line in enumerate(visible(app).splitlines())
                       if "✓ write" in line)  # fmt: skip
            await pilot.click("#transcript", offset=(4, row))
            await pilot.pause()
            shown = visible(app)
            assert "+++ b/src/new.py" in shown and "+++ b/src/app.py" not in shown

    run(main())


def test_results_without_review_details_are_shown_as_before(tmp_path: Path) -> None:
    """Sessions recorded before these details (or a failed edit) keep the plain look."""
    entries = [
        _entry("u1", None, {"role": "user", "content": [{"type": "text", "text": "go"}]}),
        _entry("r1", "u1", _result("c1", "bash", "hi\n", {"exit_status": 0})),
        _entry("r2", "r1", _result("c2", "edit", "old_text was not found", {}, error=True)),
        _entry("r3", "r2", _result("c3", "write", "created x (1 bytes)", {"path": "x"})),
    ]
    project = _project(tmp_path)
    session = Session.from_entries(entries, info={"id": "o", "name": "old", "cwd": str(project)})

    async def main() -> None:
        app = _app(tmp_path, session=session)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            shown = "\n".join(line.rstrip() for line in visible(app).splitlines())
            assert "✓ bash  exit 0" in shown  # no command or duration recorded: left out
            assert "✗ edit\n  old_text was not found" in shown
            assert "✓ write\n  created x (1 bytes)" in shown

    run(main())


def test_counts_durations_lexers_and_call_lines() -> None:
    assert counts(EDIT_DIFF) == (2, 1)
    assert counts(WRITE_DIFF) == (2, 0)
    assert counts("--- a/x\n+++ b/x\n@@ -1 +1 @@\n---x\n+++y\n") == (1, 1)  # content lines
    assert [duration(s) for s in (0.004, 1.234, 42.4, 125.0)] == [
        "0.00 s", "1.2 s", "42 s", "2 min 5 s"]  # fmt: skip
    assert lexer_for("src/app.py") == "python" and lexer_for("Makefile") == "make"
    assert lexer_for("notes.unknown-ext") == "text"
    assert call_line("bash", {"command": "make\nmake test"}) == "bash make …"
    assert call_line("write", {"path": "a\x1b[31m"}) == "write a␛[31m"
    assert call_line("ls", {"path": "."}) is None
    # a running call's live line says the same
    assert render_tool_activity("bash", {"command": "pytest -q"}, "…").plain == "… bash pytest -q"
    assert render_tool_activity("ls", {"path": "."}, "…").plain == '… ls {"path": "."}'


def test_write_and_bash_record_what_the_review_shows(tmp_path: Path) -> None:
    session = Session.create(str(tmp_path / "s.smith"), name="t", cwd=str(tmp_path))
    ctx = ToolContext(root=str(tmp_path), cwd=str(tmp_path), session=session)
    tools = builtin_tools()
    made = tools["write"].run(ctx, {"path": "a.py", "content": "x = 1\ny = 2\n"})
    assert made.details["diff"].startswith("--- /dev/null\n+++ b/a.py\n")
    assert counts(made.details["diff"]) == (2, 0)
    changed = tools["write"].run(ctx, {"path": "a.py", "content": "x = 1\ny = 3\n"})
    assert counts(changed.details["diff"]) == (1, 1)
    (tmp_path / "b.bin").write_bytes(b"\xff\xfe")
    binary = tools["write"].run(ctx, {"path": "b.bin", "content": "text"})
    assert "diff" not in binary.details  # the old content was not text: no diff
    os.mkfifo(tmp_path / "pipe")  # replaced, never read (opening it would block)
    piped = tools["write"].run(ctx, {"path": "pipe", "content": "x\n"})
    assert "diff" not in piped.details and (tmp_path / "pipe").read_text() == "x\n"
    ran = tools["bash"].run(ctx, {"command": "echo hi; exit 3"})
    assert ran.details["command"] == "echo hi; exit 3" and ran.details["exit_status"] == 3
    assert isinstance(ran.details["duration"], float) and 0 <= ran.details["duration"] < 30


def test_tools_that_really_ran_are_reviewed(tmp_path: Path) -> None:
    """Through the runtime: the tools' recorded details make the summary lines."""
    from tests.runtime_kit import Fake, call, say
    from tests.test_tui import _settle, _type

    edit = {"path": "src/app.py", "old_text": "'hello'", "new_text": "'hi'"}
    write = {"path": "src/new.py", "content": "A = 1\nB = 2\n"}
    fake = Fake(
        call(("edit", edit), ("write", write), ("bash", {"command": "echo hi"})), say("done")
    )

    async def main() -> None:
        app = _app(tmp_path, (fake, "m"))
        async with app.run_test(size=(100, 50)) as pilot:
            await _type(pilot, "change it")
            await _settle(app)
            await pilot.pause()
            shown = visible(app)
            assert "✓ edit  src/app.py +1 -1" in shown
            assert "✓ write  created src/new.py  +2 lines" in shown
            assert "✓ bash  echo hi  exit 0  " in shown and "\n  hi" in shown
            assert "+    return 'hi'" in shown and "+B = 2" in shown  # previews
            await pilot.press("ctrl+o")
            await pilot.pause()
            assert "+++ b/src/new.py" in visible(app)

    run(main())


def test_a_plugins_tool_is_shown_as_its_presentation_says(tmp_path: Path) -> None:
    """A tool a plugin contributes names how it is shown (smith.effects.Presentation): a
    formatter that changes a file is reviewed as an edit is (its call by its path, its
    result a summary line over the diff); without a presentation, as before."""
    from smith.effects import Presentation, ToolResult, ToolSpec
    from smith.sdk import Plugin, resolve_plugins

    def fmt(ctx: Any, args: dict[str, Any]) -> ToolResult:
        raise AssertionError("recorded, never run")

    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    tools = [ToolSpec("fmt", "Format a file.", schema, fmt, mutating=True,
                      presentation=Presentation("path", "change")),
             ToolSpec("plain", "Anything.", schema, fmt, mutating=False)]  # fmt: skip
    entries = [
        _entry("u1", None, {"role": "user", "content": [{"type": "text", "text": "tidy"}]}),
        _entry("a1", "u1", {"role": "assistant", "content": [
            _call("c1", "fmt", path="src/app.py"), _call("c2", "plain", path="x")]}),
        _entry("r1", "a1", _result("c1", "fmt", "formatted", {"path": "src/app.py",
                                                              "diff": EDIT_DIFF})),
        _entry("r2", "r1", _result("c2", "plain", "as it was", {"path": "x", "diff": EDIT_DIFF})),
    ]  # fmt: skip
    plugin = Plugin("formatter", tools=tools)

    async def main() -> None:
        project = _project(tmp_path)
        session = Session.from_entries(entries, info={"id": "f", "name": "f", "cwd": str(project)})
        app = _app(tmp_path, session=session, plugins=[*resolve_plugins().active, plugin])
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            shown = visible(app)
            assert "→ fmt src/app.py" in shown
            assert "✓ fmt  src/app.py +2 -1" in shown and "+    return 'hello, world'" in shown
            assert '→ plain {"path": "x"}' in shown and "✓ plain" in shown
            assert "as it was" in shown  # a plain result: its text

    run(main())
    with pytest.raises(ValueError, match="one of change, command, plain"):
        Presentation("path", "diff")
