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

    from smith.config import Config
    from smith.effects import ToolFacts

# smith's event names (what `on` takes) -> the runtime's event the plugin handles there.
EVENTS = {
    "before-tool": "tool_call",
    "after-tool": "tool_result",
    "prompt": "input",
    "stop": "agent_end",
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
    "before-compaction": "PreCompact",
    "session-start": "SessionStart",
    "session-end": "SessionEnd",
}
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
HOOK_UNUSED = DiagnosticKind(
    "hooks.unused-match",
    what="hook '{name}': {key} is set, but a {event} hook has no tool to match",
    why="match and effect choose the tool calls a before-tool or after-tool hook runs for",
    fix="remove {key}, or make it a before-tool or after-tool hook; the hook runs at every {event}",
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

    def matches(self, tool: str, facts: ToolFacts | None) -> bool:
        """Whether a call of `tool` (its facts: None, a tool the runtime does not know)
        is one this hook runs for."""
        if self.match is not None and self.match.fullmatch(tool) is None:
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
        return [h for h in self.hooks if h.on == event]


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
        try:
            return re.compile(value)
        except re.error as exc:
            self.bad(name, "match", value, f"is no regular expression ({exc})",
                     "match is a regular expression over tool names, such as bash|edit",
                     guard=guard)  # fmt: skip
            return False


def _program(hook: Hook, root: str) -> str | None:
    """The path of the program a hook's command starts with (None: no path, or a command
    line that is not plain words)."""
    import os
    import shlex

    if isinstance(hook.command, tuple):
        first = hook.command[0]
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
    """The hooks `config` sets (its open section `hooks`), in the order of their names."""
    subtree = config.subtree("hooks")
    if not subtree:
        return NONE
    values = {key: setting.value for key, setting in subtree.items()}
    sources = {key: setting.source for key, setting in subtree.items()}
    return parse_keys(values, sources)


def parse_keys(values: Mapping[str, object], sources: Mapping[str, Source]) -> Hooks:
    parser = _Parser(values, sources)
    by_name: dict[str, dict[str, object]] = {}
    for key, value in values.items():
        kind, _, rest = key.partition(".")
        name, _, leaf = rest.rpartition(".")
        if kind != "hook" or not name or leaf not in KEYS:
            hint = ""
            if kind == "hook" and name:
                hint = _hint(leaf, list(KEYS))
            parser.problems.append(HOOK_UNKNOWN_KEY(field=f"hooks.{key}", value=value,
                                                    source=sources.get(key), key=key,
                                                    hint=hint))  # fmt: skip
            continue
        by_name.setdefault(name, {})[leaf] = value
    hooks = [h for name, keys in by_name.items() if (h := parser.hook(name, keys)) is not None]
    return Hooks(tuple(hooks), tuple(parser.problems), parser.broken_guard)
