"""The one plugin list: every plugin smith loads, resolved once from configuration.

    plugins = resolve_plugins(config)       # or resolve_plugins(None): the defaults
    plugins.enabled                         # the Plugins every mode uses, in order
    plugins.providers                       # provider name -> ProviderSpec (enabled only)
    plugins.to_dict()                       # what `smith plugins list --json` prints

The built-ins are the modules `smith.plugins.BUILTIN` names, each exporting `PLUGIN`;
they are imported here, on first resolution, and never when smith merely starts.
`plugins.disabled` (a list of names) turns built-ins off. A name that is no plugin is a
warning naming the value and where it was set; turning off the queue plugin (the runtime
delivers queued input through its policies) or every provider plugin (no model could
run) is refused with an error, naming the setting, before anything runs.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from smith.diagnostics import Diagnostic, DiagnosticKind, Source, did_you_mean
from smith.sdk._contract import Plugin, ProviderSpec

if TYPE_CHECKING:
    from smith.config import Config

BUILT_IN = "built-in"
REQUIRED = ("queue",)  # the runtime cannot run without these

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

_WHY_NEEDED = {
    "queue": "the runtime delivers queued steering and follow-up messages through the "
    "queue plugin's policies (queue.steer, queue.follow-up)",
}


@dataclass(frozen=True)
class LoadedPlugin:
    """One plugin of the list: the plugin, where it came from and whether it is on."""

    plugin: Plugin
    source: str = BUILT_IN  # "built-in", or the path of a user plugin
    disabled_by: Source | None = None  # where plugins.disabled turned it off

    @property
    def name(self) -> str:
        return self.plugin.name

    @property
    def version(self) -> str:
        return self.plugin.version

    @property
    def enabled(self) -> bool:
        return self.disabled_by is None

    @property
    def state(self) -> str:
        return "enabled" if self.disabled_by is None else "disabled"

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {
            "name": self.name,
            "version": self.version,
            "source": self.source,
            "state": self.state,
        }
        if self.disabled_by is not None:
            data["disabled_by"] = f"plugins.disabled at {self.disabled_by}"
        data["contributions"] = self.plugin.contributions()
        return data


@dataclass(frozen=True)
class PluginList(Sequence[LoadedPlugin]):
    """The resolved plugins, in load order, with the warnings resolving them gave."""

    loaded: tuple[LoadedPlugin, ...]
    warnings: tuple[Diagnostic, ...] = ()
    _providers: dict[str, ProviderSpec] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        for item in self.enabled_items():
            for name, spec in item.plugin.providers.items():
                self._providers.setdefault(name, spec)

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
        """The plugins in use, in order: what the runtime and the frontends take."""
        return tuple(p.plugin for p in self.loaded if p.enabled)

    @property
    def providers(self) -> Mapping[str, ProviderSpec]:
        """Every provider the enabled plugins offer (the first offer of a name wins)."""
        return self._providers

    def disabled_provider(self, name: str) -> LoadedPlugin | None:
        """The disabled plugin that would offer provider `name`, if one would."""
        for item in self.loaded:
            if not item.enabled and name in item.plugin.providers:
                return item
        return None

    def to_dict(self) -> dict[str, object]:
        return {"plugins": [p.to_dict() for p in self.loaded]}


@functools.cache
def builtin_plugins() -> tuple[Plugin, ...]:
    """Every built-in plugin, in load order (imported on the first call)."""
    import importlib

    names: Sequence[str] = importlib.import_module("smith.plugins").BUILTIN
    return tuple(importlib.import_module(name).PLUGIN for name in names)


def resolve_plugins(config: Config | None = None) -> PluginList:
    """The plugins of this configuration (None: the defaults), each enabled unless
    `plugins.disabled` names it. Raises SmithError when that would disable a plugin
    smith cannot run without (see the module's docstring)."""
    if config is None:
        return _defaults()
    plugins = builtin_plugins()
    names, where = _disabled(config)
    known = [p.name for p in plugins]
    warnings = []
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
    offering = [p.name for p in plugins if p.providers]
    if offering and all(name in names for name in offering):
        raise NO_PROVIDER_PLUGIN.error(
            field="plugins.disabled",
            value=", ".join(offering),
            source=where,
            names=", ".join(offering),
            where=str(where),
        )
    loaded = tuple(LoadedPlugin(p, BUILT_IN, where if p.name in names else None) for p in plugins)
    return PluginList(loaded, tuple(warnings))


@functools.cache
def _defaults() -> PluginList:
    return PluginList(tuple(LoadedPlugin(p) for p in builtin_plugins()))


def _disabled(config: Config | None) -> tuple[list[str], Source]:
    if config is None:
        return [], Source("default", "smith's defaults")
    setting = config.origin("plugins.disabled")
    value = setting.value
    names = [str(v) for v in value] if isinstance(value, list) else []
    return names, setting.source
