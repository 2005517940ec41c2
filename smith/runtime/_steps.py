"""The steps of a turn: recording user input and streaming the assistant's response
(its tool calls run in smith.runtime._batch).

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
import random
from typing import TYPE_CHECKING, Any, NamedTuple

from smith.diagnostics import Source
from smith.providers import End, Group, Request
from smith.runtime._batch import not_run, record_results
from smith.runtime._compaction import context_limit
from smith.runtime._context import apply_policy
from smith.runtime._events import event
from smith.runtime._images import resolve
from smith.runtime._response import Response
from smith.session import calls_pair, new_id
from smith.text import TEXT_REPLACED, replace_surrogates

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from smith.runtime._cost import CostMeter
    from smith.runtime._events import Event
    from smith.runtime._generation import Generation
    from smith.runtime._limits import Limits
    from smith.runtime._loopctx import LoopContext
    from smith.runtime._secrets import SecretProxy
    from smith.session import Session

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
        streamed = await stream_assistant(
            rt.current, provider_context(rt), rt.session, rt.secrets, rt.emit, rt.cost
        )
        message, end = streamed.message, streamed.end
        rt.last_message = message
        name = rt.current.provider.name
        _note_replaced(rt, streamed.replaced, f"the response of {name}", Source("plugin", name))
        if streamed.aborted:
            raise asyncio.CancelledError
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


class Streamed(NamedTuple):
    """What one provider request gave: the recorded assistant message, its terminal
    event, the characters of it that could not be encoded (replaced with U+FFFD), and
    whether an abort cut it short (it is recorded all the same)."""

    message: dict[str, Any]
    end: End
    replaced: int
    aborted: bool


async def stream_assistant(
    gen: Generation,
    messages: list[dict[str, object]],
    session: Session,
    secrets: SecretProxy,
    emit: Callable[[Event], None],
    cost: CostMeter,
) -> Streamed:
    """One provider request with generation `gen` over `messages` (the context the
    policy keeps): the deltas go out through `emit` as they come, redacted by `secrets`;
    the message is recorded in `session` once its stream has ended, whatever the outcome
    (an abort too: the calls it made then get a result, so calls stay paired), and its
    usage counted in `cost`. These are the services of the turn; the runtime is not."""
    request = Request(
        model=gen.model_id,
        # Image parts name their session blob; the bytes are put in for this request only.
        messages=resolve(session, secrets.redact(messages)),  # type: ignore[arg-type]
        system=str(secrets.redact(gen.system_prompt)),
        tools=[t.definition() for t in gen.tools],
        settings={**gen.settings, "thinking": gen.thinking},
    )
    mid = f"m-{new_id(4)}"
    emit(event("message_start", role="assistant", message_id=mid))
    got = Response(secrets, emit, mid)
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
    message = secrets.redact(message)  # type: ignore[assignment]
    cost.add(got.usage, gen.provider.pricing(gen.model_id), source="response")
    ids = [str(p["id"]) for p in message["content"] if p.get("type") == "tool_call"]
    entry = session.append("message", message, pair=calls_pair(ids))
    emit(event("message_end", message_id=mid, entry_id=entry.id, message=message))
    if aborted:
        # Calls the model made before the abort get a result, so calls stay paired.
        calls = [p for p in got.content if p["type"] == "tool_call"]
        record_results(session, [(c, not_run(c, "aborted before it ran")) for c in calls])
    return Streamed(message, end, got.replaced, aborted)


# -- tools -----------------------------------------------------------------------------


def skip_tools(rt: LoopContext, calls: list[dict[str, Any]], why: str,
               results: Sequence[dict[str, Any] | None] = ()) -> None:  # fmt: skip
    """Record each call as not run (calls and results stay paired), e.g. the calls of a
    response that failed before it was complete: what else it meant to do is unknown.
    `results`: a call's own result where it has one (a denial), in call order."""
    given = list(results) + [None] * (len(calls) - len(results))
    record_results(rt.session, [(c, r if r is not None else not_run(c, why))
                                for c, r in zip(calls, given, strict=True)])  # fmt: skip
