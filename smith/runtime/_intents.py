"""UI intents from the runtime's producers: plugin handlers, commands and tools.

    post(rt, Notify("tests pass"), origin="guard")          # a `ui` event, at once
    reply = await ask(rt, Confirm("run them?"), origin="guard")

`post` sends a notice, progress or status out as a `ui` event (docs/events.md), which
every frontend receives through `smith.ui.deliver` like any runtime event. `ask` gives a
question to the attached frontends (`Runtime.attach`) through `smith.ui.ask_first`:
every one that can ask it is asked, the first reply wins and the others' questions are
cancelled. Either way the outcome is recorded once in the session (entry kind
`question`) and emitted to every frontend (`intent_answered`, naming the frontend that
answered, or `intent_refused`), and the asker gets the `Reply`. An abort withdraws the
questions of the run, closing the runtime every question: each is then refused, so no
asker waits for an answer that cannot come.

Handlers and tools run in threads of their own: `HandlerAsker` and `ToolPort` bring
their posts and questions to the runtime's loop; while a handler waits for an answer,
its deadline is paused (`Gate`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from typing import TYPE_CHECKING

from smith.diagnostics import DiagnosticKind, Source
from smith.runtime._events import Event
from smith.ui import (
    Reply,
    answer_event,
    answer_record,
    ask_first,
    question_intent,
    refused,
    shown_intent,
)

if TYPE_CHECKING:
    import concurrent.futures
    from collections.abc import Callable, Sequence

    from smith.diagnostics import Diagnostic
    from smith.effects import ToolContext
    from smith.runtime._loopctx import LoopContext
    from smith.runtime._runtime import Runtime
    from smith.sdk import Plugin
    from smith.ui import Asked, Intent, Shown

log = logging.getLogger("smith.runtime")

ABORTED = "the agent was aborted before it was answered"
CLOSED = "the session was closed before it was answered"


UNDECLARED_HATCH = DiagnosticKind(
    "plugin.undeclared-hatch",
    what="plugin '{plugin}' asked for the escape hatch {hatch}, which it does not declare: refused",
    why="a plugin uses only the frontend escape hatches its manifest declares, so the user "
    "sees them at install (docs/plugins.md, Escape hatches)",
    fix='declare it: `frontend "{hatch}"` in the package\'s plugin.kdl (a Python plugin: '
    'Plugin(frontend=("{hatch}",)))',
)


def undeclared(plugins: Sequence[Plugin], value: Shown, origin: str) -> Diagnostic | None:
    """The refusal of `value` when it is an escape hatch (smith.ui.Hatch) the plugin
    `origin` does not declare in `Plugin.frontend`; None for anything else."""
    from smith.ui import Hatch

    if not isinstance(value, Hatch):
        return None
    plugin = next((p for p in plugins if p.name == origin), None)
    if plugin is not None and value.capability in plugin.frontend:
        return None
    return UNDECLARED_HATCH(value=value.capability, source=Source("plugin", origin),
                            plugin=origin, hatch=value.capability)  # fmt: skip


def post(rt: Runtime, value: Shown, *, origin: str) -> None:
    """Send a notice, progress, status or escape hatch out as a `ui` event (secrets
    redacted); a hatch `origin` did not declare is refused with a diagnostic instead."""
    refusal = undeclared(rt.plugins, value, origin)
    if refusal is not None:
        rt.error(refusal)
        return
    ev = shown_intent(value, origin=origin).event
    assert ev is not None
    redacted = rt.secrets.redact(ev)
    assert isinstance(redacted, dict)
    rt.emit(redacted)


def poster(rt: Runtime, origin: str) -> Callable[[Shown], None]:
    """RuntimeView.post for `origin`: `post` from any thread (on the runtime's loop, the
    one running where the view was made); nothing once that loop is closed."""
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = None

    def post_it(value: Shown) -> None:
        if loop is None:
            post(rt, value, origin=origin)
            return
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is loop:
            post(rt, value, origin=origin)
            return
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody to tell
            loop.call_soon_threadsafe(functools.partial(post, rt, value, origin=origin))

    return post_it


async def ask(rt: Runtime, question: Asked, *, origin: str, gate: Gate | None = None) -> Reply:
    """Ask the attached frontends; the first answer or a refusal, recorded and emitted."""
    from smith.session import new_id
    from smith.ui import Intent

    intent = question_intent(question, origin=origin, ask_id=new_id())
    redacted = rt.secrets.redact(intent.data)
    assert isinstance(redacted, dict)
    if rt.subagent and isinstance(redacted.get("text"), str):  # who asks, of the tree
        redacted = {**redacted, "text": f"[sub-agent {rt.subagent}] {redacted['text']}"}
    intent = Intent(intent.kind, redacted)
    frontends = tuple(rt.frontends)
    able = [f.name for f in frontends if intent.kind in f.capabilities.asks]
    who = ", ".join(able) or (frontends[0].name if frontends else "none")
    pending = Pending(intent, who)
    task = asyncio.ensure_future(ask_first(frontends, intent))
    rt.asking[task] = pending
    if gate is not None:
        gate.begin()
    try:
        reply = await asyncio.shield(task)
    except asyncio.CancelledError:
        task.cancel()
        withdrawn = pending.withdrawn or refused(ABORTED, pending.frontend)
        if pending.withdrawn is None:  # the asker itself was cancelled
            settle(rt, pending, withdrawn)
            raise
        return withdrawn
    finally:
        rt.asking.pop(task, None)
        if gate is not None:
            gate.end()
    settle(rt, pending, reply)
    return reply


class Pending:
    """A question waiting for its answer; `withdrawn` once an abort refused it."""

    __slots__ = ("frontend", "intent", "withdrawn")

    def __init__(self, intent: Intent, frontend: str) -> None:
        self.intent = intent
        self.frontend = frontend
        self.withdrawn: Reply | None = None


def settle(rt: Runtime, pending: Pending, reply: Reply) -> None:
    """Record how a question ended and say so (`intent_answered`/`intent_refused`)."""
    # A refusal's reason (and a choice) come from outside: a client may put anything in
    # them, so they are redacted as everything recorded is.
    record = rt.secrets.redact(answer_record(pending.intent, reply))
    assert isinstance(record, dict)
    try:
        rt.session.append("question", record)
    except Exception:  # the session is closed or failing: the event still says it
        log.exception("the outcome of a question could not be recorded")
    ev: Event = answer_event(record)
    rt.emit(ev)


def withdraw(rt: Runtime, reason: str) -> None:
    """Refuse every question still waiting for an answer (an abort, closing): each is
    recorded and said at once, before the run it belongs to ends."""
    for task, pending in list(rt.asking.items()):
        if pending.withdrawn is None:
            pending.withdrawn = refused(reason, pending.frontend)
            settle(rt, pending, pending.withdrawn)
            task.cancel()


class Gate:
    """The time a handler spends waiting for answers, which its deadline leaves out.
    Used on the runtime's loop only."""

    def __init__(self) -> None:
        self.pending = 0
        self.waited = 0.0
        self._since = 0.0
        self.quiet = asyncio.Event()
        self.quiet.set()

    def begin(self) -> None:
        if self.pending == 0:
            self._since = time.monotonic()
            self.quiet.clear()
        self.pending += 1

    def end(self) -> None:
        self.pending -= 1
        if self.pending == 0:
            self.waited += time.monotonic() - self._since
            self.quiet.set()

    def used(self, start: float) -> float:
        """Seconds since `start` not spent waiting for an answer."""
        now = time.monotonic()
        waiting = now - self._since if self.pending else 0.0
        return now - start - self.waited - waiting


class HandlerAsker:
    """`RuntimeView.ask` for one plugin's handler, from the handler's thread (and its
    own event loop, when it is a coroutine): the question goes to the runtime's loop."""

    def __init__(self, rt: Runtime, plugin: str, gate: Gate | None) -> None:
        self.rt = rt
        self.plugin = plugin
        self.gate = gate
        self.loop = _running()  # made on the runtime's loop

    async def __call__(self, question: Asked) -> Reply:
        if self.loop is None:
            return refused("the runtime is not running", "none")
        coro = ask(self.rt, question, origin=self.plugin, gate=self.gate)
        if _on(self.loop):
            return await coro
        try:
            future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        except RuntimeError:  # the runtime's loop has closed
            coro.close()
            return refused(CLOSED, "none")
        return await asyncio.wrap_future(future)


class ToolPort:
    """`ToolContext.ui` for one tool call of a turn: from the tool's worker thread,
    posts and questions go to the runtime's loop; a question is withdrawn when the call
    is cancelled (an abort, its timeout)."""

    def __init__(self, rt: LoopContext, ctx: ToolContext, origin: str) -> None:
        self.rt = rt
        self.ctx = ctx
        self.origin = origin
        self.loop = asyncio.get_running_loop()

    def show(self, value: Shown) -> None:
        import contextlib

        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody to show it to
            self.loop.call_soon_threadsafe(lambda: self.rt.post(value, origin=self.origin))

    def ask(self, question: Asked) -> Reply:
        if _on(self.loop):  # not from the loop itself: it would wait on itself
            return refused("a tool cannot ask from the runtime's own loop", "none")
        coro = self.rt.ask(question, origin=self.origin)
        try:
            future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        except RuntimeError:
            coro.close()
            return refused(CLOSED, "none")
        return wait_cancellable(future, self.ctx)


def wait_cancellable(future: concurrent.futures.Future[Reply], ctx: ToolContext) -> Reply:
    """The future's reply, or a refusal once the call is cancelled (the question is
    withdrawn then)."""
    import concurrent.futures

    while True:
        try:
            return future.result(timeout=0.05)
        except concurrent.futures.TimeoutError:
            if ctx.cancelled.is_set():
                future.cancel()
                return refused("the tool call was cancelled before it was answered", "none")
        except concurrent.futures.CancelledError:
            return refused(ABORTED, "none")


def _running() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _on(loop: asyncio.AbstractEventLoop) -> bool:
    return _running() is loop
