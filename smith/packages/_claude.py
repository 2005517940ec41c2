"""A Claude Code plugin directory read as a package (docs/plugins.md, "Claude Code
plugins"): `.claude-plugin/plugin.json` and the folders beside it, taken in smith's terms.

    package = read_claude(root)      # PackageManifest(kind="claude", notes=...)

What is taken: `commands/*.md` (and the paths plugin.json's `commands` names) as prompt
templates (`/NAME`, $ARGUMENTS and $1..$9 as Claude Code fills them); `agents/*.md` as
agent definitions; `skills/` SKILL.md folders; `hooks/hooks.json` (or plugin.json's
`hooks`) for the events smith has, run inside smith's sandbox; `.mcp.json` (or
plugin.json's `mcpServers`) as MCP servers, `${CLAUDE_PLUGIN_ROOT}` being the package's
directory. What cannot be (a command's `allowed-tools` or `model`, hook events smith has
no counterpart for, prompt hooks, output styles, LSP servers) is said in `notes`, which
`smith plugins install` shows. Nothing is run to read it.
"""

from __future__ import annotations

import os
import re
from typing import Any

from smith.diagnostics import DiagnosticKind, SmithError, Source
from smith.packages._manifest import PackageManifest

MAX_BYTES = 64 * 1024  # plugin.json, hooks.json, .mcp.json, a command: small files
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
COMMAND_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# Claude Code's hook events -> smith's (plugins/_hookconf.py EVENTS).
HOOK_EVENTS = {
    "PreToolUse": "before-tool",
    "PostToolUse": "after-tool",
    "UserPromptSubmit": "prompt",
    "Stop": "stop",
    "SubagentStop": "subagent-stop",
    "PreCompact": "before-compaction",
    "SessionStart": "session-start",
    "SessionEnd": "session-end",
}
# plugin.json keys smith reads, and those it knows but cannot take.
KNOWN = ("name", "version", "description", "author", "homepage", "repository", "license",
         "keywords", "commands", "agents", "skills", "hooks", "mcpServers", "$schema")  # fmt: skip
UNSUPPORTED = {
    "outputStyles": "output styles (smith has no such setting)",
    "lspServers": "LSP servers (smith does not run language servers)",
}
UNSUPPORTED_FOLDERS = {"outputStyles": "output-styles", "lspServers": "lsp-servers"}
# A command's front matter keys smith has no counterpart for.
COMMAND_KEYS_DROPPED = ("allowed-tools", "model", "disable-model-invocation")

CLAUDE_PLUGIN = DiagnosticKind(
    "plugin.claude-manifest",
    what="the Claude Code plugin {path} cannot be read: {problem}",
    why="a Claude Code plugin is known by its .claude-plugin/plugin.json, a JSON object "
    "with at least a `name`",
    fix="{remedy}, then run `smith plugins install` again",
)

HOOK_TIMEOUT_MAX = 600  # seconds: the hooks plugin's longest (plugins/_hookconf.TIMEOUT_MAX)


def _fail(path: str, problem: str, remedy: str) -> SmithError:
    return SmithError(
        CLAUDE_PLUGIN(
            value=path, source=Source("file", path), path=path, problem=problem, remedy=remedy
        )
    )


def read_json(path: str) -> Any:
    """The JSON of a small file of the package (no symlink out of it is followed here:
    the store copies packages without links). Raises OSError or ValueError."""
    from smith.text import loads

    with open(path, "rb") as f:
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError(f"it is over {MAX_BYTES // 1024} KiB")
    return loads(data.decode("utf-8"))


def plugin_json(root: str) -> dict[str, Any]:
    """plugin.json's object; raises SmithError saying what is wrong."""
    path = os.path.join(root, ".claude-plugin", "plugin.json")
    try:
        data = read_json(path)
    except FileNotFoundError:
        raise _fail(
            path, "there is no such file", "give the folder that holds .claude-plugin/plugin.json"
        ) from None
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise _fail(path, str(exc), "make it a JSON object with a `name`") from None
    if not isinstance(data, dict):
        raise _fail(path, "it is no JSON object", 'write {"name": "my-plugin", ...}')
    name = data.get("name")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise _fail(
            path,
            f"its name {name!r} is not letters, digits, '_', '-' and '.' (at most 64)",
            'give it a "name" such as "my-plugin"',
        )
    return data


def _paths(value: object) -> list[str]:
    """plugin.json's `commands`/`agents`: one path or a list of paths (relative, ./...)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def inside(root: str, relative: str) -> str | None:
    """`relative` (a path plugin.json names) under `root`, or None when it leads out."""
    real_root = os.path.realpath(root)
    path = os.path.realpath(os.path.join(root, relative.replace("${CLAUDE_PLUGIN_ROOT}", ".")))
    if path != real_root and not path.startswith(real_root + os.sep):
        return None
    return path


def command_files(root: str, data: dict[str, Any] | None = None) -> list[str]:
    """The Markdown files that are commands: commands/**/*.md and what plugin.json's
    `commands` names (files or folders), in name order, each once."""
    data = plugin_json(root) if data is None else data
    places = [os.path.join(root, "commands")]
    places += [p for p in (inside(root, v) for v in _paths(data.get("commands"))) if p]
    found: list[str] = []
    for place in places:
        if os.path.isfile(place) and place.endswith(".md"):
            found.append(place)
            continue
        for folder, dirs, files in os.walk(place):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            found += [os.path.join(folder, f) for f in sorted(files) if f.endswith(".md")]
    return list(dict.fromkeys(found))


def _command_notes(files: list[str]) -> list[str]:
    notes: list[str] = []
    dropped: dict[str, list[str]] = {}
    for path in files:
        name = os.path.basename(path)[:-3]
        if not COMMAND_NAME.fullmatch(name):
            notes.append(f"not taken: the command {path} (its name is not a command name)")
            continue
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read(MAX_BYTES + 1)
        except (OSError, UnicodeDecodeError):
            continue
        from smith.frontmatter import FrontMatterError, split

        try:
            meta, body = split(text)
        except FrontMatterError:
            continue
        for key in COMMAND_KEYS_DROPPED:
            if key in meta:
                dropped.setdefault(key, []).append(name)
        if re.search(r"(?m)^!`|\s!`", body):
            dropped.setdefault("!`command` lines (not run: sent as written)", []).append(name)
    for key, names in dropped.items():
        shown = ", ".join(f"/{n}" for n in names)
        notes.append(f"not taken: {key} of {shown}")
    return notes


def hook_table(root: str, data: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The hooks object ({"hooks": {EVENT: [...]}}) and the file it came from: plugin.json's
    `hooks` (an object, or a path to a JSON file), else hooks/hooks.json; (None, "")."""
    value = data.get("hooks")
    path = os.path.join(root, ".claude-plugin", "plugin.json")
    if isinstance(value, str):
        found = inside(root, value)
        if found is None:
            return None, ""
        path, value = found, None
    elif not isinstance(value, dict):
        path = os.path.join(root, "hooks", "hooks.json")
    if value is None:
        try:
            value = read_json(path)
        except (OSError, ValueError, UnicodeDecodeError):
            return None, ""
    return (value if isinstance(value, dict) else None), path


def _hook_notes(table: dict[str, Any] | None) -> tuple[list[str], list[str]]:
    taken: list[str] = []
    notes: list[str] = []
    if table is None:
        return taken, notes
    events = table.get("hooks", table)
    if not isinstance(events, dict):
        return taken, ["not taken: hooks (no object of events)"]
    for event, groups in events.items():
        if event not in HOOK_EVENTS:
            notes.append(f"not taken: hooks of {event} (smith has no such event)")
            continue
        count = 0
        for group in groups if isinstance(groups, list) else []:
            for hook in (group.get("hooks") or []) if isinstance(group, dict) else []:
                if isinstance(hook, dict) and hook.get("type", "command") == "command":
                    count += 1
                    timeout = hook.get("timeout")
                    if isinstance(timeout, int | float) and timeout > HOOK_TIMEOUT_MAX:
                        notes.append(f"capped: a {event} hook's timeout of {timeout:g} s, to "
                                     f"smith's longest, {HOOK_TIMEOUT_MAX} s")  # fmt: skip
                elif isinstance(hook, dict):
                    notes.append(f"not taken: a {hook.get('type')} hook of {event} (only commands)")
        if count:
            taken.append(f"{count} {event}")
    return taken, notes


def mcp_table(root: str, data: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The MCP servers ({NAME: {command, args, env, ...}}) and the file they came from:
    plugin.json's `mcpServers` (an object, or a path), else .mcp.json's `mcpServers`."""
    value = data.get("mcpServers")
    path = os.path.join(root, ".claude-plugin", "plugin.json")
    if isinstance(value, str):
        found = inside(root, value)
        if found is None:
            return {}, ""
        path, value = found, None
    elif not isinstance(value, dict):
        path = os.path.join(root, ".mcp.json")
    if value is None:
        try:
            value = read_json(path)
        except (OSError, ValueError, UnicodeDecodeError):
            return {}, ""
        if isinstance(value, dict) and isinstance(value.get("mcpServers"), dict):
            value = value["mcpServers"]
    return (value if isinstance(value, dict) else {}), path


def _count(root: str, folder: str, *, skill: bool) -> int:
    try:
        entries = os.scandir(os.path.join(root, folder))
    except OSError:
        return 0
    with entries:
        if skill:
            return sum(1 for e in entries if os.path.isfile(os.path.join(e.path, "SKILL.md")))
        return sum(1 for e in entries if e.name.endswith(".md") and e.is_file())


def read_claude(root: str) -> PackageManifest:
    """The Claude Code plugin at `root` as a package (see the module's docstring);
    raises SmithError when its plugin.json cannot be read."""
    data = plugin_json(root)
    taken: list[str] = []
    notes: list[str] = []
    commands = command_files(root, data)
    first: dict[str, str] = {}  # a command's name -> its file: the first of a name is taken
    for path in commands:
        name = os.path.basename(path)[:-3]
        if name in first:  # commands/backend/x.md beside commands/frontend/x.md
            notes.append(f"not taken: the command {os.path.relpath(path, root)} (/{name} is "
                         f"{os.path.relpath(first[name], root)}; smith's commands have no "
                         "folder:name form)")  # fmt: skip
        else:
            first[name] = path
    if commands:
        names = ", ".join(f"/{n}" for n in first)
        taken.append(f"commands as prompt templates: {names}")
        notes += _command_notes(list(first.values()))
    agents = _count(root, "agents", skill=False)
    if agents:
        taken.append(f"{agents} agent definition{'s' if agents > 1 else ''}")
    skills = _count(root, "skills", skill=True)
    if skills:
        taken.append(f"{skills} skill{'s' if skills > 1 else ''}")
    hooks, hook_notes = _hook_notes(hook_table(root, data)[0])
    if hooks:
        taken.append(f"hooks ({', '.join(hooks)}), run in smith's sandbox")
    notes += hook_notes
    servers = mcp_table(root, data)[0]
    if servers:
        taken.append(f"MCP servers: {', '.join(str(n) for n in servers)}")
    for key, what in UNSUPPORTED.items():
        if key in data or os.path.isdir(os.path.join(root, UNSUPPORTED_FOLDERS[key])):
            notes.append(f"not taken: {what}")
    for key in ("agents", "skills"):  # smith reads the folder of that name only
        for path in _paths(data.get(key)):
            if os.path.normpath(path.replace("${CLAUDE_PLUGIN_ROOT}", ".")) != key:
                notes.append(f"not taken: plugin.json's {key} path {path} (smith reads {key}/)")
    for key in data:
        if key not in KNOWN and key not in UNSUPPORTED:
            notes.append(f"not taken: plugin.json's {key!r} (smith does not know it)")
    version = data.get("version")
    description = data.get("description")
    return PackageManifest(
        name=data["name"],
        version=version if isinstance(version, str) and version else "0",
        root=root,
        description=description if isinstance(description, str) else "",
        kind="claude",
        notes=tuple([f"taken: {t}" for t in taken] + notes),
    )


__all__ = ["HOOK_EVENTS", "command_files", "hook_table", "mcp_table", "read_claude"]
