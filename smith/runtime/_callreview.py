"""The tool_call hook: every call reviewed before it runs, the one review of a turn's
calls (`review_calls`, batch by batch) and of a program's (smith.runtime._review's
HostReview calls `review_call`).

Plugins review a call in plugin order, each seeing the call as it will run:

- a deny (DenyCall, or a reviewer that failed, passed its deadline or is not ready)
  ends the review: the call does not run, and no later plugin is asked (so approval
  never puts to the user a call plan mode or a guard hook refused);
- a rewrite (RewriteArguments), validated against the tool's schema at once, is what the
  plugins after it review: approval's rules and its question see the command that will
  run, never the one the model sent. Once the arguments changed, the plugins before the
  rewriter review the call again as it now is (any of them may deny it), so a rewrite
  never slips past a reviewer;
- two plugins rewriting to different arguments is a conflict, and the call does not run.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from smith.runtime._events import Event, event
from smith.runtime._generation import INVALID
from smith.runtime._hooks import NO_HANDLER, _conflict, _src, answer, checked
from smith.sdk import DenyCall, RewriteArguments

if TYPE_CHECKING:
    from smith.effects import ToolSpec
    from smith.runtime._loopctx import LoopContext
    from smith.runtime._review import HookSide
    from smith.sdk import HookAction, Plugin

Call = dict[str, Any]
Result = dict[str, Any]
# How a turn records calls as not run (_steps.skip_tools): given by the turn, so this
# module never imports the steps that call it.
Skip = Callable[["LoopContext", list[Call], str, Sequence[Result | None]], None]


async def review_calls(
    rt: LoopContext, calls: list[Call], specs: Sequence[ToolSpec | None], skip: Skip
) -> tuple[list[Call], list[Result | None]]:
    """The calls as they will run (a rewrite gives a copy with the new arguments and
    `rewritten`: the plugin) and, for each call that will not run, its result (denied,
    an invalid rewrite, a conflict). Calls the runtime cannot run anyway (no such tool,
    arguments that were not JSON) are not shown to the handlers. An abort meanwhile
    records every call as not run (`skip`: the turn's way to record that) and is raised
    on."""
    refused: list[Result | None] = [None] * len(calls)
    if "tool_call" not in rt.handled:
        return calls, refused
    reviewed = list(calls)
    stopped = False
    try:
        for i, (call, spec) in enumerate(zip(calls, specs, strict=True)):
            if spec is not None:
                reviewed[i], result = await review_call(rt, call, spec)
                refused[i] = result
                if result is not None and result.pop("interrupt", False):
                    # The user stopped the turn at this call (DenyCall.interrupt): the
                    # turn ends as an abort ends it, this call's result saying why.
                    stopped = True
                    rt.abort()
                    await asyncio.sleep(0)  # where the abort's cancellation arrives
                    rt.check_abort()
    except asyncio.CancelledError:
        why = "the user interrupted before it ran" if stopped else "aborted before it ran"
        skip(rt, calls, why, refused if stopped else ())
        raise
    return reviewed, refused


class _Refused(Exception):
    """The review ends with the call not run; `result` is what the model gets."""

    def __init__(self, result: Result) -> None:
        self.result = result


async def review_call(rt: HookSide, call: Call, spec: ToolSpec) -> tuple[Call, Result | None]:
    """One call as it will run (a rewrite: a copy with the new arguments, validated
    again, and `rewritten`), or the result of a call that does not run (see the module)."""
    review = _Review(rt, call, spec)
    try:
        for plugin in rt.plugins:
            await review.ask(plugin)
        if review.rewriter is not None:  # those before it see the call as it will run
            for plugin in rt.plugins[: review.rewriter_at]:
                await review.ask(plugin, again=True)
    except _Refused as refused:
        return call, refused.result
    if review.rewriter is None:
        return call, None
    return {**call, "arguments": review.arguments, "rewritten": review.rewriter}, None


class _Review:
    """One call's review in progress: the arguments it will run with, and who set them."""

    def __init__(self, rt: HookSide, call: Call, spec: ToolSpec) -> None:
        self.rt = rt
        self.call = call
        self.spec = spec
        self.arguments: dict[str, Any] = call["arguments"]
        self.rewriter: str | None = None
        self.rewriter_at = 0

    def event(self) -> Event:
        return event("tool_call", tool_call_id=self.call["id"], name=self.call["name"],
                     arguments=self.arguments, turn=self.rt.turn)  # fmt: skip

    async def ask(self, plugin: Plugin, *, again: bool = False) -> None:
        """`plugin`'s review of the call as it is now; raises _Refused where it ends."""
        batch = await answer(self.rt, plugin, self.event())
        if batch is NO_HANDLER:
            return
        actions = checked(self.rt, plugin.name, "tool_call", batch)
        deny = next((a for a in actions if isinstance(a, DenyCall)), None)
        if deny is not None:
            raise _Refused(self._denied(plugin.name, deny))
        rewrites = [a for a in actions if isinstance(a, RewriteArguments)]
        for action in rewrites:
            self._rewrite(plugin.name, action, again=again)

    def _rewrite(self, plugin: str, action: RewriteArguments, *, again: bool) -> None:
        rt, name = self.rt, self.call["name"]
        arguments = cast(
            "dict[str, Any]",
            rt.secrets.redact(json.loads(json.dumps(dict(action.arguments), default=str))),
        )
        if arguments == self.arguments:
            return  # asks for what will run anyway
        if self.rewriter is not None or again:
            first = self.rewriter or "the model"
            claims: list[tuple[str, HookAction]] = [
                (first, RewriteArguments(self.arguments)), (plugin, action)]  # fmt: skip
            problem = _conflict(rt, "tool_call", f"the arguments of call {self.call['id']}",
                                claims)  # fmt: skip
            plugins = f"{first}, {plugin}"
            text = (
                f"the {name} call did not run: plugins {plugins} asked to run it with "
                "different arguments, and smith runs nothing no single plugin asked for"
            )
            raise _Refused(_refused(text, plugins, problem.what))
        from smith.effects import validate

        problems = validate(self.spec, arguments)
        if problems:
            reason = "; ".join(problems)
            rt.error(
                INVALID(
                    value=name,
                    source=_src(plugin),
                    plugin=plugin,
                    action=f"rewrite the arguments of the {name} call {self.call['id']}",
                    reason=f"the {name} tool does not accept them: {reason}",
                )
            )
            text = (
                f"the {name} call did not run: plugin '{plugin}' rewrote its arguments to "
                f"ones the tool does not accept ({reason})"
            )
            raise _Refused(_refused(text, plugin, f"invalid rewrite: {reason}"))
        self.arguments = arguments
        self.rewriter = plugin
        self.rewriter_at = next(i for i, p in enumerate(rt.plugins) if p.name == plugin)

    def _denied(self, plugin: str, deny: DenyCall) -> Result:
        name = self.call["name"]
        reason = str(self.rt.secrets.redact(deny.reason))
        if deny.interrupt:
            text = (
                f"the {name} call did not run: the user interrupted ({reason}), and the turn "
                "ended there. Do not retry it; wait for the user's next message."
            )
            refused = _refused(text, plugin, reason)
            # Marked in the record too: a parent's task call ends its own turn so.
            refused["denied"] = {**refused["denied"], "interrupt": True}
            return {**refused, "interrupt": True}
        text = f"the {name} call did not run: plugin '{plugin}' denied it: {reason}"
        return _refused(text, plugin, reason)


def _refused(text: str, plugin: str, reason: str) -> Result:
    """The result of a call a plugin (or a conflict between plugins) kept from running:
    an error for the model, recorded as not applied (it never reached an effect)."""
    return {
        "text": text,
        "details": {},
        "ok": False,
        "outcome": "error",
        "mutation": "not-applied",
        "denied": {"plugin": plugin, "reason": reason},
    }
