"""Summary compaction: fewer tokens for the provider, nothing deleted from the session.

The older part of the branch's context is summarised by the current model and a
`compaction` entry records the summary and the first message kept verbatim. From then on
the provider sees the summary followed by the kept messages and everything after
(smith.runtime._context.ContextCache); the session keeps every entry, so the full
history stays browsable, forkable and replayable.

The cut is made at a user or assistant message, so tool calls stay with their results.
A summary that did not end normally (a limit, an error, an abort, or nothing said) is not
recorded: the compaction fails and history stays as it was. Queued input is untouched,
so it is delivered afterwards exactly as it would have been.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import TYPE_CHECKING, Any

from smith.providers import End, Group, ModelInfo, Request, TextDelta, Usage
from smith.runtime._context import can_start, estimate_tokens
from smith.runtime._events import event
from smith.runtime._turn import Turn

if TYPE_CHECKING:
    from smith.runtime._loopctx import LoopContext

SUMMARY_SYSTEM = (
    "You summarise a coding session so that it can continue without the full transcript. "
    "Keep: the user's goals and constraints, decisions made and why, files read or "
    "changed (with paths), commands run and their outcomes, errors still open, and the "
    "next steps. Be concise and factual; do not invent anything."
)


def context_limit(rt: LoopContext) -> int | None:
    """The configured context.limit, else the model's context window from its catalog
    entry (providers for HTTP APIs carry it as `model`); None when neither is known."""
    if rt.limits.context_limit is not None:
        return rt.limits.context_limit
    provider: object = rt.current.provider
    if isinstance(provider, Group):
        provider = provider.members[provider.index][1]
    info = getattr(provider, "model", None)
    return info.context_window if isinstance(info, ModelInfo) else None


def needs_compaction(rt: LoopContext) -> bool:
    """The context is past 80 % of the limit, and has grown by a tenth since an
    automatic compaction last failed (so a failing summary is not paid for each turn)."""
    limit = context_limit(rt)
    if limit is None:
        return False
    used = rt.context_cache.tokens(rt.session)
    failed_at = rt.compaction_failed_at
    return used > limit * 0.8 and (failed_at is None or used > failed_at * 1.1)


def _cut(messages: list[tuple[str, dict[str, Any]]], keep: int) -> int:
    """Index of the first message kept verbatim: the earliest place a context may start
    from which at most `keep` estimated tokens follow (at least the latest exchange is
    kept); 0 when there is nothing before it to summarise."""
    sizes = [estimate_tokens(m) for _, m in messages]
    # A short context still loses about half of its conversation; smith's notes (the
    # environment block, instruction files) are not summarised, so they do not count:
    # counted, a large environment block set the cut after everything else, and the
    # summariser was sent nothing to summarise.
    spoken = sum(size for size, (_, m) in zip(sizes, messages, strict=True) if _spoken(m))
    keep = min(keep, spoken // 2)
    starts = [i for i in range(1, len(messages)) if can_start(messages[i][1])]
    if not starts:
        return 0
    after = 0
    cut = starts[-1]
    for i in range(len(messages) - 1, 0, -1):
        after += sizes[i]
        if after > keep:
            break
        if i in starts:
            cut = i
    return cut


def _spoken(message: dict[str, Any]) -> bool:
    """A message the summary covers: not one of smith's context notes (a user's own
    `!command`, recorded as a note too, is covered)."""
    note = message.get("context")
    return not note or note == "shell"


def render(messages: list[tuple[str, dict[str, Any]]]) -> str:
    """A plain transcript of messages for the summariser."""
    lines = []
    for _, m in messages:
        if not _spoken(m):  # environment, instructions: recorded again if needed
            continue
        role = "user's command" if m.get("context") == "shell" else m.get("role")
        for part in m.get("content", []):
            kind = part.get("type")
            if kind == "text":
                lines.append(f"[{role}] {part['text']}")
            elif kind == "tool_call":
                args = json.dumps(part.get("arguments"), ensure_ascii=False)
                lines.append(f"[{role} calls {part['name']}] {args}")
            elif kind == "image":  # the summariser is told of it, not shown it
                lines.append(f"[{role} attached an image: {part.get('name') or 'unnamed'}]")
    return "\n\n".join(lines)


async def compact(rt: LoopContext, reason: str, focus: str | None = None) -> bool:
    """Summarise the older context (keeping `focus` above all, when given); True if a
    compaction entry was recorded."""
    start = event("compaction_start", reason=reason)
    if focus:
        start["focus"] = str(rt.secrets.redact(focus))
    rt.emit(start)
    try:
        await rt.dispatch(start)  # a safe point: hooks are told before anything is summarised
        messages = rt.context_cache.get(rt.session)
        ok, fields = await summarise(Turn.of(rt), messages, reason, focus)
    except asyncio.CancelledError:
        rt.emit(
            event("compaction_end", reason=reason, ok=False, error="aborted; history is unchanged")
        )
        raise
    rt.compaction_failed_at = None if ok else rt.context_cache.tokens(rt.session)
    if ok and rt.project is not None:  # its instruction notes before the cut are gone
        rt.project.forget_reached()
    end = event("compaction_end", reason=reason, ok=ok, **fields)
    rt.emit(end)
    await rt.dispatch(end)
    return ok


async def summarise(
    turn: Turn, messages: list[tuple[str, dict[str, Any]]], reason: str, focus: str | None
) -> tuple[bool, dict[str, Any]]:
    """Ask the turn's model for a summary of `messages` (the context, each with its
    entry id) before the recent ones the limits keep, and record it as a compaction
    entry: (True, the compaction_end event's fields), or (False, its error) with
    nothing recorded."""
    cut = _cut(messages, turn.limits.keep_recent)
    if cut == 0:
        return False, {"error": "nothing to compact: the context is already short"}
    gen = turn.gen
    text = render(messages[:cut])
    if not text:  # only smith's notes before the cut: a summary would say nothing
        return False, {"error": "nothing to compact: the context is already short"}
    ask = "Summarise this conversation so far"
    if focus:  # the user's /compact FOCUS: what the summary must keep above all
        ask += f", keeping above all everything about: {focus}"
    request = Request(
        model=gen.model_id,
        system=SUMMARY_SYSTEM,
        messages=[
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": str(turn.secrets.redact(f"{ask}:\n\n{text}")),
                    }
                ],
            }
        ],
        settings={**gen.settings, "thinking": "off"},
    )
    summary = ""
    usage: Usage | None = None
    end: End | None = None
    stream = gen.provider.stream(request)
    try:
        async for item in stream:
            if isinstance(item, TextDelta):
                summary += item.text
            elif isinstance(item, Usage):
                usage = item
            elif isinstance(item, End):
                end = item
                break
    except Exception as exc:  # the provider failed: the compaction fails, nothing else
        end = End("error", error=f"the provider failed: {type(exc).__name__}: {exc}")
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await aclose()
    turn.cost.add(usage, gen.provider.pricing(gen.model_id), source="compaction")
    if end is None or end.outcome != "success" or not summary.strip():
        how = "without a terminal event" if end is None else f"with '{end.outcome}'"
        detail = f" ({end.error})" if end is not None and end.error else ""
        return False, {
            "error": f"the summary ended {how}{detail}, so it may be incomplete; "
            "it was not recorded and history is unchanged"
        }
    before = sum(estimate_tokens(m) for _, m in messages)
    content = {
        "summary": turn.secrets.redact(summary),
        "first_kept": messages[cut][0],
        "reason": reason,
        **({"focus": turn.secrets.redact(focus)} if focus else {}),
        "tokens_before": before,
        "usage": None if usage is None else usage.to_dict(),
    }
    entry = turn.session.append("compaction", content)
    return True, {
        "summary": content["summary"],
        "entry_id": entry.id,
        "first_kept": content["first_kept"],
        "tokens_before": before,
    }
