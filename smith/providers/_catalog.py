"""The model catalog: every model smith can call, with its limits, capabilities and
prices, and where each of those facts came from.

The sources, weakest first; a stronger one wins fact by fact:

    assumed    conservative defaults for a model nobody described (an openai-compatible
               endpoint's model): text and tools, 32k context, 4k output, no thinking,
               unknown prices
    guessed    a dated or preview id (gemini-2.5-flash-preview-09-2025) takes the facts
               of the bundled model it is a version of; only for ids that a provider's
               model list or the configuration names
    refresh    what a provider's model-list endpoint said (`smith models --refresh`), kept
               in $SMITH_HOME/catalog-cache.json
    bundled    smith/providers/catalog.json, reviewed by hand, shipped with smith
    config     `catalog { "provider/model" { ... } }` in configuration (_overrides.py)

So human configuration and checked-in data are authoritative: a refresh fills what they
leave unknown and adds models they do not list, and where it disagrees with them the
disagreement is listed as a `Conflict` (their value stays). Guessing from a family name
never overrides explicit evidence. Building a catalog only reads files, so it never
blocks an offline start.

    catalog = load_catalog(config)
    info = model_info(catalog, "openai-compatible", "qwen3")   # assumed, see provenance
    info = model_info(catalog, "openai", "gpt-5")              # bundled
    model_info(catalog, "openai", "gtp-5")                     # SmithError: did you mean
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cache

from smith.diagnostics import DiagnosticKind, Source, did_you_mean
from smith.providers._model import APIS, ModelInfo
from smith.providers._overrides import (
    CACHES,
    FIELDS,
    INPUTS,
    LEVELS,
    Override,
    split_key,
)
from smith.providers._stream import Pricing
from smith.sdk import ListedModel as Listed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.config import Config
    from smith.sdk import ProviderFacts

BUNDLED = "bundled catalog"
ASSUMED = "assumed: unknown model on an openai-compatible endpoint"
ASSUMED_DEFAULT = "assumed: a conservative default (no source gives this fact)"
CACHE_FILE = "catalog-cache.json"

# The facts of a model, as provenance names them; pricing.* are the Pricing fields.
FACTS = (
    "api",
    "context_window",
    "max_output",
    "input",
    "tools",
    "thinking",
    "strict_tools",
    "cache",
    "pricing.input",
    "pricing.output",
    "pricing.cache_read",
    "pricing.cache_write",
)
PRICES = ("input", "output", "cache_read", "cache_write")
# What nobody described is assumed to be: enough for a local model to work, never more.
ASSUMPTIONS: dict[str, object] = {
    "context_window": 32_768,
    "max_output": 4_096,
    "input": ("text",),
    "tools": True,
    "thinking": (),
    "strict_tools": False,
    "cache": "none",
    **{f"pricing.{kind}": None for kind in PRICES},
}
# A version of a bundled model: a date, or a preview/experimental/latest tag.
_VERSION_SUFFIX = re.compile(
    r"-(?:\d{8}|\d{4}-\d{2}-\d{2}|latest|(?:preview|exp)(?:-[\d-]+)?|\d{3})"
)

UNKNOWN_MODEL = DiagnosticKind(
    "model.unknown-model",
    what="{provider} has no model '{model}' in smith's catalog",
    why="smith sends a model only what it is known to accept, so it needs the model's "
    "limits and capabilities; {known}",
    fix="{hint}; `smith models` lists the catalog, and a catalog block in config.kdl can "
    'describe a model smith does not know: catalog {{ "{provider}/{model}" {{ '
    "context-window N; max-output N; }}; }} (see docs/providers.md)",
)


@dataclass(frozen=True, slots=True)
class Refreshed:
    """One provider's model list, as one refresh fetched it."""

    provider: str
    at: str  # when it was fetched, ISO 8601 UTC
    started: float  # when the refresh began (epoch seconds): newer starts win
    models: tuple[Listed, ...]

    @property
    def source(self) -> str:
        return f"refresh {self.provider} at {self.at}"


@dataclass(frozen=True, slots=True)
class Conflict:
    """A refreshed fact that disagrees with a stronger source, which was kept."""

    model: str  # provider/id
    fact: str  # one of FACTS
    kept: object
    kept_from: str
    other: object
    other_from: str

    def to_dict(self) -> dict[str, object]:
        return {
            "model": self.model,
            "field": self.fact,
            "value": _jsonable(self.kept),
            "source": self.kept_from,
            "other": _jsonable(self.other),
            "other_source": self.other_from,
        }


def _jsonable(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


# -- the bundled catalog -----------------------------------------------------------------


def parse_entry(raw: Mapping[str, object]) -> tuple[ModelInfo, tuple[str, ...]]:
    """A bundled (or cached) entry as a ModelInfo and its snapshot ids; ValueError says
    what is wrong with it."""

    def need(name: str, kind: type | tuple[type, ...]) -> object:
        value = raw.get(name)
        if not isinstance(value, kind) or isinstance(value, bool) != (kind is bool):
            raise ValueError(f"{name} must be {getattr(kind, '__name__', kind)}: {value!r}")
        return value

    def names(name: str, allowed: tuple[str, ...], *, empty: bool) -> tuple[str, ...]:
        value = raw.get(name)
        if not isinstance(value, list) or (not value and not empty):
            raise ValueError(f"{name} must be a list: {value!r}")
        if any(v not in allowed for v in value):
            raise ValueError(f"{name} must hold names from {allowed}: {value!r}")
        return tuple(value)

    provider, model_id, api = need("provider", str), need("id", str), need("api", str)
    if api not in APIS:
        raise ValueError(f"api must be one of {APIS}: {api!r}")
    context, output = need("context_window", int), need("max_output", int)
    assert isinstance(context, int) and isinstance(output, int)
    if context <= 0 or output <= 0 or output > context:
        raise ValueError(f"limits must be positive, output within context: {context}, {output}")
    cache_kind = need("cache", str)
    if cache_kind not in CACHES:
        raise ValueError(f"cache must be one of {CACHES}: {cache_kind!r}")
    prices = raw.get("pricing")
    pricing = None
    if prices is not None:
        if not isinstance(prices, dict) or set(prices) != set(PRICES):
            raise ValueError(f"pricing must give {PRICES}: {prices!r}")
        for kind in PRICES:
            value = prices[kind]
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float) or value < 0
            ):
                raise ValueError(f"pricing.{kind} must be a non-negative number: {value!r}")
        pricing = Pricing(*(None if prices[k] is None else float(prices[k]) for k in PRICES))
    snapshots = raw.get("snapshots", [])
    if not isinstance(snapshots, list) or not all(isinstance(s, str) for s in snapshots):
        raise ValueError(f"snapshots must be a list of ids: {snapshots!r}")
    info = ModelInfo(
        provider=str(provider),
        id=str(model_id),
        api=str(api),
        context_window=context,
        max_output=output,
        input=names("input", INPUTS, empty=False),
        tools=bool(need("tools", bool)),
        thinking=names("thinking", LEVELS, empty=True),
        strict_tools=bool(need("strict_tools", bool)),
        cache=str(cache_kind),
        pricing=pricing,
        provenance=dict.fromkeys(FACTS, BUNDLED),
    )
    return info, tuple(snapshots)


@cache
def bundled() -> tuple[tuple[ModelInfo, tuple[str, ...]], ...]:
    """The reviewed catalog shipped with smith (package data, read once)."""
    from importlib.resources import files

    data = json.loads(files("smith.providers").joinpath("catalog.json").read_text("utf-8"))
    return tuple(parse_entry(raw) for raw in data["models"])


# -- merging -----------------------------------------------------------------------------


def _facts(info: ModelInfo) -> dict[str, object]:
    facts: dict[str, object] = {
        name: getattr(info, name) for name in FACTS if not name.startswith("pricing.")
    }
    for kind in PRICES:
        facts[f"pricing.{kind}"] = getattr(info.pricing, kind) if info.pricing else None
    return facts


def _build(provider: str, model_id: str, values: Mapping[str, tuple[object, str]]) -> ModelInfo:
    """A ModelInfo from checked facts (the checks made every value's type right)."""
    from typing import Any, cast

    value = cast("dict[str, Any]", {name: fact for name, (fact, _) in values.items()})
    prices = [value[f"pricing.{kind}"] for kind in PRICES]
    return ModelInfo(
        provider=provider,
        id=model_id,
        api=value["api"],
        context_window=value["context_window"],
        max_output=value["max_output"],
        input=tuple(value["input"]),
        tools=value["tools"],
        thinking=tuple(value["thinking"]),
        strict_tools=value["strict_tools"],
        cache=value["cache"],
        pricing=None if all(p is None for p in prices) else Pricing(*prices),
        provenance={name: source for name, (_, source) in values.items()},
    )


def _provider_facts(provider: str) -> ProviderFacts | None:
    """The facts of a built-in provider (its plugin declares them: ProviderSpec)."""
    from smith.sdk import provider_facts

    return provider_facts().get(provider)


def _assumed(provider: str, facts: ProviderFacts | None = None) -> dict[str, tuple[object, str]]:
    """The assumptions about a model nobody described, on `provider` (`facts`: its
    plugin's, default the built-in's): its plugin's wire format, else Chat Completions."""
    facts = facts if facts is not None else _provider_facts(provider)
    label = ASSUMED if facts is None or not facts.first_party else ASSUMED_DEFAULT
    values = {name: (value, label) for name, value in ASSUMPTIONS.items()}
    values["api"] = ((facts.api if facts is not None else None) or "openai-chat", label)
    return values


class Catalog:
    """One coherent, immutable snapshot of the catalog. A refresh never changes a
    catalog: it builds a new one (with a higher `generation`) for its holder to publish."""

    def __init__(
        self,
        entries: Mapping[tuple[str, str], ModelInfo],
        *,
        snapshots: Mapping[tuple[str, str], str] | None = None,
        listed: Mapping[str, frozenset[str]] | None = None,
        conflicts: Iterable[Conflict] = (),
        refreshed: Mapping[str, Refreshed] | None = None,
        generation: int = 0,
    ) -> None:
        self._entries = dict(entries)
        self._snapshots = dict(snapshots or {})  # (provider, dated id) -> catalog id
        # ids a provider's list reported without the facts to describe them
        self.listed = dict(listed or {})
        self.conflicts = tuple(conflicts)
        self.refreshed = dict(refreshed or {})
        self.generation = generation

    def lookup(self, provider: str, model_id: str) -> ModelInfo | None:
        """The entry of `provider/model_id` (a snapshot id gets its model's entry, under
        the id asked for), or None."""
        canonical = self._snapshots.get((provider, model_id), model_id)
        info = self._entries.get((provider, canonical))
        if info is None or canonical == model_id:
            return info
        provenance = {**info.provenance, "id": f"snapshot of {provider}/{canonical}"}
        return replace(info, id=model_id, provenance=provenance)

    def models(self) -> list[ModelInfo]:
        return [self._entries[key] for key in sorted(self._entries)]

    def snapshots_of(self, provider: str, model_id: str) -> list[str]:
        return sorted(s for (p, s), c in self._snapshots.items() if (p, c) == (provider, model_id))

    def ids(self, provider: str, *, snapshots: bool = True) -> list[str]:
        if not snapshots:
            return sorted(i for p, i in self._entries if p == provider)
        return sorted(
            {i for p, i in self._entries if p == provider}
            | {s for p, s in self._snapshots if p == provider}
        )

    def offering(self, model_id: str) -> list[str]:
        """The providers whose catalog has `model_id` (for bare ids in routing)."""
        return sorted(
            {p for p, i in self._entries if i == model_id}
            | {p for p, s in self._snapshots if s == model_id}
        )

    def assumed(
        self,
        provider: str,
        model_id: str,
        *,
        plugin: str | None = None,
        facts: ProviderFacts | None = None,
    ) -> ModelInfo:
        """The conservative entry of a model nobody described, on `provider` (an account
        or endpoint over `plugin`, whose `facts` decide its wire format)."""
        return _build(provider, model_id, _assumed(plugin or provider, facts))


def build(
    refreshed: Mapping[str, Refreshed] | None = None,
    overrides: Mapping[tuple[str, str], list[Override]] | None = None,
    *,
    generation: int = 0,
    entries: Iterable[tuple[ModelInfo, tuple[str, ...]]] | None = None,
) -> Catalog:
    """Merge bundled entries, refreshed lists and configured overrides into a Catalog."""
    refreshed = dict(refreshed or {})
    overrides = overrides or {}
    base: dict[tuple[str, str], dict[str, tuple[object, str]]] = {}
    snapshots: dict[tuple[str, str], str] = {}
    for info, dated in bundled() if entries is None else entries:
        base[(info.provider, info.id)] = {
            name: (value, BUNDLED) for name, value in _facts(info).items()
        }
        snapshots.update({(info.provider, s): info.id for s in dated})
    reviewed = set(base)
    listed: dict[str, set[str]] = {}
    # what each refresh said, to list where a stronger source disagrees in the end
    said_by: dict[tuple[str, str], dict[str, tuple[object, str]]] = {}

    def canonical(provider: str, model_id: str) -> tuple[str, str]:
        return provider, snapshots.get((provider, model_id), model_id)

    def unknown(key: tuple[str, str]) -> dict[str, tuple[object, str]]:
        """The starting facts of a model no bundled entry describes: its family's if it
        is a version of one, else the assumptions."""
        provider, model_id = key
        family = [
            k
            for k in reviewed
            if k[0] == provider
            and model_id.startswith(k[1])
            and _VERSION_SUFFIX.fullmatch(model_id[len(k[1]) :])
        ]
        if not family:
            return _assumed(provider)
        parent = max(family, key=lambda k: len(k[1]))
        guess = f"guessed from {parent[0]}/{parent[1]} ({BUNDLED})"
        return {name: (value, guess) for name, (value, _) in base[parent].items()}

    for provider, snapshot in sorted(refreshed.items()):
        for item in snapshot.models:
            key = canonical(provider, item.id)
            said = {
                name: value
                for name, value in (
                    ("context_window", item.context_window),
                    ("max_output", item.max_output),
                    ("thinking", item.thinking),
                )
                if value is not None
            }
            if key not in base:
                start = unknown(key)
                described = "context_window" in said and "max_output" in said
                facts = _provider_facts(provider)
                first_party = facts is not None and facts.first_party
                guessed = not start["api"][1].startswith("assumed")
                if first_party and not described and not guessed:
                    listed.setdefault(provider, set()).add(item.id)  # exists, facts unknown
                    continue
                base[key] = start
            said_by[key] = {name: (value, snapshot.source) for name, value in said.items()}
            values = base[key]
            for name, value in said.items():
                if values[name][1] != BUNDLED:  # refresh beats guesses and assumptions
                    values[name] = (value, snapshot.source)

    for (provider, model_id), fields in sorted(overrides.items()):
        key = canonical(provider, model_id)
        if key not in base:
            base[key] = unknown(key)
        values = base[key]
        for override in fields:
            values[override.attribute] = (override.value, override.source)

    conflicts = [
        Conflict("/".join(key), name, *base[key][name], value, source)
        for key, said in sorted(said_by.items())
        for name, (value, source) in said.items()
        if base[key][name][1] != source and base[key][name][0] != value
    ]
    entries_out = {key: _build(key[0], key[1], values) for key, values in base.items()}
    return Catalog(
        entries_out,
        snapshots=snapshots,
        listed={p: frozenset(ids) for p, ids in listed.items()},
        conflicts=conflicts,
        refreshed=refreshed,
        generation=generation,
    )


def overrides_from(config: Config | None) -> dict[tuple[str, str], list[Override]]:
    """Every model's configured fields, by (provider, model id), each value accepted by
    the section's check (applied now if resolving did not)."""
    from smith.providers._checks import checked

    found: dict[tuple[str, str], list[Override]] = {}
    if config is None:
        return found
    checked(config)
    for rest, setting in config.subtree("catalog").items():
        provider, model, field = split_key("catalog." + rest, setting.source)
        attribute = FIELDS[field][0]
        where = (
            f"config {setting.source}" if setting.source.surface == "file" else str(setting.source)
        )
        found.setdefault((provider, model), []).append(Override(attribute, setting.value, where))
    return found


def model_info(
    catalog: Catalog,
    provider: str,
    model_id: str,
    *,
    plugin: str | None = None,
    source: Source | None = None,
    facts: ProviderFacts | None = None,
) -> ModelInfo:
    """The entry a provider uses for `model_id`. `provider` may be an account or endpoint
    configured over the `plugin` (default: itself); the entry is looked up under both.
    An id nobody described is assumed on a provider that is not first-party (an
    openai-compatible endpoint), and a diagnostic on one that is (`facts`: the plugin's,
    default the built-in's of that name)."""
    plugin = plugin or provider
    info = catalog.lookup(provider, model_id) or catalog.lookup(plugin, model_id)
    if info is not None:
        return replace(info, provider=provider) if info.provider != provider else info
    facts = facts if facts is not None else _provider_facts(plugin)
    if facts is None or not facts.first_party:
        return catalog.assumed(provider, model_id, plugin=plugin, facts=facts)
    ids = catalog.ids(plugin)
    if model_id in catalog.listed.get(plugin, ()):
        known = (
            f"{plugin}'s model list names it, but says nothing of its limits, and the "
            "bundled catalog does not describe it"
        )
    else:
        models = ", ".join(catalog.ids(plugin, snapshots=False)) or "(none)"
        known = f"the catalog knows {plugin}'s models {models}"
    raise UNKNOWN_MODEL.error(
        value=model_id,
        source=source or Source("argument", "--model"),
        provider=provider,
        model=model_id,
        known=known,
        hint=did_you_mean(model_id, ids, template=f"'{provider}/{{}}'", otherwise="check the id"),
    )


def describe(info: ModelInfo) -> dict[str, object]:
    """A model's entry as JSON, with the source of every fact (`smith models --json`)."""
    pricing = info.pricing
    return {
        "provider": info.provider,
        "id": info.id,
        "api": info.api,
        "context_window": info.context_window,
        "max_output": info.max_output,
        "input": list(info.input),
        "tools": info.tools,
        "thinking": list(info.thinking),
        "strict_tools": info.strict_tools,
        "cache": info.cache,
        "pricing": None if pricing is None else {kind: getattr(pricing, kind) for kind in PRICES},
        "provenance": dict(info.provenance),
    }


__all__ = [
    "ASSUMED",
    "BUNDLED",
    "Catalog",
    "Conflict",
    "Listed",
    "Refreshed",
    "build",
    "describe",
    "model_info",
    "parse_entry",
]
