"""The agent loop: one prompt (and what is queued behind it) until an explicit stop.

    agent_start
      (the environment block, when it changed) -> the prompt's message(s)
      turn_start -> provider stream (message_*) -> tool batch (tool_*) -> turn_end
      ... steer delivered here, before the next provider request ...
      ... follow-up delivered here, when the agent would otherwise stop ...
    agent_end {stop}

Stops: `end` (an answer without tool calls and nothing queued), `done` (a tool said so),
`max_iterations`, `token_budget`, `deadline`, `limit` (the model hit its output limit),
`error`, `abort`.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from smith.runtime._batch import After, after_batch, record_results, run_tools
from smith.runtime._callreview import review_calls
from smith.runtime._compaction import compact, context_limit, needs_compaction
from smith.runtime._context import estimate_tokens
from smith.runtime._events import SUBMISSION, event
from smith.runtime._hooks import accept_inputs, present
from smith.runtime._notes import environment_due, record_instructions, record_note
from smith.runtime._steps import add_user, respond, skip_tools
from smith.runtime._turn import Turn
from smith.session import new_id

if TYPE_CHECKING:
    from collections.abc import Sequence

    from smith.runtime._images import Image
    from smith.runtime._loopctx import LoopContext


async def run_agent(
    rt: LoopContext,
    texts: list[str],
    images: Sequence[tuple[Image, ...]] = (),
    *,
    taken: Sequence[str] = (),
    prompt_id: str = "",
) -> None:
    """Run one prompt: `texts` are the inputs it takes (the ids of their submissions in
    `taken`, when several), `prompt_id` the id its agent_start and agent_end carry."""
    prompt_id = prompt_id or f"p-{new_id(4)}"
    timer = None
    if rt.limits.deadline is not None:
        timer = asyncio.get_running_loop().call_later(rt.limits.deadline, rt.abort, "deadline")
    inputs = await accept_inputs(rt, texts, images=images)  # session_start (once), input hook
    if not inputs:  # every input was a command a plugin handled: no prompt to run
        if timer is not None:
            timer.cancel()
        return
    run = _Run(SUBMISSION.get() or prompt_id, [*taken] or [prompt_id])
    start = event("agent_start", prompt_id=prompt_id)
    if len(taken) > 1:  # queued inputs delivered together: every submission they had
        start["submissions"] = list(taken)
    rt.emit(start)
    rt.last_message = None
    try:
        # The environment block, when it differs from the context's, goes just before
        # the prompt (what the model reads last is what the user asked); the prompt is
        # recorded whatever happens while the block is read, so an abort never loses it.
        due = None
        try:
            due = await environment_due(rt)
        finally:
            if due is not None:
                record_note(rt, "environment", due)
            for text, notes, parts in inputs:
                add_user(rt, text, notes=notes, parts=parts)
        rt.check_abort()
        await rt.dispatch(start)
        rt.turn = 0
        while run.stop is None:
            await rt.memory.run_turn(_round(rt, run))
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        run.stop = rt.abort_reason or "abort"
    finally:
        if timer is not None:
            timer.cancel()
    end = event("agent_end", prompt_id=prompt_id, stop=run.stop, message=rt.last_message)
    if run.error:
        end["error"] = run.error
    end["submission"] = run.submission  # the last delivered input's, when one came in
    if len(run.taken) > 1:
        end["submissions"] = run.taken
    rt.emit(end)
    if await rt.dispatch(end) and run.tree is not None:
        await _after_stop(rt, run.tree, prompt_id)


async def _after_stop(rt: LoopContext, tree: str, prompt_id: str) -> None:
    """The files again once plugins' agent_end handlers ran (a stop hook that formats
    what the prompt wrote): recorded as the prompt's last batch's `after` snapshot, so
    one undo takes the prompt's changes and theirs back together."""
    turn = Turn.of(rt)
    cause = {"turn": rt.turn, "agent_end": prompt_id}
    await after_batch(turn, After(tree, cause))


class _Run:
    """Where one prompt's processing is: tokens used so far and, once known, its stop."""

    def __init__(self, submission: str, taken: list[str]) -> None:
        self.used = 0
        self.stop: str | None = None
        self.error: str | None = None
        # Whose input the run works on now (docs/events.md, Submissions): its prompt's,
        # then a delivered steer's or follow-up's; `taken`: every one it served.
        self.submission = submission
        self.taken = taken
        self.tree: str | None = None  # the files after its last batch that changed any


async def _round(rt: LoopContext, run: _Run) -> None:
    """One provider round and its tool batch; sets `run.stop` when the prompt is over."""
    if SUBMISSION.get() != run.submission:  # a round the turn scope runs in a new context
        SUBMISSION.set(run.submission)
    rt.check_abort()
    await rt.context_cache.prepare(rt.session, within=context_limit(rt))
    if rt.take_compact_request():
        await compact(rt, "manual", rt.compact_focus)
    elif needs_compaction(rt):
        await compact(rt, "auto")
    if rt.turn >= rt.limits.max_iterations:
        run.stop = "max_iterations"
        return
    if rt.limits.token_budget is not None and run.used >= rt.limits.token_budget:
        run.stop = "token_budget"
        return
    rt.turn += 1
    turn_start = event("turn_start", turn=rt.turn)
    rt.emit(turn_start)
    await rt.dispatch(turn_start)
    rt.check_abort()  # one asked for at turn_start (a sub-agent past its tree's cap) sends nothing
    message = await respond(rt)
    run.used += _tokens_used(rt, message)
    calls = [p for p in message["content"] if p.get("type") == "tool_call"]
    if calls and message["stop"] == "error":
        skip_tools(rt, calls, "the response failed before it was complete")
        calls = []
    done = await _tools(rt, run, calls) if calls else False
    turn_end = event("turn_end", turn=rt.turn, stop=message["stop"])
    rt.emit(turn_end)
    await rt.dispatch(turn_end)
    if message["stop"] == "error":
        run.stop, run.error = "error", message.get("error")
    elif done:
        run.stop = "done"
    elif message["stop"] == "limit" and not calls:
        run.stop = "limit"
    # The safe point: the stream and the whole tool batch are complete.
    elif not (await _deliver(rt, run, "steer") or calls or await _deliver(rt, run, "follow_up")):
        run.stop = "end"


async def _tools(rt: LoopContext, run: _Run, calls: list[dict[str, Any]]) -> bool:
    """One response's calls: reviewed by plugins (tool_call), run by the tool step with
    the services of its turn, presented (tool_result), recorded in call order with the
    instruction files they reached; True if a tool said the agent is done. An abort
    once every call has ended is raised after the results are recorded."""
    turn = Turn.of(rt)
    specs = [turn.gen.tool(c["name"]) if "invalid" not in c else None for c in calls]
    # Plugins' tool_call handlers first: a call may be denied or run with new arguments.
    calls, refused = await review_calls(rt, calls, specs, skip_tools)
    specs = [None if r is not None else s for s, r in zip(specs, refused, strict=True)]
    ran, after = await run_tools(turn, calls, specs, refused)
    results, interrupted = await present(rt, calls, ran)
    # The snapshot after the batch comes after what its after-tool hooks did.
    aborted, tree = await after_batch(turn, after)
    if tree is not None:
        run.tree = tree
    record_results(turn.session, list(zip(calls, results, strict=True)))
    record_instructions(rt, calls, specs)  # of directories the calls reached first
    if aborted or interrupted:  # the calls had all ended: results recorded, then the abort
        raise asyncio.CancelledError
    return any(r.get("details", {}).get("done") is True and r["ok"] for r in results)


def _tokens_used(rt: LoopContext, message: dict[str, object]) -> int:
    """Input and output tokens of a response for the token budget: as reported, or
    estimated where the provider did not say (a budget must bind either way)."""
    usage = message.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    used = usage.get("input")
    if not isinstance(used, int):
        used = rt.context_cache.tokens(rt.session)
    out = usage.get("output")
    if not isinstance(out, int):
        out = estimate_tokens(message)
    return used + out


async def _deliver(rt: LoopContext, run: _Run, mode: str) -> bool:
    """Record the queued input of `mode` due now; False if none (or plugins handled it
    all as commands). From here the run's events carry the first item's queue id."""
    items = rt.queue.take(mode)
    if not items:
        return False
    run.submission = items[0].id
    run.taken += [item.id for item in items]
    SUBMISSION.set(run.submission)
    texts, images = [item.text for item in items], [item.images for item in items]
    inputs = await accept_inputs(rt, texts, mode, images=images)
    for text, notes, parts in inputs:
        add_user(rt, text, queued=mode, notes=notes, parts=parts)
    return bool(inputs)
