"""Skills, as a reviewer tried to break them (docs/skills.md): a skill's tool runs its
own scripts where the sandbox hides its folder, what the index shows is one line per
skill whatever a folder name or description holds, and the smaller refusals say why."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result, SmithEnv
from tests.test_skills import _eval, _skill

RUNS = 'tools:\n  - name: go\n    command: bash "$SKILL_DIR/run.sh"\n'


@pytest.fixture
def project(senv: SmithEnv) -> Path:
    return senv.make_project()


def _ends(events: list[dict[str, object]]) -> dict[object, dict[str, object]]:
    return {e["tool_call_id"]: e for e in events if e.get("type") == "tool_end"}


@pytest.mark.parametrize("where", ["config", "home"])
def test_a_skills_tool_runs_its_own_script_where_the_sandbox_hides_its_folder(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path, where: str
) -> None:
    """The sandbox hides $SMITH_CONFIG_HOME (and here the whole home, sandbox.hide "~"):
    the skill's folder is mounted back read-only for its own tool's command."""
    home = Path(senv.env["HOME"])
    folder = senv.config_home / "skills" if where == "config" else home / ".claude" / "skills"
    path = _skill(folder, "runs", "Runs its script", "Use runs__go.", RUNS)
    (path.parent / "run.sh").write_text('echo "SCRIPT-RAN"; touch "$SKILL_DIR/x" || echo RO\n')
    senv.write_user_config('sandbox {\n  hide "~"\n}\n')
    responses = [
        {"tool_calls": [{"id": "c1", "name": "skill", "arguments": {"name": "runs"}}]},
        {"tool_calls": [{"id": "c2", "name": "runs__go", "arguments": {}}]},
        {"text": "ok"},
    ]
    _, events, r = _eval(senv, smith_process, project, responses)
    assert r.code == 0, r.err
    said = str(_ends(events)["c2"]["result"])
    assert "SCRIPT-RAN" in said and "RO" in said, said
    assert not (path.parent / "x").exists()
