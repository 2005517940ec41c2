"""Seven layers, lowest to highest; each wins in turn for the same key."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from smith import trust
from smith.config import Contribution, resolve
from tests.conftest import Result, SmithEnv

KEY = "tools.bash.timeout"
# The value each layer sets, so the winner is identifiable by value alone.
VALUES = {
    "default": 120,
    "builtin": 201,
    "plugin": 202,
    "user": 203,
    "project": 204,
    "env": 205,
    "flag": 206,
}
ORDER = list(VALUES)


def _arrange(
    senv: SmithEnv, upto: str
) -> tuple[Path, dict[str, str], dict[str, object], list[Contribution]]:
    """Set KEY in every layer up to and including `upto`."""
    active = ORDER[: ORDER.index(upto) + 1]
    contributions = []
    if "builtin" in active:
        contributions.append(Contribution("product", {KEY: VALUES["builtin"]}, builtin=True))
    if "plugin" in active:
        contributions.append(Contribution("acme", {KEY: VALUES["plugin"]}, builtin=False))
    if "user" in active:
        senv.write_user_config(f"tools {{\n    bash timeout={VALUES['user']}\n}}\n")
    project = senv.make_project(
        config=f"tools.bash.timeout {VALUES['project']}\n" if "project" in active else None
    )
    trust.trust(str(senv.data_home), str(project))
    env = dict(senv.env)
    if "env" in active:
        env["SMITH_TOOLS_BASH_TIMEOUT"] = str(VALUES["env"])
    flags: dict[str, object] = {KEY: str(VALUES["flag"])} if "flag" in active else {}
    return project, env, flags, contributions


@pytest.mark.parametrize("winner", ORDER)
def test_each_layer_wins_over_the_ones_below(senv: SmithEnv, winner: str) -> None:
    project, env, flags, contributions = _arrange(senv, winner)
    config = resolve(env=env, flags=flags, cwd=str(project), contributions=contributions)
    setting = config.origin(KEY)
    assert (setting.value, setting.layer) == (VALUES[winner], winner)
    assert type(setting.value) is int
    expected_source = {
        "default": "defaults of smith",
        "builtin": "plugin product",
        "plugin": "plugin acme",
        "user": f"{senv.user_config}:2:18",
        "project": f"{project}/.smith/config.kdl:1:20",
        "env": "env SMITH_TOOLS_BASH_TIMEOUT",
        "flag": "--tools-bash-timeout",
    }[winner]
    assert str(setting.source) == expected_source


@pytest.mark.parametrize("winner", ["default", "user", "project", "env", "flag"])
def test_precedence_through_the_cli(
    senv: SmithEnv, smith: Callable[..., Result], winner: str
) -> None:
    project, env, flags, _ = _arrange(senv, winner)
    argv = ["config", "get", KEY, "--json"]
    if flags:
        argv += ["--tools-bash-timeout", str(flags[KEY])]
    r = smith(*argv, cwd=project, env=env)
    assert r.code == 0, r.err
    record = json.loads(r.out)
    assert (record["value"], record["layer"]) == (VALUES[winner], winner)


def test_a_value_set_in_a_lower_layer_survives_when_higher_layers_are_silent(
    senv: SmithEnv,
) -> None:
    senv.write_user_config('thinking "high"\n')
    config = resolve(env=senv.env | {"SMITH_MODEL": "m"}, cwd=str(senv.root))
    assert config["thinking"] == "high" and config.origin("thinking").layer == "user"
    assert config["model"] == "m" and config.origin("model").layer == "env"


def test_empty_environment_variable_counts_as_unset(senv: SmithEnv) -> None:
    senv.write_user_config("agent.max-iterations 7\n")
    config = resolve(env=senv.env | {"SMITH_AGENT_MAX_ITERATIONS": ""}, cwd=str(senv.root))
    assert config["agent.max-iterations"] == 7


def test_xdg_config_home_is_the_default_config_directory(senv: SmithEnv) -> None:
    env = {k: v for k, v in senv.env.items() if k != "SMITH_CONFIG_HOME"}
    xdg = Path(env["XDG_CONFIG_HOME"]) / "smith"
    xdg.mkdir(parents=True)
    (xdg / "config.kdl").write_text("agent.max-iterations 9\n")
    config = resolve(env=env, cwd=str(senv.root))
    assert config["agent.max-iterations"] == 9
    assert config.user_file == str(xdg / "config.kdl")
    assert config["config-home"] == str(xdg)


def test_data_home_defaults_to_xdg_data_home(senv: SmithEnv) -> None:
    env = {k: v for k, v in senv.env.items() if k != "SMITH_HOME"}
    config = resolve(env=env, cwd=str(senv.root))
    assert config.home == str(Path(env["XDG_DATA_HOME"]) / "smith")
    assert config.origin("home").layer == "default"
