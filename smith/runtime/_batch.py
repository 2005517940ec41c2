"""The tool batch of a turn: one assistant message's calls, run as recorded effects.

`run_tools` is given the services of its turn (smith.runtime._turn.Turn) and the calls
as plugins reviewed them, and returns the results in call order; the loop presents them
to plugins and records them (`record_results`: one tool result per call, in call order,
after the whole batch). Calls run concurrently where order does not matter (a call that
conflicts with an earlier one, by the paths it touches or being exclusive, waits for
it); file history takes a snapshot before the first mutating call, and the loop takes
the one after the batch (`after_batch`) once its results were presented, so what an
after-tool hook changed (a formatter) is part of the turn, as smith's own writes are.
An abort while calls run is the one case recorded here: each call's end as far as it
is known, then the abort is raised on.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import TYPE_CHECKING, Any, NamedTuple

from smith.providers import Usage
from smith.runtime._events import event

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from smith.effects import ToolSpec
    from smith.runtime._turn import Turn
    from smith.session import Session

log = logging.getLogger("smith.runtime")


def not_run(call: dict[str, Any], why: str) -> dict[str, Any]:
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


def _touched(turn: Turn, spec: ToolSpec | None, args: dict[str, Any]) -> list[str] | None:
    """The real paths a call touches (None: anything), resolved as the tool will resolve
    them, so `/proj/a.txt`, `a.txt`, `src/../a.txt` and a link to it are one file."""
    if spec is None:
        return []
    paths = spec.touches(args)
    try:
        return None if paths is None else [turn.context.resolve(p) for p in paths]
    except ValueError:  # not a usable path (a NUL): the tool refuses it; order it anyway
        return None


def _conflicts(
    a: tuple[ToolSpec | None, list[str] | None], b: tuple[ToolSpec | None, list[str] | None]
) -> bool:
    (sa, pa), (sb, pb) = a, b
    if sa is None or sb is None:
        return False
    if sa.exclusive or sb.exclusive or (sa.ordered and sa.name == sb.name):
        return True
    if not (sa.mutating or sb.mutating):
        return False
    return _overlap(pa, pb)


async def run_tools(
    turn: Turn,
    calls: list[dict[str, Any]],
    specs: list[ToolSpec | None],
    refused: Sequence[dict[str, Any] | None],
) -> tuple[list[dict[str, Any]], After | None]:
    """Run one assistant message's calls as reviewed (`specs[i]` None: no tool runs it;
    `refused[i]`: its result when a plugin kept it from running), concurrently where
    order does not matter; their results in call order, and the snapshot after the batch
    that is still to be taken (`after_batch`; None when the batch changes no files). An
    abort while calls run records every result (and that snapshot) here, and is raised
    on."""
    for call in calls:
        start = event(
            "tool_start", tool_call_id=call["id"], name=call["name"], arguments=call["arguments"]
        )
        if "rewritten" in call:  # the arguments are a plugin's rewrite of the model's
            start["rewritten_by"] = call["rewritten"]
        turn.emit(start)
    # File history: the files before the first mutating call, and after the batch (so
    # what a shell command did is covered too); see smith/vcs.
    mutating = turn.runner.snapshots(specs)
    cause = {"turn": turn.number, "tool_calls": [c["id"] for c in calls]}
    base = await _before(turn, calls, cause) if mutating else None
    tasks: list[asyncio.Task[dict[str, Any]]] = []
    touched = [_touched(turn, s, c["arguments"]) for s, c in zip(specs, calls, strict=True)]
    for i, call in enumerate(calls):
        deps = [
            tasks[j] for j in range(i) if _conflicts((specs[j], touched[j]), (specs[i], touched[i]))
        ]
        tasks.append(asyncio.ensure_future(_one_call(turn, call, specs[i], deps, refused[i])))
    try:
        await asyncio.gather(*tasks)
    except asyncio.CancelledError:
        await asyncio.wait(tasks)  # each records its own end within the abort grace
        if mutating:
            await _after(turn, base, cause)
        ended = []
        for call, spec, task in zip(calls, specs, tasks, strict=True):
            result = _task_result(task, call, spec)
            if task.cancelled() or task.exception() is not None:
                _tool_end(turn, call, result)  # it ended before it could say so itself
            ended.append((call, result))
        record_results(turn.session, ended)
        raise
    return [t.result() for t in tasks], After(base, cause) if mutating else None


class After(NamedTuple):
    """The snapshot after a batch, still to be taken: the tree before it and its cause."""

    base: str | None
    cause: dict[str, Any]


async def after_batch(turn: Turn, after: After | None) -> tuple[bool, str | None]:
    """Take the snapshot after a batch once its results were presented (after-tool
    hooks ran): whether an abort came meanwhile, and the files' tree (None: none taken)."""
    if after is None:
        return False, None
    taken: list[str | None] = []
    aborted = await _after(turn, after.base, after.cause, taken)
    return aborted, (taken[0] if taken else None)


async def _after(
    turn: Turn, base: str | None, cause: dict[str, Any], tree: list[str | None] | None = None
) -> bool:
    """The snapshot after a batch, taken to its end even when an abort (or a second one)
    comes meanwhile: its thread writes to the session, and the batch's results, which
    every call must have, are recorded after its record. True if an abort came; the
    files' tree is added to `tree`."""
    taking = asyncio.ensure_future(_snapshot(turn, "after", base, cause))
    aborted = False
    while not taking.done():
        try:
            await asyncio.wait({taking})  # never cancels it, never raises its error
        except asyncio.CancelledError:
            aborted = True
    error = None if taking.cancelled() else taking.exception()
    if error is not None and not aborted:
        raise error
    if tree is not None and error is None and not taking.cancelled():
        tree.append(taking.result())
    if error is not None:
        log.warning("the snapshot after an aborted batch failed: %s", error)
    return aborted


async def _before(turn: Turn, calls: list[dict[str, Any]], cause: dict[str, Any]) -> str | None:
    """The snapshot before a batch. Aborted while it is taken, the batch does not run:
    once the snapshot has recorded itself, every call ends as not run (its `tool_end` and
    its result), so no call is left without a result."""
    taking = asyncio.ensure_future(_snapshot(turn, "before", None, cause))
    try:
        return await asyncio.shield(taking)
    except asyncio.CancelledError:
        await asyncio.wait({taking})  # its thread writes to the session: let it finish
        if not taking.cancelled() and taking.exception() is not None:
            log.warning("the snapshot before an aborted batch failed: %s", taking.exception())
        results = [(call, not_run(call, "aborted")) for call in calls]
        for call, result in results:
            _tool_end(turn, call, result)
        record_results(turn.session, results)
        raise


async def _snapshot(turn: Turn, phase: str, base: str | None, cause: dict[str, Any]) -> str | None:
    """Snapshot the project's files off the loop (the runner's snapshot: its warnings
    become `error` events). Returns the files' tree (None when none could be taken)."""
    return await asyncio.to_thread(turn.runner.snapshot, phase, base, cause)


def _task_result(
    task: asyncio.Task[dict[str, Any]], call: dict[str, Any], spec: ToolSpec | None
) -> dict[str, Any]:
    if not (task.cancelled() or task.exception() is not None):
        return task.result()
    if spec is not None and call["id"] in _started(task):
        from smith.effects import unfinished

        return {
            "text": "[aborted while running; what it changed is unknown]",
            "details": {},
            "ok": False,
            "outcome": "unknown",
            "mutation": unfinished(spec.mutating),  # the journal's rule
        }
    return not_run(call, "aborted")


def _started(task: asyncio.Task[dict[str, Any]]) -> set[str]:
    return getattr(task, "smith_started", set())


async def _one_call(
    turn: Turn,
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
        known = ", ".join(turn.tool_names) or "none"
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
        started = time.monotonic()
        result = await _execute(turn, call, spec)
        _tool_end(turn, call, result, duration_ms=round((time.monotonic() - started) * 1000, 1))
        return result
    _tool_end(turn, call, result)
    return result


def _tool_end(turn: Turn, call: dict[str, Any], result: dict[str, Any], **extra: Any) -> None:
    turn.emit(
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
    turn: Turn, call: dict[str, Any], spec: ToolSpec, cause: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Run one call as a recorded effect through the turn's runner (smith.runtime._runner:
    secrets, the journal, the crash rule, the timeout, abort, masking and truncation);
    `cause`: what to record as its cause (default: this call of this turn; the user's own
    command gives its own, smith.runtime._shell)."""
    ctx = turn.context.for_call()
    loop = ctx.loop = asyncio.get_running_loop()

    def progress(update: dict[str, object]) -> None:  # called from the tool's thread
        ev = event("tool_update", tool_call_id=call["id"], name=spec.name,
                   update=turn.secrets.redact(update))  # fmt: skip
        loop.call_soon_threadsafe(turn.emit, ev)

    ctx.progress = progress
    ctx.ui = turn.port(ctx, spec)  # in the name of the plugin that contributed the tool
    cause = cause or {"tool_call": call["id"], "turn": turn.number}
    if "rewritten" in call:  # the arguments recorded are the plugin's
        cause["rewritten_by"] = call["rewritten"]
    ran = await turn.runner.run(spec, call["arguments"], ctx, cause=cause)
    _priced(turn, ran.result)
    ran = turn.runner.finish(ran)
    result = ran.result
    if ran.image is not None:  # (media type, bytes): stored once, in the session
        _add_image(turn, result, ran.image)
    return result


def _add_image(turn: Turn, result: dict[str, Any], image: tuple[str, bytes]) -> None:
    """A tool's image (the read tool's): stored once in the session and named by the
    result for a model that takes images; for any other, the result's text says why it
    sees no image."""
    from smith.runtime._images import Image, image_part, takes_images

    gen = turn.gen
    if not takes_images(gen.provider):
        result["text"] += (
            f" (the image itself is not shown: the model {gen.model} does not take image input)"
        )
        return
    path = result.get("details", {}).get("path")
    name = os.path.basename(str(path)) if path else "image"
    result["image"] = image_part(turn.session, Image(image[1], image[0], name))


def _priced(turn: Turn, result: dict[str, Any]) -> None:
    """What a tool that called a model reports it used, priced only if it says which
    model and it is the turn's."""
    usage = result.get("details", {}).get("usage")
    if isinstance(usage, dict):
        counts = [usage.get(k) for k in ("input", "output", "cache_read", "cache_write")]
        gen = turn.gen
        pricing = gen.provider.pricing(gen.model_id) if usage.get("model") == gen.model_id else None
        turn.cost.add(
            Usage(*(c if isinstance(c, int) else None for c in counts)), pricing, source="tool"
        )


def _image_of(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    image = result.get("image")
    return [image] if isinstance(image, dict) else []


def record_results(session: Session, pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
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
        session.append("message", message, pair=call["id"])
