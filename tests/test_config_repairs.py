"""Configuration that is broken, odd or shared must still be fixable and never damaged."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable

from smith.config import Integer, Option, resolve
from smith.config._resolve import invalid
from smith.diagnostics import Source
from tests.conftest import Result, SmithEnv, smith_executable


def test_config_set_fixes_the_invalid_value_its_diagnostic_names(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    senv.write_user_config('model "m" {\n    temperature "hot"\n}\n')
    broken = smith("config", "show")
    assert broken.code == 2 and "smith config set model.temperature 0.7" in broken.err
    fixed = smith("config", "set", "model.temperature", "0.7")
    assert fixed.code == 0, fixed.err
    assert senv.user_config.read_text() == 'model "m" {\n    temperature 0.7\n}\n'
    assert smith("config", "show").code == 0


def test_config_set_still_reports_what_remains_broken(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    senv.write_user_config('thinking "lots"\n')
    r = smith("config", "set", "debug", "true")
    assert r.code == 2
    assert "debug = true" in r.out and "thinking: expected one of" in r.err


def test_config_set_refuses_a_file_with_broken_syntax(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    senv.write_user_config("model {\n")
    before = senv.user_config.read_bytes()
    r = smith("config", "set", "debug", "true")
    assert r.code == 2 and "cannot update this file: it has errors" in r.err
    assert senv.user_config.read_bytes() == before


def test_exponent_numbers_keep_their_exact_value(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    senv.write_user_config("model.temperature 3e-5\n")
    assert resolve(env=senv.env, cwd=str(senv.root))["model.temperature"] == 3e-05
    for text in ("7e-9", "5e-324", "1.9999999999999998"):
        r = smith("config", "set", "model.temperature", text)
        assert r.code == 0, r.err
        assert resolve(env=senv.env, cwd=str(senv.root))["model.temperature"] == float(text)


def test_config_set_writes_through_a_symlink_and_keeps_crlf(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    dotfiles = senv.root / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "smith.kdl"
    target.write_bytes(b'// mine\r\nthinking "low"\r\n')
    senv.config_home.mkdir(parents=True)
    senv.user_config.symlink_to(target)
    assert smith("config", "set", "thinking", "high").code == 0
    assert smith("config", "set", "debug", "true").code == 0
    assert senv.user_config.is_symlink()
    assert target.read_bytes() == b'// mine\r\nthinking "high"\r\ndebug true\r\n'
    assert sorted(os.listdir(senv.config_home)) == ["config.kdl"]  # no lock file left
    assert sorted(os.listdir(dotfiles)) == ["smith.kdl"]


def test_home_paths_are_expanded_once_and_used_everywhere(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = senv.make_project(config='model "p"\n')
    home = senv.env["HOME"]
    trusted = smith("--home", "~/data2", "trust", cwd=project)
    assert trusted.code == 0
    assert os.path.exists(os.path.join(home, "data2", "trust.json"))
    got = smith("--home", "~/data2", "config", "get", "model", cwd=project)
    assert (got.out, got.err) == ("p\n", "")
    relative = smith("config", "get", "home", cwd=project, env={"SMITH_HOME": "rel"})
    assert relative.out == f"{project}/rel\n"


def test_a_bad_value_in_the_project_file_is_fixed_in_that_file(senv: SmithEnv) -> None:
    from smith import trust

    project = senv.make_project(config='thinking "lots"\n')
    trust.trust(str(senv.data_home), str(project))
    config = resolve(env=senv.env, cwd=str(project), strict=False)
    [error] = config.errors
    assert "edit that line to a valid value" in error.fix
    assert "config set" not in error.fix  # that writes the user file, which would not help


def test_trust_can_be_revoked_while_the_project_config_is_broken(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = senv.make_project(config='thinking "lots"\n')
    assert smith("trust", cwd=project).code == 0
    assert smith("config", "show", cwd=project).code == 2
    r = smith("trust", "--revoke", cwd=project)
    assert r.code == 0 and r.out == f"no longer trusted: {project}\n"
    assert smith("config", "show", cwd=project).code == 0


def test_trust_json_needs_list(smith: Callable[..., Result]) -> None:
    r = smith("trust", "--json")
    assert r.code == 2 and "--json goes with --list" in r.err


def test_secret_values_are_hidden_on_the_real_path() -> None:
    option = Option("auth.key", Integer(), None, "API key for the service.", secret=True)
    d = invalid(option, "sk-live-abc123", Source("env", "SMITH_AUTH_KEY"), "an integer")
    text = d.render() + str(d.to_dict())
    assert "sk-live-abc123" not in text and "[secret]" in text
    assert "(API key for the service)" in d.why


def test_an_output_failure_is_a_diagnostic(senv: SmithEnv) -> None:
    with open("/dev/full", "w") as full:
        r = subprocess.run(
            [smith_executable(), "config", "show"],
            env=senv.env,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert r.returncode == 1
    assert "No space left on device" in r.stderr and "internal error" not in r.stderr
