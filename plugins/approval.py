"""Approvals: which tool calls run without asking the user, on the `tool_call` hook.

`approval` (smith's own setting, owned here) is the policy:

    never        nothing asks; what the sandbox refuses fails
    on-failure   a command the sandbox stopped may be run again outside it once the user
                 approves (the bash tool asks: smith.effects.tools.bash)
    on-request   the model may ask to run a command outside the sandbox, with a reason
                 (bash's `unsandboxed` and `reason`); the user approves or not
    untrusted    every mutating call (bash, write, edit) asks first, here

`approval.allow` and `approval.deny` refine it, for every policy: a rule is a tool's name
or the start of a bash command in whole words (`git status`, `rm -rf`). Deny wins, and
the matched rule is named. A deny rule matches any part of a compound command
(`make; rm -rf x`); an allow rule only a simple one (no `;`, `&&`, `|`, redirection or
substitution), so allowing `git status` never allows `git status; curl ...`.

Asking is a UI question (smith.ui): the app's overlay, RPC's `ui.ask`; eval and MCP
refuse it, so the call is denied with a reason that names the flag to change. Each
question and its answer is recorded in the session (entry kind `question`), so replay
shows every decision.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from smith.sdk import DenyCall, Plugin, RuntimeView
from smith.ui import Question, Reply

MUTATING = ("bash", "write", "edit")
# Where a command holds another: separators, pipes, substitutions and redirections.
COMPOUND = re.compile(r";|&|\||`|\$\(|<|>|\n")
SEGMENTS = re.compile(r";|&&|\|\||\||&|\n|`|\$\(")

CHOICES = (
    ("once", "Approve once"),
    ("session", "Approve for this session"),
    ("prefix", "Approve this command's first words for this session"),
    ("deny", "Deny"),
)
SHOWN = 400  # characters of a command shown in the question

# What the user approved for the rest of a session: session id -> rules.
_APPROVED: dict[str, set[str]] = {}


def _words(text: str) -> list[str]:
    return text.split()


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
        return any(_words(part)[: len(want)] == want for part in SEGMENTS.split(command))
    return not COMPOUND.search(command) and _words(command)[: len(want)] == want


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
           arguments: Mapping[str, Any]) -> DenyCall | Question | None:  # fmt: skip
    """What approval makes of this call: denied now (DenyCall), allowed (None), or the
    question to ask the user first (then `answered`)."""
    denied = first_match(_rules(settings.get("approval.deny")), name, arguments, deny=True)
    if denied is not None:
        return DenyCall(f"the approval.deny rule {denied!r} matches this {name} call")
    if settings.get("approval") != "untrusted" or name not in MUTATING:
        return None
    approved = [*_rules(settings.get("approval.allow")), *_APPROVED.get(session, ())]
    if first_match(approved, name, arguments, deny=False) is not None:
        return None
    choices = [c for c in CHOICES if c[0] != "prefix" or name == "bash"]
    return Question(f"smith wants to {_described(name, arguments)}", choices)


def answered(reply: Reply, session: str, name: str,
             arguments: Mapping[str, Any]) -> DenyCall | None:  # fmt: skip
    """The call after the user's answer: denied, or allowed (and remembered for the
    session when they said so)."""
    if not reply.answered:
        return DenyCall(
            f"approval is untrusted, so this {name} call needs the user's approval, and "
            f"none came ({reply.refused}). To let such calls run without asking, pass "
            f"--approval never (or on-failure), or allow them with --approval-allow {name}"
        )
    if reply.choice == "deny":
        return DenyCall(f"the user denied this {name} call")
    if reply.choice == "session":
        _APPROVED.setdefault(session, set()).add(name)
    elif reply.choice == "prefix":
        first = " ".join(_words(SEGMENTS.split(str(arguments.get("command", "")))[0])[:2])
        if first:
            _APPROVED.setdefault(session, set()).add(first)
    return None


async def review(event: dict[str, Any], view: RuntimeView) -> DenyCall | None:
    """The tool_call hook: a call of a turn."""
    name, arguments = str(event["name"]), event.get("arguments") or {}
    verdict = decide(view.settings, view.session_id, name, arguments)
    if isinstance(verdict, Question):
        return answered(await view.ask(verdict), view.session_id, name, arguments)
    return verdict


PLUGIN = Plugin(
    "approval",
    handlers={"tool_call": review},
    # smith's own settings it decides by (declared in smith.config).
    settings={"approval": "on-failure", "approval.allow": [], "approval.deny": []},
)
