"""`smith config set` is the one path that writes configuration, and writes it carefully."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable

import pytest

from smith.config import resolve
from smith.config._edit import set_value
from tests.conftest import Result, SmithEnv


def test_set_creates_the_user_file_and_values_read_back_typed(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    r = smith("config", "set", "tools.bash.timeout", "300")
    assert r.code == 0, r.err
    assert r.out == f"tools.bash.timeout = 300  ({senv.user_config}:1:20)\n"
    assert smith("config", "set", "model", 'say "hi"').code == 0
    assert smith("config", "set", "vcs.enabled", "no").code == 0
    assert smith("config", "set", "model.temperature", "1").code == 0
    assert senv.user_config.read_text() == (
        'tools.bash.timeout 300\nmodel "say \\"hi\\""\nvcs.enabled false\nmodel.temperature 1.0\n'
    )
    config = resolve(env=senv.env, cwd=str(senv.root))
    assert config["tools.bash.timeout"] == 300 and config["model"] == 'say "hi"'
    assert config["vcs.enabled"] is False and config["model.temperature"] == 1.0


def test_set_replaces_in_place_and_keeps_comments(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    senv.write_user_config(
        '// top comment\nmodel "a" {\n    temperature 0.2 // cool\n}\n/* keep */\n'
    )
    assert smith("config", "set", "model.temperature", "0.9").code == 0
    assert smith("config", "set", "model", "b").code == 0
    assert senv.user_config.read_text() == (
        '// top comment\nmodel "b" {\n    temperature 0.9 // cool\n}\n/* keep */\n'
    )


def test_set_rewrites_the_occurrence_that_wins(senv: SmithEnv) -> None:
    senv.write_user_config('thinking "low"\nthinking "medium"')
    set_value(str(senv.user_config), "thinking", "high")
    assert senv.user_config.read_text() == 'thinking "low"\nthinking "high"'


def test_invalid_values_and_keys_are_refused_without_writing(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    senv.write_user_config("agent.max-iterations 5\n")
    before = senv.user_config.read_bytes()
    bad = smith("config", "set", "agent.max-iterations", "lots")
    assert bad.code == 2 and 'expected an integer between 1 and 10000, got "lots"' in bad.err
    unknown = smith("config", "set", "agent.max-iteration", "5")
    assert unknown.code == 2 and "did you mean 'agent.max-iterations'?" in unknown.err
    boot = smith("config", "set", "home", "/x")
    assert boot.code == 2 and "set it in the environment (SMITH_HOME)" in boot.err
    assert senv.user_config.read_bytes() == before


def test_set_notes_when_a_higher_layer_still_wins(smith: Callable[..., Result]) -> None:
    r = smith("config", "set", "thinking", "high", env={"SMITH_THINKING": "low"})
    assert r.code == 0
    assert (
        "note: env SMITH_THINKING (env) overrides the user file for thinking, so the "
        'value in effect is still "low"' in r.out
    )


def test_set_keeps_file_mode(senv: SmithEnv) -> None:
    path = senv.write_user_config("debug false\n")
    os.chmod(path, 0o600)
    set_value(str(path), "debug", "true")
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_concurrent_sets_lose_nothing(senv: SmithEnv) -> None:
    keys = [
        "agent.max-iterations",
        "tools.bash.timeout",
        "tools.read.max-lines",
        "model.max-tokens",
        "vcs.max-file-size",
    ]
    path = str(senv.user_config)
    threads = [
        threading.Thread(target=set_value, args=(path, k, str(10 + i))) for i, k in enumerate(keys)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    config = resolve(env=senv.env, cwd=str(senv.root))
    assert [config[k] for k in keys] == [10, 11, 12, 13, 14]


def test_round_trip_through_get_json(senv: SmithEnv, smith: Callable[..., Result]) -> None:
    smith("config", "set", "model", "m")
    record = json.loads(smith("config", "get", "model", "--json").out)
    assert record["source"] == {"surface": "file", "location": f"{senv.user_config}:1:7"}


def test_a_list_of_one_value_is_set_and_reads_back(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    """KDL reads one value after the key as that value, not a list of it: `config set
    tools.protected .git` (as the protected-path diagnostic suggests) and `config set
    tools.bash.env OPENAI_API_KEY` failed with an internal error."""
    for key, text, value in (
        ("tools.protected", ".git", [".git"]),
        ("tools.bash.env", "OPENAI_API_KEY", ["OPENAI_API_KEY"]),
        ("tools.ignore", "[a", ["[a"]),
        ("tools.protected", ".git,.smith,secrets", [".git", ".smith", "secrets"]),
    ):
        r = smith("config", "set", key, text)
        assert r.code == 0 and "internal error" not in r.err, r.err
        assert resolve(env=senv.env, cwd=str(senv.root))[key] == value


def test_a_value_that_is_not_utf8_is_replaced_with_a_warning(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    """`smith config set model "$(printf 'x\\xffy')"`: the byte arrives as a lone
    surrogate, which no file can hold; it failed with an internal error."""
    r = smith("config", "set", "model", "x\udcffy")
    assert r.code == 0 and "internal error" not in r.err, r.err
    assert "replaced with U+FFFD" in r.err
    assert resolve(env=senv.env, cwd=str(senv.root))["model"] == "x\ufffdy"


def test_add_value_extends_the_files_own_list_once_and_in_place(senv: SmithEnv) -> None:
    """What the approval overlay's "always" keeps (smith.config.add_value): the item
    joins the list where the file has it, comments and layout kept; an item already
    there writes nothing; a file without the key gets it appended."""
    from smith.config import add_value

    path = senv.write_user_config('model "demo"\napproval.allow "make"  // mine\n')
    value, where = add_value(str(path), "approval.allow", "git status")
    assert value == ["make", "git status"] and where.line == 2
    assert path.read_text() == 'model "demo"\napproval.allow "make" "git status"  // mine\n'
    before = path.stat().st_mtime_ns
    assert add_value(str(path), "approval.allow", "make")[0] == ["make", "git status"]
    assert path.stat().st_mtime_ns == before  # nothing to add: not written
    fresh = senv.root / "fresh" / "config.kdl"
    assert add_value(str(fresh), "tools.protected", ".git")[0] == [".git"]
    assert fresh.read_text() == 'tools.protected ".git"\n'
    with pytest.raises(ValueError, match="no list setting"):
        add_value(str(path), "model", "x")


def test_add_value_waits_a_bounded_time_for_another_writer(senv: SmithEnv) -> None:
    """What "always" approves is kept within a handler's deadline: when another holds the
    configuration directory's lock, add_value(wait=) gives up with an OSError that
    says so, and writes nothing."""
    import fcntl

    from smith.config import add_value

    path = senv.write_user_config('approval.allow "make"\n')
    fd = os.open(str(path.parent), os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another writer (this process: flock is per open)
        with pytest.raises(OSError, match="another process has been changing"):
            add_value(str(path), "approval.allow", "git status", wait=0.1)
    finally:
        os.close(fd)
    assert path.read_text() == 'approval.allow "make"\n'
    assert add_value(str(path), "approval.allow", "git status", wait=0.1)[0] == [
        "make", "git status"]  # fmt: skip


def test_a_plugins_own_setting_is_set_and_read_by_its_declared_type(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    """plugins.NAME.KEY is declared by the plugin (Plugin.options), not smith's schema:
    `config set` checks it by the plugin's type and the plugin reads what it wrote."""
    r = smith("config", "get", "plugins.agents.max-depth", "--json")
    assert r.code == 0, r.err
    got = json.loads(r.out)
    where = got["source"]["location"]
    assert (got["value"], got["layer"], where) == (3, "default", "defaults of agents")
    r = smith("config", "set", "plugins.agents.max-depth", "5")
    assert r.code == 0, r.err
    assert r.out == f"plugins.agents.max-depth = 5  ({senv.user_config}:1:26)\n"
    assert smith("config", "get", "plugins.agents.max-depth").out == "5\n"
    r = smith("plugins", "info", "agents", "--json")
    assert r.code == 0, r.err

    r = smith("config", "set", "plugins.agents.max-depth", "99")
    assert r.code == 2 and "expected an integer between 1 and 16" in r.err
    r = smith("config", "set", "plugins.agents.max-dept", "5")
    assert r.code == 2 and "did you mean 'plugins.agents.max-depth'?" in r.err
    r = smith("config", "set", "plugins.nosuch.x", "1")
    assert r.code == 2 and "unknown setting 'plugins.nosuch.x'" in r.err
    assert senv.user_config.read_text() == "plugins.agents.max-depth 5\n"
    from smith.sdk import resolve_plugins

    config = resolve(env=senv.env, cwd=str(senv.root))
    (agents,) = [p for p in resolve_plugins(config) if p.name == "agents"]
    assert agents.configured["max-depth"].value == 5
