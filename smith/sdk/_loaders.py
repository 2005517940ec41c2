"""Plugin loaders: where plugins are found (as manifests) and how each is loaded.

    class PluginLoader(Protocol):
        kind: str                                  # the manifests it loads (their `loader`)
        def discover(self, warn) -> Sequence[PluginManifest]   # runs no plugin code
        def load(self, manifest) -> Plugin                     # the live plugin

The plugin list (smith.sdk.resolve_plugins) asks its loaders in order: the Python
built-ins (`Builtins`: smith.plugins' modules, their manifests plain data), the installed
packages ($SMITH_HOME/plugins, where `smith plugins install` copies them) and a trusted
project's `.smith/plugins` (`PluginDirectory`: smith.packages reads each plugin.kdl, and
a package with a module is loaded through smith.wasm), then the plugins a program gives
as objects (`CallerPlugins`: smith.Agent's `plugins=`). A package that does not read, or
a directory that cannot be read, is a diagnostic naming it, never a crash.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from smith.diagnostics import DiagnosticKind, Source
from smith.sdk._manifest import PYTHON, SDK_VERSION, PluginManifest, builtin_manifests, manifest_of

if TYPE_CHECKING:
    from smith.diagnostics import Diagnostic
    from smith.sdk._contract import Plugin

    Warn = Callable[[Diagnostic], None]

CALLER = "caller"  # given by the program that runs smith (smith.Agent's plugins=)
PACKAGE = "package"  # an installed package (smith.packages), found by PluginDirectory

PLUGIN_DIR_UNREADABLE = DiagnosticKind(
    "plugin.directory-unreadable",
    what="the {which} plugin directory cannot be read: {reason}",
    why="smith looks for the {which} plugins there at every start",
    fix="make {path} a directory smith can read (or remove it); smith runs without its "
    "plugins meanwhile",
    severity="warning",
)
PLUGIN_NOT_PACKAGES = DiagnosticKind(
    "plugin.not-packages",
    what="the {which} plugin directory holds {names}, which smith does not load: no "
    "plugin.kdl in them",
    why="each folder there is a package smith installed (`smith plugins install`), with "
    "its plugin.kdl",
    fix="install packages with `smith plugins install SOURCE`; remove the others from {path}",
    severity="warning",
)
PLUGIN_PACKAGE_BROKEN = DiagnosticKind(
    "plugin.package-broken",
    what="the {which} package {name} is not loaded: {problem}",
    why="smith loads an installed package only as its plugin.kdl describes it",
    fix="install it again (`smith plugins update {name}`) or correct it, or remove it "
    "(`smith plugins remove {name}`, or delete {path})",
    severity="warning",
)
PLUGIN_PACKAGE_UNAPPROVED = DiagnosticKind(
    "plugin.package-unapproved",
    what="the project package {name} is not loaded: it was added or changed since you "
    "trusted the project",
    why="a trusted project's package is loaded only as `smith trust` approved it (its whole "
    "folder, {path}), since its code and parts run with what it asks for",
    fix="review {path}, then run `smith trust {project}` to approve it as it is now",
    severity="warning",
)
PACKAGE_SHADOWED = DiagnosticKind(
    "plugin.package-shadowed",
    what="the package {name} is not loaded: a plugin of that name is loaded already ({other})",
    why="plugins are known by name, so two cannot share one; the built-ins come first, "
    "then the installed packages, then a trusted project's",
    fix="remove one of them, or rename the package in its plugin.kdl",
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
    """A directory packages are installed in (`which`: "user", smith's data directory's
    `plugins/`, or "project", a trusted project's `.smith/plugins/`): each folder in it
    holding a plugin.kdl (or a Claude Code plugin's .claude-plugin/plugin.json) is a
    package (smith.packages), discovered by reading its manifest (no plugin code runs)
    and loaded as a Plugin with its prompt templates and, when it has a module, the
    WebAssembly plugin smith.wasm makes of it. A package that does not read is a
    warning naming it and is skipped; an unreadable directory is a warning too."""

    kind = PACKAGE

    def __init__(
        self, path: str, which: str, cache_home: str = "",
        approved: Callable[[str], bool] | None = None, project: str = "",
        home: str | None = None,
    ) -> None:  # fmt: skip
        self.path = path
        self.which = which
        self.cache_home = cache_home  # smith's cache directory (compiled modules)
        self.home = home  # smith's data directory (the secret vouching for them)
        # A project's packages: whether a package's folder is as `smith trust` approved
        # it (smith.trust.approved_package); None for the user's (approved by install).
        self.approved = approved
        self.project = project

    def discover(self, warn: Warn) -> Sequence[PluginManifest]:
        from smith.diagnostics import SmithError
        from smith.packages import manifest_path, read_package

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
        found: list[PluginManifest] = []
        strays: list[str] = []
        for name in names:
            root = os.path.join(self.path, name)
            if name.startswith(".") or not os.path.isdir(root):
                continue  # installed.json, the store's staging folders
            if manifest_path(root) is None:
                strays.append(name)
                continue
            if self.approved is not None and not self.approved(root):
                warn(PLUGIN_PACKAGE_UNAPPROVED(value=name, source=Source("file", root), name=name,
                                               path=root, project=self.project))  # fmt: skip
                continue
            try:
                package = read_package(root)
            except SmithError as exc:
                problems = getattr(exc, "diagnostics", [exc.diagnostic])
                first = problems[0]  # its source is said once, before the line
                problem = f"{first.field}: {first.what}" if first.field else first.what
                warn(PLUGIN_PACKAGE_BROKEN(value=name, source=first.source or source,
                                           name=name, problem=problem,
                                           which=self.which, path=root))  # fmt: skip
                continue
            broken = _module_problem(root, package.module)
            if broken is not None:
                warn(PLUGIN_PACKAGE_BROKEN(value=name, source=Source("file", broken[0]),
                                           name=name, problem=broken[1], which=self.which,
                                           path=root))  # fmt: skip
                continue
            found.append(PluginManifest(name=package.name, version=package.version, source=root,
                                        sdk=package.sdk or SDK_VERSION, loader=PACKAGE, entry=root,
                                        grants=tuple(package.asks()),
                                        options=tuple(o.key for o in package.options)))  # fmt: skip
        if strays:
            shown = ", ".join(strays[:5]) + (f" (+{len(strays) - 5})" if len(strays) > 5 else "")
            warn(PLUGIN_NOT_PACKAGES(value=self.path, source=source, path=self.path,
                                     names=shown, which=self.which))  # fmt: skip
        return tuple(found)

    def load(self, manifest: PluginManifest) -> Plugin:
        import dataclasses

        from smith.packages import package_keybindings, package_templates, read_package
        from smith.sdk._contract import Plugin, SecretRoute

        if self.approved is not None and not self.approved(manifest.entry):  # changed since
            name = os.path.basename(manifest.entry)
            raise PLUGIN_PACKAGE_UNAPPROVED.error(value=name, source=Source("file", manifest.entry),
                                                  name=name, path=manifest.entry,
                                                  project=self.project)  # fmt: skip
        package = read_package(manifest.entry)
        templates = package_templates(package)
        keys, _ = package_keybindings(package)  # {command: key}; smith's own keys refused
        routes = tuple(SecretRoute(r.secret, r.hosts, r.commands, r.plaintext)
                       for r in package.secret_routes)  # fmt: skip
        plugin = Plugin(package.name, version=package.version, templates=templates,
                        grants=tuple(package.asks()), keybindings=keys)  # fmt: skip
        if package.has_code:
            # By name, as the built-ins are loaded: smith.wasm builds on smith.sdk.
            wasm = importlib.import_module("smith.wasm")
            made: Plugin = wasm.wasm_plugin(package, cache_home=self.cache_home,
                                            home=self.home)  # fmt: skip
            plugin = dataclasses.replace(made, templates={**templates, **made.templates},
                                         keybindings={**made.keybindings, **keys})  # fmt: skip
        # What the manifest declares, whether or not the package has code.
        return dataclasses.replace(
            plugin,
            prompts=dict(package.prompts),
            secret_routes=routes,
            layouts=dict(package.layouts),
            frontend=package.frontend,
        )


def _module_problem(root: str, module: str) -> tuple[str, str] | None:
    """(its path, what is wrong) when a package's module is missing or no WebAssembly;
    None when it has none or it looks like one (the host says what else is wrong)."""
    if not module:
        return None
    path = os.path.join(root, module)
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except FileNotFoundError:
        return path, f"its module {module} is not there (`smith plugins update` installs it again)"
    except OSError as exc:
        return path, f"its module {module} cannot be read ({exc.strerror or exc})"
    if head != b"\0asm":
        return (
            path,
            f"its module {module} is no WebAssembly (`smith plugins update` installs it again)",
        )
    return None


def plugin_directories(home: str, project_root: str, trusted: bool) -> list[str]:
    """Where installed packages are looked for: smith's data directory's (`home`, where
    `smith plugins install` copies them), then a trusted project's: its configuration
    applied (`trusted`, Config.project_trusted), or on the trust list when it has no
    configuration file (smith.trust.looked_into). Each package there is then loaded only
    as `smith trust` approved it (`project_loader`)."""
    from smith import trust

    found = [os.path.join(home, "plugins")]
    if trust.looked_into(home, project_root, applied=trusted):
        found.append(os.path.join(project_root, ".smith", "plugins"))
    return found


def project_loader(path: str, home: str, project_root: str, cache_home: str) -> PluginDirectory:
    """The loader of a trusted project's packages (`path`, its .smith/plugins): each
    loaded only while its folder is as `smith trust` approved it, else a warning saying so."""
    from smith import trust

    def approved(root: str) -> bool:
        return trust.approved_package(home, project_root, root)

    return PluginDirectory(path, "project", cache_home, approved=approved, project=project_root,
                           home=home)  # fmt: skip


__all__ = [
    "CALLER",
    "PACKAGE",
    "PACKAGE_SHADOWED",
    "PLUGIN_DIR_UNREADABLE",
    "PLUGIN_NOT_PACKAGES",
    "PLUGIN_PACKAGE_BROKEN",
    "PLUGIN_PACKAGE_UNAPPROVED",
    "Builtins",
    "CallerPlugins",
    "PluginDirectory",
    "PluginLoader",
    "plugin_directories",
    "project_loader",
]
