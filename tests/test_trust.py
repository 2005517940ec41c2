"""Project configuration applies only to trusted projects."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

import pytest

from smith import trust
from smith.config import resolve
from smith.diagnostics import ConfigError, SmithError
from tests.conftest import Result, SmithEnv


def test_untrusted_project_config_is_ignored_with_a_warning(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = senv.make_project(config='model "from-project"\n')
    r = smith_process("config", "get", "model", cwd=project)
    assert r.code == 0
    assert r.out == "null\n"
    assert f"warning: {project}/.smith/config.kdl: ignoring this project's configuration" in r.err
    assert f"run `smith trust {project}`" in r.err


def test_trust_applies_it_and_revoke_withdraws_it(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = senv.make_project(config='model "from-project"\n')
    sub = project / "src" / "deep"
    sub.mkdir(parents=True)
    r = smith("trust", cwd=sub)  # found by walking up to the project root
    assert r.code == 0 and r.out.startswith(f"trusted: {project}\n")
    got = smith("config", "get", "model", "--json", cwd=sub)
    record = json.loads(got.out)
    assert record["value"] == "from-project" and record["layer"] == "project"
    assert got.err == ""
    assert smith("trust", cwd=sub).out.startswith("already trusted")
    listed = json.loads(smith("trust", "--list", "--json").out)
    assert list(listed["projects"]) == [str(project)]
    assert smith("trust", "--revoke", str(project)).out == f"no longer trusted: {project}\n"
    assert smith("config", "get", "model", cwd=sub).out == "null\n"


def test_errors_in_an_untrusted_project_are_not_even_read(senv: SmithEnv) -> None:
    project = senv.make_project(config="this is { not kdl\n")
    config = resolve(env=senv.env, cwd=str(project))
    assert [w.code for w in config.warnings] == ["config.untrusted-project"]
    trust.trust(str(senv.data_home), str(project))
    with pytest.raises(ConfigError):
        resolve(env=senv.env, cwd=str(project))


def test_concurrent_trusts_keep_every_entry(senv: SmithEnv) -> None:
    projects = [senv.make_project(f"p{i}") for i in range(16)]
    threads = [
        threading.Thread(target=trust.trust, args=(str(senv.data_home), str(p))) for p in projects
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(trust.trusted_projects(str(senv.data_home))) == sorted(map(str, projects))


def test_a_corrupt_trust_list_is_a_diagnostic(senv: SmithEnv, smith: Callable[..., Result]) -> None:
    senv.data_home.mkdir(parents=True)
    (senv.data_home / "trust.json").write_text("{nope")
    with pytest.raises(SmithError) as info:
        trust.trusted_projects(str(senv.data_home))
    assert info.value.diagnostic.code == "trust.unreadable"
    r = smith("trust", "--list")
    assert r.code == 1 and "the trust list cannot be read" in r.err


def test_trusting_a_file_is_refused(senv: SmithEnv, smith: Callable[..., Result]) -> None:
    f = senv.root / "file.txt"
    f.write_text("x")
    r = smith("trust", str(f))
    assert r.code == 1 and "it is not a directory" in r.err
