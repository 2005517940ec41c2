"""Terminal escapes in what `smith history`, `smith diff` and `smith replay`'s transcript
print (issue 15): a file name, file content, a prompt and bash output that carry escape
sequences are shown inert (ESC as ␛, BEL as ^G), never obeyed; `--json` keeps them exact.
tests/test_hostile_text.py does the same for eval and `sessions list`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result, SmithEnv
from tests.rpc_kit import script, texts_of
from tests.vcs_kit import git_project

NAME = "evil\x1b]0;PWNED\x07.txt"  # OSC 0: sets the terminal's title
NAME_SHOWN = "evil␛]0;PWNED^G.txt"
CONTENT = "line \x1b[2J cleared \x1b]52;c;ZXZpbA==\x07 end\n"  # CSI 2J, OSC 52 (clipboard)
CONTENT_SHOWN = "line ␛[2J cleared ␛]52;c;ZXZpbA==^G end"
PROMPT = "make \x1b[31mred\x1b[0m files"
PROMPT_SHOWN = "make ␛[31mred␛[0m files"
BASH = "printf 'out \\033]0;TITLE\\007 x \\033[2J y\\n'"
BASH_SHOWN = "out ␛]0;TITLE^G x ␛[2J y"
SAID = "done \x1b]0;SAID\x07 here"


def _raw(result: Result) -> None:
    for stream in (result.out, result.err):
        assert "\x1b" not in stream and "\x07" not in stream, stream


@pytest.fixture
def hostile(senv: SmithEnv, smith_process: Callable[..., Result]) -> Path:
    """A project whose one recorded turn (session 'hostile') wrote a file with escapes
    in its name and content and ran a command that prints escapes."""
    project = git_project(senv.root / "project")
    calls = [{"name": "write", "arguments": {"path": NAME, "content": CONTENT}},
             {"name": "bash", "arguments": {"command": BASH}}]  # fmt: skip
    model = script(senv, [{"tool_calls": calls, "stop": "tool_use"}, {"text": SAID}])
    made = smith_process("eval", "--session", "hostile", "--model", model, PROMPT, cwd=project)
    assert made.code == 0, made.err
    assert (project / NAME).read_text() == CONTENT
    return project


def test_history_shows_the_prompt_inert_and_its_json_keeps_it_exact(
    hostile: Path, smith_process: Callable[..., Result]
) -> None:
    shown = smith_process("history", "--session", "hostile", cwd=hostile)
    assert shown.code == 0, shown.err
    _raw(shown)
    assert PROMPT_SHOWN in shown.out and "1 file" in shown.out
    data = json.loads(smith_process("history", "--session", "hostile", "--json",
                                    cwd=hostile).out)  # fmt: skip
    assert [t["text"] for t in data["turns"]] == [PROMPT]


def test_diff_shows_names_and_content_inert_and_its_json_keeps_them_exact(
    hostile: Path, smith_process: Callable[..., Result]
) -> None:
    patch = smith_process("diff", "--session", "hostile", cwd=hostile)
    assert patch.code == 0, patch.err
    _raw(patch)
    assert f"+{CONTENT_SHOWN}" in patch.out
    assert '+++ "b/evil\\033]0;PWNED\\a.txt"' in patch.out  # git quotes such a name
    stat = smith_process("diff", "--session", "hostile", "--stat", cwd=hostile)
    _raw(stat)
    assert f"created   {NAME_SHOWN}" in stat.out and PROMPT_SHOWN in stat.out
    data = json.loads(smith_process("diff", "--session", "hostile", "--json", cwd=hostile).out)
    assert [f["path"] for f in data["files"]] == [NAME]
    assert f"+{CONTENT}" in data["patch"] and data["title"].endswith(f"({PROMPT})")


def test_replays_transcript_shows_tool_output_and_text_inert_and_its_json_keeps_them_exact(
    hostile: Path, smith_process: Callable[..., Result]
) -> None:
    shown = smith_process("replay", "hostile", "--instant", cwd=hostile)
    assert shown.code == 0, shown.err
    _raw(shown)
    for text in (PROMPT_SHOWN, BASH_SHOWN, "done ␛]0;SAID^G here", NAME_SHOWN):
        assert text in shown.out, f"{text!r} not in:\n{shown.out}"
    machine = smith_process("replay", "hostile", "--json", cwd=hostile)
    assert machine.code == 0, machine.err
    events = [json.loads(line) for line in machine.out.splitlines()]
    ended = [e["message"] for e in events if e.get("type") == "message_end"]
    assert PROMPT in [texts_of(m) for m in ended if m["role"] == "user"]
    assert SAID in [texts_of(m) for m in ended if m["role"] == "assistant"]
    outputs = [e["result"]["text"] for e in events if e.get("type") == "tool_end"]
    assert any("out \x1b]0;TITLE\x07 x \x1b[2J y" in text for text in outputs), outputs
