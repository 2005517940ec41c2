"""Approvals: which tool calls run without asking the user, on the `tool_call` hook.

`approval` (smith's own setting, owned here) is the policy:

    never        nothing asks; what the sandbox refuses fails
    on-failure   a command the sandbox stopped may be run again outside it once the user
                 approves (the bash tool asks: smith.effects.tools.bash); a call of a
                 tool that acts outside the sandbox (ToolFacts.outside: an MCP server
                 over HTTP or with sandbox=false) and is not read-only asks first, here
    on-request   the model may ask to run a command outside the sandbox, with a reason
                 (bash's `unsandboxed` and `reason`); the user approves or not
    untrusted    every call of a tool that is not read-only asks first, here: approve
                 it once, that tool for this session, a command's first words for this
                 session or always (kept in approval.allow in the user's configuration
                 file), or deny it with a reason, which reaches the model

What a tool does is what its spec declares (smith.effects.ToolFacts, read through
RuntimeView.tool), never its name: a tool whose effect is "reads" runs unasked; one that
writes files, runs commands, reaches the network or declares nothing ("unknown": a
plugin's or a library caller's tool that says nothing) asks. A tool that names its
command argument (bash's `command`) is judged by the command it runs.

`approval.allow` and `approval.deny` refine it, for every policy: a rule is a tool's name
or the start of a command in whole words (`git status`, `rm -rf`). Deny wins, and
the matched rule is named. Commands are parsed as bash parses them (plugins/_bashrules.py,
on tree-sitter-bash), once per call whatever the number of rules. A deny rule matches
every program the command runs: in any part of a compound command, substitutions and
functions, through wrappers and their options (`nice -n 5 rm`, `xargs -n 1 rm`), `sh -c`
and `eval` of literal text, `find -exec`, with quotes, ANSI-C quoting and braces
expanded, and options by meaning (`rm -rf` denies `rm -Rf` and `rm --recursive
--force`). What it cannot see (a variable or glob as the program, `eval` of computed
text, code given to an interpreter, source it cannot parse) is denied when the rule could
match it, with why. An allow rule matches only a lone simple command (no list, pipe,
redirection, substitution or assignment) that runs nothing beyond the rule's words, so
allowing `git status` never allows `git status; curl ...`, nor `git` allow `git -c
alias.x='!sh' x`. The sandbox stays the boundary: a program that runs others from a file
(`make`, `python x.py`) is not looked into.

A prefix approval may start with an interpreter only where it names a module that runs
what it says over files (`python3 -m pytest`, PYTHON_MODULES): never code given inline
(`python3 -c`), never a module that runs code or commands it is handed (`-m timeit`,
`-m cProfile`, `-m pdb`), and never `-m pip`, whose install runs the build code of
whatever it fetches. A script (`python3 manage.py`) is not offered: it may take code
(`manage.py shell -c`). Programs whose subcommands or options run other commands (`npm
exec`, `uv run`, `go test -exec`, `cargo --config`, `make --eval` or `make CC=...`) are
known to the rules (plugins/_bashprograms.py), so `npm test` is offered and covers no
call that runs something else.

Asking is a UI question (smith.ui): the app's overlay, RPC's `ui.ask`; eval and MCP
refuse it, so the call is denied. The question carries what it is about (its `detail`):
the diff an edit or write would make, computed by the tool's own code without making it
(RuntimeView.preview), or the whole command. Escape in the app interrupts: the call is
denied and the turn ends (Reply.interrupt, DenyCall.interrupt). What the model is told of
a denial speaks to it: what was denied and what it may do instead. Each question and its
answer is recorded in the session (entry kind `question`), so replay shows every
decision.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from smith.effects import ToolFacts
from smith.sdk import Plugin, RuntimeView
from smith.ui import Detail, Notify, Question, Reply

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.sdk import DenyCall

# What a tool declares, by its name (RuntimeView.tool in a runtime); None: no such tool.
Facts = Callable[[str], ToolFacts | None]

# The bash parser and the program table (plugins/_bashrules.py, _bashprograms.py) are
# imported where a bash call is judged: every mode's start resolves this plugin.

SHOWN = 400  # characters of a command shown in the question's text (its detail has all)
NAMED = 120  # characters of a command named in what the model is told of a denial
PREFIX_WORDS = 2  # at most, of a command's first words an approval covers (`git status`)
# Modules `python3 -m` may name in a prefix approval: tools over files, none of which runs
# code or a command given in its arguments (see the module's docstring).
PYTHON_MODULES = frozenset({"pytest", "unittest", "venv", "py_compile", "compileall",
                            "json.tool", "black", "isort", "ruff", "flake8", "build"})  # fmt: skip
# A word a prefix may hold: shown as it is, and read back as the same word (not `;` from
# `$'\x3b'`, nor a quoted space).
PLAIN_WORD = re.compile(r"[\w.,:@%+][\w.,:@%+-]*", re.ASCII)

# What the user approved for the rest of a session: rules (a tool's name, a command's
# first words, "always" ones too, which the user's approval.allow holds from the next
# session on) kept in the plugin's state in the session (RuntimeView.state), so a resumed
# session has them and nothing else does.
APPROVED = "approved"


def builtin_facts(name: str) -> ToolFacts | None:
    """What the built-in tool `name` declares: the facts the functions below go by when
    they are given none (a runtime gives the active tools' own, RuntimeView.tool)."""
    spec = _builtins().get(name)
    return spec.facts if spec is not None else None


@functools.cache
def _builtins() -> Mapping[str, Any]:
    from smith.effects import builtin_tools

    return builtin_tools()


def _of(name: str, facts: Facts) -> ToolFacts:
    """What `name` declares; a tool that declares nothing (or is unknown) may do anything."""
    return facts(name) or ToolFacts(name, "unknown", mutating=True)


def _command(arguments: Mapping[str, Any], tool: ToolFacts | None = None) -> str:
    return str(arguments.get(tool.command if tool and tool.command else "command", ""))


def matches(rule: str, name: str, arguments: Mapping[str, Any], *, deny: bool,
            facts: Facts = builtin_facts) -> bool:  # fmt: skip
    """Whether `rule` covers this call (see the module's docstring); a deny rule also
    when it could (what it cannot see)."""
    rule = rule.strip()
    if not rule:
        return False
    if rule == name:
        return True
    tool = _of(name, facts)
    if tool.command is None:
        return False
    from ._bashrules import allows, analyse, denial

    analysis = analyse(_command(arguments, tool))
    return denial([rule], analysis) is not None if deny else allows(rule, analysis)


def denied(rules: Sequence[str], name: str, arguments: Mapping[str, Any],
           facts: Facts = builtin_facts) -> str | None:  # fmt: skip
    """Why the first deny rule that matches this call denies it (a tool's name first),
    else why one that could match does; None when none could. The command is parsed once."""
    rules = [r.strip() for r in rules if r.strip()]
    if name in rules:
        return f"the approval.deny rule {name!r} matches this {name} call"
    tool = _of(name, facts)
    if tool.command is None or not rules:
        return None
    from ._bashrules import analyse, denial

    return denial(rules, analyse(_command(arguments, tool)))


def first_match(rules: Sequence[str], name: str, arguments: Mapping[str, Any], *,
                deny: bool, facts: Facts = builtin_facts) -> str | None:  # fmt: skip
    return next((r for r in rules if matches(r, name, arguments, deny=deny, facts=facts)), None)


def _rules(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list | tuple) else []


def _described(tool: ToolFacts, arguments: Mapping[str, Any]) -> str:
    if tool.command is not None:
        command = _command(arguments, tool)
        shown = command if len(command) <= SHOWN else command[:SHOWN] + "…"
        return f"run this command:\n\n  {shown}"
    if isinstance(arguments.get("path"), str):  # `write the file a.txt`, `edit the file ...`
        return f"{tool.name} the file {arguments['path']}"
    shown = _arguments(arguments, SHOWN)
    return f"use the {tool.name} tool" + (f" with {shown}" if shown else "")


def _arguments(arguments: Mapping[str, Any], most: int) -> str:
    """A call's arguments as one line of JSON, at most `most` characters."""
    import json

    text = json.dumps(dict(arguments), ensure_ascii=False, default=str) if arguments else ""
    return text if len(text) <= most else text[:most] + "…"


def _what(tool: ToolFacts, arguments: Mapping[str, Any]) -> str:
    """The call as the model is told of it: `edit of src/app.py`, `command `make``."""
    if tool.command is not None:
        command = " ".join(_command(arguments, tool).split())
        return f"command `{command if len(command) <= NAMED else command[:NAMED] + '…'}`"
    if isinstance(arguments.get("path"), str):
        return f"{tool.name} of {arguments['path']}"
    if not arguments:  # a call with no arguments (a skill's tool): no "of ?"
        return f"{tool.name} call"
    return f"{tool.name} call ({_arguments(arguments, NAMED)})"


def detail(name: str, arguments: Mapping[str, Any], view: RuntimeView | None = None,
           facts: Facts = builtin_facts) -> Detail | None:  # fmt: skip
    """What the question shows of the call: the whole command, or the diff the call
    would make (the tool's own preview, nothing changed), or why it would fail."""
    tool = _of(name, facts)
    if tool.command is not None:
        return Detail("command", _command(arguments, tool))
    return view.preview(name, arguments) if view is not None and tool.previews else None


def decide(settings: Mapping[str, object], approved: Sequence[str], name: str,
           arguments: Mapping[str, Any], tools: Sequence[str] = (),
           shown: Callable[[], Detail | None] = lambda: None,
           facts: Facts = builtin_facts, *,
           interactive: bool = True) -> DenyCall | Question | None:  # fmt: skip
    """What approval makes of this call: denied now (DenyCall), allowed (None), or the
    question to ask the user first (then `answered`), with what `shown` gives as its
    detail. `approved`: the rules the user approved for this session; `tools`: the
    active tools' names; `facts`: what each declares; `interactive`: whether the
    runtime has someone to ask (the app, RPC), where on-failure also asks before a
    tool that acts outside the sandbox."""
    why = denied(_rules(settings.get("approval.deny")), name, arguments, facts)
    if why is not None:
        return _deny(why)
    tool = _of(name, facts)
    if tool.read_only or not _asks_for(settings.get("approval"), tool, interactive):
        return None
    approved = [*_rules(settings.get("approval.allow")), *approved]
    if first_match(approved, name, arguments, deny=False, facts=facts) is not None:
        return None
    choices = [("once", "Approve once"), ("session", f"Approve every {name} call this session")]
    first = prefix(arguments, tools, facts=facts, tool=tool) if tool.command is not None else ""
    if first:
        choices += [("prefix", f"Approve commands starting `{first}` this session"),
                    ("always", f"Approve commands starting `{first}` always "
                               "(kept in approval.allow)")]  # fmt: skip
    choices.append(("deny", "Deny, and say why (optional)"))
    where = " (outside the sandbox)" if tool.outside else ""
    return Question(f"smith wants to {_described(tool, arguments)}{where}", choices,
                    reasons=("deny",), detail=shown())  # fmt: skip


def _asks_for(policy: object, tool: ToolFacts, interactive: bool) -> bool:
    """Whether `policy` asks before a call of `tool` (not read-only): untrusted asks
    before every one; on-failure and on-request, where someone can be asked, before one
    that acts outside the sandbox (ToolFacts.outside: an MCP server over HTTP or with
    sandbox=false), which no sandbox failure would ever stop. Where nobody is (eval,
    `smith mcp`, the library) such a call runs as the sandbox's own failures would not
    be retried there: unasked (approval untrusted denies it there)."""
    if policy == "untrusted":
        return True
    return interactive and policy in ("on-failure", "on-request") and tool.outside


# The runtimes' surfaces where someone answers approval's questions.
ASKING_SURFACES = ("tui", "rpc")


def prefix(arguments: Mapping[str, Any], tools: Sequence[str] = (), *,
           facts: Facts = builtin_facts, tool: ToolFacts | None = None) -> str:  # fmt: skip
    """The first words of a simple command that an approval of its prefix covers: up to
    PREFIX_WORDS, before any option, path or assignment (`git status -s` -> `git status`,
    `ls -la` -> `ls`), or `python3 -m MODULE` for a module of PYTHON_MODULES. Empty, so
    nothing is offered, where the rule would not cover this very command (a compound
    one, or one that runs more than its first words), for a program that runs whatever
    follows it or code (a wrapper, shell or interpreter, by what it is: `sudo`,
    `python3.12 -c`, `busybox`, `sed`: RUNS_ANYTHING), for a program whose options or
    subcommands can run commands when an option comes first (`git -c ...`, `npm
    --script-shell=...`: RUNS_BY_OPTION; `git status` and `npm test` are offered), and
    where the rule would be the name of a tool approval asks about (`bash --version` ->
    `bash`, `write`, `edit`, any tool of `tools` that is not read-only): such a rule
    allows every call of that tool. `tool`: the command tool (its command argument). A word that is
    not plain (`$'\x3b'`, `"a b"`) ends it, and a toolchain (`cargo +nightly test` ->
    `cargo test`) is skipped: the rule covers the subcommand under any toolchain, never
    every subcommand under one. A rule naming a tool that never asks (`ls`, `find`)
    allows nothing that asked."""
    from ._bashprograms import RUNS_ANYTHING, RUNS_BY_OPTION, program
    from ._bashrules import allows, analyse, toolchain

    analysis = analyse(_command(arguments, tool))
    words = analysis.simple or ()
    first: list[str] = []
    for k, word in enumerate(words):
        text = word.text
        if len(first) == PREFIX_WORDS or not word.static or not PLAIN_WORD.fullmatch(text):
            break
        if k == 1 and toolchain(words):
            continue
        if text[0] == "+":
            break
        first.append(text)
    if first and program(first[0]) == "python" and len(words) > 2:
        first = _module(words[:3])
        rule = " ".join(first)
        return rule if first and allows(rule, analysis) else ""
    if not first or program(first[0]) in RUNS_ANYTHING:
        return ""
    if program(first[0]) in RUNS_BY_OPTION and len(first) == 1 and len(words) > 1:
        return ""
    rule = " ".join(first)
    if _asks(rule, tools, facts) or not allows(rule, analysis):
        return ""
    return rule


def _asks(rule: str, tools: Sequence[str], facts: Facts) -> bool:
    """Whether `rule` names a tool approval asks about (of `tools` or the built-ins)."""
    from smith.effects.tools import NAMES

    return rule in (*tools, *NAMES) and not _of(rule, facts).read_only


def _module(words: Sequence[Any]) -> list[str]:
    """`python3 -m pytest` as words, for a module of PYTHON_MODULES; else none."""
    texts = [w.text for w in words]
    if not all(w.static for w in words) or texts[1] != "-m" or texts[2] not in PYTHON_MODULES:
        return []
    return texts


def answered(
    reply: Reply,
    approve: Callable[[str], object] | None,
    name: str,
    arguments: Mapping[str, Any],
    keep: Callable[[str, str], str] | None = None,
    tools: Sequence[str] = (),
    facts: Facts = builtin_facts,
) -> DenyCall | Notify | None:
    """The call after the user's answer: denied (with the user's reason), or allowed, and
    remembered for the session (`approve(rule)`) or always (kept in approval.allow by
    `keep` too) when they said so; a Notify says where an "always" was kept, or why it
    could not be."""
    approve = approve or (lambda rule: None)
    tool = _of(name, facts)
    what = _what(tool, arguments)
    if reply.interrupt:
        return _deny(f"they pressed Escape at the approval of this {what}", interrupt=True)
    if not reply.answered:
        return _deny(
            f"this {what} needs the user's approval first, and none could be had "
            f"({reply.refused}). Do not retry it; do what you can without it, and tell the "
            "user what you need to run and why, so they can allow it"
        )
    if reply.choice == "deny":
        why = f": {reply.note}" if reply.note else " (they gave no reason)"
        return _deny(f"the user denied this {what}{why}. Do not retry it; ask the user, "
                        "or take another approach")  # fmt: skip
    if reply.choice == "session":
        approve(name)
    elif (
        reply.choice in ("prefix", "always")
        and tool.command is not None
        and (first := prefix(arguments, tools, facts=facts, tool=tool))
    ):
        approve(first)
        if reply.choice == "always":
            return _kept(first, keep)
    return None


def _kept(rule: str, keep: Callable[[str, str], str] | None) -> Notify:
    try:
        if keep is None:
            raise OSError("no configuration file to keep it in")
        where = keep("approval.allow", rule)
    except (OSError, LookupError) as exc:
        return Notify(f"approved `{rule}` for this session only: it could not be added to "
                      f"approval.allow ({exc})", "warning")  # fmt: skip
    return Notify(f"commands starting `{rule}` now run without asking (approval.allow, {where})")


def _approve(view: RuntimeView, rule: str) -> None:
    """`rule` approved for the rest of the session: kept in the plugin's state there."""
    rules = _rules(view.state.get(APPROVED))
    if rule not in rules:
        view.set_state(APPROVED, [*rules, rule])


# For the user, where nobody could be asked (eval, MCP, a timeout): how such calls run.
UNASKED = ("a {name} call was denied: approval is untrusted and nobody could approve it "
           "here. To let such calls run without asking, pass --approval never (or "
           "on-failure), or allow them with --approval-allow {name}")  # fmt: skip
UNASKED_OUTSIDE = ("a {name} call was denied: it acts outside the sandbox, so approval "
                   "{policy} asks first, and nobody could approve it here. To let such calls "
                   "run without asking, allow them with --approval-allow {name} (or pass "
                   "--approval never)")  # fmt: skip


async def review(event: dict[str, Any], view: RuntimeView
                 ) -> DenyCall | Notify | list[DenyCall | Notify] | None:  # fmt: skip
    """The tool_call hook: a call of a turn."""
    name, arguments = str(event["name"]), event.get("arguments") or {}
    tools, facts = view.tool_names, view.tool
    verdict = decide(view.settings, _rules(view.state.get(APPROVED)), name, arguments, tools,
                     lambda: detail(name, arguments, view, facts), facts,
                     interactive=view.surface in ASKING_SURFACES)  # fmt: skip
    if isinstance(verdict, Question):
        reply = await view.ask(verdict)
        outcome = answered(reply, lambda rule: _approve(view, rule), name, arguments,
                           view.remember, tools, facts)  # fmt: skip
        from smith.sdk import DenyCall

        if isinstance(outcome, DenyCall) and not reply.answered and not reply.interrupt:
            # Nobody could be asked: the user learns how to let such calls run, not the model.
            policy = view.settings.get("approval")
            told = UNASKED if policy == "untrusted" else UNASKED_OUTSIDE
            return [outcome, Notify(told.format(name=name, policy=policy), "warning")]
        return outcome
    return verdict


PLUGIN = Plugin(
    "approval",
    handlers={"tool_call": review},
    # smith's own settings it decides by (declared in smith.config).
    settings={"approval": "on-failure", "approval.allow": [], "approval.deny": []},
)


def _deny(reason: str, interrupt: bool = False) -> DenyCall:
    """A denial (the SDK's actions load msgspec: only where a call is denied, not at
    every mode's start, which resolves this plugin)."""
    from smith.sdk import DenyCall

    return DenyCall(reason, interrupt=interrupt)
