"""The declarative parts of installed packages, as the built-in plugins that own each kind
take them (docs/plugins.md, "Declarative parts"): no package code runs for any of them.

    installed(config)                    # the enabled packages: user's, a trusted project's
    package_folders(config, "skills")    # [(folder, package)]: skills/ and agents/ folders
    package_templates(package)           # {name: Markdown}: prompts/*.md, Claude commands
    package_mcp_servers(config)          # [PackageServer]: plugin.kdl `mcp`, .mcp.json
    package_hooks(config)                # [PackageHooks]: plugin.kdl `hooks`, hooks.json
    package_themes(config)               # {theme name: {colour: value}}: plugin.kdl `theme`

Each part is named with its origin "plugin NAME". Installed packages are trusted by their
installation (the user approved them); a project's (`.smith/plugins`) only as `smith
trust` approved its whole folder. `${CLAUDE_PLUGIN_ROOT}` (and `${SMITH_PLUGIN_ROOT}`) in an MCP
server's or a hook's command, arguments, working directory and environment is the
package's directory, which the sandbox shows them read-only even within smith's data.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from smith.diagnostics import Source

if TYPE_CHECKING:
    from smith.config import Config, KdlNode
    from smith.packages._manifest import PackageManifest

TEMPLATE_MAX_BYTES = 64 * 1024  # a prompt template's cap (smith.runtime._templates)
ROOT_VARIABLES = ("${CLAUDE_PLUGIN_ROOT}", "${SMITH_PLUGIN_ROOT}")
ROOT_NAMES = ("CLAUDE_PLUGIN_ROOT", "SMITH_PLUGIN_ROOT")


@dataclass(frozen=True, slots=True)
class Installed:
    """An enabled package found on disk: its name (its manifest's), its root, its kind
    ("smith": plugin.kdl, "claude": .claude-plugin/plugin.json) and whose ("user",
    "project")."""

    name: str
    root: str
    kind: str
    where: str = "user"

    @property
    def origin(self) -> str:
        return f"plugin {self.name}"


def _kind(root: str) -> str | None:
    if os.path.isfile(os.path.join(root, "plugin.kdl")):
        return "smith"
    if os.path.isfile(os.path.join(root, ".claude-plugin", "plugin.json")):
        return "claude"
    return None


def _listed(directory: str, where: str, disabled: frozenset[str],
            taken: set[str]) -> list[Installed]:  # fmt: skip
    """The packages in `directory` by their manifests' names, less those `disabled` and
    those whose name is `taken` already (a built-in's, or a package's listed before: the
    plugin list leaves that package out too, with a warning), as smith.sdk's loader does."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    found = []
    for folder in names:
        root = os.path.join(directory, folder)
        if folder.startswith(".") or os.path.islink(root):
            continue
        kind = _kind(root)
        name = _manifest_name(root, kind) if kind is not None else None
        if kind is None or name is None or name in taken:
            continue
        taken.add(name)
        if name not in disabled:
            found.append(Installed(name, root, kind, where))
    return found


def _builtin_names() -> set[str]:
    """The built-in plugins' names, from smith.plugins' plain data (by name, as
    smith.sdk reads it: smith.sdk's loader builds on smith.packages)."""
    import importlib

    plugins = importlib.import_module("smith.plugins")
    table = plugins.MANIFESTS
    return {str(table.get(m, {}).get("name", m.rsplit(".", 1)[-1])) for m in plugins.BUILTIN}


def _manifest_name(root: str, kind: str) -> str | None:
    """The name a package's manifest gives (None when it does not read: the package
    reader says why)."""
    name: object = None
    if kind == "claude":
        from smith.packages._claude import plugin_json

        try:
            name = plugin_json(root).get("name")
        except Exception:
            return None
    else:
        for node in _nodes(Installed("", root, kind)):
            if node.name == "name" and len(node.args) == 1:
                name = node.args[0].value
                break
    return name if isinstance(name, str) and name else None


def installed(config: Config) -> list[Installed]:
    """The enabled packages whose parts are taken: $SMITH_HOME/plugins/NAME, then a
    trusted project's .smith/plugins/NAME as `smith trust` approved it (the whole
    folder, smith.trust.approved_package), less those plugins.disabled names; each
    known by its manifest's name, the first of a name taken (built-ins first)."""
    value = config["plugins.disabled"]
    disabled = frozenset(str(v) for v in value) if isinstance(value, list | tuple) else frozenset()
    taken = _builtin_names()
    found = _listed(os.path.join(config.home, "plugins"), "user", disabled, taken)
    from smith import trust

    if trust.looked_into(config.home, config.project_root, applied=config.project_trusted):
        project = os.path.join(config.project_root, ".smith", "plugins")
        found += [
            package
            for package in _listed(project, "project", disabled, taken)
            if trust.approved_package(config.home, config.project_root, package.root)
        ]
    return found


def package_folders(config: Config, kind: str) -> list[tuple[str, Installed]]:
    """The `kind` folders ("skills", "agents") of the enabled packages that have one,
    each with its package, in the order of `installed`."""
    return [
        (path, package)
        for package in installed(config)
        if os.path.isdir(path := os.path.join(package.root, kind))
    ]


def package_templates(package: PackageManifest) -> dict[str, str]:
    """The prompt templates a package brings, name -> Markdown: its prompts/*.md, and a
    Claude Code plugin's commands (commands/**/*.md and what plugin.json names). A file
    that is no regular UTF-8 file of at most 64 KiB inside the package is left out (the
    runtime's template loader says what is wrong with the rest)."""
    root = package.root
    if package.kind == "claude":
        from smith.packages._claude import command_files

        try:
            files = command_files(root)
        except Exception:  # its plugin.json went bad since it was read: no commands
            return {}
    else:
        folder = os.path.join(root, "prompts")
        try:
            files = [os.path.join(folder, n) for n in sorted(os.listdir(folder))]
        except OSError:
            return {}
        files = [f for f in files if f.endswith(".md")]
    real_root = os.path.realpath(root)
    found: dict[str, str] = {}
    for path in files:
        real = os.path.realpath(path)
        if not real.startswith(real_root + os.sep) or not os.path.isfile(real):
            continue
        try:
            with open(real, "rb") as f:
                data = f.read(TEMPLATE_MAX_BYTES + 1)
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if len(data) <= TEMPLATE_MAX_BYTES:
            found.setdefault(os.path.basename(path)[:-3], text.lstrip("\ufeff"))
    return found


def expand_root(value: object, root: str) -> object:
    """`value` with ${CLAUDE_PLUGIN_ROOT} and ${SMITH_PLUGIN_ROOT} the package's root, in
    strings, lists and mappings of them."""
    if isinstance(value, str):
        for variable in ROOT_VARIABLES:
            value = value.replace(variable, root)
        return value
    if isinstance(value, list | tuple):
        return [expand_root(v, root) for v in value]
    if isinstance(value, dict):
        return {k: expand_root(v, root) for k, v in value.items()}
    return value


# The keys smith answers itself (the app's bindings, the product plugin's keys, the
# editor's): a package's `key` may not take one (tests check this against the app).
RESERVED_KEYS = frozenset({
    "ctrl+c", "ctrl+d", "ctrl+q", "ctrl+l", "ctrl+p", "f1", "ctrl+f", "ctrl+o", "ctrl+g",
    "ctrl+r", "escape", "enter", "tab", "alt+enter", "ctrl+j", "shift+enter", "up", "down",
    "end", "pageup", "pagedown", "/", "@", "!",
})  # fmt: skip


def package_keybindings(package: PackageManifest) -> tuple[dict[str, str], list[str]]:
    """A package's `key "KEY" command="NAME"` lines as Plugin.keybindings ({command:
    key}), and what was refused: a key smith answers itself (ctrl+c, enter, ...)."""
    keys: dict[str, str] = {}
    refused = []
    for key, command in package.keybindings.items():
        if key.strip().lower() in RESERVED_KEYS:
            refused.append(f"key {key} (for /{command}): smith's own key, so it is not bound")
        else:
            keys[command] = key
    return keys, refused


# plugin.kdl ---------------------------------------------------------------------------


# plugin.kdl's nodes by path, with the file's identity when read: each kind's owner reads
# the same file at session start, and kdl-py takes ~1 ms a file.
_PARSED: dict[str, tuple[tuple[int, int, int], list[KdlNode]]] = {}


def _nodes(package: Installed) -> list[KdlNode]:
    """plugin.kdl's nodes (none when it does not read: the package reader says why)."""
    path = os.path.join(package.root, "plugin.kdl")
    if package.kind != "smith":
        return []
    try:
        with open(path, "rb") as f:
            info = os.fstat(f.fileno())
            identity = (info.st_ino, info.st_mtime_ns, info.st_size)
            known = _PARSED.get(path)
            if known is not None and known[0] == identity:
                return known[1]
            text = f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    from smith.config import read_nodes

    nodes, _ = read_nodes(path, text)
    _PARSED[path] = (identity, nodes)
    return nodes


def _where(package: Installed, node: KdlNode) -> Source:
    return Source("file", f"{os.path.join(package.root, 'plugin.kdl')}:{node.line}:{node.column}")


def _fields(node: KdlNode) -> dict[str, object]:
    """A named block's keys (`server "x" command="y" { args "a" "b"; env { K "v"; }; }`):
    properties and children, a child of several values a list, of children a mapping;
    (where: the node's position)."""
    fields: dict[str, object] = {k: v.value for k, v in node.props.items()}
    for child in node.children:
        if child.children:
            fields[child.name] = {
                c.name: (c.args[0].value if len(c.args) == 1 else [a.value for a in c.args])
                for c in child.children
            }
        elif child.args:
            values = [a.value for a in child.args]
            fields[child.name] = values[0] if len(values) == 1 else values
    return fields


@dataclass(frozen=True, slots=True)
class PackageServer:
    """An MCP server a package brings: its name, the keys a configured server takes
    (docs/mcp.md), where it was declared, and its package (whose root it may read)."""

    name: str
    fields: dict[str, Any]
    source: Source
    package: Installed
    format: str = "kdl"  # "kdl" (plugin.kdl's keys) or "json" (Claude Code's .mcp.json)


def package_mcp_servers(config: Config) -> list[PackageServer]:
    """The MCP servers of the enabled packages: plugin.kdl's `mcp { server "NAME" ...; }`,
    a package's .mcp.json (Claude Code's format), or a Claude Code plugin's plugin.json
    `mcpServers`; the first of a name wins. Values keep `${VAR}` for the mcp plugin to
    expand, but ${CLAUDE_PLUGIN_ROOT} is the package's root already."""
    return [server for package in installed(config) for server in _servers_of(package)]


def _servers_of(package: Installed) -> list[PackageServer]:
    """One package's MCP servers (package_mcp_servers)."""
    from smith.packages._claude import mcp_table, plugin_json

    found: list[PackageServer] = []
    for node in _nodes(package):
        if node.name != "mcp":
            continue
        for server in node.children:
            if server.name == "server" and len(server.args) == 1:
                fields = _fields(server)
                name = str(server.args[0].value)
                found.append(PackageServer(name, _expanded(fields, package),
                                           _where(package, server), package))  # fmt: skip
    try:
        data = plugin_json(package.root) if package.kind == "claude" else {}
    except Exception:
        data = {}
    table, path = mcp_table(package.root, data)
    for name, entry in table.items():
        if isinstance(entry, dict):
            where = Source("file", f"{path}: mcpServers.{name}")
            fields = _expanded(entry, package)
            found.append(PackageServer(str(name), fields, where, package, "json"))
    return found


def _expanded(fields: dict[str, Any], package: Installed) -> dict[str, Any]:
    """A server's keys, the package root in place of its variables, and (a stdio
    server's) in its environment too, as Claude Code gives it."""
    out = expand_root(fields, package.root)
    assert isinstance(out, dict)
    if "command" in out and "url" not in out:
        env = out.get("env")
        out["env"] = {**root_environment(package.root), **(env if isinstance(env, dict) else {})}
    return out


def root_environment(root: str) -> dict[str, str]:
    """What a package's hook or server finds its folder by in its environment."""
    return {"CLAUDE_PLUGIN_ROOT": root, "SMITH_PLUGIN_ROOT": root}


@dataclass(frozen=True, slots=True)
class PackageHooks:
    """A package's hooks in the shape of configuration's `hooks` section: keys
    `hook.NAME.on|command|match|effect|timeout` with their values and where each was
    given (plugins/_hookconf.py parse_keys reads them), and its package."""

    values: dict[str, object]
    sources: dict[str, Source]
    package: Installed
    notes: tuple[str, ...] = field(default=())
    claude: frozenset[str] = frozenset()  # the hooks in Claude Code's format, by name


def package_hooks(config: Config) -> list[PackageHooks]:
    """The hooks of the enabled packages: plugin.kdl's `hooks { hook "NAME" on=...; }` in
    smith's format, and a Claude Code plugin's hooks/hooks.json (its events mapped to
    smith's, each command hook one hook named PACKAGE-EVENT-N); ${CLAUDE_PLUGIN_ROOT} in
    a command is the package's root."""
    return [hooks for package in installed(config) if (hooks := _hooks_of(package)) is not None]


def _hooks_of(package: Installed) -> PackageHooks | None:
    """One package's hooks (package_hooks); None when it has none."""
    values: dict[str, object] = {}
    sources: dict[str, Source] = {}
    for node in _nodes(package):
        if node.name != "hooks":
            continue
        for hook in node.children:
            if hook.name != "hook" or len(hook.args) != 1:
                continue
            fields = _fields(hook)
            name = f"{package.name}-{hook.args[0].value}"
            for key, value in fields.items():
                values[f"hook.{name}.{key}"] = expand_root(value, package.root)
                sources[f"hook.{name}.{key}"] = _where(package, hook)
    claude: set[str] = set()
    notes = _claude_hooks(package, values, sources, claude)
    if not values:
        return None
    return PackageHooks(values, sources, package, tuple(notes), frozenset(claude))


_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)")


def _variables(value: object) -> list[str]:
    if isinstance(value, str):
        return _VARIABLE.findall(value)
    if isinstance(value, list | tuple):
        return [n for v in value for n in _variables(v)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _variables(v)]
    return []


# Named like a credential (plugins/mcp/_config.py leaves a package's server reading one
# out unless the package's grants name it; it also knows the providers' variables).
_CREDENTIAL = re.compile(r"(?:_API_KEY|_KEY|_TOKEN)$|SECRET|PASSWORD|PASSWD", re.I)


def _reads(value: object, granted: tuple[str, ...]) -> str:
    names = [n for n in dict.fromkeys(_variables(value)) if n not in ROOT_NAMES]
    said = [f"${n}" + (f' (a credential: it needs grants {{ secret "{n}"; }})'
                       if _CREDENTIAL.search(n) and n not in granted else "")
            for n in names]  # fmt: skip
    return f"; reads {', '.join(said)}" if said else ""


def parts_said(package: PackageManifest) -> list[str]:
    """What `install` and `info` say of a package's MCP servers and hooks, one line each:
    what each server runs or which host it reaches, each hook's event and command, and
    the environment variables they read (a credential only as its grants name it)."""
    from urllib.parse import urlsplit

    here = Installed(package.name, package.root, package.kind)
    lines = package_keybindings(package)[1]
    for name, colours in package.themes.items():
        dark = str(colours.get("dark", "true")).lower()
        if dark not in ("true", "false"):
            lines.append(f"theme {name}: dark {colours['dark']!r} is neither true nor false, "
                         "so the app leaves the theme out")  # fmt: skip
    for server in _servers_of(here):
        fields = server.fields
        if "url" in fields:
            host = urlsplit(str(fields["url"])).hostname or str(fields["url"])
            granted = any(fnmatch.fnmatchcase(host, h) for h in package.grants.hosts)
            what = f"reaches {host}" + (
                "" if granted else f' (it needs grants {{ host "{host}"; }})'
            )
        else:
            argv = [str(fields.get("command", "?"))]
            args = fields.get("args")
            argv += [str(a) for a in args] if isinstance(args, list) else [str(args)] * bool(args)
            what = "runs " + " ".join(argv) + " (in smith's sandbox)"
        lines.append(f"MCP server {server.name}: {what}{_reads(fields, package.grants.secrets)}")
    hooks = _hooks_of(here)
    if hooks is not None:
        by_name: dict[str, dict[str, object]] = {}
        for key, value in hooks.values.items():
            name, _, leaf = key.removeprefix("hook.").rpartition(".")
            by_name.setdefault(name, {})[leaf] = value
        for name, keys in by_name.items():
            command = keys.get("command")
            shown = " ".join(map(str, command)) if isinstance(command, list) else str(command)
            match = f" {keys['match']}" if "match" in keys else ""
            lines.append(f"hook {name}: at {keys.get('on')}{match} runs {shown} "
                         f"(in smith's sandbox){_reads(keys, package.grants.secrets)}")  # fmt: skip
    return [line.replace(package.root, "${SMITH_PLUGIN_ROOT}") for line in lines]


def _claude_hooks(package: Installed, values: dict[str, object], sources: dict[str, Source],
                  claude: set[str]) -> list[str]:  # fmt: skip
    """A package's Claude Code hooks (hooks/hooks.json, or plugin.json's `hooks`) added to
    `values` and `sources`, their names to `claude` (they are given Claude Code's tool
    names and input keys); what could not be taken."""
    from smith.packages._claude import HOOK_EVENTS, HOOK_TIMEOUT_MAX, hook_table, plugin_json

    try:
        data = plugin_json(package.root) if package.kind == "claude" else {}
    except Exception:
        return []
    table, path = hook_table(package.root, data)
    events = table.get("hooks", table) if table is not None else None
    if not isinstance(events, dict):
        return []
    notes = []
    for event, groups in events.items():
        on = HOOK_EVENTS.get(event)
        if on is None:
            notes.append(f"hooks of {event}: smith has no such event")
            continue
        for i, group in enumerate(groups if isinstance(groups, list) else [], 1):
            if not isinstance(group, dict):
                continue
            matcher = group.get("matcher")
            commands = [h for h in group.get("hooks") or [] if isinstance(h, dict)
                        and h.get("type", "command") == "command"]  # fmt: skip
            for j, hook in enumerate(commands, 1):
                name = f"{package.name}-{event}-{i}" + (f"-{j}" if len(commands) > 1 else "")
                where = Source("file", f"{path}: hooks.{event}[{i - 1}]")
                keys: dict[str, object] = {
                    "on": on,
                    "command": expand_root(hook.get("command"), package.root),
                }
                if on in ("before-tool", "after-tool") and matcher not in (None, "", "*"):
                    keys["match"] = matcher
                timeout = hook.get("timeout")
                if isinstance(timeout, int | float) and not isinstance(timeout, bool):
                    if timeout > HOOK_TIMEOUT_MAX:  # Claude Code takes longer ones
                        notes.append(f"capped: a {event} hook's timeout of {timeout:g} s, to "
                                     f"smith's longest, {HOOK_TIMEOUT_MAX} s")  # fmt: skip
                    if timeout > 0:
                        keys["timeout"] = min(timeout, HOOK_TIMEOUT_MAX)
                claude.add(name)
                for key, value in keys.items():
                    values[f"hook.{name}.{key}"] = value
                    sources[f"hook.{name}.{key}"] = where
    return notes


THEME_KEYS = ("primary", "secondary", "accent", "foreground", "background", "success",
              "warning", "error", "surface", "panel", "boost", "dark")  # fmt: skip


def package_themes(config: Config) -> dict[str, dict[str, str]]:
    """The themes of the enabled packages, name -> colours (`primary`, `background`,
    ... as Textual's Theme takes them; `dark` "true"/"false"): plugin.kdl's
    `theme "NAME" { primary "#..."; ... }`. The first of a name wins; keys Textual's
    Theme has no field for are left out."""
    found: dict[str, dict[str, str]] = {}
    for package in installed(config):
        for node in _nodes(package):
            if (
                node.name != "theme"
                or len(node.args) != 1
                or not isinstance(node.args[0].value, str)
            ):
                continue
            colours: dict[str, str] = {}
            for child in node.children:
                if child.name in THEME_KEYS and len(child.args) == 1:
                    value = child.args[0].value
                    colours[child.name] = (
                        str(value).lower() if isinstance(value, bool) else str(value)
                    )
            found.setdefault(node.args[0].value, colours)
    return found


__all__ = [
    "Installed",
    "PackageHooks",
    "PackageServer",
    "expand_root",
    "installed",
    "package_folders",
    "package_hooks",
    "package_keybindings",
    "package_mcp_servers",
    "package_templates",
    "package_themes",
    "parts_said",
    "root_environment",
]
