"""The hooks of configuration (plugins/hooks.py, docs/hooks.md): what `hooks { hook "NAME"
on=... match=... effect=... command=... timeout=...; }` says, checked.

Configuration keeps the open section `hooks` as written (Config.subtree("hooks")), each
key with its source: `hook.NAME.on`, `hook.NAME.command`, ... A project's file is one of
those sources only when the project is trusted (smith.config), so an untrusted project's
hooks never reach here. `parse` turns the keys into `Hook`s and says what is wrong, each
diagnostic naming the value and where it was set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from smith.diagnostics import Diagnostic, DiagnosticKind, Source, did_you_mean, show_value

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from smith.config import Config, Setting
    from smith.effects import ToolFacts

# smith's event names (what `on` takes) -> the runtime's event the plugin handles there.
EVENTS = {
    "before-tool": "tool_call",
    "after-tool": "tool_result",
    "prompt": "input",
    "stop": "agent_end",
    "subagent-stop": "agent_end",  # a sub-agent's (docs/agents.md); `stop` is the user's agent's
    "before-compaction": "compaction_start",
    "session-start": "session_start",
    "session-end": "session_end",
}
# The names Claude Code gives the same events (`hook_event_name` on a hook's stdin), so a
# script written for it reads what it expects.
CLAUDE_NAMES = {
    "before-tool": "PreToolUse",
    "after-tool": "PostToolUse",
    "prompt": "UserPromptSubmit",
    "stop": "Stop",
    "subagent-stop": "SubagentStop",
    "before-compaction": "PreCompact",
    "session-start": "SessionStart",
    "session-end": "SessionEnd",
}
CLAUDE_EVENTS = frozenset(CLAUDE_NAMES.values())
TOOL_EVENTS = ("before-tool", "after-tool")
# What `effect` takes: a tool's declared effect (smith.effects ToolFacts.effect), and
# "read-only" (effect reads) and "mutating" (ToolFacts.mutating).
EFFECTS = ("read-only", "mutating", "reads", "writes", "runs", "network", "unknown")
KEYS = ("on", "match", "effect", "command", "timeout")
TIMEOUT_DEFAULT = 30.0  # seconds
TIMEOUT_MAX = 600.0  # the longest a hook may be given (the plugin's handler deadline)

HOOK_INVALID = DiagnosticKind(
    "hooks.invalid",
    what="hook '{name}': {key} {shown}{problem}",
    why="the hook cannot run as configured: {why}",
    fix="edit that line ({example}); until it is fixed the hook does not run{guard}",
)
HOOK_UNKNOWN_KEY = DiagnosticKind(
    "hooks.unknown-key",
    what="hooks.{key} is not a setting of hooks{hint}",
    why='a hook is a named block: hook "NAME" on=EVENT command=COMMAND, and optionally '
    "match, effect and timeout",
    fix="remove or rename it (docs/hooks.md); it is ignored",
    severity="warning",
)
HOOK_SHAPE = DiagnosticKind(
    "hooks.not-a-hook",
    what="hooks.{key} is no hook's setting{hint}",
    why='a hook is a named block, hook "NAME" on=EVENT command=COMMAND (NAME not empty); '
    "Claude Code's JSON shape (PreToolUse, matcher, hooks) is not read",
    fix="write it as such a block (docs/hooks.md); until it is fixed no tool call runs, as "
    "a hook that cannot be read may have been a guard",
)
HOOK_UNUSED = DiagnosticKind(
    "hooks.unused-match",
    what="hook '{name}': {key} is set, but a {event} hook has no tool to match",
    why="match and effect choose the tool calls a before-tool or after-tool hook runs for",
    fix="remove {key}, or make it a before-tool or after-tool hook; the hook runs at every {event}",
    severity="warning",
)

HOOK_TWICE = DiagnosticKind(
    "hooks.defined-twice",
    what="hook '{name}' is defined twice in one file: the later block's {keys} replaced "
    "the earlier's",
    why="a hook is known by its name, so two blocks with one name are one hook, merged key by key",
    fix="give each hook a name of its own (or remove one of the blocks)",
    severity="warning",
)
HOOK_SHADOWED = DiagnosticKind(
    "hooks.same-name",
    what="hook '{name}' is defined in {files}: each runs as its own hook",
    why="a hook in one configuration file never replaces or changes one of the same name "
    "in another (a project's hooks cannot take away the user's guard)",
    fix="give them different names to tell them apart, or remove the one you do not want",
    severity="warning",
)
HOOK_NO_TOOL = DiagnosticKind(
    "hooks.matches-nothing",
    what="hook '{name}': match {pattern} matches none of the tools ({tools})",
    why="match is a regular expression over tool names, smith's (bash, write, edit, ...) or "
    "Claude Code's (Bash, Write, Edit, mcp__server__tool); a tool an MCP server brings "
    "later is matched when it comes",
    fix="name the tools it is for (docs/hooks.md); as it is the hook may never run",
    severity="warning",
)

HOOK_HIDDEN = DiagnosticKind(
    "hooks.hidden-program",
    what="hook '{name}' runs {program}, which is inside {directory}: the sandbox hides it",
    why="hooks run in the sandbox, where smith's own data and configuration directories "
    "are empty (docs/safety.md), so the hook would fail each time it runs",
    fix="keep the script in the project (a guard in .smith/hooks/, which the model cannot "
    "change) or on your PATH, and name it there",
    severity="warning",
)

EXAMPLES = {
    "on": 'on="before-tool"',
    "match": 'match="bash|edit"',
    "effect": 'effect="mutating"',
    "command": 'command="./check.sh"',
    "timeout": "timeout=10",
}


# Claude Code's tool names (what its hooks' matchers name) -> smith's tools.
CLAUDE_TOOLS = {
    "Read": "read", "Grep": "grep", "Glob": "find", "LS": "ls", "Bash": "bash",
    "Edit": "edit", "MultiEdit": "edit", "Write": "write", "Task": "task",
    "TodoWrite": "todo", "NotebookRead": "read",
}  # fmt: skip
_CLAUDE_OF: dict[str, tuple[str, ...]] = {}
for _claude, _smith in CLAUDE_TOOLS.items():
    _CLAUDE_OF[_smith] = (*_CLAUDE_OF.get(_smith, ()), _claude)


def names_of(tool: str) -> tuple[str, ...]:
    """The names a matcher may know `tool` by: smith's, and Claude Code's (`Bash` for
    bash; `mcp__files__read` for the MCP tool smith calls mcp_files__read)."""
    claude = _CLAUDE_OF.get(tool, ())
    if tool.startswith("mcp_") and not tool.startswith("mcp__"):
        claude = (*claude, "mcp__" + tool[4:])
    return (tool, *claude)


@dataclass(frozen=True)
class Hook:
    """One configured hook: run `command` (a shell command line, or an argv list) at
    event `on`, for the tool calls `match` and `effects` choose (a tool event's), within
    `timeout` seconds. `source`: where its command was set."""

    name: str
    on: str
    command: str | tuple[str, ...]
    timeout: float = TIMEOUT_DEFAULT
    match: re.Pattern[str] | None = None
    effects: frozenset[str] = frozenset()
    source: Source | None = None
    # An installed package's hook: the package's folder, which the sandbox shows it
    # read-only (its scripts) even within smith's data directory.
    readable: tuple[str, ...] = ()
    claude: bool = False  # a Claude Code plugin's: given Claude's tool names and input keys
    # A package's hook that cannot be read but whose tools can (its `match`): it denies
    # the calls it matches, saying why, instead of every call.
    broken: Diagnostic | None = None

    def matches(self, tool: str, facts: ToolFacts | None) -> bool:
        """Whether a call of `tool` (its facts: None, a tool the runtime does not know)
        is one this hook runs for."""
        if self.match is not None and not any(
            self.match.fullmatch(name) is not None for name in names_of(tool)
        ):
            return False
        if not self.effects:
            return True
        if facts is None:
            return "unknown" in self.effects
        return (
            facts.effect in self.effects
            or ("read-only" in self.effects and facts.read_only)
            or ("mutating" in self.effects and facts.mutating)
        )


@dataclass(frozen=True)
class Hooks:
    """The configured hooks, what is wrong with the configuration, and whether a broken
    hook could have been a guard (a before-tool hook, or one whose event is unknown):
    then no tool call runs until it is fixed (a broken reviewer fails closed)."""

    hooks: tuple[Hook, ...] = ()
    problems: tuple[Diagnostic, ...] = ()
    broken_guard: Diagnostic | None = None

    def at(self, event: str) -> list[Hook]:
        return [h for h in self.hooks if h.on == event and h.broken is None]

    def broken_for(self, tool: str, facts: ToolFacts | None) -> Diagnostic | None:
        """Why a call of `tool` may not run: a package's unreadable guard matching it."""
        return next((h.broken for h in self.hooks
                     if h.broken is not None and h.matches(tool, facts)), None)  # fmt: skip


NONE = Hooks()


def _hint(word: str, candidates: list[str]) -> str:
    close = did_you_mean(word, candidates, otherwise="")
    return f" ({close})" if close else ""


def _words(value: object) -> list[str] | None:
    """A |-list (or a list of values) as its words; None when it is neither."""
    if isinstance(value, str):
        return [w.strip() for w in value.split("|") if w.strip()]
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return [str(w).strip() for v in value for w in str(v).split("|") if w.strip()]
    return None


class _Parser:
    def __init__(self, settings: Mapping[str, object], sources: Mapping[str, Source]) -> None:
        self.settings = settings
        self.sources = sources
        self.problems: list[Diagnostic] = []
        self.broken_guard: Diagnostic | None = None

    def bad(self, name: str, key: str, value: object, problem: str, why: str,
            *, guard: bool) -> None:  # fmt: skip
        field = f"hooks.hook.{name}.{key}"
        diagnostic = HOOK_INVALID(
            field=field,
            value=value,
            source=self.sources.get(f"hook.{name}.{key}") or self._where(name),
            name=name,
            key=key,
            shown=f"{show_value(value)} " if value is not None else "",
            problem=problem,
            why=why,
            example=EXAMPLES.get(key, ""),
            guard=" (it may be a before-tool hook: until then no tool call runs)" if guard else "",
        )
        self.problems.append(diagnostic)
        if guard and self.broken_guard is None:
            self.broken_guard = diagnostic

    def _where(self, name: str) -> Source | None:
        start = f"hook.{name}."
        return next((s for k, s in self.sources.items() if k.startswith(start)), None)

    def hook(self, name: str, keys: Mapping[str, object]) -> Hook | None:
        on = keys.get("on")
        if on is None or not isinstance(on, str) or on not in EVENTS:
            problem = "is missing" if on is None else "is no event"
            if on is not None and isinstance(on, str):
                problem += _hint(on, list(EVENTS))
            self.bad(name, "on", on, problem, "a hook runs at one of: " + ", ".join(EVENTS),
                     guard=True)  # fmt: skip
            return None
        guard = on == "before-tool"
        command = keys.get("command")
        argv: str | tuple[str, ...] | None = None
        if isinstance(command, str) and command.strip():
            argv = command
        elif (
            isinstance(command, list | tuple)
            and command
            and all(isinstance(c, str) for c in command)
        ):
            argv = tuple(str(c) for c in command)
        if argv is None:
            problem = "is missing" if command is None else "is no command"
            self.bad(name, "command", command, problem, "a hook runs a command: a shell "
                     "command line, or a program and its arguments", guard=guard)  # fmt: skip
            return None
        timeout = keys.get("timeout", TIMEOUT_DEFAULT)
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not (0 < timeout <= TIMEOUT_MAX)
        ):
            self.bad(name, "timeout", timeout, "is no timeout",
                     f"a hook's timeout is seconds, more than 0 and at most {TIMEOUT_MAX:g}",
                     guard=guard)  # fmt: skip
            return None
        match = None
        if "match" in keys:
            match = self._match(name, keys["match"], guard=guard)
            if match is False:
                return None
        effects: list[str] = []
        if "effect" in keys:
            found = _words(keys["effect"])
            wrong = [w for w in found or [] if w not in EFFECTS]
            if not found or wrong:
                hint = _hint(wrong[0], list(EFFECTS)) if wrong else ""
                self.bad(name, "effect", keys["effect"], f"is no effect class{hint}",
                         "effect takes a |-list of: " + ", ".join(EFFECTS),
                         guard=guard)  # fmt: skip
                return None
            effects = found
        for key in ("match", "effect"):
            if key in keys and on not in TOOL_EVENTS:
                self.problems.append(HOOK_UNUSED(field=f"hooks.hook.{name}.{key}",
                                                 value=keys[key],
                                                 source=self.sources.get(f"hook.{name}.{key}"),
                                                 name=name, key=key, event=on))  # fmt: skip
        pattern = match if isinstance(match, re.Pattern) else None
        source = self.sources.get(f"hook.{name}.command")
        return Hook(name, on, argv, float(timeout), pattern, frozenset(effects), source)

    def _match(self, name: str, value: object, *, guard: bool) -> re.Pattern[str] | bool | None:
        """A tool-name matcher as Claude Code reads one: a regular expression the whole
        name must match ("bash|edit", "mcp_.*"); "*" or "" matches every tool."""
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            value = "|".join(str(v) for v in value)
        if not isinstance(value, str):
            self.bad(name, "match", value, "is no pattern", "match is a regular expression "
                     "over tool names, such as bash|edit", guard=guard)  # fmt: skip
            return False
        if value.strip() in ("", "*"):
            return None
        if len(value) > MATCH_MAX:
            self.bad(name, "match", value, f"is longer than {MATCH_MAX} characters",
                     "match names tools, as a short regular expression such as bash|edit",
                     guard=guard)  # fmt: skip
            return False
        if nested_repeat(value):
            self.bad(name, "match", value, "may take too long to match", "it repeats a "
                     "group that itself repeats or has alternatives, which can take "
                     "exponential time on a long tool name; name the tools instead, such "
                     "as bash|edit|mcp_.*", guard=guard)  # fmt: skip
            return False
        try:
            return re.compile(value)
        except re.error as exc:
            self.bad(name, "match", value, f"is no regular expression ({exc})",
                     "match is a regular expression over tool names, such as bash|edit",
                     guard=guard)  # fmt: skip
            return False


MATCH_MAX = 500  # characters of a matcher


def unmatched(hooks: Hooks, tools: Sequence[str]) -> list[Diagnostic]:
    """A warning for each tool hook whose matcher matches none of `tools` (smith's or
    Claude Code's names for them); a matcher naming MCP tools is left alone, as a
    server's tools may come after the session started."""
    found = []
    for hook in hooks.hooks:
        pattern = hook.match
        if pattern is None or "mcp" in pattern.pattern.lower():
            continue
        if any(pattern.fullmatch(n) for tool in tools for n in names_of(tool)):
            continue
        shown = ", ".join(tools[:12]) + (", ..." if len(tools) > 12 else "")
        found.append(HOOK_NO_TOOL(field=f"hooks.hook.{hook.name}.match", value=pattern.pattern,
                                  source=hook.source, name=hook.name,
                                  pattern=show_value(pattern.pattern), tools=shown))  # fmt: skip
    return found


def _quantifier(pattern: str, i: int) -> int:
    """The length of the repeating quantifier at `pattern[i]` (`*`, `+`, `{m,n}`), 0 if
    there is none (`?` is not one: it matches at most once)."""
    if i >= len(pattern):
        return 0
    if pattern[i] in "*+":
        return 1
    found = re.match(r"\{\d*(,\d*)?\}", pattern[i:])
    return len(found.group()) if found and found.group() != "{}" else 0


def nested_repeat(pattern: str) -> bool:
    """Whether `pattern` repeats a group that itself repeats something or has
    alternatives (`(a+)+`, `(\\w|\\w)*`): what makes a backtracking match take exponential
    time. Conservative: such a group is refused even where it would be fast."""
    stack = [False]  # per open group: whether it repeats something or has alternatives
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            stack[-1] = stack[-1] or _quantifier(pattern, i) > 0
            continue
        if c == "[":  # a class: one character, whatever it holds
            j = i + 1 + (pattern[i + 1 : i + 2] == "^")
            j += pattern[j : j + 1] == "]"
            while j < len(pattern) and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            i = j + 1
            stack[-1] = stack[-1] or _quantifier(pattern, i) > 0
            continue
        if c == "(":
            stack.append(False)
        elif c == ")" and len(stack) > 1:
            inner = stack.pop()
            repeated = _quantifier(pattern, i + 1) > 0
            if inner and repeated:
                return True
            stack[-1] = stack[-1] or inner or repeated
        elif c == "|":
            stack[-1] = True
        elif _quantifier(pattern, i):
            stack[-1] = True
            i += _quantifier(pattern, i)
            continue
        i += 1
    return False


def _program(hook: Hook, root: str) -> str | None:
    """The path of the program a hook's command starts with (None: no path, or a command
    line that is not plain words)."""
    import os
    import shlex

    if isinstance(hook.command, tuple):
        first = hook.command[0] if hook.command else ""
    else:
        try:
            words = shlex.split(hook.command)
        except ValueError:
            return None
        first = words[0] if words else ""
    if "/" not in first and not first.startswith("~"):
        return None
    return os.path.realpath(os.path.join(root, os.path.expanduser(first)))


def hidden_programs(hooks: Hooks, hidden: Sequence[str], root: str) -> Hooks:
    """`hooks` with a warning for each hook whose program is in one of the `hidden`
    directories (smith's own, which the sandbox hides: the hook could never run)."""
    import os

    found = []
    for hook in hooks.hooks:
        program = _program(hook, root)
        for directory in hidden:
            real = os.path.realpath(directory)
            if program is not None and (program + "/").startswith(real.rstrip("/") + "/"):
                found.append(HOOK_HIDDEN(field=f"hooks.hook.{hook.name}.command",
                                         value=program, source=hook.source, name=hook.name,
                                         program=program, directory=directory))  # fmt: skip
                break
    if not found:
        return hooks
    return Hooks(hooks.hooks, (*hooks.problems, *found), hooks.broken_guard)


def parse(config: Config) -> Hooks:
    """The hooks `config` sets (its open section `hooks`), in the order of their names.

    Each configuration file's hooks are its own: a hook named in two files (the user's
    and a project's) is two hooks, each as its file has it, so a project's hook never
    replaces or weakens the user's (a warning says so); a name given twice in one file
    is one hook, the later block's keys replacing the earlier's (a warning too)."""
    subtree = config.subtree("hooks")
    if not subtree:
        return NONE
    files, twice = _by_file(config, subtree)
    parts = [parse_keys({k: v.value for k, v in keys.items()},
                        {k: v.source for k, v in keys.items()})
             for keys in files.values()]  # fmt: skip
    if len(parts) == 1 and not twice:
        return parts[0]
    problems = [p for part in parts for p in part.problems]
    for (layer, name), keys in twice.items():
        where = [s.source for k, s in files[layer].items() if k.startswith(f"hook.{name}.")]
        problems.append(HOOK_TWICE(field=f"hooks.hook.{name}", value=name, source=where[0],
                                   name=name, keys=", ".join(keys)))  # fmt: skip
    by_name: dict[str, list[Hook]] = {}
    for hook in (h for part in parts for h in part.hooks):
        by_name.setdefault(hook.name, []).append(hook)
    for name, same in by_name.items():
        if len(same) > 1:
            shown = " and ".join(_file(h.source) for h in same)
            problems.append(HOOK_SHADOWED(field=f"hooks.hook.{name}", value=name,
                                          source=same[-1].source, name=name,
                                          files=shown))  # fmt: skip
    guard = next((p.broken_guard for p in parts if p.broken_guard is not None), None)
    return Hooks(tuple(h for p in parts for h in p.hooks), tuple(problems), guard)


def _by_file(
    config: Config, subtree: Mapping[str, Setting]
) -> tuple[dict[str, dict[str, Setting]], dict[tuple[str, str], list[str]]]:
    """The `hooks` keys each layer (file) gave, lowest layer first, and the keys a hook
    was given again in one layer ((layer, hook name) -> keys)."""
    from smith.config import LAYERS

    replaced = getattr(config, "replaced", {})
    files: dict[str, dict[str, Setting]] = {}
    twice: dict[tuple[str, str], list[str]] = {}
    for key, winner in subtree.items():
        for setting in [*replaced.get(f"hooks.{key}", ()), winner]:
            given = files.setdefault(setting.layer, {})
            if key in given:
                name = key.partition(".")[2].rpartition(".")[0]
                twice.setdefault((setting.layer, name), []).append(key.rpartition(".")[2])
            given[key] = setting
    order = sorted(files, key=lambda layer: LAYERS.index(layer) if layer in LAYERS else 99)
    return {layer: files[layer] for layer in order}, twice


def _file(source: Source | None) -> str:
    """The file a key was set in (a source reads PATH:LINE:COL)."""
    if source is None:
        return "configuration"
    where = source.location
    return where.rsplit(":", 2)[0] if where.count(":") >= 2 else where


def package_hooks(config: Config) -> Hooks:
    """The hooks of the enabled installed packages (smith.packages: plugin.kdl's `hooks`
    block in smith's format, a Claude Code plugin's hooks/hooks.json), each named
    PACKAGE-NAME, checked as configuration's are, each reading its package's folder."""
    import dataclasses

    from smith.packages import package_hooks as found

    hooks: list[Hook] = []
    problems: list[Diagnostic] = []
    guard: Diagnostic | None = None
    for package in found(config):
        by_name: dict[str, dict[str, object]] = {}
        for key, value in package.values.items():
            by_name.setdefault(key.rpartition(".")[0], {})[key] = value
        root = (package.package.root,)
        for name, values in by_name.items():  # each hook alone: a broken one is its own
            parsed = parse_keys(values, package.sources)
            hooks += [dataclasses.replace(h, readable=root, claude=h.name in package.claude)
                      for h in parsed.hooks]  # fmt: skip
            problems += parsed.problems
            if parsed.broken_guard is not None:
                scoped = _scoped(name, values, parsed.broken_guard)
                if scoped is not None:
                    hooks.append(scoped)
                else:
                    guard = guard or parsed.broken_guard
    return Hooks(tuple(hooks), tuple(problems), guard)


def _scoped(key: str, values: Mapping[str, object], problem: Diagnostic) -> Hook | None:
    """A package's broken guard `key` ("hook.NAME") as a hook denying only the calls its
    `match` names, when that can be read; None when it cannot (then every call waits)."""
    match = values.get(f"{key}.match")
    if not isinstance(match, str) or match.strip() in ("", "*"):
        return None
    pattern = _Parser({}, {})._match(key, match, guard=False)
    if not isinstance(pattern, re.Pattern):
        return None
    return Hook(key.partition(".")[2], "before-tool", (), match=pattern, broken=problem)


def joined(first: Hooks, second: Hooks) -> Hooks:
    """Both sets of hooks (configuration's, then the packages'), and both's problems."""
    if not second.hooks and not second.problems:
        return first
    return Hooks((*first.hooks, *second.hooks), (*first.problems, *second.problems),
                 first.broken_guard or second.broken_guard)  # fmt: skip


def parse_keys(values: Mapping[str, object], sources: Mapping[str, Source]) -> Hooks:
    parser = _Parser(values, sources)
    by_name: dict[str, dict[str, object]] = {}
    for key, value in values.items():
        kind, _, rest = key.partition(".")
        name, _, leaf = rest.rpartition(".")
        if kind != "hook" or not name:  # not a hook at all: it may have been a guard
            hint = " (did you mean a hook block?)" if kind in CLAUDE_EVENTS else ""
            shape = HOOK_SHAPE(field=f"hooks.{key}", value=value, source=sources.get(key),
                               key=key, hint=hint)  # fmt: skip
            parser.problems.append(shape)
            parser.broken_guard = parser.broken_guard or shape
            continue
        if leaf not in KEYS:
            parser.problems.append(HOOK_UNKNOWN_KEY(field=f"hooks.{key}", value=value,
                                                    source=sources.get(key), key=key,
                                                    hint=_hint(leaf, list(KEYS))))  # fmt: skip
            continue
        by_name.setdefault(name, {})[leaf] = value
    hooks = [h for name, keys in by_name.items() if (h := parser.hook(name, keys)) is not None]
    return Hooks(tuple(hooks), tuple(parser.problems), parser.broken_guard)
