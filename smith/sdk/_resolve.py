"""The one plugin list: every plugin smith loads, resolved once from configuration.

    plugins = resolve_plugins(config)       # or resolve_plugins(None): the defaults
    plugins.active                          # what the runtime and the app take, in order
    plugins.providers                       # provider name -> ProviderSpec (enabled only)
    plugins.to_dict()                       # what `smith plugins list --json` prints

Each plugin is found as a manifest (smith.sdk.PluginManifest: data) by a loader
(smith.sdk._loaders: the Python built-ins, the user's and a trusted project's plugin
directories, the plugins a program gives) and loaded by the same loader. A built-in's
manifest is plain data in `smith.plugins.MANIFESTS`, so nothing is imported when smith
merely starts; one that offers providers and nothing else is `deferred`: the list routes
to its providers from the manifest and imports its module when a provider is first used
(as a model, or for its credential hooks). The runtime and the app, which take no
providers, never take them (`active`). What smith needs to know of a built-in provider
before its module is imported (its key variables, wire format, base URL, whether it is
first-party) is its manifest's: `provider_facts()` reads it, and `provider_spec(name)`
imports the one module that offers `name`.
`plugins.disabled` (a list of names) turns built-ins off. A name that is no plugin is a
warning naming the value and where it was set; turning off the queue plugin (the runtime
delivers queued input through its policies) or every provider plugin (no model could
run) is refused with an error, naming the setting, before anything runs.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from smith.diagnostics import Diagnostic, DiagnosticKind, Source, did_you_mean
from smith.sdk._contract import Plugin, ProviderFacts, ProviderSpec
from smith.sdk._loaders import (
    CALLER,
    PACKAGE,
    PACKAGE_SHADOWED,
    Builtins,
    CallerPlugins,
    PluginDirectory,
)
from smith.sdk._manifest import builtin_manifests, manifest_of

if TYPE_CHECKING:
    from smith.config import Config, Setting
    from smith.sdk._loaders import PluginLoader
    from smith.sdk._manifest import PluginManifest

log = logging.getLogger("smith.plugins")

BUILT_IN = "built-in"
REQUIRED = ("queue", "approval")  # the runtime cannot run (or run safely) without these

UNKNOWN_PLUGIN_NAME = DiagnosticKind(
    "config.plugins-unknown",
    what="plugins.disabled names '{name}', which is not a plugin",
    why="plugins.disabled turns plugins off by name, and the plugins are {known}",
    fix="{hint} (or remove it from plugins.disabled, set at {where}); "
    "`smith plugins list` lists the plugins",
    severity="warning",
)
REQUIRED_PLUGIN = DiagnosticKind(
    "config.plugins-required",
    what="the {name} plugin cannot be disabled",
    why="smith cannot run without it: {why_needed}",
    fix="remove {name} from plugins.disabled (set at {where})",
)
NO_PROVIDER_PLUGIN = DiagnosticKind(
    "config.plugins-no-provider",
    what="plugins.disabled turns off every provider plugin ({names})",
    why="a model runs through a provider plugin, so with none smith could run no model, "
    "not even the offline demo",
    fix="keep at least one provider plugin enabled (demo needs no key): edit "
    "plugins.disabled (set at {where})",
)

DUPLICATE_PLUGIN = DiagnosticKind(
    "plugin.duplicate-name",
    what="a plugin named '{name}' is already loaded",
    why="plugins are known by name (plugins.disabled, plugins.NAME settings, conflicts), "
    "so two cannot share one",
    fix="give the plugin another name",
)
UNKNOWN_PLUGIN_SETTINGS = DiagnosticKind(
    "config.plugin-unknown",
    what="plugins.{name} configures '{name}', which is not a plugin",
    why="settings under plugins configure one plugin each, by its name, and the plugins "
    "are {known}",
    fix="{hint} (set at {where}), or remove the block if that plugin is gone; "
    "`smith plugins list` lists the plugins",
    severity="warning",
)
UNKNOWN_PLUGIN_SETTING = DiagnosticKind(
    "config.plugin-setting-unknown",
    what="'{key}' is not a setting of the {plugin} plugin",
    why="the {plugin} plugin declares {declared}",
    fix="{hint} (set at {where}), or remove it",
    severity="warning",
)
PLUGIN_SETTING_SHAPE = DiagnosticKind(
    "config.plugin-setting-shape",
    what="plugins.{name} is given a value, but it takes a block of the {name} plugin's settings",
    why="a plugin's settings are named below it: plugins {{ {name} {{ KEY VALUE; }}; }}",
    fix="write its settings as a block (at {where}); `smith plugins list --json` shows "
    "which it takes",
    severity="warning",
)
BAD_PLUGIN_SETTING = DiagnosticKind(
    "config.plugin-setting",
    what="{key} is {got}, which the {plugin} plugin does not take: expected {expected}",
    why="the {plugin} plugin declares {key} as: {doc}",
    fix="set it to a valid value such as {example} (at {where}), or remove it for the "
    "default ({default})",
)

_WHY_NEEDED = {
    "queue": "the runtime delivers queued steering and follow-up messages through the "
    "queue plugin's policies (queue.steer, queue.follow-up)",
    "approval": "it enforces approval and its approval.deny rules: to ask nothing, set "
    "approval never instead",
}


class LoadedPlugin:
    """One plugin of the list: its manifest, the loader that loads it, where it came
    from and whether it is on. A deferred one (its manifest says it offers providers
    only) is loaded on first use of `plugin`; any other is loaded when listed."""

    __slots__ = ("_plugin", "configured", "disabled_by", "loader", "manifest", "name", "owned",
                 "provides", "source")  # fmt: skip

    def __init__(
        self,
        plugin: Plugin | None = None,
        source: str = BUILT_IN,  # "built-in", "caller", or where a plugin was found
        disabled_by: Source | None = None,  # where plugins.disabled turned it off
        *,
        manifest: PluginManifest | None = None,
        loader: PluginLoader | None = None,
    ) -> None:
        if manifest is None:
            assert plugin is not None
            manifest = manifest_of(plugin, source)
        elif plugin is None and not manifest.deferred:
            assert loader is not None, manifest.name
            plugin = loader.load(manifest)
        if plugin is not None and manifest.contributions is None:  # it says them now
            said = manifest_of(plugin, manifest.source, manifest.entry)
            manifest = replace(said, loader=manifest.loader, sdk=manifest.sdk)
        self._plugin = plugin
        self.loader = loader
        self.manifest = manifest
        self.source = manifest.source
        self.disabled_by = disabled_by
        self.name = manifest.name
        self.provides = tuple(f.name for f in manifest.providers)
        # Its own settings as configured (plugins.NAME.KEY), checked: key -> Setting.
        self.configured: dict[str, Setting] = {}
        # The values of smith's own settings it owns (Plugin.settings), as configured.
        self.owned: dict[str, object] = {}

    @property
    def provider_only(self) -> bool:
        """Its manifest says it contributes providers and nothing else (deferred)."""
        return self.manifest.deferred

    @property
    def plugin(self) -> Plugin:
        if self._plugin is None:
            assert self.loader is not None
            self._plugin = self.loader.load(self.manifest)
        return self._plugin

    def __repr__(self) -> str:
        return f"<LoadedPlugin {self.name} {self.state}>"

    @property
    def version(self) -> str:
        return self.manifest.version

    @property
    def settings(self) -> dict[str, object]:
        """The plugin's own settings: each of its options, configured or its default;
        and smith's settings it owns, as configured."""
        if self.provider_only:
            return {}  # such a plugin declares no options (tests/test_plugins_list.py)
        return {
            **self.owned,
            **{
                o.key: self.configured[o.key].value
                if o.key in self.configured
                else _fresh(o.default)
                for o in self.plugin.options
            },
        }

    def settings_to_dict(self) -> dict[str, dict[str, object]]:
        """Each setting with where it came from (`smith plugins list --json`)."""
        out: dict[str, dict[str, object]] = {}
        secret = {o.key for o in self.plugin.options if o.secret} if not self.provider_only else ()
        for key, value in self.settings.items():
            setting = self.configured.get(key)
            where = str(setting.source) if setting is not None else f"defaults of {self.name}"
            shown = "[secret]" if key in secret and value is not None else value
            out[key] = {"value": shown, "source": where}
        return out

    @property
    def enabled(self) -> bool:
        return self.disabled_by is None

    @property
    def state(self) -> str:
        return "enabled" if self.disabled_by is None else "disabled"

    @property
    def status(self) -> str:
        """Where it is in its lifecycle outside a runtime: ready (it has nothing to
        start), not started (it starts with a runtime) or disabled. A runtime's own list
        (RPC plugins.list) says starting, ready, failed or stopped instead."""
        if self.disabled_by is not None:
            return "disabled"
        return "not started" if "start" in self.manifest.lifecycle else "ready"

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {
            "name": self.name,
            "version": self.version,
            "source": self.source,
            "state": self.state,
            "enabled": self.enabled,
            "status": self.status,
        }
        if self.disabled_by is not None:
            data["disabled_by"] = f"plugins.disabled at {self.disabled_by}"
        known = self.manifest.contributions
        assert known is not None  # a loaded plugin's manifest says them
        data["contributions"] = {kind: list(names) for kind, names in known.items()}
        data["sdk"] = self.manifest.sdk
        if self.manifest.grants:
            data["grants"] = list(self.manifest.grants)
        if settings := self.settings_to_dict():
            data["settings"] = settings
        return data


@dataclass(frozen=True)
class PluginList(Sequence[LoadedPlugin]):
    """The resolved plugins, in load order, with the warnings resolving them gave."""

    loaded: tuple[LoadedPlugin, ...]
    warnings: tuple[Diagnostic, ...] = ()
    _offers: dict[str, LoadedPlugin] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        for item in self.enabled_items():
            for name in item.provides:
                self._offers.setdefault(name, item)

    def __len__(self) -> int:
        return len(self.loaded)

    def __getitem__(self, index: int) -> LoadedPlugin:  # type: ignore[override]
        return self.loaded[index]

    def __iter__(self) -> Iterator[LoadedPlugin]:
        return iter(self.loaded)

    def enabled_items(self) -> tuple[LoadedPlugin, ...]:
        return tuple(p for p in self.loaded if p.enabled)

    @property
    def enabled(self) -> tuple[Plugin, ...]:
        """Every plugin in use, in order (imports the provider plugins)."""
        return tuple(p.plugin for p in self.loaded if p.enabled)

    @property
    def active(self) -> tuple[Plugin, ...]:
        """The enabled plugins that take part in the loop and the app (handlers, tools,
        queue policies, commands, keys, theme), in order: what the runtime and the app
        take. Provider-only plugins reach the registry through `providers` instead."""
        return tuple(p.plugin for p in self.loaded if p.enabled and not p.provider_only)

    @property
    def providers(self) -> Mapping[str, ProviderSpec]:
        """Every provider the enabled plugins offer (the first offer of a name wins); a
        provider's plugin is imported when its spec is first looked up."""
        return _Providers(self._offers)

    def disabled_provider(self, name: str) -> LoadedPlugin | None:
        """The disabled plugin that would offer provider `name`, if one would."""
        for item in self.loaded:
            if not item.enabled and name in item.provides:
                return item
        return None

    def settings_for(self, plugin: Plugin) -> dict[str, object]:
        """`plugin`'s own settings: as configured when it is in this list, else its
        options' defaults (a plugin a caller adds, such as smith.Agent's)."""
        for item in self.loaded:
            if not item.provider_only and item.plugin is plugin:
                return item.settings
        return {o.key: o.default for o in plugin.options}

    def configure(self, plugins: Sequence[Plugin]) -> None:
        """Hand each of `plugins` that takes them (Plugin.configure) its settings, as
        settings_for gives them: a runtime and a tool host do, when built."""
        for plugin in plugins:
            if plugin.configure is not None:
                try:
                    plugin.configure(self.settings_for(plugin))
                except Exception:  # its own bug: its calls fail as they fail
                    log.exception("plugin %s: configure failed", plugin.name)

    def to_dict(self) -> dict[str, object]:
        return {"plugins": [p.to_dict() for p in self.loaded]}


class _Providers(Mapping[str, ProviderSpec]):
    __slots__ = ("_offers",)

    def __init__(self, offers: dict[str, LoadedPlugin]) -> None:
        self._offers = offers

    def __getitem__(self, name: str) -> ProviderSpec:
        return self._offers[name].plugin.providers[name]

    def __contains__(self, name: object) -> bool:
        return name in self._offers

    def __iter__(self) -> Iterator[str]:
        return iter(self._offers)

    def __len__(self) -> int:
        return len(self._offers)


def provider_facts() -> Mapping[str, ProviderFacts]:
    """The facts of every built-in provider (its plugin enabled or not), by name, from
    the built-ins' manifests (smith.plugins.MANIFESTS): no provider module is imported.
    A plugin that is not built in gives its facts through its ProviderSpec
    (`spec.facts(name)`)."""
    return _indexed_facts()


@functools.cache
def _indexed_facts() -> Mapping[str, ProviderFacts]:
    from types import MappingProxyType

    facts = {f.name: f for m in builtin_manifests() for f in m.providers}
    return MappingProxyType(facts)


def provider_spec(name: str) -> ProviderSpec | None:
    """The ProviderSpec of the built-in provider `name` (its plugin enabled or not),
    importing only the module that offers it; None if no built-in offers it."""
    for manifest in builtin_manifests():
        if manifest.facts(name) is not None:
            return Builtins().load(manifest).providers[name]
    for item in _defaults():  # a built-in whose manifest is said by its module
        if not item.provider_only and name in item.provides:
            return item.plugin.providers[name]
    return None


def builtin_plugins() -> tuple[Plugin, ...]:
    """Every built-in plugin, in load order (imports every one)."""
    return _defaults().enabled


def loaders_of(config: Config | None, extra: Sequence[Plugin] = ()) -> list[PluginLoader]:
    """Where the plugins of `config` come from, in load order: the built-ins, the
    installed packages ($SMITH_HOME/plugins) and a trusted project's (.smith/plugins),
    then `extra`, a program's own."""
    from smith.sdk._loaders import plugin_directories, project_loader

    loaders: list[PluginLoader] = [Builtins()]
    if config is not None:
        places = plugin_directories(config.home, config.project_root, config.project_trusted)
        cache = str(config["cache-home"])
        loaders.append(PluginDirectory(places[0], "user", cache, home=config.home))
        loaders += [project_loader(p, config.home, config.project_root, cache) for p in places[1:]]
    if extra:
        loaders.append(CallerPlugins(extra))
    return loaders


def _listed(
    loaders: Sequence[PluginLoader], disabled: Mapping[str, Source], warnings: list[Diagnostic]
) -> tuple[LoadedPlugin, ...]:
    """Each loader's plugins, in order; a name already taken is refused (an installed
    package of a name taken before it is left out, with a warning)."""
    loaded: tuple[LoadedPlugin, ...] = ()
    for loader in loaders:
        for manifest in loader.discover(warnings.append):
            taken = next((p for p in loaded if p.name == manifest.name), None)
            if taken is not None and manifest.loader == PACKAGE:
                warnings.append(PACKAGE_SHADOWED(value=manifest.name, source=Source(
                    "file", manifest.source), name=manifest.name, other=taken.source))  # fmt: skip
                continue
            if taken is not None:
                where = Source("argument", "plugins") if manifest.source == CALLER else Source(
                    "file", manifest.source)  # fmt: skip
                raise DUPLICATE_PLUGIN.error(value=manifest.name, source=where,
                                             name=manifest.name)  # fmt: skip
            off = disabled.get(manifest.name)
            loaded += (LoadedPlugin(None, manifest.source, off, manifest=manifest, loader=loader),)
    return loaded


def resolve_plugins(config: Config | None = None, extra: Sequence[Plugin] = ()) -> PluginList:
    """The plugins of this configuration (None: the defaults), each enabled unless
    `plugins.disabled` names it, then `extra`: plugins a caller adds (smith.Agent's,
    source "caller"), whose settings are checked the same way. Raises SmithError when
    that would disable a plugin smith cannot run without (see the module's docstring)
    or when a plugin's setting is invalid."""
    if config is None and not extra:
        return _defaults()
    names, where = _disabled(config)
    warnings: list[Diagnostic] = []
    loaded = _listed(loaders_of(config, extra), dict.fromkeys(names, where), warnings)
    warnings += _one_owner(loaded)
    if config is None:
        return PluginList(loaded, tuple(warnings))
    known = [p.name for p in loaded]
    for name in names:
        if name not in known:
            warnings.append(
                UNKNOWN_PLUGIN_NAME(
                    field="plugins.disabled",
                    value=name,
                    source=where,
                    name=name,
                    known=", ".join(known),
                    hint=did_you_mean(name, known, otherwise="check the name"),
                    where=str(where),
                )
            )
    for name in REQUIRED:
        if name in names:
            raise REQUIRED_PLUGIN.error(
                field="plugins.disabled",
                value=name,
                source=where,
                name=name,
                why_needed=_WHY_NEEDED[name],
                where=str(where),
            )
    offering = [p.name for p in loaded if p.provides]
    if offering and all(name in names for name in offering):
        raise NO_PROVIDER_PLUGIN.error(
            field="plugins.disabled",
            value=", ".join(offering),
            source=where,
            names=", ".join(offering),
            where=str(where),
        )
    warnings += _check_settings(config, loaded)
    return PluginList(loaded, tuple(warnings))


def _one_owner(loaded: Sequence[LoadedPlugin]) -> list[Diagnostic]:
    """Each command name kept by the first enabled plugin declaring it (smith.sdk._shadow):
    a later one's is left out of its plugin, with a warning."""
    from smith.sdk._shadow import owned_commands

    items = [p for p in loaded if p.enabled and not p.provider_only]
    by_id = {id(p.plugin): p for p in items}

    def where(plugin: Plugin) -> Source:
        source = by_id[id(plugin)].source
        return Source("argument", "plugins") if source in (BUILT_IN, CALLER) else Source(
            "file", source)  # fmt: skip

    kept, warnings = owned_commands([p.plugin for p in items], where)
    for item, plugin in zip(items, kept, strict=True):
        item._plugin = plugin
    return warnings


def _check_settings(config: Config, loaded: Sequence[LoadedPlugin]) -> list[Diagnostic]:
    """Check the plugins' own settings (plugins.NAME.KEY, kept by configuration for
    this) against each plugin's options, filling in `LoadedPlugin.configured`: the
    warnings to say, or raise ConfigError listing every bad value."""
    import os

    from smith.config import Mismatch, Path, Setting
    from smith.diagnostics import ConfigError

    by_name = {p.name: p for p in loaded}
    for each in loaded:
        if not each.provider_only:
            # A smith setting with no default of its own (tui.keys.*) takes the plugin's.
            each.owned = {k: default if config[k] is None else config[k]
                          for k, default in each.plugin.settings.items()
                          if k in config.schema}  # fmt: skip
    warnings: list[Diagnostic] = []
    errors: list[Diagnostic] = []
    told: set[str] = set()
    for rest, setting in config.subtree("plugins").items():
        full = f"plugins.{rest}"
        # The plugin is the longest name that the key starts with (a name may hold dots).
        name = max((n for n in by_name if rest == n or rest.startswith(n + ".")), key=len,
                   default=rest.partition(".")[0])  # fmt: skip
        key = rest[len(name) + 1 :]
        item = by_name.get(name)
        if item is not None and not key:
            warnings.append(
                PLUGIN_SETTING_SHAPE(
                    field=full,
                    value=setting.value,
                    source=setting.source,
                    name=name,
                    where=str(setting.source),
                )
            )
            continue
        if item is not None and not item.enabled:
            continue  # a plugin turned off runs nothing: its settings are not read
        if item is None:
            if name not in told:
                told.add(name)
                warnings.append(
                    UNKNOWN_PLUGIN_SETTINGS(
                        field=full,
                        source=setting.source,
                        name=name,
                        known=", ".join(by_name),
                        hint=did_you_mean(name, list(by_name), otherwise="check the name"),
                        where=str(setting.source),
                    )
                )
            continue
        options = {} if item.provider_only else {o.key: o for o in item.plugin.options}
        option = options.get(key)
        if option is None:
            declared = ", ".join(options) or "no settings"
            warnings.append(
                UNKNOWN_PLUGIN_SETTING(
                    field=full,
                    source=setting.source,
                    key=full,
                    plugin=name,
                    declared=declared,
                    hint=did_you_mean(key, list(options), otherwise="check the name"),
                    where=str(setting.source),
                )
            )
            continue
        value = setting.value
        try:
            from_text = setting.layer == "flag" and isinstance(value, str)
            value = option.parse(value) if from_text else option.check(value)  # type: ignore[arg-type]
        except Mismatch as exc:
            errors.append(
                BAD_PLUGIN_SETTING(
                    field=full,
                    value=value,
                    source=setting.source,
                    secret=option.secret,
                    key=full,
                    got="a secret value" if option.secret else repr(value),
                    plugin=name,
                    expected=exc.expected,
                    doc=option.doc.rstrip("."),
                    example=option.type.example(),
                    where=str(setting.source),
                    default=repr(option.default),
                )
            )
            continue
        if isinstance(option.type, Path) and isinstance(value, str):  # as smith's own paths
            value = option.type.normalize(value, config.project_root, os.path.expanduser("~"))
        item.configured[key] = Setting(full, value, setting.layer, setting.source)
    if errors:
        raise ConfigError(errors + warnings)
    return warnings


def _fresh(default: object) -> object:
    """A default as a handler gets it: its own copy of a list, never the declaration's."""
    return list(default) if isinstance(default, list) else default


@functools.cache
def _defaults() -> PluginList:
    return PluginList(_listed([Builtins()], {}, []))


def _disabled(config: Config | None) -> tuple[list[str], Source]:
    if config is None:
        return [], Source("default", "smith's defaults")
    setting = config.origin("plugins.disabled")
    value = setting.value
    names = [str(v) for v in value] if isinstance(value, list) else []
    return names, setting.source
