"""What a plugin is, as data: its manifest, separate from the live plugin.

    manifest.name, manifest.version, manifest.sdk     # who it is, for which SDK
    manifest.source                                   # "built-in", "caller", or a path
    manifest.loader, manifest.entry                   # which loader loads it, and what
    manifest.contributions                            # kind -> names (None: said when loaded)
    manifest.providers                                # the facts of each provider it offers
    manifest.grants, manifest.options                 # what it asks to be allowed; its settings

A loader (smith.sdk._loaders) finds manifests without running any plugin code and loads
the live plugin (`smith.sdk.Plugin`) from one. The built-ins' manifests are plain data in
`smith.plugins.MANIFESTS`, read without importing a plugin module: a provider's facts are
stated there once, and its module builds its ProviderSpec from them (`provider_facts()`),
so there is no second copy. A manifest whose contributions are known and are providers
only is `deferred`: the list routes to its providers before (and without) loading it.
A plugin given as a live object (smith.Agent's `plugins=`) has the manifest derived from
it (`manifest_of`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from smith.sdk._contract import ProviderFacts

if TYPE_CHECKING:
    from smith.sdk._contract import Plugin

# The version of this contract (smith.sdk) a plugin is written against.
SDK_VERSION = "1"
PYTHON = "python"  # the loader of Python plugins: the built-ins and a caller's


@dataclass(frozen=True, slots=True)
class PluginManifest:
    """A plugin described as data (see the module's docstring)."""

    name: str
    version: str
    source: str = "built-in"  # "built-in", "caller", or where it was found
    sdk: str = SDK_VERSION
    loader: str = PYTHON  # which loader loads it (smith.sdk PluginLoader.kind)
    entry: str = ""  # what that loader loads: a Python module for the built-ins
    # kind -> names, as Plugin.contributions() gives them; None: the plugin says when loaded.
    contributions: Mapping[str, tuple[str, ...]] | None = None
    providers: tuple[ProviderFacts, ...] = ()  # the facts of each provider it offers
    grants: tuple[str, ...] = ()  # what it asks to be allowed (sandboxed plugins)
    options: tuple[str, ...] = ()  # its own settings' keys (plugins.NAME.KEY)
    lifecycle: tuple[str, ...] = field(default=())  # "start", "stop": the hooks it has

    @property
    def deferred(self) -> bool:
        """Known to offer providers and nothing else: routed to before it is loaded."""
        return self.contributions is not None and set(self.contributions) == {"providers"}

    def facts(self, provider: str) -> ProviderFacts | None:
        return next((f for f in self.providers if f.name == provider), None)

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {
            "name": self.name,
            "version": self.version,
            "sdk": self.sdk,
            "source": self.source,
            "loader": self.loader,
        }
        if self.grants:
            data["grants"] = list(self.grants)
        if self.lifecycle:
            data["lifecycle"] = list(self.lifecycle)
        return data


def manifest_of(plugin: Plugin, source: str, entry: str = "") -> PluginManifest:
    """The manifest of a live plugin: what it declares, as data."""
    return PluginManifest(
        name=plugin.name,
        version=plugin.version,
        source=source,
        entry=entry,
        contributions={k: tuple(v) for k, v in plugin.contributions().items()},
        providers=tuple(spec.facts(name) for name, spec in plugin.providers.items()),
        grants=tuple(plugin.grants),
        options=tuple(o.key for o in plugin.options),
        lifecycle=tuple(h for h in ("start", "stop") if getattr(plugin, h) is not None),
    )


def _smith_version() -> str:
    from smith import __version__

    return __version__


def builtin_manifest(entry: str, data: Mapping[str, Any]) -> PluginManifest:
    """The manifest of built-in module `entry` from its data in smith.plugins.MANIFESTS."""
    contributions = data.get("contributions")
    return PluginManifest(
        name=str(data["name"]),
        version=_smith_version(),  # a built-in's is smith's own
        entry=entry,
        contributions=None
        if contributions is None
        else {k: tuple(v) for k, v in contributions.items()},
        providers=tuple(
            ProviderFacts(name, **facts) for name, facts in data.get("providers", {}).items()
        ),
    )


@functools.cache
def builtin_manifests() -> tuple[PluginManifest, ...]:
    """Every built-in's manifest, in load order, from plain data (no plugin module is
    imported). A module smith.plugins.BUILTIN names with no data there (a test's) is
    described by its name alone, and says the rest when loaded."""
    import importlib

    package = importlib.import_module("smith.plugins")
    table: Mapping[str, Mapping[str, Any]] = package.MANIFESTS
    return tuple(
        builtin_manifest(m, table.get(m, {"name": m.rsplit(".", 1)[-1]})) for m in package.BUILTIN
    )


__all__ = ["SDK_VERSION", "PluginManifest", "builtin_manifests", "manifest_of"]
