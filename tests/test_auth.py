"""Credentials: sources and their order, the auth file (permissions, atomic writes, a lock
that keeps concurrent changes), renewable credentials, `smith auth`, and that no value
ever shows."""

from __future__ import annotations

import asyncio
import io
import json
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from smith.config import resolve
from smith.diagnostics import SmithError
from smith.providers._auth import (
    AuthFile,
    Credential,
    find_credential,
    mask,
    require_credential,
    resolve_credential,
)
from tests.conftest import Result, SmithEnv

KEY = "sk-ant-api03-" + "Q" * 40 + "cdef"
OTHER = "sk-proj-" + "Z" * 40 + "9876"


def _home(senv: SmithEnv) -> str:
    return str(senv.data_home)


def _find(senv: SmithEnv, provider: str, env: dict[str, str] | None = None, **kw: object):  # type: ignore[no-untyped-def]
    return find_credential(provider, env=env or {}, home=_home(senv), **kw)  # type: ignore[arg-type]


# -- sources and their order -------------------------------------------------------------


def test_the_declared_variable_is_found(senv: SmithEnv) -> None:
    found = _find(senv, "anthropic", {"ANTHROPIC_API_KEY": KEY})
    assert found is not None and found.value == KEY and found.source == "env ANTHROPIC_API_KEY"
    assert _find(senv, "anthropic", {"OPENAI_API_KEY": KEY}) is None


def test_google_takes_gemini_api_key_before_google_api_key(senv: SmithEnv) -> None:
    both = {"GEMINI_API_KEY": KEY, "GOOGLE_API_KEY": OTHER}
    assert _find(senv, "google", both).source == "env GEMINI_API_KEY"
    assert _find(senv, "google", {"GOOGLE_API_KEY": OTHER}).value == OTHER


def test_an_empty_variable_counts_as_unset(senv: SmithEnv) -> None:
    assert _find(senv, "openai", {"OPENAI_API_KEY": ""}) is None


def test_configuration_names_another_variable_and_wins(senv: SmithEnv) -> None:
    senv.write_user_config('providers { openai-compatible { api-key-env "LOCAL_KEY"; }; }\n')
    config = resolve(env=senv.env, cwd=str(senv.root))
    env = {"OPENAI_API_KEY": OTHER, "LOCAL_KEY": KEY}
    found = _find(senv, "openai-compatible", env, config=config)
    assert found.value == KEY and found.source.startswith("env LOCAL_KEY (named at ")
    # Unset, it is an error naming the variable: no silent fall-back to another account.
    with pytest.raises(SmithError) as caught:
        _find(senv, "openai-compatible", {"OPENAI_API_KEY": OTHER}, config=config)
    d = caught.value.diagnostic
    assert d.code == "auth.env-unset" and "LOCAL_KEY" in d.what
    assert d.source is not None and d.source.location.startswith(str(senv.user_config))
    assert OTHER not in d.render()


def test_the_environment_comes_before_the_auth_file_and_the_file_before_a_plugin(
    senv: SmithEnv,
) -> None:
    plugin = SimpleNamespace(find_credential=lambda provider, env: "plugin-" + "k" * 20)
    assert _find(senv, "openai", plugin=plugin).source == "plugin openai"
    AuthFile(_home(senv)).store("openai", {"type": "api-key", "key": KEY})
    assert _find(senv, "openai", plugin=plugin).value == KEY
    assert _find(senv, "openai", {"OPENAI_API_KEY": OTHER}, plugin=plugin).value == OTHER


def test_a_plugin_owns_its_variable_names(senv: SmithEnv) -> None:
    """The variables are the plugin's fact (ProviderSpec.credential_env), not smith's."""
    from smith.sdk import ProviderFacts

    facts = ProviderFacts("openai", credential_env=("VENDOR_TOKEN",))
    assert _find(senv, "openai", {"OPENAI_API_KEY": KEY}, facts=facts) is None
    assert _find(senv, "openai", {"VENDOR_TOKEN": KEY}, facts=facts).value == KEY
    # An account over the plugin under another name takes none of them.
    assert _find(senv, "work", {"VENDOR_TOKEN": KEY}, facts=facts) is None


def test_a_missing_credential_says_how_to_provide_one(senv: SmithEnv) -> None:
    with pytest.raises(SmithError) as caught:
        require_credential("google", env={}, home=_home(senv))
    d = caught.value.diagnostic
    assert d.code == "auth.missing"
    assert "GEMINI_API_KEY or GOOGLE_API_KEY" in d.fix and "smith auth login google" in d.fix


# -- the auth file -----------------------------------------------------------------------


def test_the_auth_file_is_owner_only_and_replaced_whole(senv: SmithEnv) -> None:
    store = AuthFile(_home(senv))
    store.store("anthropic", {"type": "api-key", "key": KEY})
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    assert json.loads(Path(store.path).read_text())["providers"]["anthropic"]["key"] == KEY
    store.store("openai", {"type": "api-key", "key": OTHER})
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    assert sorted(store.read()) == ["anthropic", "openai"]
    leftovers = [n for n in os.listdir(_home(senv)) if n.endswith(".tmp")]
    assert leftovers == []
    assert store.remove("anthropic") and not store.remove("anthropic")
    assert sorted(store.read()) == ["openai"]


def test_a_readable_auth_file_is_refused(senv: SmithEnv) -> None:
    store = AuthFile(_home(senv))
    store.store("openai", {"type": "api-key", "key": KEY})
    os.chmod(store.path, 0o644)
    with pytest.raises(SmithError) as caught:
        _find(senv, "openai")
    d = caught.value.diagnostic
    assert d.code == "auth.permissions" and f"chmod 600 {store.path}" in d.fix
    assert KEY not in d.render()


def test_a_damaged_auth_file_is_a_diagnostic(senv: SmithEnv) -> None:
    store = AuthFile(_home(senv))
    os.makedirs(_home(senv), exist_ok=True)
    fd = os.open(store.path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b'{"providers": {"openai": {"key": "' + KEY.encode() + b'"')  # cut off
    os.close(fd)
    with pytest.raises(SmithError) as caught:
        _find(senv, "openai")
    assert caught.value.diagnostic.code == "auth.unreadable"
    assert KEY not in caught.value.diagnostic.render()


def test_concurrent_threads_never_lose_one_anothers_changes(senv: SmithEnv) -> None:
    store = AuthFile(_home(senv))
    start = threading.Barrier(8)

    def login(n: int) -> None:
        start.wait()
        for i in range(5):
            AuthFile(_home(senv)).store(f"p{n}-{i}", {"type": "api-key", "key": f"k{n}-{i}"})

    threads = [threading.Thread(target=login, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(store.read()) == 40


_WRITER = """
import sys
from smith.providers._auth import AuthFile
home, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(count):
    AuthFile(home).store(f"{name}-{i}", {"type": "api-key", "key": f"{name}-key-{i}"})
"""


def test_concurrent_processes_never_lose_one_anothers_changes(senv: SmithEnv) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, _home(senv), name, "15"])
        for name in ("alpha", "beta", "gamma")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    records = AuthFile(_home(senv)).read()
    assert len(records) == 45
    assert records["beta-14"] == {"type": "api-key", "key": "beta-key-14"}


# -- renewable credentials ---------------------------------------------------------------


def _oauth(access: str, expires: float, refresh: str = "r1") -> dict[str, object]:
    return {"type": "oauth", "access": access, "refresh": refresh, "expires": expires}


class _Renewer:
    def __init__(self, result: dict[str, object] | Exception) -> None:
        self.result = result
        self.calls: list[dict[str, object]] = []

    async def refresh_credential(self, record: dict[str, object]) -> dict[str, object]:
        self.calls.append(record)
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


def _resolve(senv: SmithEnv, plugin: object) -> Credential | None:
    return asyncio.run(resolve_credential("anthropic", env={}, home=_home(senv), plugin=plugin))


def test_an_expired_renewable_credential_is_renewed_and_written_back(senv: SmithEnv) -> None:
    store = AuthFile(_home(senv))
    store.store("anthropic", _oauth("old-access-token-0000", time.time() - 10))
    store.store("openai", {"type": "api-key", "key": OTHER})
    later = time.time() + 3600
    renewer = _Renewer(_oauth("new-access-token-1111", later, "r2"))
    found = _resolve(senv, renewer)
    assert found is not None and found.value == "new-access-token-1111" and not found.expired()
    assert renewer.calls == [_oauth("old-access-token-0000", renewer.calls[0]["expires"])]  # type: ignore[arg-type]
    stored = store.read()
    assert stored["anthropic"]["access"] == "new-access-token-1111"
    assert stored["anthropic"]["refresh"] == "r2"
    assert stored["openai"]["key"] == OTHER  # the other provider untouched
    assert _resolve(senv, renewer).value == "new-access-token-1111"  # type: ignore[union-attr]
    assert len(renewer.calls) == 1  # fresh now: not renewed again


def test_a_valid_renewable_credential_is_used_as_it_is(senv: SmithEnv) -> None:
    AuthFile(_home(senv)).store("anthropic", _oauth("live-access-token-22", time.time() + 600))
    renewer = _Renewer(RuntimeError("must not be called"))
    assert _resolve(senv, renewer).value == "live-access-token-22"  # type: ignore[union-attr]
    assert renewer.calls == []


def test_expiry_in_milliseconds_is_understood(senv: SmithEnv) -> None:
    AuthFile(_home(senv)).store(
        "anthropic", _oauth("ms-access-token-3333", time.time() * 1000 + 6e5)
    )
    found = _find(senv, "anthropic")
    assert found is not None and found.kind == "oauth" and not found.expired()


def test_a_renewal_elsewhere_wins_over_a_failed_one(senv: SmithEnv) -> None:
    store = AuthFile(_home(senv))
    store.store("anthropic", _oauth("old-access-token-0000", time.time() - 10))

    class Raced(_Renewer):
        async def refresh_credential(self, record: dict[str, object]) -> dict[str, object]:
            # Another process renews first (spending the refresh token), so ours fails.
            store.store("anthropic", _oauth("theirs-access-token-4", time.time() + 600, "r9"))
            raise RuntimeError("invalid_grant: refresh_token=r1 already used")

    assert _resolve(senv, Raced({})).value == "theirs-access-token-4"  # type: ignore[union-attr]


def test_an_expired_credential_that_cannot_be_renewed_is_a_diagnostic(senv: SmithEnv) -> None:
    AuthFile(_home(senv)).store("anthropic", _oauth("old-access-token-0000", time.time() - 10))
    with pytest.raises(SmithError) as caught:
        _resolve(senv, None)
    assert caught.value.diagnostic.code == "auth.expired"
    with pytest.raises(SmithError) as caught:
        _resolve(senv, _Renewer(RuntimeError("refresh_token=r1 is invalid")))
    d = caught.value.diagnostic
    assert d.code == "auth.expired" and "renewing it failed" in d.why
    assert "r1" not in d.why  # the token in the error was masked


# -- nothing shows a value ---------------------------------------------------------------


def test_a_credential_never_shows_its_value() -> None:
    credential = Credential("anthropic", KEY, "env ANTHROPIC_API_KEY")
    for text in (repr(credential), str(credential), f"{credential}", credential.hint):
        assert KEY not in text and "Q" * 8 not in text
    assert credential.hint == "sk-ant-…cdef"
    assert mask("short") == "…" and mask("AIza" + "x" * 35 + "WXYZ") == "AIza…WXYZ"
    # Once read, the value is a registered secret: no diagnostic can carry it.
    from smith.providers._catalog import UNKNOWN_MODEL

    d = UNKNOWN_MODEL(provider="anthropic", model=KEY, known="x", hint="y")
    assert KEY not in d.render()


# -- the command -------------------------------------------------------------------------


def _login(
    smith: Callable[..., Result], monkeypatch: pytest.MonkeyPatch, *args: str, key: str
) -> Result:
    monkeypatch.setattr(sys, "stdin", io.StringIO(key))
    return smith("auth", "login", *args)


def test_login_status_logout(
    senv: SmithEnv, smith: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    r = _login(smith, monkeypatch, "anthropic", key=KEY + "\n")
    assert r.code == 0, r.err
    assert "sk-ant-…cdef" in r.out and KEY not in r.out + r.err
    path = senv.data_home / "auth.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

    r = smith("auth", "status")
    assert r.code == 0 and KEY not in r.out + r.err
    assert f"anthropic          auth file {path}  sk-ant-…cdef" in r.out
    assert "none (set GEMINI_API_KEY or GOOGLE_API_KEY" in r.out

    r = smith("auth", "status", "--json", env={"OPENAI_API_KEY": OTHER})
    rows = {row["provider"]: row for row in json.loads(r.out)["providers"]}
    assert KEY not in r.out and OTHER not in r.out
    assert rows["anthropic"]["available"] and rows["anthropic"]["hint"] == "sk-ant-…cdef"
    assert rows["openai"]["source"] == "env OPENAI_API_KEY"
    assert rows["openai"]["hint"] == "sk-proj-…9876"
    assert rows["google"] == {
        "provider": "google",
        "env": ["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        "available": False,
    }

    r = smith("auth", "logout", "anthropic")
    assert r.code == 0 and "removed" in r.out
    assert "anthropic" not in json.loads(path.read_text())["providers"]
    assert "no stored credential" in smith("auth", "logout", "anthropic").out


def test_login_notes_a_variable_that_stays_in_effect(
    smith: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(KEY))
    r = smith("auth", "login", "openai", env={"OPENAI_API_KEY": OTHER})
    assert r.code == 0
    assert "note: env OPENAI_API_KEY is used before the auth file" in r.out


def test_a_configured_account_can_log_in(
    senv: SmithEnv, smith: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    senv.write_user_config('providers { work { base-url "https://proxy.example/v1"; }; }\n')
    assert _login(smith, monkeypatch, "work", key=KEY).code == 0
    assert "work" in smith("auth", "status").out


@pytest.mark.parametrize(
    ("args", "key", "code", "words"),
    [
        (("antropic",), KEY, "'antropic' is not a provider", "did you mean 'anthropic'?"),
        (("openai",), "\n", "no usable key was given for openai", "the input was empty"),
        (("openai",), "sk one two", "no usable key", "spaces"),
    ],
)
def test_bad_logins_are_usage_errors(
    senv: SmithEnv,
    smith: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    key: str,
    code: str,
    words: str,
) -> None:
    r = _login(smith, monkeypatch, *args, key=key)
    assert r.code == 2 and r.out == ""
    assert code in r.err and words in r.err and "Traceback" not in r.err
    assert not (senv.data_home / "auth.json").exists()


def test_status_reports_a_broken_source_and_goes_on(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    senv.write_user_config('providers { openai { api-key-env "MY_OPENAI"; }; }\n')
    r = smith("auth", "status", env={"ANTHROPIC_API_KEY": KEY})
    assert r.code == 0
    assert "openai             error: openai's key should come from MY_OPENAI" in r.out
    assert "anthropic          env ANTHROPIC_API_KEY  sk-ant-…cdef" in r.out
