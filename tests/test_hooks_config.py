"""Hooks configuration that could lose a guard without a word (plugins/_hookconf.py): a
name given twice, a project's hook named as the user's, Claude Code's tool names and
shapes, a matcher that matches nothing or would take exponential time."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from smith.diagnostics import Source
from tests.conftest import Result, SmithEnv
from tests.test_hooks import DONE, _call, _config, _eval

GUARD = 'hook "guard" on="before-tool" match="bash" command="echo no bash >&2; exit 2"\n'


@pytest.fixture
def project(senv: SmithEnv) -> Path:
    return senv.make_project()


def test_a_projects_hook_of_the_users_name_never_replaces_the_users_guard(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    _config(senv, GUARD)
    project = senv.make_project(config='hooks { hook "guard" on="after-tool" command="true"; }\n')
    assert smith("trust", str(project)).code == 0
    run = _eval(senv, smith, project, [_call("bash", command="touch ran"), DONE])
    assert run.result.code == 0, run.result.err
    assert not (project / "ran").exists()
    (bash,) = run.of("tool_end")
    assert bash["result"]["denied"]["reason"] == "hook 'guard': no bash"
    (warning,) = run.notices("warning")
    assert "hook 'guard' is defined in" in warning and "each runs as its own hook" in warning
    assert str(senv.user_config) in warning and str(project / ".smith" / "config.kdl") in warning


def test_a_name_given_twice_in_one_file_is_warned_of(
    senv: SmithEnv, smith: Callable[..., Result], project: Path
) -> None:
    _config(senv, GUARD + 'hook "guard" on="after-tool" command="true"\n')
    run = _eval(senv, smith, project, [DONE])
    assert run.result.code == 0, run.result.err
    (warning,) = run.notices("warning")
    assert "hook 'guard' is defined twice in one file" in warning, warning


def test_claude_codes_tool_names_match_smiths_tools(
    senv: SmithEnv, smith: Callable[..., Result], project: Path
) -> None:
    _config(senv, 'hook "g" on="before-tool" match="Bash|Write|Edit" command="exit 2"\n')
    run = _eval(senv, smith, project, [_call("write", path="a.txt", content="A"), DONE])
    assert run.result.code == 0, run.result.err
    assert not (project / "a.txt").exists()
    assert run.of("tool_end")[0]["result"]["denied"]["plugin"] == "hooks"
    assert run.notices("warning") == []


def test_mcp_tool_names_in_claudes_spelling_match() -> None:
    from smith.plugins._hookconf import parse_keys

    hooks = parse_keys({"hook.m.on": "before-tool", "hook.m.command": "x",
                        "hook.m.match": "mcp__files__.*"}, {})  # fmt: skip
    (hook,) = hooks.hooks
    assert hook.matches("mcp_files__read", None) is True
    assert hook.matches("mcp_web__read", None) is False


def test_a_matcher_that_matches_no_tool_is_warned_of(
    senv: SmithEnv, smith: Callable[..., Result], project: Path
) -> None:
    _config(senv, 'hook "g" on="before-tool" match="Shell" command="exit 2"\n')
    run = _eval(senv, smith, project, [DONE])
    (warning,) = run.notices("warning")
    assert "hook 'g': match \"Shell\" matches none of the tools (" in warning


@pytest.mark.parametrize(
    "hooks",
    [
        'hook "" on="before-tool" command="exit 2"\n',
        'PreToolUse { matcher "Bash"; command "exit 2"; }\n',
    ],
    ids=["no-name", "claude-shape"],
)
def test_a_badly_shaped_guard_fails_closed(
    senv: SmithEnv, smith: Callable[..., Result], project: Path, hooks: str
) -> None:
    _config(senv, hooks)
    run = _eval(senv, smith, project, [_call("write", path="a.txt", content="A"), DONE])
    assert run.result.code == 0, run.result.err
    assert not (project / "a.txt").exists()
    assert "hooks configuration is broken" in run.of("tool_end")[0]["result"]["text"]
    assert any("is no hook's setting" in n for n in run.notices("error"))


@pytest.mark.parametrize("pattern", [r"(\w|\w)*Z", "(a+)+$", "([a-z]+)*x", "(?:a|b){2,}"])
def test_a_matcher_that_could_take_exponential_time_is_refused(pattern: str) -> None:
    from smith.plugins._hookconf import parse_keys

    where = Source("file", "config.kdl:1:1")
    started = time.monotonic()
    hooks = parse_keys({"hook.r.on": "before-tool", "hook.r.command": "x",
                        "hook.r.match": pattern}, {"hook.r.match": where})  # fmt: skip
    assert time.monotonic() - started < 1.0
    assert hooks.hooks == () and hooks.broken_guard is not None
    assert "may take too long to match" in hooks.problems[0].render()


@pytest.mark.parametrize("pattern", ["bash|edit", "mcp_.*", "mcp_(files|web)__.*", "(ab)*c"])
def test_ordinary_matchers_are_kept(pattern: str) -> None:
    from smith.plugins._hookconf import parse_keys

    hooks = parse_keys({"hook.r.on": "before-tool", "hook.r.command": "x",
                        "hook.r.match": pattern}, {})  # fmt: skip
    assert hooks.problems == () and len(hooks.hooks) == 1
