"""Parsed configuration is cached so that most commands never import kdl; a cache entry
applies only to the exact text it was parsed from."""

from __future__ import annotations

import subprocess
import sys

import pytest

from smith.config import resolve
from smith.diagnostics import ConfigError
from tests.conftest import SmithEnv

PROBE = """
import sys
from smith.config import resolve
config = resolve()
print(config["tools.bash.timeout"], config.origin("tools.bash.timeout").source)
print("kdl" in sys.modules)
"""


def _probe(senv: SmithEnv) -> list[str]:
    r = subprocess.run(
        [sys.executable, "-c", PROBE],
        env=senv.env,
        cwd=senv.root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def test_second_read_of_an_unchanged_file_does_not_import_kdl(senv: SmithEnv) -> None:
    path = senv.write_user_config("// c\ntools.bash.timeout 300\n")
    assert _probe(senv) == [f"300 {path}:2:20", "True"]
    assert _probe(senv) == [f"300 {path}:2:20", "False"]


def test_an_edited_file_is_parsed_again(senv: SmithEnv) -> None:
    senv.write_user_config("tools.bash.timeout 300\n")
    resolve(env=senv.env, cwd=str(senv.root))
    path = senv.write_user_config("tools.bash.timeout 301\n")  # same size, same second
    config = resolve(env=senv.env, cwd=str(senv.root))
    assert config["tools.bash.timeout"] == 301
    assert str(config.origin("tools.bash.timeout").source) == f"{path}:1:20"


def test_a_broken_cache_is_ignored(senv: SmithEnv) -> None:
    senv.write_user_config("tools.bash.timeout 300\n")
    resolve(env=senv.env, cwd=str(senv.root))
    [entry] = (senv.data_home / "cache").iterdir()
    entry.write_bytes(b"\x00garbage")
    assert resolve(env=senv.env, cwd=str(senv.root))["tools.bash.timeout"] == 300


def test_files_with_problems_are_not_cached(senv: SmithEnv) -> None:
    senv.write_user_config("tools.bash.timeout\n")  # a node with no value
    with pytest.raises(ConfigError):
        resolve(env=senv.env, cwd=str(senv.root))
    assert not (senv.data_home / "cache").exists()
