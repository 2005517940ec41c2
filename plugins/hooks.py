"""Hooks: commands configuration runs at the runtime's events (docs/hooks.md).

    hooks {
        hook "no-rm" on="before-tool" match="bash" command="./guard.sh" timeout=10
        hook "lint" on="after-tool" effect="mutating" command="ruff check --quiet ."
    }

Each hook (plugins/_hookconf.py) names an event (`on`), the tool calls it runs for at a
tool event (`match`: tool names, a regular expression; `effect`: effect classes), its
command and a timeout. When its event comes the command runs in smith's sandbox with the
event as JSON on stdin, and answers by exit status or JSON (plugins/_hookrun.py), which
becomes this plugin's action at that point of the runtime:

    before-tool        tool_call         allow, DenyCall (deny wins; a hook that failed or
                                         timed out denies too), RewriteArguments, or the
                                         user asked (decision "ask")
    after-tool         tool_result       ReplaceResult: the result replaced, or context
                                         (and an exit-2 reason) added to it
    prompt             input             TransformInput (context added) or HandleInput
                                         (the prompt blocked: no turn)
    session-start      session_start     AppendSystemPrompt (context added)
    stop, session-end, agent_end,        notify only
    subagent-stop,     session_end,
    before-compaction  compaction_start

A sub-agent's runtime (RuntimeView.subagent) is no session or prompt of the user's: its
start, its task's prompt and its end run no session-start, prompt or session-end hook,
and its end runs the `subagent-stop` hooks instead of `stop` (Claude Code's Stop and
SubagentStop); its tool calls run the tool hooks as any call does, and every payload of
a sub-agent's event says which it is (`subagent`).

A hook that fails (exit status other than 0 and 2, a timeout, output that is no answer,
a sandbox that cannot run) is reported as an error notice, never ignored silently;
problems with the configuration are reported when the session starts, and a broken hook
that may have been a before-tool hook keeps every tool call from running until it is
fixed (a broken reviewer fails closed). `wants` tells the runtime, before a handler is
called, whether there is a hook at its event, so an event without one costs no handler
thread; a handler with hooks to run returns a coroutine, which runs them.
"""

from __future__ import annotations

import json
import logging
import threading
import weakref
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Any

from smith.diagnostics import Diagnostic, DiagnosticKind
from smith.sdk import (
    AppendSystemPrompt,
    DenyCall,
    HandleInput,
    Plugin,
    ReplaceResult,
    RewriteArguments,
    RuntimeView,
    TransformInput,
)
from smith.ui import CONFIRM_CHOICES, Detail, Notify, Question

from ._hookclaude import claude_fields, smith_arguments
from ._hookconf import (
    CLAUDE_NAMES,
    NONE,
    TIMEOUT_MAX,
    Hook,
    Hooks,
    hidden_programs,
    joined,
    package_hooks,
    parse,
    unmatched,
)
from ._hookrun import Answer, Ran, answer, run

if TYPE_CHECKING:
    from smith.config import Config

log = logging.getLogger("smith.plugins.hooks")

HOOK_FAILED = DiagnosticKind(
    "hooks.failed",
    what="hook '{name}' ({event}) failed: {reason}",
    why="a hook answers by exit status 0 (allow) or 2 (deny, stderr the reason), or JSON "
    "on stdout, within its timeout ({timeout} s); {then}",
    fix="fix the hook's command (run it by hand with the event on stdin: docs/hooks.md), "
    "or remove it from configuration",
)
HOOK_IGNORED = DiagnosticKind(
    "hooks.decision-ignored",
    what="hook '{name}' answered {decision} at {event}, which takes no decision",
    why="{event} hooks are told of the event; only before-tool, after-tool and prompt hooks decide",
    fix="answer with exit status 0 at {event}; what it said was ignored",
    severity="warning",
)

Answered = list[tuple[Hook, Answer]]
Batch = list[Any]

_parsed: weakref.WeakKeyDictionary[Config, Hooks] = weakref.WeakKeyDictionary()
_parsed_lock = threading.Lock()
# The configurations whose first session started: matchers are checked against the tools
# of that one (a child agent's few tools would make every other matcher look wrong).
_started: weakref.WeakSet[Config] = weakref.WeakSet()
# Context a before-tool hook added to a call, given to the model with its result.
_pending: dict[tuple[str, str], str] = {}


def configured(view: RuntimeView) -> Hooks:
    """The hooks of the runtime's configuration (parsed once per Config); none without one
    (a runtime built without configuration, a tool host's review)."""
    config, ctx = view.config, view.context
    if config is None or ctx is None:
        return NONE
    with _parsed_lock:
        found = _parsed.get(config)
        if found is None:
            found = parse(config)
            if found.hooks and ctx.sandbox.effective != "off":
                found = hidden_programs(found, ctx.sandbox.hidden, ctx.root)
            found = joined(found, package_hooks(config))
            _parsed[config] = found
    return found


def _payload(hook: Hook, view: RuntimeView, **fields: object) -> bytes:
    """The event as the hook reads it on stdin: smith's names, and Claude Code's
    (`hook_event_name`, `tool_input`, ...) where it has them."""
    ctx = view.context
    assert ctx is not None
    data = {
        "session_id": view.session_id,
        "hook_event_name": CLAUDE_NAMES[hook.on],
        "event": hook.on,
        "hook": hook.name,
        "cwd": ctx.cwd,
        "project_dir": ctx.root,
        **fields,
    }
    if view.subagent is not None:  # a sub-agent's event: which one (its agent and task)
        data["subagent"] = view.subagent
    return json.dumps(data, ensure_ascii=False, default=str).encode()


async def _ask_all(hooks: Sequence[Hook], view: RuntimeView, fields: dict[str, object]) -> Answered:
    """Run `hooks` at once (each within its timeout), their answers in their order."""
    import asyncio
    import copy
    import dataclasses

    ctx = view.context
    assert ctx is not None
    env = {"SMITH_PROJECT_DIR": ctx.root, "CLAUDE_PROJECT_DIR": ctx.root,
           "SMITH_SESSION_ID": view.session_id}  # fmt: skip

    async def one(hook: Hook) -> tuple[Hook, Answer]:
        # a Claude Code plugin's hook reads Claude's tool names and input keys
        given = claude_fields(fields) if hook.claude and "tool_name" in fields else fields
        payload = _payload(hook, view, **given)
        context, extra = ctx, {}
        if hook.readable:  # a package's hook: its folder read-only, even in smith's data
            context = copy.copy(ctx)
            context.sandbox = dataclasses.replace(
                ctx.sandbox, readable=(*ctx.sandbox.readable, *hook.readable)
            )
            extra = {"CLAUDE_PLUGIN_ROOT": hook.readable[0], "SMITH_PLUGIN_ROOT": hook.readable[0]}
        try:
            ran = await run(hook.command, payload, context=context, timeout=hook.timeout,
                            env={**env, **extra, "SMITH_HOOK_EVENT": hook.on})  # fmt: skip
        except Exception as exc:  # reported, as any failure is
            log.exception("hook %s could not be run", hook.name)
            ran = Ran(None, error=f"{type(exc).__name__}: {exc}")
        log.debug("hook %s (%s) ran in %.3f s: status %s, sandbox %s", hook.name, hook.on,
                  ran.seconds, ran.status, ran.sandbox)  # fmt: skip
        said = answer(ran, hook.timeout)
        if hook.claude and said.arguments is not None:  # its updatedInput, in smith's keys
            said.arguments = smith_arguments(str(fields.get("tool_name")), said.arguments)
        if ran.notice:
            said.message = "\n".join(m for m in (said.message, ran.notice) if m)
        return hook, said

    return list(await asyncio.gather(*(one(h) for h in hooks)))


def _reports(answered: Answered, then: str) -> Batch:
    """What the user is told of the hooks' runs: each failure (an error notice with the
    hook's diagnostic) and each systemMessage."""
    out: Batch = []
    for hook, said in answered:
        if said.decision == "failed":
            problem = HOOK_FAILED(field=f"hooks.hook.{hook.name}.command",
                                  value=hook.command if isinstance(hook.command, str)
                                  else " ".join(hook.command), source=hook.source,
                                  name=hook.name, event=hook.on, reason=said.reason,
                                  timeout=f"{hook.timeout:g}", then=then)  # fmt: skip
            log.info("%s", problem.headline())
            out.append(Notify(_told_text(problem), "error"))
        if said.message:
            out.append(Notify(f"hook '{hook.name}': {said.message}", "info"))
    return out


def _told_text(problem: Diagnostic) -> str:
    """A diagnostic as a notice's text (the notice's level says its severity)."""
    return problem.render().removeprefix(f"{problem.severity}: ")


def _context(answered: Answered, *, stdout: bool = False) -> str:
    """The context the hooks added, in their order (`stdout`: a hook's plain output
    counts as context, as Claude Code's UserPromptSubmit and SessionStart take it)."""
    parts = []
    for _, said in answered:
        if said.decision == "failed":
            continue
        if said.context:
            parts.append(said.context)
        elif stdout and said.stdout:
            parts.append(said.stdout)
    return "\n\n".join(parts)


# -- before-tool ----------------------------------------------------------------------------


def on_tool_call(event: dict[str, Any], view: RuntimeView) -> Awaitable[Batch] | Batch | None:
    hooks = configured(view)
    if hooks.broken_guard is not None:
        return [DenyCall(f"the hooks configuration is broken, and a broken hook may have "
                         f"been a guard: {hooks.broken_guard.headline()}")]  # fmt: skip
    if _pending:  # a call of this id that never came to its result (another plugin denied it)
        _pending.pop((view.session_id, str(event["tool_call_id"])), None)
    name = str(event["name"])
    broken = hooks.broken_for(name, view.tool(name))
    if broken is not None:
        return [DenyCall(f"a hook that matches {name} is broken, and it may have been a "
                         f"guard: {broken.headline()}")]  # fmt: skip
    matched = [h for h in hooks.at("before-tool") if h.matches(name, view.tool(name))]
    if not matched:
        return None
    return _before_tool(matched, event, view)


async def _before_tool(hooks: list[Hook], event: dict[str, Any], view: RuntimeView) -> Batch:
    name = str(event["name"])
    fields = {"tool_name": name, "tool_input": event["arguments"],
              "tool_call_id": event["tool_call_id"], "tool_use_id": event["tool_call_id"],
              "turn": event.get("turn")}  # fmt: skip
    answered = await _ask_all(hooks, view, fields)
    out = _reports(answered, "at before-tool a hook that failed denies the call")
    for hook, said in answered:
        if said.decision == "failed":
            return [*out, DenyCall(f"hook '{hook.name}' failed ({said.reason}), so the call "
                                   "was not run")]  # fmt: skip
        if said.decision == "deny":
            return [*out, DenyCall(f"hook '{hook.name}': {said.reason or 'denied'}")]
    for hook, said in answered:
        if said.decision == "ask":
            question = (f"Hook '{hook.name}' asks whether this {name} call may run"
                        + (f": {said.reason}" if said.reason else ""))  # fmt: skip
            shown = _shown(name, event["arguments"], view)
            reply = await view.ask(Question(question, CONFIRM_CHOICES, detail=shown))
            if not reply.confirmed:
                why = reply.refused or "the user said no"
                return [*out, DenyCall(f"hook '{hook.name}' asked the user, who did not allow "
                                       f"it ({why})", interrupt=reply.interrupt)]  # fmt: skip
    rewrites = {json.dumps(s.arguments, sort_keys=True): h for h, s in answered
                if s.arguments is not None}  # fmt: skip
    if len(rewrites) > 1:
        names = " and ".join(f"'{h.name}'" for h in rewrites.values())
        return [*out, DenyCall(f"hooks {names} rewrote its arguments differently, and smith "
                               "runs nothing no single hook asked for")]  # fmt: skip
    context = _context(answered)
    if context:
        _pending[(view.session_id, str(event["tool_call_id"]))] = context
    if rewrites:
        (arguments,) = [s.arguments for _, s in answered if s.arguments is not None][:1]
        assert arguments is not None
        return [*out, RewriteArguments(arguments)]
    return out


def _shown(name: str, arguments: dict[str, Any], view: RuntimeView) -> Detail:
    """What an `ask` shows of the call, as approval's question does: the whole command,
    the change it would make (the tool's preview), or its arguments."""
    facts = view.tool(name)
    command = arguments.get(facts.command) if facts is not None and facts.command else None
    if isinstance(command, str):
        return Detail("command", command)
    if facts is not None and facts.previews:
        try:
            found = view.preview(name, arguments)
        except Exception:  # the preview failed: the arguments say what the call is
            log.debug("no preview of %s for a hook's question", name, exc_info=True)
            found = None
        if found is not None:
            return found
    return Detail("text", json.dumps(arguments, ensure_ascii=False, indent=1))


# -- after-tool ----------------------------------------------------------------------------


def on_tool_result(event: dict[str, Any], view: RuntimeView) -> Awaitable[Batch] | Batch | None:
    hooks = configured(view)
    pending = _pending.pop((view.session_id, str(event["tool_call_id"])), "") if _pending else ""
    name = str(event["name"])
    matched = [h for h in hooks.at("after-tool") if h.matches(name, view.tool(name))]
    if not matched:
        return [_added(event, pending)] if pending else None
    return _after_tool(matched, event, view, pending)


def _result_text(event: dict[str, Any]) -> str:
    result = event.get("result")
    return str(result.get("text", "")) if isinstance(result, dict) else str(result or "")


def _added(event: dict[str, Any], context: str, text: str | None = None) -> ReplaceResult:
    text = _result_text(event) if text is None else text
    return ReplaceResult(f"{text}\n\n{context}" if text else context)


async def _after_tool(hooks: list[Hook], event: dict[str, Any], view: RuntimeView,
                      pending: str) -> Batch:  # fmt: skip
    name = str(event["name"])
    fields = {"tool_name": name, "tool_input": event["arguments"],
              "tool_call_id": event["tool_call_id"], "tool_use_id": event["tool_call_id"],
              "tool_response": {"text": _result_text(event),
                                "is_error": bool(event.get("is_error"))}}  # fmt: skip
    answered = await _ask_all(hooks, view, fields)
    out = _reports(answered, "the result was left as it was")
    replaced = next((s.result for _, s in answered if s.result is not None), None)
    notes = [pending] if pending else []
    for hook, said in answered:
        if said.decision == "deny":  # the call ran: the model is told what the hook said
            notes.append(f"[hook '{hook.name}': {said.reason}]")
    context = _context(answered)
    if context:
        notes.append(context)
    if replaced is None and not notes:
        return out
    return [*out, _added(event, "\n\n".join(notes), replaced) if notes
            else ReplaceResult(replaced or "")]  # fmt: skip


# -- prompt ----------------------------------------------------------------------------------


def on_input(event: dict[str, Any], view: RuntimeView) -> Awaitable[Batch] | Batch | None:
    hooks = configured(view).at("prompt") if view.subagent is None else []  # the user's only
    return _prompt(hooks, event, view) if hooks else None


async def _prompt(hooks: list[Hook], event: dict[str, Any], view: RuntimeView) -> Batch:
    text = str(event["text"])
    answered = await _ask_all(hooks, view, {"prompt": text, "mode": event.get("mode")})
    out = _reports(answered, "the prompt was sent as it was")
    for hook, said in answered:
        if said.decision == "deny":
            why = f"hook '{hook.name}' blocked this prompt: {said.reason or 'no reason given'}"
            # The reply answers the prompt; the notice says it where notices go (eval's
            # stderr), as the prompt was not run.
            return [*out, Notify(why, "warning"), HandleInput(why)]
    context = _context(answered, stdout=True)
    return [*out, TransformInput(f"{text}\n\n{context}")] if context else out


# -- session-start, and the events hooks are only told of ----------------------------------


def on_session_start(event: dict[str, Any], view: RuntimeView) -> Awaitable[Batch] | Batch | None:
    if view.subagent is not None:  # a sub-agent starts no session (its parent said all)
        return None
    found = configured(view)
    said = [*found.problems, *(unmatched(found, view.tool_names) if _first_start(view) else ())]
    problems: Batch = [Notify(_told_text(p), p.severity) for p in said]
    hooks = found.at("session-start")
    if not hooks:
        return problems or None
    return _session_start(hooks, event, view, problems)


def _first_start(view: RuntimeView) -> bool:
    config = view.config
    with _parsed_lock:
        if config is None or config in _started:
            return False
        _started.add(config)
        return True


async def _session_start(hooks: list[Hook], event: dict[str, Any], view: RuntimeView,
                         problems: Batch) -> Batch:  # fmt: skip
    resumed = bool(event.get("resumed"))
    fields = {"source": "resume" if resumed else "startup", "entries": event.get("entries")}
    answered = await _ask_all(hooks, view, fields)
    out = [*problems, *_reports(answered, "nothing was added to the system prompt"),
           *_ignored(answered, ("deny", "ask"))]  # fmt: skip
    context = _context(answered, stdout=True)
    return [*out, AppendSystemPrompt(context)] if context else out


def _ignored(answered: Answered, decisions: tuple[str, ...]) -> Batch:
    return [Notify(_told_text(HOOK_IGNORED(value=said.decision, source=hook.source,
                                           name=hook.name, decision=said.decision,
                                           event=hook.on)), "warning")
            for hook, said in answered if said.decision in decisions]  # fmt: skip


def _told(on: str, fields: Any) -> Any:
    """A handler for an event hooks are only told of (`fields`: what they read of it)."""

    def handler(event: dict[str, Any], view: RuntimeView) -> Awaitable[Batch] | None:
        hooks = configured(view).at(_told_at(on, view))
        return _tell(hooks, fields(event), view) if hooks else None

    return handler


async def _tell(hooks: list[Hook], fields: dict[str, object], view: RuntimeView) -> Batch:
    answered = await _ask_all(hooks, view, fields)
    return [*_reports(answered, "it was told of the event only"),
            *_ignored(answered, ("deny", "ask"))]  # fmt: skip


def _told_at(on: str, view: RuntimeView) -> str:
    """The hook event `on` is for this runtime: a sub-agent's end is `subagent-stop`,
    and it has no session to end (`session-end`: none)."""
    if view.subagent is None:
        return on
    return {"stop": "subagent-stop", "session-end": ""}.get(on, on)


def _stop_fields(event: dict[str, Any]) -> dict[str, object]:
    return {"stop": event.get("stop"), "prompt_id": event.get("prompt_id")}


# What each runtime event's handler needs to find to have anything to do.
_NEEDS: dict[str, tuple[str, ...]] = {
    "tool_call": ("before-tool",),
    "tool_result": ("after-tool",),
    "input": ("prompt",),
    "session_start": ("session-start",),
    "agent_end": ("stop",),
    "session_end": ("session-end",),
    "compaction_start": ("before-compaction",),
}


def wants(kind: str, view: RuntimeView) -> bool:
    """Whether a handler has anything to do (asked on the runtime's loop, so that a
    runtime with no hook at an event starts no thread for it): a hook at its event; at
    tool_call also a broken configuration (it denies), at tool_result context a
    before-tool hook left, at session_start problems to report."""
    found = configured(view)
    if view.subagent is not None and kind in ("input", "session_start", "session_end"):
        return False  # not the user's prompt or session (see the module)
    if kind == "tool_call" and found.broken_guard is not None:
        return True
    if kind == "tool_result" and _pending:
        return True
    if kind == "session_start" and found.problems:
        return True
    if (
        kind == "session_start"
        and view.config not in _started
        and any(h.match for h in found.hooks)
    ):
        return True
    needs = ("subagent-stop",) if kind == "agent_end" and view.subagent is not None else None
    return any(h.on in (needs or _NEEDS.get(kind, ())) for h in found.hooks)


PLUGIN = Plugin(
    "hooks",
    wants=wants,
    # Its handlers wait on commands, each killed at its own timeout (at most TIMEOUT_MAX);
    # the runtime's bound is that and a grace for the kill.
    handler_deadline=TIMEOUT_MAX + 10,
    handlers={
        "tool_call": on_tool_call,
        "tool_result": on_tool_result,
        "input": on_input,
        "session_start": on_session_start,
        "agent_end": _told("stop", _stop_fields),
        "session_end": _told("session-end", lambda e: {}),
        "compaction_start": _told(
            "before-compaction", lambda e: {"trigger": e.get("reason"), "focus": e.get("focus")}
        ),
    },
)

__all__ = ["PLUGIN", "configured"]
