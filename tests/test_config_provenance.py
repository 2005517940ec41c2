"""`smith config show` names the layer and location of every resolved value."""

from __future__ import annotations

import json
from collections.abc import Callable

from smith.config import SCHEMA
from tests.conftest import Result, SmithEnv


def test_show_names_file_line_col_env_and_flag(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    path = senv.write_user_config(
        '// my settings\nmodel "claude-sonnet-4" {\n    temperature 0.3\n}\n'
    )
    r = smith("config", "show", "--thinking", "low", env={"SMITH_AGENT_MAX_ITERATIONS": "12"})
    assert r.code == 0, r.err
    rows = {line.split()[0]: line.split() for line in r.out.splitlines()}
    assert rows["model"] == ["model", '"claude-sonnet-4"', "user", f"{path}:2:7"]
    assert rows["model.temperature"] == ["model.temperature", "0.3", "user", f"{path}:3:17"]
    assert rows["agent.max-iterations"] == [
        "agent.max-iterations",
        "12",
        "env",
        "SMITH_AGENT_MAX_ITERATIONS",
    ]
    assert rows["thinking"] == ["thinking", '"low"', "flag", "--thinking"]
    assert rows["tools.bash.timeout"] == ["tools.bash.timeout", "120", "default"]
    assert set(rows) == {o.key for o in SCHEMA}


def test_show_json_is_the_same_as_data(senv: SmithEnv, smith: Callable[..., Result]) -> None:
    path = senv.write_user_config("tools.read.max-lines 4000\n")
    r = smith("config", "show", "--json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    records = {s["key"]: s for s in data["settings"]}
    assert records["tools.read.max-lines"] == {
        "key": "tools.read.max-lines",
        "value": 4000,
        "layer": "user",
        "source": {"surface": "file", "location": f"{path}:1:22"},
        "type": "an integer between 1 and 1000000",
        "env": "SMITH_TOOLS_READ_MAX_LINES",
        "flag": "--tools-read-max-lines",
        "doc": SCHEMA.get("tools.read.max-lines").doc,  # type: ignore[union-attr]
    }
    assert data["files"]["user"] == str(path)
    assert data["warnings"] == []


def test_get_prints_plain_values_for_shell_use(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    senv.write_user_config('model "gpt-5"\nvcs.enabled false\n')
    assert smith("config", "get", "model").out == "gpt-5\n"
    assert smith("config", "get", "vcs.enabled").out == "false\n"
    assert smith("config", "get", "model.temperature").out == "null\n"
    missing = smith("config", "get", "modle")
    assert missing.code == 2 and "did you mean 'model'?" in missing.err


def test_path_reports_files_and_whether_they_apply(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = senv.make_project(config='model "x"\n')
    r = smith("config", "path", "--json", cwd=project)
    files = json.loads(r.out)
    assert files["project_root"] == str(project)
    assert files["project_exists"] is True and files["project_trusted"] is False
    human = smith("config", "path", cwd=project)
    assert "ignored until `smith trust`" in human.out
