"""A package as data: what `plugin.kdl` (or a Claude Code plugin's
`.claude-plugin/plugin.json`) says, read without running anything.

    package.name, package.version, package.description
    package.root                      # the package's directory
    package.module, package.sdk       # the WebAssembly component and its SDK version ("" if none)
    package.build                     # how `smith plugins build` builds it: "python", "c" or ""
    package.grants                    # what its code may do (Grants)
    package.events                    # the events and hooks its on-event is called for
    package.commands, package.tools, package.queue_policies, package.options
    package.keybindings, package.themes
    package.prompts                   # {"system.NAME" | "tool.NAME": text}: system-prompt parts
    package.layouts                   # {name: regions top to bottom} (smith.ui.LAYOUT_REGIONS)
    package.secret_routes             # where its secrets' values may go (RouteDecl)
    package.frontend                  # the escape hatches it uses (smith.ui.HATCHES)
    package.kind                      # "smith" (plugin.kdl) or "claude" (.claude-plugin)
    package.notes                     # what was taken and what could not be, said at install

A package without `module` is declarative: its `prompts/`, `skills/`, `agents/`, MCP
servers and hooks beside the manifest need no WebAssembly (docs/plugins.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Grants:
    """What a package's code may do through the host, each a pattern of plugin.kdl's
    `grants` block: `path` (a file or directory the host may read, relative to the
    project root unless absolute or `~/`), `command` (a program `run` may start, by
    its name: "git", "rg"), `host` (an HTTP host `http` may reach, "api.github.com" or
    "*.example.com"), `secret` (a secret `secret` may refer to, by name)."""

    paths: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.paths or self.commands or self.hosts or self.secrets)

    def lines(self) -> list[str]:
        """Each grant as the line `install` shows before it asks."""
        return [
            *(f"read files under {p}" for p in self.paths),
            *(f"run the command {c} (in smith's sandbox)" for c in self.commands),
            *(f"reach {h} over HTTP" for h in self.hosts),
            *(f"use the secret {s}" for s in self.secrets),
        ]


@dataclass(frozen=True, slots=True)
class CommandDecl:
    """A `/name` command the package's module answers (`command "name" description=...`)."""

    name: str
    description: str = ""
    usage: str = ""


@dataclass(frozen=True, slots=True)
class ToolDecl:
    """A tool the package's module runs (`tool "name" description=... effect=...` with a
    `parameters` JSON schema): `effect` is smith.effects' class ("reads", "writes",
    "runs", "network", "unknown"), which approval reviews it by. Its presentation (how
    frontends show its calls, smith.effects.Presentation): `shown_by`, the argument a
    call is shown by ("" for all of them), and `result`, how a result is shown
    ("change": its details' path and diff, "command": its exit status, or "plain")."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    effect: str = "unknown"
    shown_by: str = ""
    result: str = "plain"


@dataclass(frozen=True, slots=True)
class RouteDecl:
    """A `secret-route "NAME" { host ...; command ...; plaintext true }` of plugin.kdl:
    where the secret NAME's value may go (smith.sdk.SecretRoute, which it becomes)."""

    secret: str
    hosts: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    plaintext: bool = False

    def lines(self) -> list[str]:
        """What it allows, as `install` shows it before it asks."""
        return [
            *(f"send the secret {self.secret} to {h} over HTTP" for h in self.hosts),
            *(f"give the secret {self.secret} to the command {c}" for c in self.commands),
            *([f"give plugins granted {self.secret} its value"] if self.plaintext else []),
        ]


@dataclass(frozen=True, slots=True)
class OptionDecl:
    """One of the package's settings, `plugins.NAME.KEY` in config.kdl: its type
    ("string", "integer", "number", "boolean", "list"), default and description."""

    key: str
    type: str
    default: object = None
    description: str = ""


@dataclass(frozen=True, slots=True)
class PackageManifest:
    """A package as plugin.kdl describes it (see the module's docstring)."""

    name: str
    version: str
    root: str
    description: str = ""
    kind: str = "smith"  # "smith" (plugin.kdl) or "claude" (.claude-plugin/plugin.json)
    module: str = ""  # the component, relative to root ("" for a declarative package)
    sdk: str = ""  # the SDK version the module was built for (smith.sdk.SDK_VERSION)
    build: str = ""  # "python", "c" or "" (nothing to build)
    grants: Grants = field(default_factory=Grants)
    events: tuple[str, ...] = ()
    commands: tuple[CommandDecl, ...] = ()
    tools: tuple[ToolDecl, ...] = ()
    queue_policies: tuple[str, ...] = ()
    options: tuple[OptionDecl, ...] = ()
    keybindings: Mapping[str, str] = field(default_factory=dict)  # key -> command or action
    themes: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # name -> colours
    # "system.NAME": a part of the system prompt; "tool.NAME": guidance for tool NAME.
    prompts: Mapping[str, str] = field(default_factory=dict)
    layouts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    secret_routes: tuple[RouteDecl, ...] = ()
    frontend: tuple[str, ...] = ()  # the escape hatches it declares (smith.ui.HATCHES)
    notes: tuple[str, ...] = ()  # what was taken and what could not be (Claude Code)

    @property
    def has_code(self) -> bool:
        return bool(self.module)

    def asks(self) -> list[str]:
        """What the package asks to be allowed, one line each, as `install` shows it
        before it asks: its grants, where its secret routes let secrets go, and the
        frontend escape hatches it uses."""
        from smith.ui import HATCHES

        routes = [line for route in self.secret_routes for line in route.lines()]
        hatches = [f"use the escape hatch {h}: {HATCHES.get(h, h)}" for h in self.frontend]
        return [*self.grants.lines(), *routes, *hatches]


__all__ = ["CommandDecl", "Grants", "OptionDecl", "PackageManifest", "RouteDecl", "ToolDecl"]
