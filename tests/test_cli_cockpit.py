"""The command line as a daily user meets it (issue 27): a mistyped command is named, not
sent to the model; undo, redo and history act on the project's latest change whichever
session made it; help leads with the command's own options; and the wording of counts
and new files."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import Result

Smith = Callable[..., Result]
APP = "the interactive app needs a terminal"  # what a prompt meets without a terminal


# -- a mistyped command ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "meant"),
    [
        (["sesions", "list"], "smith sessions list"),
        (["sesions", "lst", "--json"], "smith sessions list --json"),
        (["hsitory", "gc", "--dry-run"], "smith history gc --dry-run"),
        (["undp", "--force"], "smith undo --force"),
        (["confg"], "smith config"),
        (["--model", "demo", "sesions", "list"], "smith sessions list"),
    ],
)
def test_a_mistyped_command_is_named_not_sent_as_a_prompt(
    smith_process: Smith, words: list[str], meant: str
) -> None:
    r = smith_process(*words)
    assert r.code == 2, r.err
    assert r.out == ""
    typed = next(w for w in words if w not in ("--model", "demo"))
    assert r.err.startswith(f"error: '{typed}' is not a smith command")
    assert f"did you mean `{meant}`?" in r.err
    assert "smith -- " in r.err  # how to send the words as a prompt after all
    assert APP not in r.err and "Traceback" not in r.err


@pytest.mark.parametrize(
    "words",
    [
        ["fix", "the", "tests"],
        ["evl", "fix", "the", "tests"],  # close to eval, but prose follows
        ["sesions", "list", "all", "my", "files"],  # `sessions list` takes no words
        ["dif", "between", "a", "and", "b"],
        ["hello"],
    ],
)
def test_a_prompt_that_begins_like_a_command_stays_a_prompt(
    smith_process: Smith, words: list[str]
) -> None:
    r = smith_process(*words)
    assert r.code == 2 and APP in r.err, r.err  # it went to the app


def test_dash_dash_forces_a_prompt_even_for_a_command_name(
    smith_process: Smith, smith: Smith, monkeypatch: pytest.MonkeyPatch
) -> None:
    for words in (["--", "sesions", "list"], ["--", "config", "show"]):
        r = smith_process(*words)
        assert r.code == 2 and APP in r.err, r.err
    # The app gets the words after `--` as they are.
    from smith.cli import _main

    prompts: list[str | None] = []

    def app(*args: Any) -> int:
        prompts.append(args[-1])
        return 0

    monkeypatch.setattr(_main, "_interactive", app)
    assert smith("--thinking", "high", "--", "undo", "the", "last", "change").code == 0
    assert smith("--", "sesions", "list").code == 0
    assert smith("fix", "the", "tests").code == 0
    assert prompts == ["undo the last change", "sesions list", "fix the tests"]
    # A `--` after a command's name is that command's.
    r = smith("config", "get", "--", "model")
    assert r.code == 0 and prompts == ["undo the last change", "sesions list", "fix the tests"]


def test_the_suggestion_is_a_command_line_that_works(smith_process: Smith) -> None:
    """What the diagnostic offers runs."""
    r = smith_process("sesions", "lst", "--json")
    assert "did you mean `smith sessions list --json`?" in r.err
    fixed = smith_process("sessions", "list", "--json")
    assert fixed.code == 0 and json.loads(fixed.out)["sessions"] == []


# -- help ------------------------------------------------------------------------------


def test_smith_help_fits_two_screens_and_points_to_help_all(smith_process: Smith) -> None:
    r = smith_process("--help")
    assert r.code == 0
    lines = r.out.splitlines()
    assert len(lines) <= 70, len(lines)
    assert lines[0].startswith("usage: smith")
    assert "commands:" in r.out and "  sessions  " in r.out
    assert "--model TEXT" in r.out and "--help-all" in r.out
    assert "--tui-keys-abort" not in r.out  # one of the many others
    every = smith_process("--help-all")
    assert every.code == 0 and "--tui-keys-abort" in every.out
    assert len(every.out.splitlines()) > 3 * len(lines) // 2


@pytest.mark.parametrize(
    ("words", "own"),
    [
        (["undo"], ["--session NAME", "--force", "--json"]),
        (["history", "gc"], ["--keep-days DAYS", "--dry-run"]),
        (["sessions", "list"], ["--json"]),
        (["eval"], ["PROMPT", "--image FILE"]),
    ],
)
def test_a_commands_help_leads_with_its_own_usage_and_options(
    smith_process: Smith, words: list[str], own: list[str]
) -> None:
    r = smith_process(*words, "--help")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    name = " ".join(words)
    # The usage line names the command's own arguments, not 70 settings flags.
    assert lines[0].startswith(f"usage: smith {name} [-h]") and lines[0].endswith("[settings]")
    assert "--agent-deadline" not in r.out and "--tui-keys-abort" not in r.out
    settings = r.out.index("\nsettings:")
    for option in own:
        assert 0 < r.out.index(option) < settings, option  # before the settings
    assert len(r.out[settings:].splitlines()) <= 5  # the settings are a short group
    assert f"`smith {name} --help-all`" in r.out
    every = smith_process(*words, "--help-all")
    assert every.code == 0 and "--agent-deadline N" in every.out and "--tui-keys-abort" in every.out
