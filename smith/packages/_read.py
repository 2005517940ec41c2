"""Reading a package's manifest: `plugin.kdl` into a PackageManifest, without running
anything; a Claude Code plugin (`.claude-plugin/plugin.json`, no plugin.kdl) through
smith.packages._claude.

    package = read_package(root, warn)      # SmithError (ConfigError: every problem) if bad

Every bad value is an error naming plugin.kdl's path and line and the key
(`error: /p/plugin.kdl:3:9: version: ...`); a key smith does not read is a warning
(`warn`), so a package written for a later smith still installs. Only `name` and
`version` are required. The format is docs/plugins.md's "plugin.kdl".
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping

from smith.diagnostics import ConfigError, Diagnostic, DiagnosticKind, Source
from smith.packages._contribs import ContributionParts, inside
from smith.packages._manifest import (
    CommandDecl,
    Grants,
    OptionDecl,
    PackageManifest,
    RouteDecl,
    ToolDecl,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.config import KdlNode

    Warn = Callable[[Diagnostic], None]

MANIFEST = "plugin.kdl"
CLAUDE_MANIFEST = os.path.join(".claude-plugin", "plugin.json")
# The events a package's module may ask for: smith.sdk's SAFE_POINTS and HOOKS (held
# equal by tests/test_packages.py; smith.sdk is not imported here: it loads packages).
EVENTS = ("session_start", "agent_start", "turn_start", "turn_end", "agent_end",
          "compaction_start", "compaction_end", "session_end",
          "input", "tool_call", "tool_result")  # fmt: skip
EFFECTS = ("reads", "writes", "runs", "network", "unknown")
RESULTS = ("change", "command", "plain")  # how a tool's result is shown (smith.effects)
OPTION_TYPES = ("string", "integer", "number", "boolean", "list")
BUILDS = ("python", "c", "zig")
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")  # a package's, command's or option's name
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # what every provider takes as a tool name
SCALARS = ("name", "version", "description", "module", "sdk", "build")
# Keys read by the declarative parts (smith.packages._declarative), not here.
ELSEWHERE = ("mcp", "hooks")
MAX_SCHEMA = 256 * 1024  # bytes: a tool's parameters schema file

PACKAGE_VALUE = DiagnosticKind(
    "package.bad-value",
    what="plugin.kdl's {key} {problem}",
    why="plugin.kdl's {key} takes {expected}",
    fix="correct it in {path} (docs/plugins.md, section plugin.kdl, describes each key)",
)
PACKAGE_MISSING = DiagnosticKind(
    "package.missing-key",
    what="plugin.kdl has no {key}",
    why='every package says its name and version (`name "hello"`, `version "0.1.0"`); '
    "the rest is optional",
    fix='add a line `{key} "..."` to {path}',
)
PACKAGE_UNKNOWN_KEY = DiagnosticKind(
    "package.unknown-key",
    what="'{key}' is not something smith reads in plugin.kdl; it is ignored",
    why="plugin.kdl's keys are {known}",
    fix="{hint}, or remove it from {path} (a package written for a later smith may use "
    "keys this one does not know)",
    severity="warning",
)
PACKAGE_NO_MANIFEST = DiagnosticKind(
    "package.no-manifest",
    what="{root} is not a package: it has no plugin.kdl (nor .claude-plugin/plugin.json)",
    why="a package is a directory whose plugin.kdl says at least its name and version",
    fix='add a plugin.kdl with `name "NAME"` and `version "0.1.0"` to it, or name the '
    "package's own directory (`smith plugins new NAME` makes one)",
)
PACKAGE_UNREADABLE = DiagnosticKind(
    "package.unreadable",
    what="cannot read {path}: {reason}",
    why="the package's manifest says what it is; smith installs nothing it cannot read",
    fix="make it a readable UTF-8 text file",
)
CLAUDE_NOT_SUPPORTED = DiagnosticKind(
    "package.claude-not-supported",
    what="{root} is a Claude Code plugin, which this smith cannot read yet",
    why="Claude Code plugins are taken in smith's terms by smith.packages._claude, which "
    "this build does not have",
    fix="write a plugin.kdl for it (name and version), or use a newer smith",
)


def valid_name(name: str) -> bool:
    """Whether `name` can name a package (a directory, plugins.disabled, `/name`)."""
    return NAME.fullmatch(name) is not None


def manifest_path(root: str) -> tuple[str, str] | None:
    """("smith", its plugin.kdl) or ("claude", its .claude-plugin/plugin.json), or None."""
    for kind, name in (("smith", MANIFEST), ("claude", CLAUDE_MANIFEST)):
        path = os.path.join(root, name)
        if os.path.isfile(path):
            return kind, path
    return None


def read_package(root: str, warn: Warn | None = None) -> PackageManifest:
    """The package in directory `root` (see the module's docstring)."""
    found = manifest_path(root)
    if found is None:
        raise PACKAGE_NO_MANIFEST.error(value=root, source=Source("file", root), root=root)
    kind, path = found
    if kind == "claude":
        try:
            from smith.packages._claude import read_claude  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            raise CLAUDE_NOT_SUPPORTED.error(source=Source("file", path), root=root) from None
        package: PackageManifest = read_claude(root)
        if not valid_name(package.name):
            raise PACKAGE_VALUE.error(field="name", value=package.name, source=Source("file", path),
                                      key="name", problem=f"is {package.name!r}, not a name",
                                      expected=_EXPECTED["name"], path=path)  # fmt: skip
        return package
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(1024 * 1024)
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise PACKAGE_UNREADABLE.error(
            source=Source("file", path), path=path, reason=reason
        ) from None
    return read_manifest(path, text, root, warn)


def read_manifest(path: str, text: str, root: str, warn: Warn | None = None) -> PackageManifest:
    """The PackageManifest `text` (plugin.kdl at `path`, in package `root`) says."""
    from smith.config import read_nodes

    nodes, problems = read_nodes(path, text)
    if problems:
        raise ConfigError(problems)
    reader = _Manifest(path, root)
    for node in nodes:
        reader.node(node)
    for route, node in zip(reader.routes, reader.routed, strict=True):
        if route.secret not in reader.grants["secret"]:  # a route allows, never grants
            reader.bad(node, "secret-route", f"routes {route.secret!r}, which its grants do not "
                       f'name (add `secret "{route.secret}"` to grants)', route.secret)  # fmt: skip
    for key in ("name", "version"):
        if key not in reader.scalars and not any(e.field == key for e in reader.errors):
            reader.errors.append(PACKAGE_MISSING(field=key, source=Source("file", path),
                                                 key=key, path=path))  # fmt: skip
    if reader.errors:
        raise ConfigError(reader.errors)
    for warning in reader.warnings:
        if warn is not None:
            warn(warning)
    s = reader.scalars
    return PackageManifest(
        name=s["name"],
        version=s["version"],
        root=root,
        description=s.get("description", ""),
        module=s.get("module", ""),
        sdk=s.get("sdk", ""),
        build=s.get("build", ""),
        grants=Grants(*(tuple(reader.grants[k]) for k in ("path", "command", "host", "secret"))),
        events=tuple(dict.fromkeys(reader.events)),
        commands=tuple(reader.commands),
        tools=tuple(reader.tools),
        queue_policies=tuple(reader.policies),
        options=tuple(reader.options),
        keybindings=reader.keys,
        themes=reader.themes,
        prompts=reader.prompts,
        layouts=reader.layouts,
        secret_routes=tuple(reader.routes),
        frontend=tuple(dict.fromkeys(reader.frontend)),
        notes=tuple(w.what for w in reader.warnings),
    )


_EXPECTED = {
    "name": "a name: a letter, then letters, digits, '-' or '_' (64 at most), as `name \"hello\"`",
    "version": 'one string, as `version "0.1.0"`',
    "description": "one string",
    "module": 'the path of the built component inside the package, as `module "plugin.wasm"`',
    "sdk": 'the SDK version the module was built for, as `sdk "1"`',
    "build": f"how `smith plugins build` builds it: one of {', '.join(BUILDS)}",
    "grants": "a block of `path`, `command`, `host` and `secret` lines, each with strings",
    "events": f"event names, among {', '.join(EVENTS)}",
    "command": 'a command name, then description="..." and usage="..."',
    "tool": 'a tool name, then description="...", effect="reads|writes|runs|network|unknown" '
    'and parameters="FILE.json" (a JSON schema object, or the JSON text itself); how '
    'frontends show it: shown-by="ARGUMENT", result="change|command|plain"',
    "queue-policy": "a policy name",
    "option": f'a key, then type="{"|".join(OPTION_TYPES)}", default=... and description="..."',
    "key": 'a key, then command="NAME" (the command or app action it runs)',
    "theme": 'a theme name, then a block of colours: { primary "#1e90ff"; ... }',
    "prompt": 'a name, "system.NAME" (a part of the system prompt) or "tool.NAME" (guidance '
    'for tool NAME), then its text or file="FILE.md" (a file in the package)',
    "layout": "a layout name, then the app's regions top to bottom, among {regions} "
    "(transcript and input in every layout)",
    "secret-route": 'a secret\'s name, then a block: `host "api.example.com"`, `command "gh"`, '
    "`plaintext true` (where its value may go)",
    "frontend": "the escape hatches the package uses, among {hatches}",
}
_PROPERTIES: dict[str, tuple[str, ...]] = {
    "command": ("description", "usage"),
    "tool": ("description", "effect", "parameters", "shown-by", "result"),
    "queue-policy": (),
    "option": ("type", "default", "description"),
    "key": ("command",),
    "theme": (),
}
_KNOWN = (*SCALARS, "grants", "events", "command", "tool", "queue-policy", "option", "key",
          "theme", "prompt", "layout", "secret-route", "frontend", *ELSEWHERE)  # fmt: skip


class _Manifest(ContributionParts):
    """What plugin.kdl's nodes say, and every problem with them, collected."""

    def __init__(self, path: str, root: str) -> None:
        self.path = path
        self.root = root
        self.errors: list[Diagnostic] = []
        self.warnings: list[Diagnostic] = []
        self.scalars: dict[str, str] = {}
        self.grants: dict[str, list[str]] = {"path": [], "command": [], "host": [], "secret": []}
        self.events: list[str] = []
        self.commands: list[CommandDecl] = []
        self.tools: list[ToolDecl] = []
        self.policies: list[str] = []
        self.options: list[OptionDecl] = []
        self.keys: dict[str, str] = {}
        self.themes: dict[str, dict[str, str]] = {}
        self.prompts: dict[str, str] = {}
        self.layouts: dict[str, tuple[str, ...]] = {}
        self.routes: list[RouteDecl] = []
        self.routed: list[KdlNode] = []  # each route's node, to check against the grants
        self.frontend: list[str] = []

    def bad(self, node: KdlNode, key: str, problem: str, value: object = None,
            line: int | None = None, column: int | None = None) -> None:  # fmt: skip
        where = f"{self.path}:{line or node.line}:{column or node.column}"
        from smith.ui import HATCHES, LAYOUT_REGIONS

        expected = _EXPECTED.get(key.split(".", maxsplit=1)[0], "what docs/plugins.md says")
        expected = expected.replace("{regions}", ", ".join(LAYOUT_REGIONS))
        expected = expected.replace("{hatches}", ", ".join(HATCHES))
        self.errors.append(PACKAGE_VALUE(field=key, value=value, source=Source("file", where),
                                         key=key, problem=problem, path=self.path,
                                         expected=expected))  # fmt: skip

    def node(self, node: KdlNode) -> None:
        name = node.name
        if name in SCALARS:
            self.scalar(node)
        elif name == "grants":
            self.grant_block(node)
        elif name == "events":
            for arg in self.strings(node, "events", least=1):
                if arg in EVENTS:
                    self.events.append(arg)
                else:
                    self.bad(node, "events", f"names {arg!r}, which is no event", arg)
        elif name in ("command", "tool", "queue-policy", "option", "key", "theme"):
            self.declaration(node)
        elif name == "prompt":
            self.prompt(node)
        elif name == "layout":
            self.layout(node)
        elif name == "secret-route":
            self.route(node)
        elif name == "frontend":
            self.hatches(node)
        elif name not in ELSEWHERE:
            from smith.diagnostics import did_you_mean

            where = Source("file", f"{self.path}:{node.line}:{node.column}")
            self.warnings.append(PACKAGE_UNKNOWN_KEY(
                field=name, source=where, key=name, known=", ".join(_KNOWN), path=self.path,
                hint=did_you_mean(name, list(_KNOWN), otherwise="check the key")))  # fmt: skip

    def strings(self, node: KdlNode, key: str, least: int = 1, most: int = 1_000) -> list[str]:
        """The node's arguments, which must be `least`..`most` strings; [] if not."""
        args = node.args
        if not least <= len(args) <= most:
            many = "no value" if not args else f"{len(args)} values"
            self.bad(node, key, f"has {many}", [a.value for a in args] or None)
            return []
        for arg in args:
            if not isinstance(arg.value, str):
                self.bad(node, key, f"is {_kind(arg.value)}, not a string", arg.value,
                         arg.line, arg.column)  # fmt: skip
                return []
        return [str(a.value) for a in args]

    def scalar(self, node: KdlNode) -> None:
        key = node.name
        if node.props or node.children:
            self.bad(node, key, "takes one value, not properties or a block")
            return
        if key == "sdk" and len(node.args) == 1 and isinstance(node.args[0].value, int):
            value = str(node.args[0].value)  # `sdk 1` means "1"
        else:
            values = self.strings(node, key, 1, 1)
            if not values:
                return
            value = values[0]
        if key in self.scalars:
            self.bad(node, key, "is given twice", value)
            return
        problem = _check_scalar(key, value, self.root)
        if problem:
            self.bad(node, key, problem, value, node.args[0].line, node.args[0].column)
            return
        self.scalars[key] = value

    def grant_block(self, node: KdlNode) -> None:
        if node.args or node.props:
            self.bad(node, "grants", "takes a block, not values")
        for child in node.children:
            key = f"grants.{child.name}"
            if child.name not in self.grants:
                self.bad(child, key, "is no kind of grant (path, command, host, secret)")
                continue
            for value in self.strings(child, key, least=1):
                if not value.strip() or any(not c.isprintable() for c in value):
                    self.bad(child, key, "is empty or holds control characters", value)
                else:
                    self.grants[child.name].append(value)

    def declaration(self, node: KdlNode) -> None:
        kind = node.name
        values = self.strings(node, kind, 1, 1)
        if not values:
            return
        name = values[0]
        props = {k: v.value for k, v in node.props.items()}
        known = _PROPERTIES[kind]
        for prop, value in node.props.items():
            if prop not in known:
                takes = ", ".join(known) or "none"
                self.bad(node, f"{kind}.{prop}", f"is no property of {kind} ({takes})",
                         value.value, value.line, value.column)  # fmt: skip
                return
            if prop != "default" and not isinstance(value.value, str):
                self.bad(node, f"{kind}.{prop}", f"is {_kind(value.value)}, not a string",
                         value.value, value.line, value.column)  # fmt: skip
                return
        text = {k: v for k, v in props.items() if isinstance(v, str)}
        if kind == "theme":
            self.theme(node, name)
            return
        if node.children:
            self.bad(node, kind, "takes properties, not a block")
            return
        pattern = TOOL_NAME if kind == "tool" else NAME
        if kind != "key" and not pattern.fullmatch(name):
            self.bad(node, kind, f"is named {name!r}, which is not a name", name)
        elif kind == "command":
            if name in [c.name for c in self.commands]:
                self.bad(node, kind, f"{name!r} is declared twice", name)
            else:
                self.commands.append(
                    CommandDecl(name, text.get("description", ""), text.get("usage", ""))
                )
        elif kind == "tool":
            self.tool(node, name, text)
        elif kind == "queue-policy":
            self.policies.append(name)
        elif kind == "option":
            self.option(node, name, text, props.get("default"))
        elif kind == "key":
            if "command" not in text:
                self.bad(node, "key", f'{name!r} says no command="..." to run', name)
            else:
                self.keys[name] = text["command"]

    def tool(self, node: KdlNode, name: str, text: Mapping[str, str]) -> None:
        effect = text.get("effect", "unknown")
        if effect not in EFFECTS:
            self.bad(node, "tool.effect", f"of {name} is {effect!r}, no effect class", effect)
            return
        if not text.get("description"):
            self.bad(node, "tool.description", f"of {name} is missing: the model reads it")
            return
        schema: object = {"type": "object", "properties": {}}
        given = text.get("parameters", "")
        if given:
            try:
                if given.lstrip().startswith(("{", "[")):
                    schema = json.loads(given)
                else:
                    file = inside(self.root, given)
                    if file is None:
                        raise ValueError(f"{given!r} is not a path inside the package")
                    with open(file, encoding="utf-8") as f:
                        schema = json.loads(f.read(MAX_SCHEMA + 1)[: MAX_SCHEMA + 1])
            except (OSError, ValueError) as exc:
                self.bad(node, "tool.parameters", f"of {name} cannot be read: {exc}", given)
                return
        if not isinstance(schema, dict) or schema.get("type", "object") != "object":
            self.bad(node, "tool.parameters", f"of {name} is not a JSON schema of an object", given)
            return
        result = text.get("result", "plain")
        if result not in RESULTS:
            self.bad(node, "tool.result", f"of {name} is {result!r}: one of {', '.join(RESULTS)}",
                     result)  # fmt: skip
            return
        shown_by = text.get("shown-by", "")
        if shown_by and shown_by not in schema.get("properties", {}):
            self.bad(node, "tool.shown-by", f"of {name} is {shown_by!r}, none of its parameters",
                     shown_by)  # fmt: skip
            return
        self.tools.append(ToolDecl(name, text["description"], schema, effect, shown_by, result))

    def option(self, node: KdlNode, key: str, text: Mapping[str, str], default: object) -> None:
        kind = text.get("type", "string")
        if kind not in OPTION_TYPES:
            self.bad(node, "option.type", f"of {key} is {kind!r}, no option type", kind)
            return
        fits = {"string": isinstance(default, str), "integer": isinstance(default, int)
                and not isinstance(default, bool), "number": isinstance(default, int | float)
                and not isinstance(default, bool), "boolean": isinstance(default, bool),
                "list": isinstance(default, str)}[kind]  # fmt: skip
        if default is not None and not fits:
            self.bad(node, "option.default", f"of {key} is {_kind(default)}, not a {kind}", default)
            return
        value = [default] if kind == "list" and default is not None else default
        self.options.append(OptionDecl(key, kind, value, text.get("description", "")))

    def theme(self, node: KdlNode, name: str) -> None:
        colours: dict[str, str] = {}
        for child in node.children:
            values = self.strings(child, f"theme.{child.name}", 1, 1)
            if values:
                colours[child.name] = values[0]
        self.themes[name] = colours


def bundled(package: PackageManifest) -> list[str]:
    """What the package holds, one line each, as `install` and `info` say it."""
    lines = []
    if package.has_code:
        lines.append(f"a WebAssembly module ({package.module}, SDK {package.sdk or '?'})")
    from smith.packages._declarative import package_templates, parts_said

    if templates := package_templates(package):
        lines.append("prompt templates: " + ", ".join(f"/{t}" for t in templates))
    for folder, what in (("skills", "skills"), ("agents", "agent definitions")):
        try:
            names = sorted(n for n in os.listdir(os.path.join(package.root, folder))
                           if not n.startswith("."))  # fmt: skip
        except OSError:
            continue
        if names:
            lines.append(f"{what}: " + ", ".join(n.removesuffix(".md") for n in names))
    kinds = [("commands", [f"/{c.name}" for c in package.commands]),
             ("tools", [t.name for t in package.tools]),
             ("queue policies", list(package.queue_policies)),
             ("keys", list(package.keybindings)), ("themes", list(package.themes)),
             ("system-prompt parts", list(package.prompts)), ("layouts", list(package.layouts)),
             ("escape hatches", list(package.frontend)),
             ("events", list(package.events))]  # fmt: skip
    lines += [f"{kind}: {', '.join(names)}" for kind, names in kinds if names]
    return lines + parts_said(package)  # its MCP servers and hooks, and what they read


def _check_scalar(key: str, value: str, root: str) -> str | None:
    if key == "name" and not valid_name(value):
        return f"is {value!r}, which is not a name"
    if key == "version" and (not value or any(c.isspace() or not c.isprintable() for c in value)):
        return f"is {value!r}: a version is one word"
    if key == "build" and value not in BUILDS:
        return f"is {value!r}, which smith cannot build"
    if key == "module" and inside(root, value) is None:
        return f"is {value!r}, which is not a path inside the package"
    if key == "description" and any(not c.isprintable() for c in value):
        return "holds control characters"
    return None


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value}"
    return f"{value!r}"


__all__ = [
    "CLAUDE_MANIFEST",
    "EVENTS",
    "MANIFEST",
    "bundled",
    "manifest_path",
    "read_manifest",
    "read_package",
    "valid_name",
]
