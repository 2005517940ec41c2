"""`smith rpc` as a UI frontend (smith.ui, docs/ui.md): what it shows is the runtime's
events, and what plugins ask becomes a request from the server to the client.

Every intent is shown as the event it stands for (an `event` notification; a plugin's
notice, progress, status or escape hatch is the `ui` event: the client does the hatch, a
copy to its clipboard or a URL opened, or ignores it). A question is a JSON-RPC request with
method `ui.ask` and an id of the server's own (`smith-N`); the client answers it with
`{"choice": KEY}` (with `"note": TEXT`, the user's reason, for a choice marked
`"reason": true`), `{"refused": REASON}` (an error response refuses it too) or
`{"interrupt": true}` (the user stopped the turn there: an approval's call is denied and
the turn ends, smith.ui.Reply.interrupt). A question's `detail` (the change or command
an approval is about) is in the request's params. Without
an answer within the question's timeout (default `ASK_TIMEOUT`) it is refused; when the
server stops waiting before an answer came (a timeout, an abort) it sends a `ui.cancel`
notification with the request's id, and a late answer is ignored. docs/rpc.md.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from smith.ui import QUESTIONS, SHOWN, Capabilities, Intent, Reply, interrupted, refused

from ._protocol import SERVER_IDS, Response, notification

log = logging.getLogger("smith.rpc")

ASK_TIMEOUT = 300.0  # seconds a question waits for the client unless it sets its own
SHAPE = (
    'the answer is not {"choice": KEY, "note": TEXT (optional)}, {"refused": REASON} '
    'or {"interrupt": true}'
)


class RpcFrontend:
    name = "rpc"
    # Every kind, escape hatches too: the client does them or not (docs/rpc.md).
    capabilities = Capabilities(shows=frozenset(SHOWN), asks=frozenset(QUESTIONS))

    def __init__(self, send: Callable[[object], None], *, timeout: float = ASK_TIMEOUT) -> None:
        self._send = send
        self.timeout = timeout
        self._waiting: dict[str, asyncio.Future[Reply]] = {}
        self._next = 0

    def show(self, intent: Intent) -> None:
        if intent.event is not None:
            self._send(notification("event", intent.event))

    async def ask(self, intent: Intent) -> Reply:
        self._next += 1
        rid = f"{SERVER_IDS}{self._next}"
        own = intent.data.get("timeout")
        # With a timeout of its own the question is bounded by smith.ui.ask already.
        bound = None if own is not None else self.timeout
        answered: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._waiting[rid] = answered
        params = {**intent.data, "intent": intent.kind, "timeout": own or self.timeout}
        self._send({"jsonrpc": "2.0", "id": rid, "method": "ui.ask", "params": params})
        try:
            return await asyncio.wait_for(answered, bound)
        except TimeoutError:
            self._send(notification("ui.cancel", {"id": rid}))
            return refused(f"the client did not answer within {self.timeout:g} s", self.name)
        except asyncio.CancelledError:
            self._send(notification("ui.cancel", {"id": rid}))
            raise
        finally:
            self._waiting.pop(rid, None)

    def answer(self, response: Response) -> None:
        """The client's response to a `ui.ask` request (one it no longer waits for, or
        never sent, is logged and ignored)."""
        answered = self._waiting.get(str(response.id))
        if answered is None or answered.done():
            log.warning("a response to no pending request of the server (id %r): ignored",
                        response.id)  # fmt: skip
            return
        answered.set_result(_reply(response))


def _reply(response: Response) -> Reply:
    if response.error is not None:
        error: Any = response.error
        message = error.get("message") if isinstance(error, dict) else error
        return refused(f"the client answered with an error: {message}", "rpc")
    result = response.result
    if isinstance(result, dict):
        note = result.get("note", "")
        if isinstance(result.get("choice"), str) and isinstance(note, str):
            return Reply(result["choice"], frontend="rpc", note=note)
        if result.get("interrupt") is True:
            return interrupted("rpc")
        if isinstance(result.get("refused"), str):
            return refused(result["refused"], "rpc")
    return refused(SHAPE, "rpc")
