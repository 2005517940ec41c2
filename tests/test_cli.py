"""The command line: help, version, every subcommand, usage errors, no tracebacks."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from smith.cli._commands import COMMANDS
from tests.conftest import Result, SmithEnv

ALL = [c.name for c in COMMANDS]
REQUIRED = [
    "web",
    "eval",
    "rpc",
    "replay",
    "mcp",
    "sessions",
    "undo",
    "redo",
    "restore",
    "diff",
    "history",
    "config",
    "trust",
    "auth",
    "models",
    "tools",
    "plugins",
    "debug",
    "help",
]


def test_help_lists_every_command_and_setting(smith_process: Callable[..., Result]) -> None:
    r = smith_process("--help-all")
    assert r.code == 0, r.err
    for name in REQUIRED:
        assert re.search(rf"^  {name}\s", r.out, re.M), name
    from smith.config import SCHEMA

    for option in SCHEMA:
        assert option.flag in r.out and option.env in r.out, option.key


def test_version(smith_process: Callable[..., Result]) -> None:
    import smith

    r = smith_process("--version")
    assert (r.code, r.out.strip()) == (0, f"smith {smith.__version__}")


@pytest.mark.parametrize("name", ALL)
def test_every_subcommand_has_help(smith: Callable[..., Result], name: str) -> None:
    r = smith(name, "--help")
    assert r.code == 0, r.err
    assert f"usage: smith {name}" in r.out
    assert "--model" in r.out  # settings flags apply to every mode


@pytest.fixture
def unbuilt(monkeypatch: pytest.MonkeyPatch) -> str:
    """A command of the table that waits for a capability (every command is built now,
    so the mechanism is tried on a stand-in for `smith plugins`)."""
    from smith.cli import _commands

    stand_in = _commands.Command("plugins", "Plugins", capability="the plugin system")
    monkeypatch.setitem(_commands.BY_NAME, "plugins", stand_in)
    return "plugins"


def test_unbuilt_commands_exit_2_with_a_diagnostic(
    smith: Callable[..., Result], unbuilt: str
) -> None:
    name = unbuilt
    r = smith(name, "some", "--args", "-x")
    assert r.code == 2
    assert r.out == ""
    assert f"error: `smith {name}` is not built yet" in r.err
    assert "why:" in r.err and "fix:" in r.err
    assert "Traceback" not in r.err


def test_bare_smith_without_a_terminal_says_what_to_use_instead(
    smith_process: Callable[..., Result],
) -> None:
    r = smith_process()  # stdin and stdout are not a terminal here
    assert r.code == 2
    assert "needs a terminal" in r.err and "smith eval" in r.err
    assert "Traceback" not in r.err
    r = smith_process("what does this project do?")
    assert r.code == 2 and "needs a terminal" in r.err


def test_unknown_command_suggests_the_nearest(smith: Callable[..., Result]) -> None:
    r = smith("confg")
    assert r.code == 2
    assert "'confg' is not a smith command" in r.err
    assert "did you mean `smith config`?" in r.err


def test_usage_errors_are_diagnostics(smith: Callable[..., Result]) -> None:
    r = smith("config", "get")
    assert r.code == 2
    assert r.err.startswith("error: ")
    assert "the following arguments are required: KEY" in r.err
    assert "fix: see `smith config get --help`" in r.err
    r = smith("--model-temperature")
    assert r.code == 2 and "expected one argument" in r.err


def test_settings_flags_work_before_and_after_the_command(
    smith: Callable[..., Result],
) -> None:
    before = smith("--thinking", "high", "config", "get", "thinking")
    after = smith("config", "get", "thinking", "--thinking", "low")
    assert (before.code, before.out) == (0, "high\n")
    assert (after.code, after.out) == (0, "low\n")


def test_help_command_matches_dash_dash_help(smith: Callable[..., Result]) -> None:
    assert smith("help").out == smith("--help").out
    assert smith("help", "trust").out == smith("trust", "--help").out


def test_internal_errors_hide_the_traceback_unless_debug(
    smith: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    from smith.cli import _config

    def boom(*_: object) -> int:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(_config, "run", boom)
    plain = smith("config", "show")
    assert plain.code == 1
    assert "error: smith hit an internal error: RuntimeError: kaboom" in plain.err
    assert "Traceback" not in plain.err
    debug = smith("--debug", "config", "show")
    assert "Traceback (most recent call last)" in debug.err
    via_env = smith("config", "show", env={"SMITH_DEBUG": "1"})
    assert "Traceback (most recent call last)" in via_env.err


def test_debug_build_reports_the_loaded_extension(smith: Callable[..., Result]) -> None:
    r = smith("debug", "build", "--json")
    assert r.code == 0, r.err
    info = json.loads(r.out)
    from smith._fast import _buildinfo

    assert info["variant"] == _buildinfo.variant()
    assert info["extension"].endswith((".so", ".pyd"))


def test_python_dash_m_smith(senv: object) -> None:
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-m", "smith", "--version"], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0 and r.stdout.startswith("smith ")


def test_file_system_failures_are_diagnostics_not_bugs(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    import shutil

    shutil.rmtree(senv.data_home, ignore_errors=True)  # senv makes it (its cache key)
    senv.data_home.parent.mkdir(parents=True, exist_ok=True)
    senv.data_home.write_text("a file where the data directory should be")
    project = senv.make_project()
    r = smith("trust", str(project))
    assert r.code == 1
    assert f"error: {senv.data_home}" in r.err and "cannot use" in r.err
    assert "internal error" not in r.err and "Traceback" not in r.err


def test_help_of_an_unbuilt_command_says_so(smith: Callable[..., Result], unbuilt: str) -> None:
    r = smith(unbuilt, "--help")
    assert r.code == 0 and "Not built yet: this version lacks the plugin system." in r.out
