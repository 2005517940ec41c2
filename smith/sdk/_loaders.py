"""Plugin loaders: where plugins are found (as manifests) and how each is loaded.

    class PluginLoader(Protocol):
        kind: str                                  # the manifests it loads (their `loader`)
        def discover(self, warn) -> Sequence[PluginManifest]   # runs no plugin code
        def load(self, manifest) -> Plugin                     # the live plugin

The plugin list (smith.sdk.resolve_plugins) asks its loaders in order: the Python
built-ins (`Builtins`: smith.plugins' modules, their manifests plain data), the user's
plugin directory ($SMITH_CONFIG_HOME/plugins) and a trusted project's `.smith/plugins`
(`PluginDirectory`), then the plugins a program gives as objects (`CallerPlugins`:
smith.Agent's `plugins=`). A WebAssembly loader is one more class of this shape, whose
`discover` reads the manifests in a plugin directory. Until plugins can be installed the
directories hold none: what is in one is said to be not installable yet, and a directory
that cannot be read is a diagnostic naming it, never a crash.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from smith.diagnostics import DiagnosticKind, Source
from smith.sdk._manifest import PYTHON, builtin_manifests, manifest_of

if TYPE_CHECKING:
    from smith.diagnostics import Diagnostic
    from smith.sdk._contract import Plugin
    from smith.sdk._manifest import PluginManifest

    Warn = Callable[[Diagnostic], None]

CALLER = "caller"  # given by the program that runs smith (smith.Agent's plugins=)

PLUGIN_DIR_UNREADABLE = DiagnosticKind(
    "plugin.directory-unreadable",
    what="the {which} plugin directory cannot be read: {reason}",
    why="smith looks for the {which} plugins there at every start",
    fix="make {path} a directory smith can read (or remove it); smith runs without its "
    "plugins meanwhile",
    severity="warning",
)
PLUGIN_NOT_INSTALLABLE = DiagnosticKind(
    "plugin.not-installable",
    what="the {which} plugin directory holds {names}, which smith does not load yet",
    why="plugins are installed into this directory by `smith plugins install`, which "
    "arrives with WebAssembly plugins; this version loads only its built-in plugins and "
    "those a program gives",
    fix="remove them from {path} for now, or leave them: they are ignored",
    severity="warning",
)


class PluginLoader(Protocol):
    """Finds plugins and loads them (see the module's docstring)."""

    @property
    def kind(self) -> str:
        """The `loader` of the manifests it discovers and loads."""
        ...

    def discover(self, warn: Warn) -> Sequence[PluginManifest]:
        """The manifests of the plugins it finds, in load order, running no plugin code;
        what is wrong with where it looked goes to `warn`."""
        ...

    def load(self, manifest: PluginManifest) -> Plugin:
        """The live plugin of one of its manifests."""
        ...


class Builtins:
    """smith's own plugins: the modules smith.plugins.BUILTIN names, each exporting
    PLUGIN, with their manifests from smith.plugins.MANIFESTS (plain data)."""

    kind = PYTHON

    def discover(self, warn: Warn) -> Sequence[PluginManifest]:
        return builtin_manifests()

    def load(self, manifest: PluginManifest) -> Plugin:
        plugin: Plugin = importlib.import_module(manifest.entry).PLUGIN
        return plugin


class CallerPlugins:
    """Plugins a program gives as live objects: each manifest is derived from its
    plugin, and loading it is taking the object back."""

    kind = PYTHON

    def __init__(self, plugins: Sequence[Plugin]) -> None:
        self.plugins = tuple(plugins)

    def discover(self, warn: Warn) -> Sequence[PluginManifest]:
        return tuple(manifest_of(p, CALLER, f"caller:{i}") for i, p in enumerate(self.plugins))

    def load(self, manifest: PluginManifest) -> Plugin:
        return self.plugins[int(manifest.entry.removeprefix("caller:"))]


class PluginDirectory:
    """A directory plugins are installed into (`which`: "user" or "project"). Nothing
    can be installed yet, so it discovers none: entries found are said to be not
    installable yet (once per directory), an unreadable directory is a warning."""

    kind = "directory"

    def __init__(self, path: str, which: str) -> None:
        self.path = path
        self.which = which

    def discover(self, warn: Warn) -> Sequence[PluginManifest]:
        source = Source("file", self.path)
        try:
            names = sorted(os.listdir(self.path))
        except FileNotFoundError:
            return ()  # nothing installed: the usual case
        except OSError as exc:  # permission denied, a file where the directory should be
            reason = exc.strerror or type(exc).__name__
            warn(PLUGIN_DIR_UNREADABLE(value=self.path, source=source, path=self.path,
                                       reason=reason, which=self.which))  # fmt: skip
            return ()
        if names:
            shown = ", ".join(names[:5]) + (f" (+{len(names) - 5})" if len(names) > 5 else "")
            warn(PLUGIN_NOT_INSTALLABLE(value=self.path, source=source, path=self.path,
                                        names=shown, which=self.which))  # fmt: skip
        return ()

    def load(self, manifest: PluginManifest) -> Plugin:
        raise LookupError(f"{manifest.name}: plugins in {self.path} cannot be loaded yet")


def plugin_directories(config_home: str, project_root: str, trusted: bool) -> list[str]:
    """Where installed plugins are looked for: the user's, then a trusted project's."""
    found = [os.path.join(config_home, "plugins")]
    if trusted:
        found.append(os.path.join(project_root, ".smith", "plugins"))
    return found


__all__ = [
    "CALLER",
    "PLUGIN_DIR_UNREADABLE",
    "PLUGIN_NOT_INSTALLABLE",
    "Builtins",
    "CallerPlugins",
    "PluginDirectory",
    "PluginLoader",
    "plugin_directories",
]
