"""The RPC server: lines in, one runtime driven, answers and events out in order.

Requests are handled in the order they arrive; each is answered when its operation has
been accepted, except the `concurrent` ones (wait_idle), which answer when what they
wait for happens without holding up the requests behind them. The server is its
runtime's UI frontend (`_ui.RpcFrontend`, attached with `Runtime.attach`): runtime
events are forwarded as `event` notifications the moment they are emitted, through the
same writer as the answers, so a client sees them in the order they happened, and the
questions plugins ask are `ui.ask` requests to the client, whose responses come back
on the same input.

It ends on `shutdown`, at end of input, on SIGTERM/SIGINT/SIGHUP, or when nobody reads
its output any more: the running turn is aborted (the session records how every effect
ended), pending answers are sent, the session is closed, and the exit status is 0.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from smith.diagnostics import DiagnosticKind, SmithError, Source

from ._io import LineReader, LineWriter
from ._methods import METHODS
from ._protocol import (
    INTERNAL_ERROR,
    OPERATION_FAILED,
    Call,
    Item,
    Response,
    RpcError,
    bind,
    encode,
    error_response,
    notification,
    parse_line,
    replaced_note,
    response,
    unknown_method,
)
from ._ui import RpcFrontend

if TYPE_CHECKING:
    from smith.config import Config
    from smith.runtime import Runtime
    from smith.session import Session

log = logging.getLogger("smith.rpc")

SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

RPC_FAILED = DiagnosticKind(
    "rpc.internal",
    what="{method} failed: {problem}",
    why="this is a bug in smith, not something the client did; the session is intact",
    fix="try again; report it with the log on stderr (start smith rpc with --debug)",
)
RPC_CLOSED = DiagnosticKind(
    "rpc.closed",
    what="{method} came after shutdown",
    why="the server has closed its session and is exiting",
    fix="start smith rpc again to send more requests",
)

# (session, model setting, thinking level) -> a runtime over that session
RuntimeFactory = Callable[["Session", str, str], "Runtime"]
Answer = dict[str, Any] | None  # a response, or None for a notification


class Server:
    def __init__(
        self,
        config: Config,
        env: Mapping[str, str],
        session: Session,
        make_runtime: RuntimeFactory,
        write: Callable[[bytes], None],
        *,
        model: str,
        thinking: str,
        stdin: int = 0,
    ) -> None:
        self.config = config
        self.env = env
        self.session = session
        self._make_runtime = make_runtime
        self._write = write
        self._stdin = stdin
        self.runtime = make_runtime(session, model, thinking)
        self.ui = RpcFrontend(self.send)
        self._unwatch: Callable[[], None] = lambda: None
        self._pending: set[asyncio.Task[None]] = set()  # answers still to come
        self._stopping = False
        self._closed = False

    # -- output ------------------------------------------------------------------------

    def send(self, message: object) -> None:
        """Encoded here, on the loop, so the record is what was true when it was sent."""
        self._writer.send(encode(message))

    def _watch(self) -> None:
        self._unwatch = self.runtime.attach(self.ui)

    # -- the loop ----------------------------------------------------------------------

    async def serve(self) -> int:
        loop = asyncio.get_running_loop()
        lines: asyncio.Queue[bytes | None] = asyncio.Queue()

        def deliver(line: bytes | None) -> None:
            loop.call_soon_threadsafe(lines.put_nowait, line)

        self._writer = LineWriter(self._write, on_closed=lambda: deliver(None))
        for sig in SIGNALS:
            loop.add_signal_handler(sig, lines.put_nowait, None)
        self._watch()
        self.runtime.announce_mode()  # a session resumed in plan mode, or --plan
        LineReader(self._stdin, deliver).start()
        number = 0
        try:
            while not self._stopping and (line := await lines.get()) is not None:
                number += 1
                if line.strip():
                    await self._handle(line, number)
        finally:
            for sig in SIGNALS:
                loop.remove_signal_handler(sig)
            await self.close()
            await self._drain()  # e.g. the answer of the batch that held the shutdown
            self._writer.finish()
        return 0

    async def _handle(self, line: bytes, number: int) -> None:
        parsed = parse_line(line, number)
        if isinstance(parsed, dict):
            self.send(parsed)
            return
        items, batch, replaced = parsed
        if replaced:  # said before the answer, as an event like the runtime's warnings
            note = replaced_note(replaced, number).to_dict()
            self.send(notification("event", {"type": "error", "diagnostic": note}))
        # Started in order; a concurrent one answers later without holding up the rest.
        answers = [await self._start(item) for item in items]
        ready = [a for a in answers if not isinstance(a, asyncio.Task)]
        if len(ready) == len(answers):
            self._deliver(ready, batch)
        else:
            self._later(self._deliver_when(answers, batch))

    async def _start(self, item: Item) -> Answer | asyncio.Task[Answer]:
        if isinstance(item, dict):  # an invalid request, answered as it is
            return item
        if isinstance(item, Response):  # the client answers a question: no answer to it
            self.ui.answer(item)
            return None
        if self._closed:
            source = Source("rpc", item.method)
            error = RpcError(OPERATION_FAILED, RPC_CLOSED(source=source, method=item.method))
            return None if item.notification else error_response(item.id, error)
        found = METHODS.get(item.method)
        if found is not None and found.concurrent:
            return asyncio.ensure_future(self._answer(item))
        return await self._answer(item)

    def _deliver(self, answers: list[Answer], batch: bool) -> None:
        found = [a for a in answers if a is not None]
        if batch and found:  # a batch of notifications only is not answered at all
            self.send(found)
        elif found:
            self.send(found[0])

    async def _deliver_when(
        self, answers: list[Answer | asyncio.Task[Answer]], batch: bool
    ) -> None:
        self._deliver([await a if isinstance(a, asyncio.Task) else a for a in answers], batch)

    def _later(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _answer(self, call: Call) -> Answer:
        """The response to one call (None for a notification): a result, or an error
        with a diagnostic."""
        try:
            method = METHODS.get(call.method)
            if method is None:
                raise unknown_method(call.method, sorted(METHODS))
            params = bind(call.method, method.params, call.params)
            answer = response(call.id, await method.run(self, **params))
        except RpcError as exc:
            answer = error_response(call.id, exc)
        except SmithError as exc:
            answer = error_response(call.id, RpcError(OPERATION_FAILED, exc.diagnostic))
        except Exception as exc:
            log.exception("rpc method %s failed", call.method)
            problem = f"{type(exc).__name__}: {exc}"
            diagnostic = RPC_FAILED(source=Source("rpc", call.method), method=call.method,
                                problem=problem)  # fmt: skip
            answer = error_response(call.id, RpcError(INTERNAL_ERROR, diagnostic))
        if call.method == "shutdown" and "result" in answer:
            self._stopping = True
        return None if call.notification else answer

    # -- sessions and the end ------------------------------------------------------------

    async def switch(self, session: Session) -> None:
        """Drive a runtime over `session` instead (same model and thinking level); the
        old runtime and session are closed first. The caller checked it is idle."""
        old = self.runtime
        known = str(old.status().get("mode", "normal"))
        try:
            fresh = self._make_runtime(session, old.model, old.thinking)
        except BaseException:
            session.close()
            raise
        self._unwatch()
        await old.close()
        self.session.close()
        self.session, self.runtime = session, fresh
        self._watch()
        fresh.announce_mode(known)  # the session switched to may be in another mode

    async def close(self) -> None:
        """Abort what runs, let pending answers go out, close the session. Idempotent."""
        if self._closed:
            return
        self._closed = True
        await self.runtime.close()
        await self._drain()
        self._unwatch()
        self.session.close()

    async def _drain(self) -> None:
        """Wait until every answer still to come has been sent (new ones may be added
        meanwhile: a batch is answered once all of its calls are)."""
        while self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)
