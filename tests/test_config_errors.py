"""Bad configuration: every problem named with its source, field path and a fix."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from smith.config import resolve
from smith.diagnostics import ConfigError
from tests.conftest import Result, SmithEnv


def _errors(senv: SmithEnv, **kw: object) -> list[str]:
    with pytest.raises(ConfigError) as info:
        resolve(env=kw.pop("env", senv.env), cwd=str(senv.root), **kw)  # type: ignore[arg-type]
    return [d.render() for d in info.value.diagnostics]


def test_kdl_syntax_error_names_file_line_and_column(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    path = senv.write_user_config('model "a" {\n  temperature =\n}\n')
    r = smith_process("config", "show")
    assert r.code == 2
    assert f"error: {path}:2:15: this is not valid KDL" in r.err
    assert "fix:" in r.err and "Traceback" not in r.err


def test_wrong_type_names_source_field_expected_and_got(senv: SmithEnv) -> None:
    path = senv.write_user_config('model "m" {\n    temperature "hot"\n}\n')
    [error] = _errors(senv)
    assert error.startswith(
        f'error: {path}:2:17: model.temperature: expected a number between 0 and 2, got "hot"'
    )
    assert (
        "fix: edit that line to a valid value such as 0.7, or run "
        "`smith config set model.temperature 0.7`" in error
    )


def test_every_problem_is_reported_at_once(senv: SmithEnv) -> None:
    senv.write_user_config('tools.bash.timeout -1\nthinking "lots"\nvcs.enabled 1\n')
    errors = _errors(senv, env=senv.env | {"SMITH_AGENT_MAX_ITERATIONS": "many"})
    assert len(errors) == 4
    assert (
        "tools.bash.timeout: expected an integer between 1 and 86400 (seconds), got -1" in errors[0]
    )
    assert "thinking: expected one of off, minimal, low, medium, high, xhigh" in errors[1]
    assert "vcs.enabled: expected true or false, got 1" in errors[2]
    assert errors[3].startswith("error: env SMITH_AGENT_MAX_ITERATIONS: agent.max-iterations:")
    assert "set SMITH_AGENT_MAX_ITERATIONS to a valid value such as 50, or unset it" in errors[3]


def test_bad_flag_value_names_the_flag(smith: Callable[..., Result]) -> None:
    r = smith("--model-max-tokens", "lots", "config", "show")
    assert r.code == 2
    assert "error: --model-max-tokens: model.max-tokens: expected an integer" in r.err
    assert "pass a valid value, e.g. --model-max-tokens 1" in r.err


def test_unknown_key_is_an_error_with_did_you_mean(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    path = senv.write_user_config("\nmodel {\n    temprature 0.5\n}\n")
    r = smith_process("config", "show")
    assert r.code == 2
    assert f"error: {path}:3:5: model.temprature: unknown setting 'model.temprature'" in r.err
    assert "did you mean 'model.temperature'?" in r.err


def test_unknown_keys_under_plugins_warn_instead(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    senv.write_user_config('plugins {\n    linter {\n        level "strict"\n    }\n}\n')
    r = smith("config", "show")
    assert r.code == 0
    assert "warning:" in r.err and "plugins.linter.level" in r.err


def test_unknown_smith_environment_variable_warns_with_suggestion(
    smith: Callable[..., Result],
) -> None:
    r = smith("config", "show", env={"SMITH_MODLE": "x"})
    assert r.code == 0
    assert (
        "warning: env SMITH_MODLE: environment variable SMITH_MODLE is not a smith setting" in r.err
    )
    assert "did you mean SMITH_MODEL?" in r.err


def test_bootstrap_settings_cannot_come_from_a_file(senv: SmithEnv) -> None:
    senv.write_user_config('home "/elsewhere"\n')
    [error] = _errors(senv)
    assert "home: 'home' can only come from the environment or the command line" in error
    assert "SMITH_HOME" in error and "--home" in error


def test_shape_errors(senv: SmithEnv) -> None:
    senv.write_user_config('thinking "low" "high"\nmodel\n')
    errors = "\n".join(_errors(senv))
    assert "thinking: this setting has 2 values; it takes one" in errors
    assert "model: this setting has no value" in errors


def test_integers_stay_integers_and_kdl_number_forms_work(senv: SmithEnv) -> None:
    senv.write_user_config(
        "tools.read.max-bytes 0x10000\nagent.max-iterations 1_000\nvcs.max-file-size 0o777\n"
        "model.temperature 1\n"
    )
    config = resolve(env=senv.env, cwd=str(senv.root))
    assert config["tools.read.max-bytes"] == 65536
    assert config["agent.max-iterations"] == 1000
    assert config["vcs.max-file-size"] == 0o777
    assert all(
        type(config[k]) is int
        for k in ("tools.read.max-bytes", "agent.max-iterations", "vcs.max-file-size")
    )
    assert config["model.temperature"] == 1.0
    senv.write_user_config("agent.max-iterations 5.0\n")
    [error] = _errors(senv)
    assert "expected an integer between 1 and 10000, got 5.0" in error


def test_unreadable_file_is_an_error(senv: SmithEnv) -> None:
    senv.config_home.mkdir(parents=True)
    senv.user_config.write_bytes(b'model "\xff"\n')
    [error] = _errors(senv)
    assert "cannot read this configuration file" in error and "UTF-8" in error


def test_project_flag_must_be_a_directory(senv: SmithEnv) -> None:
    [error] = _errors(senv, flags={"project": str(senv.root / "nope")})
    assert "--project: project: the project root" in error and "is not a directory" in error


def test_list_settings_take_several_values(senv: SmithEnv, smith: Callable[..., Result]) -> None:
    senv.write_user_config('tools.ignore "dist/" "*.min.js"\ntools.extra-roots "/data"\n')
    config = resolve(env=senv.env, cwd=str(senv.root))
    assert config["tools.ignore"] == ["dist/", "*.min.js"]
    assert config["tools.extra-roots"] == ["/data"]
    via_env = resolve(env=senv.env | {"SMITH_TOOLS_IGNORE": "a/, b/"}, cwd=str(senv.root))
    assert via_env["tools.ignore"] == ["a/", "b/"]
    assert smith("config", "set", "tools.ignore", "x/,y.log").code == 0
    assert 'tools.ignore "x/" "y.log"' in senv.user_config.read_text()
    senv.write_user_config("tools.ignore 1 2\n")
    [error] = _errors(senv)
    assert "tools.ignore: expected a list of strings, got [1, 2]" in error
