"""The frontend's side: what a frontend declares, and the one path intents take to it.

    deliver(frontend, event)        # a runtime event: mapped, then shown or degraded
    reply = await ask(frontend, intent)   # a question: the frontend's answer, or refused

Every frontend (the app, and so the web; eval; rpc; mcp; replay) consumes intents
through these two functions and nothing else: `deliver` maps the event to its intent and
shows it if the frontend declares the kind in `Capabilities.shows`, else applies the
kind's policy (drop: it was decoration; persist: the session holds it anyway). `ask`
gives a question to a frontend that declares it in `Capabilities.asks`, bounded by the
question's timeout; one that does not, or a missing frontend, gets a refusal at once,
so nothing waits for an answer no one can give. A runtime serves several frontends at
once: `ask_first` asks every one that can and takes the first reply (docs/ui.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from smith.ui._kinds import (
    NOTE_MAX,
    OPT_IN,
    QUESTIONS,
    SHOWN,
    Intent,
    Reply,
    intent_for,
    refused,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from smith.ui._kinds import Asked, Shown

Delivered = Literal["shown", "drop", "persist"]


@dataclass(frozen=True)
class Capabilities:
    """What a frontend takes: the kinds it shows and the questions it can ask;
    `cannot_ask` is the reason its refusals give. By default it shows every kind but
    the escape hatch (OPT_IN), which a frontend that does it names."""

    shows: frozenset[str] = frozenset(k for k in SHOWN if k not in OPT_IN)
    asks: frozenset[str] = frozenset()
    cannot_ask: str = "this frontend cannot ask the user"


class Frontend(Protocol):
    name: str  # eval, rpc, tui, mcp, replay: named in refusals and answers
    capabilities: Capabilities

    def show(self, intent: Intent) -> None: ...  # a kind it declared in `shows`
    async def ask(self, intent: Intent) -> Reply: ...  # a kind it declared in `asks`


def deliver(frontend: Frontend, event: Mapping[str, Any]) -> Delivered | None:
    """Map a runtime event to its intent and give it to `frontend` if it shows that
    kind, else degrade it by the kind's policy. None: the event stands for no intent."""
    intent = intent_for(event)
    if intent is None:
        return None
    return show(frontend, intent)


def show(frontend: Frontend, intent: Intent) -> Delivered:
    if intent.kind in frontend.capabilities.shows:
        frontend.show(intent)
        return "shown"
    policy = intent.unsupported
    return "persist" if policy == "persist" else "drop"


async def ask(frontend: Frontend | None, intent: Intent) -> Reply:
    """The frontend's answer to a question intent, or a refusal: when there is no
    frontend, it cannot ask this kind, it fails, it gives a key that is no choice, or
    nobody answers within the question's timeout. Cancelling this cancels the frontend's
    question (its overlay closes, its request is withdrawn)."""
    import asyncio

    assert intent.kind in QUESTIONS, intent.kind
    if frontend is None:
        return refused("no frontend is attached to ask the user", "none")
    if intent.kind not in frontend.capabilities.asks:
        return refused(frontend.capabilities.cannot_ask, frontend.name)
    timeout = intent.data.get("timeout")
    try:
        reply, _ = await asyncio.wait_for(_reply(frontend, intent), timeout)
    except TimeoutError:
        return refused(_unanswered(timeout), frontend.name)
    return reply


async def ask_first(frontends: Sequence[Frontend], intent: Intent) -> Reply:
    """`ask` of every frontend that can ask this kind, at once: the first reply wins (an
    answer, or a refusal its user or client gave) and the others' questions are
    cancelled (their prompts close). A frontend that fails, or answers with no choice,
    is left out while another may still answer; when all did, the first such refusal.
    With one that can ask (or none) this is `ask`, refusals included."""
    import asyncio

    able = [f for f in frontends if intent.kind in f.capabilities.asks]
    if len(able) <= 1:
        return await ask(able[0] if able else frontends[0] if frontends else None, intent)
    assert intent.kind in QUESTIONS, intent.kind
    names = ", ".join(f.name for f in able)
    timeout = intent.data.get("timeout")
    asking = [asyncio.ensure_future(_reply(f, intent)) for f in able]
    failures: list[Reply] = []
    try:
        async with asyncio.timeout(timeout):
            waiting = set(asking)
            while waiting:
                done, waiting = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                # In the order they were attached, when two came at once.
                for reply, failed in (t.result() for t in asking if t in done):
                    if not failed:
                        return reply
                    failures.append(reply)
    except TimeoutError:
        return refused(_unanswered(timeout), names)
    finally:
        for task in asking:
            task.cancel()
        await asyncio.wait(asking)
    return failures[0]


async def _reply(frontend: Frontend, intent: Intent) -> tuple[Reply, bool]:
    """The frontend's reply, checked; True with a refusal when it failed (raised, gave
    no Reply, or a key that is no choice) rather than replied."""
    try:
        reply = await frontend.ask(intent)
    except Exception as exc:  # a frontend's failure is a refusal, never a hang
        return refused(f"the {frontend.name} frontend failed: {type(exc).__name__}: {exc}",
                       frontend.name), True  # fmt: skip
    given: object = reply
    if not isinstance(given, Reply):  # a frontend's bug: a refusal, not a crash in the asker
        return refused(f"the {frontend.name} frontend gave no answer ({type(given).__name__})",
                       frontend.name), True  # fmt: skip
    choices = intent.data.get("choices", [])
    keys = [c["key"] for c in choices]
    if reply.refused is None and reply.choice not in keys:
        return refused(f"the answer {reply.choice!r} is not one of {', '.join(keys)}",
                       reply.frontend or frontend.name), True  # fmt: skip
    takes = any(c["key"] == reply.choice and c.get("reason") for c in choices)
    return Reply(reply.choice, reply.refused, reply.frontend or frontend.name,
                 _note(reply.note) if takes and reply.refused is None else "",
                 reply.refused is not None and reply.interrupt), False  # fmt: skip


def _unanswered(timeout: object) -> str:
    within = f" within {timeout:g} s" if isinstance(timeout, int | float) else ""
    return f"nobody answered{within}"


def _note(text: object) -> str:
    """A user's reason as one line of at most NOTE_MAX characters (a frontend may hand
    over anything: a pasted page, newlines, nothing)."""
    line = " ".join(str(text).split())
    return line if len(line) <= NOTE_MAX else line[: NOTE_MAX - 1] + "…"


class ToolUi(Protocol):
    """What a tool may do with the user while it runs (`ToolContext.ui`), from the tool's
    own thread: show a notice, progress or status, and ask a question (blocking until
    it is answered or refused)."""

    def show(self, value: Shown) -> None: ...
    def ask(self, question: Asked) -> Reply: ...


class NoUi:
    """The tool UI where there is nobody: shows nothing, refuses every question."""

    def show(self, value: Shown) -> None:
        pass

    def ask(self, question: Asked) -> Reply:
        return refused("no frontend is attached to ask the user", "none")


NO_UI = NoUi()
