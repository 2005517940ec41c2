"""Approvals: which tool calls run without asking the user, on the `tool_call` hook.

`approval` (smith's own setting, owned here) is the policy:

    never        nothing asks; what the sandbox refuses fails
    on-failure   a command the sandbox stopped may be run again outside it once the user
                 approves (the bash tool asks: smith.effects.tools.bash)
    on-request   the model may ask to run a command outside the sandbox, with a reason
                 (bash's `unsandboxed` and `reason`); the user approves or not
    untrusted    every mutating call (bash, write, edit) asks first, here: approve it
                 once, that tool for this session, a command's first words for this
                 session or always (kept in approval.allow in the user's configuration
                 file), or deny it with a reason, which reaches the model

`approval.allow` and `approval.deny` refine it, for every policy: a rule is a tool's name
or the start of a bash command in whole words (`git status`, `rm -rf`). Deny wins, and
the matched rule is named. A deny rule matches any part of a compound command
(`make; rm -rf x`); an allow rule only a simple one (no `;`, `&&`, `|`, redirection or
substitution), so allowing `git status` never allows `git status; curl ...`. Deny rules
see through quotes, wrappers (`env`, `sudo`, `command`), paths (`/bin/rm`), flag order and
`sh -c`, but they guard against accidents and are no boundary (`r=rm; $r -rf` passes):
the sandbox is the boundary.

Asking is a UI question (smith.ui): the app's overlay, RPC's `ui.ask`; eval and MCP
refuse it, so the call is denied with a reason that names the flag to change. Each
question and its answer is recorded in the session (entry kind `question`), so replay
shows every decision.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from smith.sdk import DenyCall, Plugin, RuntimeView
from smith.ui import Notify, Question, Reply

MUTATING = ("bash", "write", "edit")
# Where a command holds another: separators, pipes, substitutions and redirections.
COMPOUND = re.compile(r";|&|\||`|\$\(|<|>|\n")

SHOWN = 400  # characters of a command shown in the question
PREFIX_WORDS = 2  # at most, of a command's first words an approval covers (`git status`)

# What the user approved for the rest of a session (session id -> rules), and always (in
# the user's approval.allow too, which this process read before it was added).
_APPROVED: dict[str, set[str]] = {}
_ALWAYS: set[str] = set()


BLANKS = re.compile(r"[ \t]+")  # what bash splits words on (not \v, \r, NBSP: Python's)


def _words(text: str) -> list[str]:
    return [w for w in BLANKS.split(text.strip(" \t")) if w]


def matches(rule: str, name: str, arguments: Mapping[str, Any], *, deny: bool) -> bool:
    """Whether `rule` covers this call (see the module's docstring)."""
    rule = rule.strip()
    if not rule:
        return False
    if rule == name:
        return True
    if name != "bash":
        return False
    command = str(arguments.get("command", ""))
    want = _words(rule)
    if deny:
        return _denies(want, command, depth=0)
    return not COMPOUND.search(command) and _words(command)[: len(want)] == want


# Words that run the next ones (or start a compound): a deny rule looks past them.
WRAPPERS = frozenset({"env", "command", "exec", "builtin", "sudo", "doas", "nice", "nohup",
                      "time", "stdbuf", "xargs", "!", "(", "{", "if", "then", "do", "else",
                      "elif", "while", "until"})  # fmt: skip
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _unquoted(part: str) -> list[str]:
    import shlex

    try:
        return shlex.split(part, posix=True)
    except ValueError:  # an unbalanced quote: words as they stand, quotes dropped
        return [w.strip("'\"\\") for w in part.split()]


def _denies(want: list[str], command: str, *, depth: int) -> bool:
    """A deny rule against each simple command of `command`, as a shell would run it:
    quotes and backslashes gone, past assignments and wrappers (env, sudo, command, ...),
    the program by its base name, and the rule's short flags in any order or grouping
    (`rm -rf` denies `rm -fr` and `rm -r -f`); `sh -c '...'` is looked into. A guard
    against accidents, not a boundary: `r=rm; $r -rf` is not caught."""
    import os

    for part in re.split(r";|&&|\|\||\||&|\n|`|\$\(|\(|\)|\{|\}", command):
        words = _unquoted(part)
        while words and (words[0] in WRAPPERS or ASSIGNMENT.match(words[0])
                         or (words[0].startswith("-") and len(words) > 1)):  # fmt: skip
            words = words[1:]
        if not words:
            continue
        program, rest = os.path.basename(words[0]), words[1:]
        if program in SHELLS and "-c" in rest and depth < 3:
            inner = rest[rest.index("-c") + 1 :]
            if inner and _denies(want, inner[0], depth=depth + 1):
                return True
        if program != want[0]:
            continue
        flags = {c for w in rest if w.startswith("-") and not w.startswith("--") for c in w[1:]}
        if all(
            (set(w[1:]) <= flags) if w.startswith("-") and not w.startswith("--") else w in rest
            for w in want[1:]
        ):
            return True
    return False


def first_match(rules: Sequence[str], name: str, arguments: Mapping[str, Any], *,
                deny: bool) -> str | None:  # fmt: skip
    return next((r for r in rules if matches(r, name, arguments, deny=deny)), None)


def _rules(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list | tuple) else []


def _described(name: str, arguments: Mapping[str, Any]) -> str:
    if name == "bash":
        command = str(arguments.get("command", ""))
        shown = command if len(command) <= SHOWN else command[:SHOWN] + "…"
        return f"run this command:\n\n  {shown}"
    path = arguments.get("path", "?")
    return f"{'write' if name == 'write' else 'edit'} the file {path}"


def decide(settings: Mapping[str, object], session: str, name: str,
           arguments: Mapping[str, Any], tools: Sequence[str] = ()
           ) -> DenyCall | Question | None:  # fmt: skip
    """What approval makes of this call: denied now (DenyCall), allowed (None), or the
    question to ask the user first (then `answered`). `tools`: the active tools' names,
    which no prefix approval may become."""
    denied = first_match(_rules(settings.get("approval.deny")), name, arguments, deny=True)
    if denied is not None:
        return DenyCall(f"the approval.deny rule {denied!r} matches this {name} call")
    if settings.get("approval") != "untrusted" or name not in MUTATING:
        return None
    approved = [*_rules(settings.get("approval.allow")), *_ALWAYS, *_APPROVED.get(session, ())]
    if first_match(approved, name, arguments, deny=False) is not None:
        return None
    choices = [("once", "Approve once"), ("session", f"Approve every {name} call for this session")]
    first = prefix(arguments, tools) if name == "bash" else ""
    if first:
        choices += [("prefix", f"Approve commands starting `{first}` for this session"),
                    ("always", f"Approve commands starting `{first}` always "
                               "(added to approval.allow in your configuration)")]  # fmt: skip
    choices.append(("deny", "Deny (you may say why)"))
    return Question(f"smith wants to {_described(name, arguments)}", choices, reasons=("deny",))


# First words no prefix approval is offered for: they run whatever follows them (a
# wrapper, a shell, an interpreter), so approving them would approve every command.
INTERPRETERS = ("python", "python3", "node", "perl", "ruby", "php", "deno", "bun", "npx",
                "pnpx", "uvx", "eval", "source", ".", "exec", "ssh", "docker", "kubectl",
                "watch", "timeout", "flock")  # fmt: skip
RUNS_ANYTHING = WRAPPERS | SHELLS | frozenset(INTERPRETERS)


def prefix(arguments: Mapping[str, Any], tools: Sequence[str] = ()) -> str:
    """The first words of a simple command that an approval of its prefix covers: up to
    PREFIX_WORDS, before any flag, path or assignment (`git status -s` -> `git status`,
    `date -u` -> `date`). Empty, so nothing is offered, for a compound command (no allow
    rule matches one), for one that starts with a word that runs anything after it
    (`sudo`, `env`, `bash`, `python3`: RUNS_ANYTHING), and where the words would name a
    tool (`write --help` -> `write`: a built-in's name or one of `tools`): a rule that is
    a tool's name allows every call of that tool."""
    from smith.effects import builtin_tools

    command = str(arguments.get("command", ""))
    if COMPOUND.search(command):
        return ""
    words: list[str] = []
    for word in _words(command)[:PREFIX_WORDS]:
        if word.startswith("-") or "/" in word or "=" in word or not word.isprintable():
            break
        words.append(word)
    if not words or words[0] in RUNS_ANYTHING:
        return ""
    rule = " ".join(words)
    return "" if rule in builtin_tools() or rule in tools else rule


def answered(
    reply: Reply,
    session: str,
    name: str,
    arguments: Mapping[str, Any],
    keep: Callable[[str, str], str] | None = None,
    tools: Sequence[str] = (),
) -> DenyCall | Notify | None:
    """The call after the user's answer: denied (with the user's reason), or allowed, and
    remembered for the session or always (kept in approval.allow by `keep`) when they
    said so; a Notify says where an "always" was kept, or why it could not be."""
    if not reply.answered:
        return DenyCall(
            f"approval is untrusted, so this {name} call needs the user's approval, and "
            f"none came ({reply.refused}). To let such calls run without asking, pass "
            f"--approval never (or on-failure), or allow them with --approval-allow {name}"
        )
    if reply.choice == "deny":
        why = f": {reply.note}" if reply.note else " (no reason given)"
        return DenyCall(f"the user denied this {name} call{why}")
    if reply.choice == "session":
        _APPROVED.setdefault(session, set()).add(name)
    elif reply.choice in ("prefix", "always") and (first := prefix(arguments, tools)):
        _APPROVED.setdefault(session, set()).add(first)
        if reply.choice == "always":
            return _kept(first, keep)
    return None


def _kept(rule: str, keep: Callable[[str, str], str] | None) -> Notify:
    _ALWAYS.add(rule)
    try:
        if keep is None:
            raise OSError("no configuration file to keep it in")
        where = keep("approval.allow", rule)
    except (OSError, LookupError) as exc:
        return Notify(f"approved `{rule}` for this run only: it could not be added to "
                      f"approval.allow ({exc})", "warning")  # fmt: skip
    return Notify(f"commands starting `{rule}` now run without asking (approval.allow, {where})")


async def review(event: dict[str, Any], view: RuntimeView) -> DenyCall | Notify | None:
    """The tool_call hook: a call of a turn."""
    name, arguments = str(event["name"]), event.get("arguments") or {}
    tools = view.tool_names
    verdict = decide(view.settings, view.session_id, name, arguments, tools)
    if isinstance(verdict, Question):
        reply = await view.ask(verdict)
        return answered(reply, view.session_id, name, arguments, view.remember, tools)
    return verdict


PLUGIN = Plugin(
    "approval",
    handlers={"tool_call": review},
    # smith's own settings it decides by (declared in smith.config).
    settings={"approval": "on-failure", "approval.allow": [], "approval.deny": []},
)
