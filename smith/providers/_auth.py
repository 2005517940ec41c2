"""Credentials: which key a provider uses, where it came from, and smith's auth file.

Sources, first found wins:

    1. configuration   providers.NAME.api-key-env names the variable holding the key
                       (an unset variable is an error, not a fall-through: it would
                       silently use another account's key)
    2. environment     the variables its plugin declares (ProviderSpec.credential_env,
                       known before the plugin loads: smith.sdk.provider_facts)
    3. auth file       $SMITH_HOME/auth.json, written by `smith auth login`
    4. plugin          the provider plugin's `find_credential(provider, env)`, if it has one

The auth file is owner-only (0600), replaced atomically, and every read-modify-write holds
an exclusive lock on auth.json.lock, so concurrent logins for different providers never
lose one another's. A record is {"type": "api-key", "key": ...} or, for a renewable
credential, {"type": "oauth", "access": ..., "refresh": ..., "expires": EPOCH_SECONDS}.
An expired renewable credential is renewed by the plugin's
`async refresh_credential(record) -> record` before use, and written back under the lock
unless another process renewed it first.

A `Credential` never shows its value: not in repr, str, diagnostics or logs. Every
credential value smith reads (a key, an access token, a refresh token, a renewed one) is
registered the moment it is read: with smith.diagnostics, and in this process's list of
provider credentials, which each runtime's secret proxy watches (`watch_credentials`) so
that the value is redacted from every tool output, record and request.
`read_credentials` reads every credential configuration knows of at once, so that even a
key no request uses (another provider's, one in the auth file) cannot reach the model.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import weakref
from collections.abc import Callable, Mapping

from smith.diagnostics import DiagnosticKind, Source, register_secret

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.config import Config
    from smith.sdk import ProviderFacts

AUTH_FILE = "auth.json"
Record = dict[str, object]

AUTH_UNREADABLE = DiagnosticKind(
    "auth.unreadable",
    what="the auth file cannot be read: {reason}",
    why="it holds the keys stored by `smith auth login`, and smith will not guess at them",
    fix="repair the file, or delete it and run `smith auth login PROVIDER` again",
)
AUTH_PERMISSIONS = DiagnosticKind(
    "auth.permissions",
    what="the auth file can be read by other users (mode {mode})",
    why="it holds API keys, so only its owner may read it; others may have seen the keys",
    fix="run `chmod 600 {path}`, and consider replacing the keys it holds",
)
AUTH_ENV_UNSET = DiagnosticKind(
    "auth.env-unset",
    what="{provider}'s key should come from {name}, which is not set",
    why="the configuration names that variable, so smith will not fall back to another key "
    "that may belong to another account",
    fix="set {name}, or remove the api-key-env setting to use {fallback}",
)
AUTH_MISSING = DiagnosticKind(
    "auth.missing",
    what="no credential for {provider}",
    why="{provider} needs an API key, and none was found in {looked}",
    fix="set {env}, or run `smith auth login {provider}` to store one",
)
AUTH_EXPIRED = DiagnosticKind(
    "auth.expired",
    what="the stored credential for {provider} expired at {when}",
    why="an expired credential is renewed before use, but {reason}",
    fix="run `smith auth login {provider}` again",
)


# -- every credential read in this process ------------------------------------------------

Watcher = Callable[[str, str, str], object]  # (secret name, value, source)
_read: dict[str, tuple[str, str]] = {}  # value -> (secret name, source), in reading order
_watchers: list[weakref.WeakMethod[Watcher]] = []
_read_lock = threading.Lock()


def secret_name(text: str) -> str:
    """A placeholder name (letters, digits, underscores) for a credential: the variable
    that held it, or e.g. SMITH_AUTH_OPENAI_COMPATIBLE_KEY for the auth file's."""
    return re.sub(r"[^A-Za-z0-9_]", "_", text).upper()


def note_credential(name: str, value: str, source: str) -> None:
    """Register a credential value smith has read: never shown by a diagnostic, and
    redacted by every secret proxy that watches credentials (now and later)."""
    if not isinstance(value, str) or len(value) < 4:
        return
    register_secret(value)
    with _read_lock:
        if value in _read:
            return
        _read[value] = (name, source)
        watchers = [w() for w in _watchers]
    for watcher in watchers:
        if watcher is not None:
            watcher(name, value, source)


def watch_credentials(watcher: Watcher) -> None:
    """Call `watcher(name, value, source)` (a bound method, held weakly) for every
    credential read so far and for each one read from now on."""
    with _read_lock:
        _watchers[:] = [w for w in _watchers if w() is not None]
        _watchers.append(weakref.WeakMethod(watcher))
        known = [(name, value, source) for value, (name, source) in _read.items()]
    for name, value, source in known:
        watcher(name, value, source)


def forget_credentials() -> None:
    """Forget every credential read so far (for tests, which share one process)."""
    with _read_lock:
        _read.clear()
        _watchers.clear()


class Credential:
    """A provider's key or token: the value, and where it came from (shown instead)."""

    __slots__ = ("expires", "kind", "provider", "source", "value")

    def __init__(
        self,
        provider: str,
        value: str,
        source: str,
        *,
        kind: str = "api-key",
        expires: float | None = None,
        name: str | None = None,
    ) -> None:
        self.provider = provider
        self.value = value
        self.source = source  # "env ANTHROPIC_API_KEY", "auth file /x/auth.json", ...
        self.kind = kind  # "api-key" or "oauth"
        self.expires = expires  # epoch seconds, for renewable credentials
        # The placeholder name it is redacted as: {{secret:NAME}}.
        note_credential(name or secret_name(f"{provider}_credential"), value, source)

    def __repr__(self) -> str:
        return f"Credential({self.provider!r}, source={self.source!r}, kind={self.kind!r})"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Credential) and (
            self.provider,
            self.value,
            self.source,
            self.kind,
            self.expires,
        ) == (other.provider, other.value, other.source, other.kind, other.expires)

    __hash__ = None  # type: ignore[assignment]

    @property
    def hint(self) -> str:
        return mask(self.value)

    def expired(self, now: float | None = None) -> bool:
        return self.expires is not None and self.expires <= (time.time() if now is None else now)


_PREFIX = re.compile(r"(sk-ant-|sk-proj-|sk-|AIza|[A-Za-z]{2,6}[-_])")


def mask(value: str) -> str:
    """At most a key's well-known prefix and last four characters: `sk-…cdef`; nothing of
    a short one."""
    if len(value) < 16:
        return "…"
    prefix = _PREFIX.match(value)
    return f"{prefix.group(1) if prefix else ''}…{value[-4:]}"


def _expires(value: object) -> float | None:
    """Epoch seconds (milliseconds, as some tools write them, are converted)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value / 1000 if value > 1e11 else float(value)


# -- the auth file -----------------------------------------------------------------------


class AuthFile:
    """$SMITH_HOME/auth.json: provider name -> record."""

    def __init__(self, home: str) -> None:
        self.path = os.path.join(home, AUTH_FILE)

    def read(self) -> dict[str, Record]:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise AUTH_UNREADABLE.error(
                source=Source("file", self.path), reason=exc.strerror or str(exc)
            ) from exc
        with os.fdopen(fd, encoding="utf-8") as f:
            mode = os.fstat(f.fileno()).st_mode & 0o777
            if mode & 0o077:
                raise AUTH_PERMISSIONS.error(
                    source=Source("file", self.path), mode=f"{mode:o}", path=self.path
                )
            try:
                data = json.load(f)
            except (ValueError, UnicodeDecodeError) as exc:
                raise AUTH_UNREADABLE.error(
                    source=Source("file", self.path), reason=f"it is not JSON ({exc})"
                ) from exc
        providers = data.get("providers") if isinstance(data, dict) else None
        if not isinstance(providers, dict):
            raise AUTH_UNREADABLE.error(
                source=Source("file", self.path), reason='it has no "providers" object'
            )
        return {str(k): v for k, v in providers.items() if isinstance(v, dict)}

    def get(self, provider: str) -> Record | None:
        return self.read().get(provider)

    def update(self, change: Callable[[dict[str, Record]], bool]) -> bool:
        """Read, let `change` edit the records in place (returning whether it changed
        anything), and write them back: all under the lock, so that concurrent updates
        to different providers all survive."""
        import fcntl

        from smith._atomic import private_dirs, write_atomic

        home = os.path.dirname(self.path)
        private_dirs(home, home)  # owner-only, as everything under SMITH_HOME
        fd = os.open(self.path + ".lock", os.O_WRONLY | os.O_CREAT, 0o600)
        with os.fdopen(fd, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            records = self.read()
            if not change(records):
                return False
            text = json.dumps({"version": 1, "providers": records}, indent=2, sort_keys=True)
            write_atomic(self.path, text + "\n", mode=0o600)
            return True

    def store(self, provider: str, record: Record) -> None:
        def put(records: dict[str, Record]) -> bool:
            records[provider] = record
            return True

        self.update(put)

    def remove(self, provider: str) -> bool:
        return self.update(lambda records: records.pop(provider, None) is not None)


# -- resolving ---------------------------------------------------------------------------


def declared_env(provider: str, facts: ProviderFacts | None = None) -> tuple[str, ...]:
    """The environment variables that hold `provider`'s key: those its plugin declares.
    `facts` are those of the plugin `provider` is over (default: the built-in provider
    of that name, if there is one). An account over a plugin under another name
    (`providers { work { plugin "anthropic"; }; }`) has none: its key is only the one
    configured for it (api-key-env, or the auth file's record of its name), never the
    plugin's own provider's, which would go to the account's server."""
    if facts is None:
        from smith.sdk import provider_facts

        facts = provider_facts().get(provider)
    if facts is None or facts.name != provider:
        return ()
    return facts.credential_env


def configured_env(config: Config | None, provider: str) -> tuple[str, Source] | None:
    """The variable `providers.<provider>.api-key-env` names, and where it was set."""
    if config is None:
        return None
    setting = config.subtree("providers").get(f"{provider}.api-key-env")
    return None if setting is None else (str(setting.value), setting.source)


def _from_record(provider: str, record: Mapping[str, object], where: str) -> Credential | None:
    def name(field: str) -> str:
        return secret_name(f"smith_auth_{provider}_{field}")

    if record.get("type", "api-key") == "oauth":
        refresh = record.get("refresh")
        if isinstance(refresh, str):
            note_credential(name("refresh"), refresh, where)  # never sent, never shown
        access = record.get("access")
        if not isinstance(access, str) or not access:
            return None
        expires = _expires(record.get("expires"))
        return Credential(
            provider, access, where, kind="oauth", expires=expires, name=name("access")
        )
    key = record.get("key")
    if not isinstance(key, str) or not key:
        return None
    return Credential(provider, key, where, name=name("key"))


def find_credential(
    provider: str,
    *,
    env: Mapping[str, str],
    home: str,
    config: Config | None = None,
    plugin: object = None,
    facts: ProviderFacts | None = None,
) -> Credential | None:
    """The first credential the sources hold for `provider`, as it is: an expired
    renewable one is returned expired (see `resolve_credential`). No network.
    `plugin`: the credential hooks of the plugin it is over (ProviderSpec.hooks);
    `facts`: that plugin's facts (see `declared_env`)."""
    named = configured_env(config, provider)
    if named is not None:
        name, where = named
        if env.get(name):
            return Credential(provider, env[name], f"env {name} (named at {where})", name=name)
        fallback = " or ".join(declared_env(provider, facts)) or "the auth file"
        raise AUTH_ENV_UNSET.error(
            field=f"providers.{provider}.api-key-env",
            source=where,
            provider=provider,
            name=name,
            fallback=fallback,
        )
    for name in declared_env(provider, facts):
        if env.get(name):
            return Credential(provider, env[name], f"env {name}", name=name)
    store = AuthFile(home)
    record = store.get(provider)
    if record is not None:
        found = _from_record(provider, record, f"auth file {store.path}")
        if found is not None:
            return found
    hook = getattr(plugin, "find_credential", None)
    if callable(hook):
        value = hook(provider, env)
        if isinstance(value, str) and value:
            return Credential(provider, value, f"plugin {provider}")
    return None


def credential_variables(config: Config | None) -> set[str]:
    """Every environment variable that holds a key smith uses: those every built-in
    provider declares (its plugin enabled or not, read without importing it), those
    named by providers.NAME.api-key-env, and an MCP server's bearer token
    (mcp.server.NAME.token-env). Commands the model runs never see them
    (ToolContext.withhold), and their values are redacted."""
    from smith.sdk import provider_facts

    names = {name for facts in provider_facts().values() for name in facts.credential_env}
    if config is not None:
        from smith.providers._checks import checked

        for key, setting in checked(config).subtree("providers").items():
            if key.endswith(".api-key-env") and isinstance(setting.value, str):
                names.add(setting.value)
        for key, setting in config.subtree("mcp").items():
            if key.endswith(".token-env") and isinstance(setting.value, str):
                names.add(setting.value)
    return names


_CREDENTIAL_HEADER = re.compile(r"authorization|key|token|secret|cookie", re.I)


def read_credentials(env: Mapping[str, str], home: str, config: Config | None) -> None:
    """Read (and so register) every credential this configuration knows of: the
    variables of `credential_variables` that are set, configured headers that carry one
    (providers.NAME.headers.authorization, ...) and every auth file record. A file that
    cannot be read is left to the request that needs it to report."""
    from smith.diagnostics import SmithError

    for name in sorted(credential_variables(config)):
        value = env.get(name)
        if value:
            note_credential(name, value, f"env {name}")
    if config is not None:
        for key, setting in config.subtree("providers").items():
            provider, _, rest = key.partition(".")
            header = rest.removeprefix("headers.")
            if header != rest and _CREDENTIAL_HEADER.search(header):
                name = secret_name(f"{provider}_header_{header}")
                parts = str(setting.value).split()  # "Bearer KEY": the key is the secret
                if parts:
                    note_credential(name, parts[-1], f"{setting.source}")
        # An MCP server's headers and environment that carry a key (mcp.server.NAME.
        # headers.authorization, env.GITHUB_TOKEN): never sent to the model or recorded.
        for key, setting in config.subtree("mcp").items():
            head, _, rest = key.partition(".")
            server, _, field = rest.partition(".")
            kind, _, var = field.partition(".")
            if head == "server" and kind in ("headers", "env") and _CREDENTIAL_HEADER.search(var):
                parts = str(setting.value).split()
                if parts:
                    name = secret_name(f"mcp_{server}_{var}")
                    note_credential(name, parts[-1], f"{setting.source}")
    store = AuthFile(home)
    try:
        records = store.read()
    except SmithError:
        return
    for provider, record in sorted(records.items()):
        _from_record(provider, record, f"auth file {store.path}")


def require_credential(
    provider: str,
    *,
    env: Mapping[str, str],
    home: str,
    config: Config | None = None,
    plugin: object = None,
    facts: ProviderFacts | None = None,
) -> Credential:
    """`find_credential`, or the diagnostic saying how to provide one."""
    found = find_credential(provider, env=env, home=home, config=config, plugin=plugin, facts=facts)
    if found is not None:
        return found
    names = declared_env(provider, facts)
    looked = ", ".join([*names, "the auth file"])
    raise AUTH_MISSING.error(
        source=Source("argument", provider),
        provider=provider,
        looked=looked,
        env=" or ".join(names) or f"providers.{provider}.api-key-env",
    )


async def resolve_credential(
    provider: str,
    *,
    env: Mapping[str, str],
    home: str,
    config: Config | None = None,
    plugin: object = None,
    facts: ProviderFacts | None = None,
    now: float | None = None,
) -> Credential | None:
    """`find_credential`, with an expired renewable credential renewed first through
    the plugin's `refresh_credential` and written back to the auth file."""
    import asyncio

    found = find_credential(provider, env=env, home=home, config=config, plugin=plugin, facts=facts)
    if found is None or not found.expired(now):
        return found
    store = AuthFile(home)
    record = store.get(provider)
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(found.expires or 0))
    refresh = getattr(plugin, "refresh_credential", None)
    if record is None or not callable(refresh):
        raise AUTH_EXPIRED.error(
            source=Source("file", store.path),
            provider=provider,
            when=when,
            reason=f"the {provider} provider has no way to renew it",
        )
    try:
        renewed = await refresh(dict(record))
    except Exception as exc:
        # Another process may have renewed it meanwhile (and so spent the refresh token).
        current = await asyncio.to_thread(store.get, provider)
        again = _from_record(provider, current or {}, found.source)
        if current != record and again is not None and not again.expired(now):
            return again
        from smith._redact import redact_text

        raise AUTH_EXPIRED.error(
            source=Source("file", store.path),
            provider=provider,
            when=when,
            reason=f"renewing it failed: {redact_text(str(exc) or type(exc).__name__)}",
        ) from None
    fresh = _from_record(provider, renewed, found.source) if isinstance(renewed, dict) else None
    if fresh is None:
        raise AUTH_EXPIRED.error(
            source=Source("file", store.path),
            provider=provider,
            when=when,
            reason="its renewal gave no usable credential",
        )
    kept: list[Record] = []

    def write_back(records: dict[str, Record]) -> bool:
        if records.get(provider) != record:  # renewed elsewhere first: keep theirs
            kept.append(records.get(provider) or {})
            return False
        records[provider] = dict(renewed)
        return True

    await asyncio.to_thread(store.update, write_back)
    if kept:
        theirs = _from_record(provider, kept[0], found.source)
        if theirs is not None and not theirs.expired(now):
            return theirs
    return fresh
