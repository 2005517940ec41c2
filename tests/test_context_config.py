"""What configuration changes in what the model is told (docs/context.md), read from the
scripted provider's requests log: a custom `context.files` list, `prompt.system` and
`prompt.append` in a trusted project's file (relative to the project root), and the
environment block's time zone and its line for a project that is not a git repository."""

from __future__ import annotations

import datetime
import json
import os
import time
from collections.abc import Callable, Iterator

import pytest

from tests.conftest import Result, SmithEnv
from tests.test_context import _eval, _git_project, _notes


def test_a_custom_context_files_list_names_the_files_looked_for_first_found_wins(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    """`context.files "RULES.md" "AGENTS.md"`: in each directory (smith's config
    directory, the root down to the working directory, and one reached later) the first
    of those names that exists is loaded; CLAUDE.md, not in the list, never is."""
    project = _git_project(senv)
    senv.write_user_config('context.files "RULES.md" "AGENTS.md"\n')
    (senv.config_home / "RULES.md").write_text("MARK-GLOBAL-RULES\n")
    (project / "RULES.md").write_text("MARK-ROOT-RULES\n")
    (project / "AGENTS.md").write_text("MARK-ROOT-AGENTS: RULES.md wins here\n")
    (project / "CLAUDE.md").write_text("MARK-ROOT-CLAUDE: not in the list\n")
    (project / "sub").mkdir()
    (project / "sub" / "AGENTS.md").write_text("MARK-SUB-AGENTS\n")
    (project / "lib").mkdir()
    (project / "lib" / "CLAUDE.md").write_text("MARK-LIB-CLAUDE\n")
    (project / "lib" / "RULES.md").write_text("MARK-LIB-RULES\n")
    (project / "lib" / "x.txt").write_text("x\n")
    responses = [
        {"tool_calls": [{"name": "read", "arguments": {"path": "../lib/x.txt"}}]},
        {"text": "done"},
    ]
    (requests, _) = _eval(smith, senv, project / "sub", responses)
    system = requests[0]["system"]
    order = [system.index(m) for m in ("MARK-GLOBAL-RULES", "MARK-ROOT-RULES", "MARK-SUB-AGENTS")]
    assert order == sorted(order), system
    assert f"({project}/RULES.md)" in system and f"({project}/sub/AGENTS.md)" in system
    sent = json.dumps(requests)
    assert "MARK-ROOT-AGENTS" not in sent and "MARK-ROOT-CLAUDE" not in sent
    (reached,) = _notes(requests[1], "instructions")  # lib/ reached by the read
    assert "MARK-LIB-RULES" in reached and "MARK-LIB-CLAUDE" not in sent


def test_prompt_files_in_a_trusted_projects_config_are_relative_to_the_project_root(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    """A relative `prompt.system` or `prompt.append` file set in `.smith/config.kdl` is
    read from the project root, not from the working directory (a subdirectory here,
    holding decoys of the same names) nor smith's config directory."""
    project = _git_project(senv)
    (project / ".smith").mkdir()
    (project / ".smith" / "config.kdl").write_text(
        'prompt {\n    system "rules/system.md"\n'
        '    append "rules/extra.md" "Plain appended text."\n}\n'
    )
    for base, mark in ((project, "PROJECT"), (project / "src", "DECOY-CWD"),
                       (senv.config_home, "DECOY-HOME")):  # fmt: skip
        (base / "rules").mkdir(parents=True)
        (base / "rules" / "system.md").write_text(f"{mark}-SYSTEM prompt.\n")
        (base / "rules" / "extra.md").write_text(f"{mark}-EXTRA rules.\n")
    assert smith("trust", cwd=project).code == 0
    (requests, _) = _eval(smith, senv, project / "src", [{"text": "ok"}])
    system = requests[0]["system"]
    assert system.startswith("PROJECT-SYSTEM prompt.\n"), system
    at = [system.index(s) for s in ("PROJECT-SYSTEM", "PROJECT-EXTRA", "Plain appended text.")]
    assert at == sorted(at)
    assert "DECOY" not in system and "You are smith" not in system
    shown = json.loads(smith("config", "show", "--json", cwd=project / "src").out)
    text = json.dumps(shown)
    assert "prompt.system" in text and str(project / ".smith" / "config.kdl") in text


# -- the environment block ---------------------------------------------------------------


@pytest.fixture
def zone() -> Iterator[Callable[[str], None]]:
    """Set the process's time zone (TZ, POSIX form: no tz database needed), restored
    after the test."""
    before = os.environ.get("TZ")

    def set_zone(value: str) -> None:
        os.environ["TZ"] = value
        time.tzset()

    yield set_zone
    if before is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = before
    time.tzset()


@pytest.mark.parametrize(
    ("tz", "offset", "shown"),
    [
        ("XST-5:30", datetime.timedelta(hours=5, minutes=30), "XST, UTC+05:30"),
        ("ABC+3", datetime.timedelta(hours=-3), "ABC, UTC-03:00"),
        ("UTC0", datetime.timedelta(0), "UTC+00:00"),
    ],
)
def test_the_environment_block_names_the_time_zone_and_its_offset(
    senv: SmithEnv,
    smith: Callable[..., Result],
    zone: Callable[[str], None],
    tz: str,
    offset: datetime.timedelta,
    shown: str,
) -> None:
    zone(tz)
    today = datetime.datetime.now(datetime.timezone(offset)).date().isoformat()
    (requests, _) = _eval(smith, senv, _git_project(senv), [{"text": "ok"}])
    (env,) = _notes(requests[0], "environment")
    assert f"\nDate: {today} ({shown})\n" in env, env


def test_the_environment_block_says_when_the_project_is_not_a_git_repository(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = senv.root / "plain"
    (project / ".smith").mkdir(parents=True)  # a project root, but no repository
    (project / "a.txt").write_text("a\n")
    (requests, _) = _eval(smith, senv, project, [{"text": "ok"}])
    (env,) = _notes(requests[0], "environment")
    assert f"Project root: {project} (the working directory)\n" in env, env
    assert env.endswith("\nGit: not a repository\n</environment>"), env
