"""Hostile configuration files: what a commit, a clone or a stray FIFO can put where smith
reads configuration. Every one is a diagnostic naming the file; none hangs smith, makes it
read without bound, or takes time beyond linear in the file."""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from smith.config import resolve
from tests.conftest import Result, SmithEnv, smith_executable

MEMORY_LIMIT_KB = 1_500_000  # far above what smith needs; far below /dev/zero read whole


def _bounded(senv: SmithEnv, *args: str, cwd: Path | None = None) -> Result:
    """The installed smith under a memory limit (a read without bound fails fast instead
    of filling the machine), with a timeout as a safety net for a hang."""
    command = f"ulimit -v {MEMORY_LIMIT_KB}; exec {shlex.join([smith_executable(), *args])}"
    try:
        proc = subprocess.run(
            ["bash", "-c", command],
            cwd=cwd or senv.root,
            env=senv.env,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"smith {' '.join(args)} hung")
    return Result(proc.returncode, proc.stdout, proc.stderr)


def _trusted(senv: SmithEnv, smith: Callable[..., Result]) -> Path:
    project = senv.make_project(config='model "trusted-model"\n')
    assert smith("trust", str(project)).code == 0
    return project


def test_a_trusted_project_file_turned_into_dev_zero_is_not_read(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = _trusted(senv, smith)
    config = project / ".smith" / "config.kdl"
    config.unlink()
    config.symlink_to("/dev/zero")  # what a commit can do
    r = _bounded(senv, "config", "get", "model", cwd=project)
    assert r.code == 0, r.err
    assert f"warning: {config}: ignoring this project's configuration: it is a symlink to " in r.err
    assert "/dev/zero, outside the project" in r.err and "internal error" not in r.err
    assert r.out.strip() != '"trusted-model"'


def test_a_project_file_linked_out_of_the_project_is_not_applied(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = _trusted(senv, smith)
    outside = senv.root / "elsewhere.kdl"
    outside.write_text('model "trusted-model"\n')  # even the very text that was trusted
    config = project / ".smith" / "config.kdl"
    config.unlink()
    config.symlink_to(outside)
    r = smith("config", "get", "model", cwd=project)
    assert r.code == 0 and "trusted-model" not in r.out
    assert f"it is a symlink to {outside}, outside the project" in r.err
    # A link inside the project is the project's own file.
    inside = project / "shared.kdl"
    inside.write_text('model "trusted-model"\n')
    config.unlink()
    config.symlink_to(inside)
    assert smith("config", "get", "model", cwd=project).out == "trusted-model\n"


def test_trust_refuses_a_configuration_it_cannot_read(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = senv.make_project(config="")
    config = project / ".smith" / "config.kdl"
    config.unlink()
    config.symlink_to("/dev/zero")
    r = _bounded(senv, "trust", str(project))
    assert r.code == 1 and "cannot trust this project: its configuration file is a symlink" in r.err
    assert not (senv.data_home / "trust.json").exists()


@pytest.mark.parametrize("where", ["user", "project"])
def test_a_fifo_configuration_never_hangs(
    senv: SmithEnv, smith: Callable[..., Result], where: str
) -> None:
    project = _trusted(senv, smith)
    if where == "user":
        path = senv.user_config
        path.parent.mkdir(parents=True, exist_ok=True)
    else:
        path = project / ".smith" / "config.kdl"
        path.unlink()
    os.mkfifo(path)
    r = _bounded(senv, "config", "get", "model", cwd=project)
    assert f"{path}: " in r.err and "it is a FIFO (named pipe), not a regular file" in r.err
    assert r.code == (2 if where == "user" else 0)


def test_a_fifo_trust_list_never_hangs(senv: SmithEnv, smith: Callable[..., Result]) -> None:
    project = _trusted(senv, smith)
    trust_list = senv.data_home / "trust.json"
    trust_list.unlink()
    os.mkfifo(trust_list)
    r = _bounded(senv, "config", "get", "model", cwd=project)
    assert r.code == 0 and "the trust list cannot be read" in r.err
    assert "is a FIFO (named pipe), not a regular file" in r.err


def test_a_fifo_cache_entry_is_passed_over(senv: SmithEnv) -> None:
    senv.write_user_config('model "cached"\n')
    assert resolve(env=senv.env, cwd=str(senv.root))["model"] == "cached"
    [entry] = (senv.data_home / "cache").iterdir()
    entry.unlink()
    os.mkfifo(entry)
    assert resolve(env=senv.env, cwd=str(senv.root))["model"] == "cached"


def test_a_huge_user_file_is_refused_by_its_size(senv: SmithEnv) -> None:
    path = senv.write_user_config('model "m"\n')
    os.truncate(path, 5 << 30)  # sparse: 5 GiB that cost no disk
    r = _bounded(senv, "config", "get", "model")
    assert r.code == 2, r.err
    assert f"error: {path}: cannot read this configuration file: it is 5 GiB, over the " in r.err
    assert "1 MiB smith reads of a configuration file" in r.err


def test_a_user_file_linked_to_a_device_is_an_error_but_a_dotfile_link_is_fine(
    senv: SmithEnv,
) -> None:
    senv.config_home.mkdir(parents=True)
    dotfiles = senv.root / "dotfiles" / "config.kdl"
    dotfiles.parent.mkdir()
    dotfiles.write_text('model "from-stow"\n')
    senv.user_config.symlink_to(dotfiles)  # GNU stow
    assert resolve(env=senv.env, cwd=str(senv.root))["model"] == "from-stow"
    senv.user_config.unlink()
    senv.user_config.symlink_to("/dev/zero")
    r = _bounded(senv, "config", "get", "model")
    assert r.code == 2 and "it is a character device, not a regular file" in r.err


def test_config_set_refuses_a_fifo_user_file(senv: SmithEnv, smith: Callable[..., Result]) -> None:
    senv.config_home.mkdir(parents=True)
    os.mkfifo(senv.user_config)
    r = _bounded(senv, "config", "set", "model", "x")
    assert r.code == 2 and "it is a FIFO (named pipe), not a regular file" in r.err
    assert "cannot update this file" in r.err


@pytest.mark.parametrize(
    ("value", "where", "shown"),
    [
        ("9" * 5000, "2:22", "the integer 9999999999...999999 (5,000 characters) is too large"),
        ("-" + "1" * 30, "2:22", "is too large"),
        ("0x" + "f" * 17, "2:22", f"the integer 0x{'f' * 17} is too large"),
        ("1e" + "9" * 5000, "2:22", "a number has too many digits to read"),
        ("1.5e999", "2:22", "the number 1.5e999 is too large"),
    ],
    ids=["5000-digits", "negative", "hex", "exponent-digits", "exponent"],
)
def test_numbers_past_what_a_setting_holds_are_diagnostics(
    senv: SmithEnv, smith_process: Callable[..., Result], value: str, where: str, shown: str
) -> None:
    path = senv.write_user_config(f'model "m"\nagent.max-iterations {value}\n')
    r = smith_process("config", "show")
    assert r.code == 2, r.err
    assert f"error: {path}:{where}: " in r.err and shown in r.err
    assert "internal error" not in r.err


def test_the_largest_integers_still_read(senv: SmithEnv) -> None:
    from smith.config._kdl import read_settings

    text = f"a {2**63 - 1}\nb {-(2**63)}\nc 0x7fff_ffff_ffff_ffff\nd 1e300\n"
    settings, problems = read_settings("c.kdl", text)
    assert not problems
    assert [s.value for s in settings] == [2**63 - 1, -(2**63), 2**63 - 1, 1e300]


def test_positions_never_rescan_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """kdl-py's public way to a position (ParseFragment.error) counts lines from the start
    of the file on every call: quadratic over a file. Positions come from offsets."""
    from kdl.errors import ParseFragment

    from smith.config._kdl import read_settings

    def rescan(self: object, msg: str) -> None:
        raise AssertionError("a position was computed by rescanning the file")

    monkeypatch.setattr(ParseFragment, "error", rescan)
    lines = [f'plugins.p{i} {{ key "v{i}" n={i}; }}' for i in range(3000)]
    text = "// many nodes\n" + "\n".join(lines) + "\n"
    settings, problems = read_settings("big.kdl", text)
    assert not problems and len(settings) == 6000
    last = settings[-1]
    line = lines[-1]
    assert (last.key, last.line, last.key_at) == ("plugins.p2999.key.n", 3001, (3001, 17))
    assert last.column == line.index("n=") + 3
    assert text[last.start : last.end] == "2999"


def test_config_show_cuts_a_huge_value(senv: SmithEnv, smith: Callable[..., Result]) -> None:
    senv.write_user_config(f'model "{"x" * 1_000_000}"\n')
    r = smith("config", "show")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    [model] = [line for line in lines if line.startswith("model ")]
    assert "… (1,000,002 characters)" in model and len(model) < 200
    assert len(r.out) < 200 * len(lines)  # no row padded to the long value's width
    assert smith("config", "get", "model").out == "x" * 1_000_000 + "\n"  # get: whole


def test_a_changed_project_file_lists_a_huge_value_cut(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = _trusted(senv, smith)
    (project / ".smith" / "config.kdl").write_text(f'model "{"y" * 500_000}"\n')
    r = smith("config", "get", "model", cwd=project)
    assert "it changed since you trusted it" in r.err
    assert 'model "trusted-model" -> "yyyy' in r.err and "… (500,002 characters)" in r.err
    assert len(r.err) < 2000
