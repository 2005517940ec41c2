"""Refreshing the catalog from the providers' model-list endpoints (`smith models
--refresh`), and the cache the refreshed lists live in.

How each vendor's list is asked for and read (its URL, authentication headers, paging
and response shape) is its provider plugin's `ProviderSpec.list_models` (a
`smith.sdk.ModelList`); this module is the vendor-neutral rest: which providers to ask,
the requests through the HTTP engine (body limit, page limit, errors without keys), the
cache and publishing the merged catalog.

A refresh is optional and never needed to start: catalogs are built from files only
(bundled data, $SMITH_HOME/catalog-cache.json, configuration). What it fetches goes to
the cache, never to configuration. The rules that keep state coherent:

- A provider's list replaces its cached list only whole, after it was fetched in full;
  a failed, cut-off or cancelled fetch leaves the cached (or bundled) list in place.
- A refresh that started earlier never replaces a list stored by one that started later
  (each list carries its start time; the cache is rewritten under a lock, atomically).
- `CatalogStore.snapshot` is an immutable `Catalog`; publishing swaps it whole. Each
  build takes a generation number when it reads the files, and a build that read older
  state (a lower generation) than the published one is dropped.
- Cancelling the task that awaits `refresh` stops every fetch at its next step.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from smith.providers._catalog import Catalog, Listed, Refreshed, build, overrides_from
from smith.providers._overrides import LEVELS
from smith.text import loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.config import Config
    from smith.providers._http import HttpEngine
    from smith.sdk import ModelList

CACHE_FILE = "catalog-cache.json"
MAX_BODY = 8 * 1024 * 1024  # one page of a model list; real ones are a few hundred KiB
MAX_PAGES = 50


class RefreshFailed(Exception):
    """A model list could not be fetched; the message is safe to show (no key)."""


@dataclass(frozen=True, slots=True)
class Target:
    """One model list to fetch."""

    name: str  # the provider (or endpoint) whose list it is: the cache key
    listing: ModelList  # how its plugin asks for and reads it (ProviderSpec.list_models)
    base_url: str  # the API root the list is under, e.g. http://127.0.0.1:8080/v1
    key: str | None = None  # the credential, if the endpoint needs one

    def __repr__(self) -> str:  # never the key
        return f"Target({self.name!r}, {self.base_url!r})"


@dataclass(frozen=True, slots=True)
class Outcome:
    """How refreshing one target went."""

    name: str
    ok: bool
    models: int = 0
    error: str | None = None
    stale: bool = False  # fetched, but a refresh that started later had stored its list

    def to_dict(self) -> dict[str, object]:
        return {
            "provider": self.name,
            "ok": self.ok,
            "models": self.models,
            "error": self.error,
            "stale": self.stale,
        }


# -- one provider's list -----------------------------------------------------------------


def _limit(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 10**9:
        return None
    return value


async def fetch_models(engine: HttpEngine, target: Target) -> list[Listed]:
    """Every model of `target`'s list, all pages; RefreshFailed when any page fails."""
    from smith._redact import redact_text
    from smith.diagnostics import SmithError

    models: list[Listed] = []
    token: str | None = None
    for _ in range(MAX_PAGES):
        try:
            url, headers = target.listing.page(target.base_url, target.key, token)
            headers = {"accept": "application/json", **headers}
            async with engine.request("GET", url, headers=headers) as r:
                body = await r.read(MAX_BODY)
                status, outcome, error = r.status, r.outcome, r.error
        except SmithError as exc:  # no response: connect, timeout, bad URL
            raise RefreshFailed(exc.diagnostic.what) from None
        if not 200 <= status < 300:
            excerpt = redact_text(body[:300].decode("utf-8", "replace")).strip()
            raise RefreshFailed(f"HTTP {status}" + (f": {excerpt}" if excerpt else ""))
        if outcome != "complete":
            raise RefreshFailed(error or f"the model list was cut off ({outcome})")
        try:
            data = loads(body)
        except ValueError as exc:
            raise RefreshFailed(f"the model list is not JSON ({exc})") from None
        try:
            page, token = target.listing.parse(data)
        except ValueError as exc:  # a body of the wrong shape, said by the plugin
            raise RefreshFailed(str(exc) or "the model list has an unknown shape") from None
        models.extend(page)
        if token is None:
            return models
    raise RefreshFailed(f"the model list has more than {MAX_PAGES} pages")


# -- the cache ---------------------------------------------------------------------------


def _cache_path(home: str) -> str:
    return os.path.join(home, CACHE_FILE)


def _encode(snapshot: Refreshed) -> dict[str, object]:
    return {
        "at": snapshot.at,
        "started": snapshot.started,
        "models": [
            {
                "id": m.id,
                "context_window": m.context_window,
                "max_output": m.max_output,
                "thinking": None if m.thinking is None else list(m.thinking),
            }
            for m in snapshot.models
        ],
    }


def _decode(provider: str, raw: object) -> Refreshed | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("models"), list):
        return None
    at, started = raw.get("at"), raw.get("started")
    if not isinstance(at, str) or not isinstance(started, int | float):
        return None
    models = []
    for item in raw["models"]:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        thinking = item.get("thinking")
        levels = tuple(t for t in thinking if t in LEVELS) if isinstance(thinking, list) else None
        models.append(
            Listed(
                item["id"],
                _limit(item.get("context_window")),
                _limit(item.get("max_output")),
                levels,
            )
        )
    return Refreshed(provider, at, float(started), tuple(models))


def load_catalog(
    config: Config | None = None, *, home: str | None = None, generation: int = 0
) -> Catalog:
    """The catalog from files only: bundled data, the refresh cache in `home` (default:
    the configured data directory), and the configuration's overrides."""
    if home is None and config is not None:
        home = config.home
    refreshed = read_cache(home) if home else {}
    return build(refreshed, overrides_from(config), generation=generation)


def read_cache(home: str) -> dict[str, Refreshed]:
    """The cached model lists by provider; {} when there is no usable cache (a damaged
    cache is only a lost optimisation: the bundled catalog still stands)."""
    try:
        with open(_cache_path(home), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    providers = data.get("providers") if isinstance(data, dict) else None
    if not isinstance(providers, dict):
        return {}
    found = {name: _decode(name, raw) for name, raw in providers.items()}
    return {name: snapshot for name, snapshot in found.items() if snapshot is not None}


def store_list(home: str, snapshot: Refreshed) -> bool:
    """Put one provider's list in the cache, unless the cache holds a list from a
    refresh that started later (then False). Locked and atomic."""
    import fcntl

    from smith._atomic import private_dirs, write_atomic

    private_dirs(home, home)  # owner-only, as everything under SMITH_HOME
    with open(os.open(_cache_path(home) + ".lock", os.O_WRONLY | os.O_CREAT, 0o600), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        current = read_cache(home)
        stored = current.get(snapshot.provider)
        if stored is not None and stored.started > snapshot.started:
            return False
        current[snapshot.provider] = snapshot
        data = {"version": 1, "providers": {n: _encode(s) for n, s in sorted(current.items())}}
        write_atomic(_cache_path(home), json.dumps(data, indent=1) + "\n", mode=0o600)
        return True


# -- the published snapshot --------------------------------------------------------------


class CatalogStore:
    """The catalog a process uses: built from files at once (no network), replaced by
    newer snapshots as refreshes finish."""

    def __init__(self, config: Config | None = None, *, home: str | None = None) -> None:
        self._config = config
        self._home = home if home is not None else (config.home if config else None)
        self._lock = threading.Lock()
        self._generation = 0  # of the latest build begun
        self._snapshot = self._build()

    @property
    def snapshot(self) -> Catalog:
        return self._snapshot

    def _build(self) -> Catalog:
        with self._lock:
            self._generation += 1
            generation = self._generation
        return load_catalog(self._config, home=self._home, generation=generation)

    def publish(self, catalog: Catalog) -> bool:
        """Make `catalog` current unless a newer build is already; False if stale."""
        with self._lock:
            if catalog.generation <= self._snapshot.generation:
                return False
            self._snapshot = catalog
            return True

    async def refresh(
        self, engine: HttpEngine, targets: Sequence[Target], *, now: float | None = None
    ) -> list[Outcome]:
        """Fetch every target's list (concurrently), store the complete ones, and
        publish the catalog rebuilt from the cache. Cancellation propagates."""
        if self._home is None:
            raise ValueError("a CatalogStore without a home cannot refresh")
        home = self._home
        started = time.time() if now is None else now
        outcomes = await asyncio.gather(*(self._one(engine, t, home, started) for t in targets))
        self.publish(await asyncio.to_thread(self._build))
        return list(outcomes)

    async def _one(self, engine: HttpEngine, target: Target, home: str, started: float) -> Outcome:
        try:
            models = await fetch_models(engine, target)
        except RefreshFailed as exc:
            return Outcome(target.name, False, error=str(exc))
        at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        snapshot = Refreshed(target.name, at, started, tuple(models))
        stored = await asyncio.to_thread(store_list, home, snapshot)
        return Outcome(target.name, True, len(models), stale=not stored)


def targets_from(config: Config, keys: Mapping[str, str | None]) -> list[Target]:
    """What `smith models --refresh` fetches: each first-party provider with a key
    (`keys`: provider -> key) at its default base URL, and each provider or account
    configured with a base-url (an openai-compatible endpoint, a first-party provider's
    proxy), read as the plugin it is over reads its list. A plugin without a model
    list (`ProviderSpec.list_models`) is not asked."""
    from smith.providers._checks import checked
    from smith.providers._settings import ACCOUNT_PLUGIN
    from smith.sdk import provider_facts, provider_spec

    facts = provider_facts()
    configured: dict[str, str] = {}
    over: dict[str, str] = {}  # account -> the plugin it is over (providers.NAME.plugin)
    for rest, setting in checked(config).subtree("providers").items():
        name, _, setting_name = rest.partition(".")
        if setting_name == "base-url" and isinstance(setting.value, str):
            configured[name] = setting.value
        elif setting_name == "plugin" and isinstance(setting.value, str):
            over[name] = setting.value
    found: list[Target] = []
    offered = {name for name, f in facts.items() if not f.offline}
    for name in sorted(offered | set(configured)):
        plugin = over.get(name) or (name if name in facts else ACCOUNT_PLUGIN)
        own = facts.get(plugin)
        first_party = own is not None and own.first_party
        default = own.default_base_url if own is not None and plugin == name else None
        base = configured.get(name) or (default if first_party else None)
        if base is None:
            continue  # a server you run is asked only where configured
        key = keys.get(name)
        if first_party and not key:
            continue  # first-party lists need a key; nothing to ask without one
        spec = provider_spec(plugin)
        if spec is None or spec.list_models is None:
            continue
        found.append(Target(name, spec.list_models, base, key))
    return found
