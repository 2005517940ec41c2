"""The steps of a turn: recording user input, streaming the assistant's response, and
running its tool calls.

Recording order is the session's order: the user message, the assistant message (once
its stream has ended, whatever the outcome), then one tool result per call in call
order, each after the whole batch has run. Effect records of the calls (intent and
completion, written by the tools' threads) come between the assistant message and the
results. A queued message is only ever added between turns, so it never separates a call
from its result.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from typing import TYPE_CHECKING, Any

from smith.diagnostics import Source
from smith.providers import End, Group, Request, Usage
from smith.runtime._compaction import context_limit
from smith.runtime._context import apply_policy
from smith.runtime._events import event
from smith.runtime._hooks import present, review_calls
from smith.runtime._images import resolve
from smith.runtime._notes import record_instructions
from smith.runtime._response import Response
from smith.session import calls_pair, new_id
from smith.text import TEXT_REPLACED, replace_surrogates

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from smith.effects import ToolSpec
    from smith.runtime._limits import Limits
    from smith.runtime._loopctx import LoopContext

log = logging.getLogger("smith.runtime")


def add_user(
    rt: LoopContext,
    text: str,
    *,
    queued: str | None = None,
    notes: Mapping[str, object] | None = None,
    parts: Sequence[Mapping[str, object]] = (),
) -> None:
    # The one way a prompt enters, whatever gave it (argument, stdin, RPC, TUI, library):
    # what cannot be encoded is replaced here, with a note, never a failed turn. `notes`
    # say how the text came to be (smith.runtime._hooks): the prompt template it invoked,
    # an input plugin's transformation with the original, the files it attached, whose
    # content `parts` are (after the text: smith.runtime._attach).
    text, replaced = replace_surrogates(text)
    message: dict[str, Any] = {"role": "user", "content": [{"type": "text", "text": text}]}
    if parts:
        message["content"] += [dict(part) for part in parts]
    if queued:
        message["queued"] = queued
    if notes:
        message.update(notes)
    if replaced:
        message["replaced"] = replaced
    message = rt.secrets.redact(message)  # type: ignore[assignment]
    entry = rt.session.append("message", message)
    mid = entry.id
    rt.emit(event("message_start", role="user", message_id=mid))
    rt.emit(
        event("message_delta", message_id=mid, channel="text", delta=message["content"][0]["text"])
    )
    rt.emit(event("message_end", message_id=mid, message=message))
    _note_replaced(rt, replaced, "the prompt", Source(rt.surface, "prompt"))


def _note_replaced(rt: LoopContext, count: int, where: str, source: Source) -> None:
    """Say (as a warning event, after the message that records the count) that `count`
    characters that could not be encoded were replaced with U+FFFD."""
    if count:
        rt.error(TEXT_REPLACED(value=count, source=source, count=count, where=where))


def provider_context(rt: LoopContext) -> list[dict[str, object]]:
    """The messages of the next request: never more than the model's context window
    holds (the newest that fit, if compaction could not make room), under the policy."""
    messages = rt.context_cache.get(rt.session, within=context_limit(rt))
    return [m for _, m in apply_policy(messages, rt.context_policy)]


async def respond(rt: LoopContext) -> dict[str, Any]:
    """One assistant message. A failure before any output is retried or failed over: a
    rate limit moves to the group's next model at once (when the model is a group);
    retryable errors are retried with backoff, then fail over; other errors (invalid
    request, unknown model) and responses that already streamed output are final."""
    group = rt.current.provider if isinstance(rt.current.provider, Group) else None
    if group is not None:
        group.restart()
    attempt = 0
    while True:
        message, end = await stream_assistant(rt)
        if end.outcome != "error" or message["content"]:
            return message
        if end.kind == "rate_limit" and group is not None and _fail_over(rt, group, end):
            attempt = 0
            continue
        if end.retryable and attempt < rt.limits.retries:
            attempt += 1
            delay = round(backoff(attempt, end.retry_after, rt.limits), 2)  # not 0.811003 s
            rt.emit(event("retry", attempt=attempt, delay=delay, error=end.error))
            await asyncio.sleep(delay)
            continue
        if end.retryable and group is not None and _fail_over(rt, group, end):
            attempt = 0
            continue
        return message


def backoff(attempt: int, retry_after: float | None, limits: Limits) -> float:
    """Seconds to wait before retry `attempt` (1-based): what the provider asked for, or
    exponential from `retry_delay` with jitter (50-100%), never above `retry_cap`."""
    if retry_after is not None:
        return min(max(retry_after, 0.0), limits.retry_cap)
    delay = limits.retry_delay * 2.0 ** (attempt - 1)
    return min(delay, limits.retry_cap) * (0.5 + random.random() / 2)


def _fail_over(rt: LoopContext, group: Group, end: End) -> bool:
    failed = group.current
    target = group.advance()
    if target is None:
        return False
    rt.emit(event("failover", from_model=str(failed), to_model=str(target), error=end.error))
    return True


async def stream_assistant(rt: LoopContext) -> tuple[dict[str, Any], End]:
    """One provider request; the recorded assistant message and its terminal event.
    Cancellation is recorded (stop `abort`) and then raised on."""
    gen = rt.current
    request = Request(
        model=gen.model_id,
        # Image parts name their session blob; the bytes are put in for this request only.
        messages=resolve(rt.session, rt.secrets.redact(provider_context(rt))),  # type: ignore[arg-type]
        system=str(rt.secrets.redact(gen.system_prompt)),
        tools=[t.definition() for t in gen.tools],
        settings={**gen.settings, "thinking": gen.thinking},
    )
    mid = f"m-{new_id(4)}"
    rt.emit(event("message_start", role="assistant", message_id=mid))
    got = Response(rt, mid)
    aborted = False
    stream = gen.provider.stream(request)
    try:
        async for item in stream:
            if got.take(item):
                break  # nothing counts after the terminal event
    except asyncio.CancelledError:
        aborted = True
        got.end = End("abort")
    except Exception as exc:  # the provider plugin failed: say so, never treat it as done
        log.warning("provider %s failed", gen.provider.name, exc_info=True)
        got.end = End("error", error=f"the provider failed: {type(exc).__name__}: {exc}")
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            try:
                await aclose()
            except asyncio.CancelledError:  # an abort while it closed: still an abort
                aborted = True
                got.end = got.end or End("abort")
            except Exception:  # a plugin that fails to close has still ended
                log.debug("closing the %s stream failed", gen.provider.name, exc_info=True)
    got.flush()
    end = got.terminal()
    message: dict[str, Any] = {
        "role": "assistant",
        "content": got.content,
        "provider": gen.provider.name,
        "model": gen.provider.current.model if isinstance(gen.provider, Group) else gen.model_id,
        "usage": None if got.usage is None else got.usage.to_dict(),
        "stop": end.outcome,
    }
    if end.error:
        message["error"], n = replace_surrogates(end.error)
        got.replaced += n
    if got.replaced:
        message["replaced"] = got.replaced
    message = rt.secrets.redact(message)  # type: ignore[assignment]
    rt.cost.add(got.usage, gen.provider.pricing(gen.model_id), source="response")
    ids = [str(p["id"]) for p in message["content"] if p.get("type") == "tool_call"]
    entry = rt.session.append("message", message, pair=calls_pair(ids))
    rt.last_message = message
    rt.emit(event("message_end", message_id=mid, entry_id=entry.id, message=message))
    name = gen.provider.name
    _note_replaced(rt, got.replaced, f"the response of {name}", Source("plugin", name))
    if aborted:
        # Calls the model made before the abort get a result, so calls stay paired.
        calls = [p for p in got.content if p["type"] == "tool_call"]
        _record_results(rt, [(c, _not_run(c, "aborted before it ran")) for c in calls])
        raise asyncio.CancelledError
    return message, end


# -- tools -----------------------------------------------------------------------------


def skip_tools(rt: LoopContext, calls: list[dict[str, Any]], why: str,
               results: Sequence[dict[str, Any] | None] = ()) -> None:  # fmt: skip
    """Record each call as not run (calls and results stay paired), e.g. the calls of a
    response that failed before it was complete: what else it meant to do is unknown.
    `results`: a call's own result where it has one (a denial), in call order."""
    given = list(results) + [None] * (len(calls) - len(results))
    _record_results(rt, [(c, r if r is not None else _not_run(c, why))
                         for c, r in zip(calls, given, strict=True)])  # fmt: skip


def _not_run(call: dict[str, Any], why: str) -> dict[str, Any]:
    return {
        "text": f"[not run: {why}]",
        "details": {},
        "ok": False,
        "outcome": "cancelled",
        "mutation": "not-applied",
    }


def _overlap(a: list[str] | None, b: list[str] | None) -> bool:
    if a is None or b is None:
        return True

    def norm(p: str) -> str:
        return p.rstrip("/") + "/"

    return any(norm(x).startswith(norm(y)) or norm(y).startswith(norm(x)) for x in a for y in b)


def _touched(rt: LoopContext, spec: ToolSpec | None, args: dict[str, Any]) -> list[str] | None:
    """The real paths a call touches (None: anything), resolved as the tool will resolve
    them, so `/proj/a.txt`, `a.txt`, `src/../a.txt` and a link to it are one file."""
    if spec is None:
        return []
    paths = spec.touches(args)
    try:
        return None if paths is None else [rt.context.resolve(p) for p in paths]
    except ValueError:  # not a usable path (a NUL): the tool refuses it; order it anyway
        return None


def _conflicts(
    a: tuple[ToolSpec | None, list[str] | None], b: tuple[ToolSpec | None, list[str] | None]
) -> bool:
    (sa, pa), (sb, pb) = a, b
    if sa is None or sb is None:
        return False
    if sa.exclusive or sb.exclusive:
        return True
    if not (sa.mutating or sb.mutating):
        return False
    return _overlap(pa, pb)


async def run_tools(rt: LoopContext, calls: list[dict[str, Any]]) -> bool:
    """Run one assistant message's calls (concurrently where order does not matter),
    record their results in call order; True if a tool said the agent is done."""
    gen = rt.current
    specs = [gen.tool(c["name"]) if "invalid" not in c else None for c in calls]
    # Plugins' tool_call handlers first: a call may be denied or run with new arguments.
    calls, refused = await review_calls(rt, calls, specs, skip_tools)
    specs = [None if r is not None else s for s, r in zip(specs, refused, strict=True)]
    for call in calls:
        start = event(
            "tool_start", tool_call_id=call["id"], name=call["name"], arguments=call["arguments"]
        )
        if "rewritten" in call:  # the arguments are a plugin's rewrite of the model's
            start["rewritten_by"] = call["rewritten"]
        rt.emit(start)
    # File history: the files before the first mutating call, and after the batch (so
    # what a shell command did is covered too); see smith/vcs.
    mutating = rt.history is not None and any(s is not None and s.mutating for s in specs)
    cause = {"turn": rt.turn, "tool_calls": [c["id"] for c in calls]}
    base = await _before(rt, calls, cause) if mutating else None
    tasks: list[asyncio.Task[dict[str, Any]]] = []
    touched = [_touched(rt, s, c["arguments"]) for s, c in zip(specs, calls, strict=True)]
    for i, call in enumerate(calls):
        deps = [
            tasks[j] for j in range(i) if _conflicts((specs[j], touched[j]), (specs[i], touched[i]))
        ]
        tasks.append(asyncio.ensure_future(_one_call(rt, call, specs[i], deps, refused[i])))
    try:
        await asyncio.gather(*tasks)
    except asyncio.CancelledError:
        await asyncio.wait(tasks)  # each records its own end within the abort grace
        if mutating:
            await _after(rt, base, cause)
        ended = []
        for call, task in zip(calls, tasks, strict=True):
            result = _task_result(task, call)
            if task.cancelled() or task.exception() is not None:
                _tool_end(rt, call, result)  # it ended before it could say so itself
            ended.append((call, result))
        _record_results(rt, ended)
        raise
    aborted = await _after(rt, base, cause) if mutating else False
    results, interrupted = await present(rt, calls, [t.result() for t in tasks])
    aborted = aborted or interrupted
    _record_results(rt, list(zip(calls, results, strict=True)))
    record_instructions(rt, calls, specs)  # of directories the calls reached first
    if aborted:  # the calls had all ended: their results are recorded, then the abort
        raise asyncio.CancelledError
    return any(r.get("details", {}).get("done") is True and r["ok"] for r in results)


async def _after(rt: LoopContext, base: str | None, cause: dict[str, Any]) -> bool:
    """The snapshot after a batch, taken to its end even when an abort (or a second one)
    comes meanwhile: its thread writes to the session, and the batch's results, which
    every call must have, are recorded after its record. True if an abort came."""
    taking = asyncio.ensure_future(_snapshot(rt, "after", base, cause))
    aborted = False
    while not taking.done():
        try:
            await asyncio.wait({taking})  # never cancels it, never raises its error
        except asyncio.CancelledError:
            aborted = True
    error = None if taking.cancelled() else taking.exception()
    if error is not None and not aborted:
        raise error
    if error is not None:
        log.warning("the snapshot after an aborted batch failed: %s", error)
    return aborted


async def _before(
    rt: LoopContext, calls: list[dict[str, Any]], cause: dict[str, Any]
) -> str | None:
    """The snapshot before a batch. Aborted while it is taken, the batch does not run:
    once the snapshot has recorded itself, every call ends as not run (its `tool_end` and
    its result), so no call is left without a result."""
    taking = asyncio.ensure_future(_snapshot(rt, "before", None, cause))
    try:
        return await asyncio.shield(taking)
    except asyncio.CancelledError:
        await asyncio.wait({taking})  # its thread writes to the session: let it finish
        if not taking.cancelled() and taking.exception() is not None:
            log.warning("the snapshot before an aborted batch failed: %s", taking.exception())
        results = [(call, _not_run(call, "aborted")) for call in calls]
        for call, result in results:
            _tool_end(rt, call, result)
        _record_results(rt, results)
        raise


async def _snapshot(
    rt: LoopContext, phase: str, base: str | None, cause: dict[str, Any]
) -> str | None:
    """Snapshot the project's files off the loop; its warnings become `error` events.
    Returns the files' tree (None when no snapshot could be taken)."""
    assert rt.history is not None
    snap = await asyncio.to_thread(rt.history.snapshot, phase, base=base, cause=cause)
    for warning in snap.warnings:
        rt.error(warning)
    return snap.tree


def _task_result(task: asyncio.Task[dict[str, Any]], call: dict[str, Any]) -> dict[str, Any]:
    if not (task.cancelled() or task.exception() is not None):
        return task.result()
    if call["id"] in _started(task):
        return {
            "text": "[aborted while running; what it changed is unknown]",
            "details": {},
            "ok": False,
            "outcome": "unknown",
            "mutation": "unknown",
        }
    return _not_run(call, "aborted")


def _started(task: asyncio.Task[dict[str, Any]]) -> set[str]:
    return getattr(task, "smith_started", set())


async def _one_call(
    rt: LoopContext,
    call: dict[str, Any],
    spec: ToolSpec | None,
    deps: list[asyncio.Task[dict[str, Any]]],
    refused: dict[str, Any] | None = None,
) -> dict[str, Any]:
    if deps:
        await asyncio.wait(deps)
    if refused is not None:  # a plugin kept it from running
        result = refused
    elif "invalid" in call:
        result = {
            "text": f"the arguments of this {call['name']} call were not valid JSON "
            f"({call['invalid']}); send them again as one JSON object",
            "details": {},
            "ok": False,
            "outcome": "error",
            "mutation": "not-applied",
        }
    elif spec is None:
        known = ", ".join(rt.tool_names) or "none"
        result = {
            "text": f"there is no tool named '{call['name']}'; the tools are: {known}",
            "details": {},
            "ok": False,
            "outcome": "error",
            "mutation": "not-applied",
        }
    else:
        task = asyncio.current_task()
        if task is not None:
            task.smith_started = {call["id"]}  # type: ignore[attr-defined]
        result = await _execute(rt, call, spec)
    _tool_end(rt, call, result)
    return result


def _tool_end(rt: LoopContext, call: dict[str, Any], result: dict[str, Any], **extra: Any) -> None:
    rt.emit(
        event(
            "tool_end",
            tool_call_id=call["id"],
            name=call["name"],
            result=result,
            outcome=result["outcome"],
            is_error=not result["ok"],
            **extra,
        )
    )


async def _execute(
    rt: LoopContext, call: dict[str, Any], spec: ToolSpec, cause: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Run one call as a recorded effect; `cause`: what to record as its cause (default:
    this call of this turn; the user's own command gives its own, smith.runtime._shell)."""
    from smith.effects import JournalError
    from smith.runtime._host import call_tool

    ctx = rt.context.for_call()
    loop = ctx.loop = asyncio.get_running_loop()

    def progress(update: dict[str, object]) -> None:  # called from the tool's thread
        ev = event("tool_update", tool_call_id=call["id"], name=spec.name,
                   update=rt.secrets.redact(update))  # fmt: skip
        loop.call_soon_threadsafe(rt.emit, ev)

    ctx.progress = progress
    from smith.runtime._intents import ToolPort

    # What the tool shows or asks goes out in the name of the plugin that contributed it.
    origin = next((p.name for p in rt.plugins if spec in p.tools), spec.name)
    ctx.ui = ToolPort(rt, ctx, origin)
    cause = cause or {"tool_call": call["id"], "turn": rt.turn}
    if "rewritten" in call:  # the arguments recorded are the plugin's
        cause["rewritten_by"] = call["rewritten"]

    def work() -> dict[str, Any]:
        try:  # the one path of every call (secrets, journal, the crash rule): _host
            out = call_tool(rt.journal, spec, call["arguments"], ctx, rt.secrets, cause=cause)
        except JournalError as exc:
            return {
                "text": exc.error.diagnostic.render(),
                "details": {},
                "ok": False,
                "outcome": "error",
                "mutation": exc.mutation,
            }
        done = {**out.result.to_dict(), "outcome": out.outcome}
        if out.result.image is not None:  # (media type, bytes): stored below, once
            done["image"] = out.result.image
        return done

    timeout = spec.timeout or rt.limits.tool_timeout
    own = call["arguments"].get(spec.timeout_argument) if spec.timeout_argument else None
    if isinstance(own, int | float):  # the call's own limit: the tool ends its work first
        timeout = max(timeout, float(own) + 30)
    future = asyncio.get_running_loop().run_in_executor(None, work)
    try:
        result = await asyncio.wait_for(asyncio.shield(future), timeout)
    except TimeoutError:
        ctx.cancelled.set()
        result = await _settle(rt, future)
        result["text"] = f"[timed out after {timeout:g} s] " + result["text"]
        result["ok"] = False
    except asyncio.CancelledError:
        # Aborted: the tool is told, and its own record of how it ended (cancelled, or
        # finished after all) becomes the result the model sees on resume.
        ctx.cancelled.set()
        result = await _settle(rt, future)
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
    return _finish(rt, result)


def _add_image(rt: LoopContext, result: dict[str, Any], image: tuple[str, bytes]) -> None:
    """A tool's image (the read tool's): stored once in the session and named by the
    result for a model that takes images; for any other, the result's text says why it
    sees no image."""
    from smith.runtime._images import Image, image_part, takes_images

    gen = rt.current
    if not takes_images(gen.provider):
        result["text"] += (
            f" (the image itself is not shown: the model {gen.model} does not take image input)"
        )
        return
    path = result.get("details", {}).get("path")
    name = os.path.basename(str(path)) if path else "image"
    result["image"] = image_part(rt.session, Image(image[1], image[0], name))


async def _settle(rt: LoopContext, future: asyncio.Future[dict[str, Any]]) -> dict[str, Any]:
    """The result of a cancelled call once it has recorded its end (bounded wait)."""
    done, _ = await asyncio.wait({future}, timeout=rt.limits.abort_grace)
    if done:
        return future.result()
    return {
        "text": "[the call did not stop in time; its effect is unknown]",
        "details": {},
        "ok": False,
        "outcome": "unknown",
        "mutation": "unknown",
    }


def _finish(rt: LoopContext, result: dict[str, Any]) -> dict[str, Any]:
    image = result.pop("image", None)  # bytes: neither redacted nor cut, stored once
    usage = result.get("details", {}).get("usage")
    if isinstance(usage, dict):  # a tool that called a model reports what it used
        counts = [usage.get(k) for k in ("input", "output", "cache_read", "cache_write")]
        # Priced only if the tool says which model it used and it is the current one.
        gen = rt.current
        pricing = gen.provider.pricing(gen.model_id) if usage.get("model") == gen.model_id else None
        rt.cost.add(
            Usage(*(c if isinstance(c, int) else None for c in counts)), pricing, source="tool"
        )
    result = rt.secrets.redact(result)  # type: ignore[assignment]
    result["text"] = truncate(result["text"], rt.limits.result_bytes)
    if image is not None:
        _add_image(rt, result, image)
    return result


def truncate(text: str, limit: int) -> str:
    """`text` cut to at most `limit` UTF-8 bytes, at a character boundary, with a marker
    stating the original size."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    kept = data[:limit].decode("utf-8", "ignore")
    return (
        f"{kept}\n[truncated: the result was {len(data)} bytes; the first "
        f"{len(kept.encode('utf-8', 'surrogatepass'))} are shown]"
    )


def _image_of(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    image = result.get("image")
    return [image] if isinstance(image, dict) else []


def _record_results(rt: LoopContext, pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    for call, result in pairs:
        message = {
            "role": "tool_result",
            "tool_call_id": call["id"],
            "tool_name": call["name"],
            "content": [{"type": "text", "text": result["text"]}, *_image_of(result)],
            "is_error": not result["ok"],
            "outcome": result["outcome"],
            "details": result.get("details", {}),
        }
        if "rewritten" in call:  # what ran; the assistant message keeps what was asked
            message["rewritten"] = {"plugin": call["rewritten"], "arguments": call["arguments"]}
        if "denied" in result:  # it never ran: nothing was applied
            message["denied"], message["mutation"] = result["denied"], "not-applied"
        if "presented" in result:  # what the model is sent instead of the text above
            message["presented"] = result["presented"]
        rt.session.append("message", message, pair=call["id"])
