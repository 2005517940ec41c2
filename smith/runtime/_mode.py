"""The runtime's mode: `normal`, or `plan` (docs/plan.md).

The core keeps the mode and what changes it; the plan plugin (smith.plugins.plan) gives
`plan` its meaning (only read-only tools run, the model is told it is planning), reading
it as `RuntimeView.mode`. A change is a session entry (kind `mode`: `{"mode"}`), so a
resumed session, a branch selected again and replay are in the mode they were left in,
and a `mode` event. `--plan` (the `plan` setting) starts a runtime in plan mode, and
`--no-plan` (the setting given as false anywhere) out of it.

Leaving plan mode takes the plan: the text of the last assistant message recorded since
plan mode was entered. `set_mode(..., prompt=True)` sends it as the next prompt (queued
as a follow-up while the agent works); the app asks for `prompt=False` and puts it in the
editor for the user to confirm or edit.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from smith.diagnostics import DiagnosticKind, Source

if TYPE_CHECKING:
    from smith.config import Config
    from smith.runtime._runtime import Runtime
    from smith.session import Session

KIND = "mode"
MODES = ("normal", "plan")
PLAN_PROMPT = "Carry out this plan:\n\n"

BAD_MODE = DiagnosticKind(
    "runtime.bad-mode",
    what="'{mode}' is not a mode",
    why="the modes are {known}",
    fix="pick one of {known}",
)


class Modes:
    """The mode of one session's selected branch: the latest `mode` entry on it, found
    once and then brought up to date from the entries appended since."""

    __slots__ = ("_at", "_leaf", "_lock", "_mode", "session")

    def __init__(self, session: Session) -> None:
        self.session = session
        self._lock = threading.Lock()
        self._leaf: str | None = None  # the leaf `_mode` was found at
        self._mode = "normal"
        self._at: str | None = None  # the entry that set it

    def current(self) -> tuple[str, str | None]:
        """The mode and the entry that set it (None: never set, normal)."""
        with self._lock:
            leaf = self.session.leaf
            if leaf != self._leaf:
                since = self.session.entries_between(self._leaf, leaf) if self._leaf else None
                found = (
                    self.session.branch(kind=KIND)
                    if since is None
                    else [e for e in since if e.kind == KIND]
                )
                if since is None:
                    self._mode, self._at = "normal", None
                for entry in found:
                    content = entry.content
                    if isinstance(content, dict) and content.get("mode") in MODES:
                        self._mode, self._at = str(content["mode"]), entry.id
                self._leaf = leaf
            return self._mode, self._at

    def record(self, mode: str) -> None:
        with self._lock:
            self.session.append(KIND, {"mode": mode}, durable=True)
            self._mode, self._at, self._leaf = mode, self.session.leaf, self.session.leaf


def modes(rt: Runtime) -> Modes:
    """`rt`'s modes, made at the first use (and then in plan mode when `--plan` asked)."""
    found: Modes | None = rt.__dict__.get("_modes")
    if found is None or found.session is not rt.session:
        found = rt.__dict__["_modes"] = Modes(rt.session)
    return found


def mode(rt: Runtime) -> str:
    """`rt`'s mode now; a sub-agent's runtime is in its parent's (`follow`)."""
    parent: Runtime | None = rt.__dict__.get("_mode_of")
    return mode(parent) if parent is not None else modes(rt).current()[0]


def follow(child: Runtime, parent: Runtime) -> None:
    """`child` (a sub-agent's runtime, smith.runtime._children) is in `parent`'s mode
    while it runs, whatever its own branch recorded: entering plan mode while a sub-agent
    works holds it to read-only calls from its next call on."""
    child.__dict__["_mode_of"] = parent


def start_mode(rt: Runtime) -> None:
    """Enter plan mode at start when configuration asks (`--plan`), unless in it; leave
    it when configuration says so (`--no-plan`, `plan false`: any layer but the default)
    in a session left in it, the plan not sent. A child runtime (its parent's lifecycle)
    is left alone: it is in its parent's mode (`follow`)."""
    side = rt.parts.plugins
    config = side.config
    if side.lifecycle is not None or config is None:
        return
    if config["plan"] is True and mode(rt) != "plan":
        set_mode(rt, "plan", prompt=False)
    elif config["plan"] is False and _said(config) and mode(rt) == "plan":
        set_mode(rt, "normal", prompt=False)


def _said(config: Config) -> bool:
    """Whether the `plan` setting was given (a flag, the environment, a file), not the
    default."""
    return config.origin("plan").layer != "default"


def set_mode(rt: Runtime, new: str, *, prompt: bool = True) -> dict[str, Any]:
    """Enter `new` (recorded, emitted); leaving plan mode, the plan, sent as the next
    prompt when `prompt` (see the module doc)."""
    from smith.runtime._events import event

    if new not in MODES:
        known = ", ".join(MODES)
        raise BAD_MODE.error(value=new, source=Source(rt.surface, "set_mode.mode"), mode=new,
                             known=known)  # fmt: skip
    kept = modes(rt)
    previous, since = kept.current()
    plan = the_plan(rt.session, since) if previous == "plan" and new != "plan" else None
    if new != previous:
        kept.record(new)
        rt.emit(event("mode", mode=new, previous=previous, plan=plan))
    submission = None
    if plan and prompt:
        submission = rt.prompt(PLAN_PROMPT + plan)
    return {"mode": new, "previous": previous, "plan": plan, "submission": submission}


def announce(rt: Runtime, previous: str) -> None:
    """A `mode` event when the mode is no longer `previous` without set_mode having said
    so: another branch selected, a runtime over another session, or one a frontend
    attached to after it started in plan mode (`previous`: the mode it knew)."""
    from smith.runtime._events import event

    now = mode(rt)
    if now != previous:
        rt.emit(event("mode", mode=now, previous=previous, plan=None))


def the_plan(session: Session, since: str | None) -> str | None:
    """The text of the last assistant message after entry `since` on the selected
    branch (None: none has text)."""
    entries = session.entries_between(since, session.leaf) if since else None
    if entries is None:
        entries = session.branch(kind="message")
    for entry in reversed(entries):
        content = entry.content
        if entry.kind != "message" or not isinstance(content, dict):
            continue
        if content.get("role") == "assistant":
            parts = content.get("content") or []
            texts = [
                p.get("text") for p in parts if isinstance(p, dict) and p.get("type") == "text"
            ]
            text = "\n".join(str(t) for t in texts if t).strip()
            if text:
                return text
    return None
