"""A plugin's HTTP request (host.http), through smith's HTTP engine, waited on until it
answers, the call's deadline passes or the call is cancelled, whichever comes first.

    status, headers, body = fetch("GET", url, headers, b"", cancel=event, remaining=fn)
    # Stopped(reason): cancelled or past the deadline (the request is abandoned)
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import threading
    from collections.abc import Callable

MAX_HTTP_BODY = 1024 * 1024  # the response body given back is cut here
POLL = 0.02  # how often a request in flight looks at its call's cancellation, in seconds


class Stopped(Exception):
    """The request was abandoned: `cancelled` (the call's cancellation) or its deadline."""

    def __init__(self, reason: str, *, cancelled: bool) -> None:
        super().__init__(reason)
        self.cancelled = cancelled


def fetch(
    method: str, url: str, headers: dict[str, str], body: bytes, *,
    cancel: threading.Event, remaining: Callable[[], float],
) -> tuple[int, list[tuple[str, str]], bytes]:  # fmt: skip
    """(status, headers, body cut at MAX_HTTP_BODY); Stopped when the call is cancelled
    or its time is up first; the engine's errors as they are."""
    from smith.providers import shared_engine

    async def go() -> tuple[int, list[tuple[str, str]], bytes]:
        async with shared_engine().request(method, url, headers=headers, content=body) as r:
            data = await r.read(MAX_HTTP_BODY)
            return r.status, [(str(k), str(v)) for k, v in r.headers.items()], data

    async def watched() -> tuple[int, list[tuple[str, str]], bytes]:
        task = asyncio.ensure_future(go())
        try:
            while not task.done():
                if cancel.is_set():
                    raise Stopped(f"the call was cancelled while {url} answered", cancelled=True)
                left = remaining()
                if left <= 0:
                    raise Stopped(f"no response from {url} within the call", cancelled=False)
                await asyncio.wait({task}, timeout=min(POLL, left))
            return task.result()
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task

    return asyncio.run(watched())
