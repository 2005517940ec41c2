"""A response whose body streams in over a bounded channel and ends with one outcome.

A reader task takes chunks off the connection as they arrive and puts them on an
`asyncio.Queue(maxsize=limits.channel)`; the consumer takes them off in `chunks()`. The
body is never buffered to completion: a slow consumer makes the reader wait, and the
reader stops at `max_response` bytes. When the body ends, `outcome` is exactly one of

    complete    the server ended the body properly
    truncated   the body reached max_response (or the `read` limit); reading stopped
    cancelled   the consumer stopped first: cancelled, `cancel` set, or it left early
    failed      the connection failed or went silent too long; `error` says how

so a cut-off body is never mistaken for a complete one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Literal

from smith.providers._http._errors import (
    BODY_FAILED,
    BODY_STALLED,
    RESPONSE_TOO_LARGE,
    text,
    where,
)
from smith.providers._http._limits import HttpLimits, size

if TYPE_CHECKING:
    import httpx

BodyOutcome = Literal["complete", "truncated", "cancelled", "failed"]


class HttpResponse:
    def __init__(
        self, response: httpx.Response, limits: HttpLimits, cancel: asyncio.Event | None
    ) -> None:
        self.status: int = response.status_code
        self.headers: Mapping[str, str] = response.headers  # case-insensitive
        self.outcome: BodyOutcome | None = None  # None until the body ended
        self.error: str | None = None  # why, when failed or truncated
        self.error_kind: str | None = None  # timeout (stalled), failed, too_large
        self._response = response
        self._limits = limits
        self._cancel = cancel
        self._url = where(str(response.request.url))
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=max(1, limits.channel))
        self._tasks: list[asyncio.Task[None]] = []
        self._ended: tuple[BodyOutcome, str | None, str | None] | None = None
        self._started = False
        self._cancelled = False

    async def chunks(self) -> AsyncGenerator[bytes, None]:
        """The body's chunks as they arrive (once per response). Cancellation, by the
        `cancel` event or of the consuming task, is observed at every chunk boundary:
        no chunk that arrives after it is delivered."""
        if self._started:
            raise RuntimeError("a response body can be read only once")
        self._started = True
        self._tasks.append(asyncio.create_task(self._read()))
        if self._cancel is not None:
            self._tasks.append(asyncio.create_task(self._watch(self._cancel)))
        while True:
            if self._cancelled or (self._cancel is not None and self._cancel.is_set()):
                self._end("cancelled")
                return
            chunk = await self._queue.get()
            if self._cancelled or (self._cancel is not None and self._cancel.is_set()):
                self._end("cancelled")
                return
            if chunk is None:  # the reader's last item
                assert self._ended is not None
                self._end(*self._ended)
                return
            yield chunk

    async def read(self, limit: int = 64 * 1024) -> bytes:
        """At most `limit` bytes of the body, e.g. a provider's error response. Outcome
        truncated when the body was longer; a body of exactly `limit` bytes is complete."""
        parts: list[bytes] = []
        got = 0
        async with contextlib.aclosing(self.chunks()) as chunks:
            async for chunk in chunks:
                part = chunk[: limit - got]
                parts.append(part)
                got += len(part)
                if len(part) < len(chunk):
                    self._end("truncated")
                    break
        return b"".join(parts)

    def _end(self, outcome: BodyOutcome, error: str | None = None, kind: str | None = None) -> None:
        if self.outcome is None:
            self.outcome, self.error, self.error_kind = outcome, error, kind

    async def _read(self) -> None:
        """Move chunks from the connection to the channel until the body ends."""
        limits = self._limits
        body = self._response.aiter_bytes()
        total = 0
        result: tuple[BodyOutcome, str | None, str | None] = ("complete", None, None)
        try:
            while True:
                try:
                    async with asyncio.timeout(limits.chunk_gap):
                        chunk = await anext(body)
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    diagnostic = BODY_STALLED(url=self._url, seconds=f"{limits.chunk_gap:g}")
                    result = ("failed", text(diagnostic), "timeout")
                    break
                if not chunk:
                    continue
                if total + len(chunk) > limits.max_response:
                    chunk = chunk[: limits.max_response - total]
                    if chunk:
                        await self._queue.put(chunk)
                    limit = size(limits.max_response)
                    diagnostic = RESPONSE_TOO_LARGE(url=self._url, limit=limit)
                    result = ("truncated", text(diagnostic), "too_large")
                    break
                total += len(chunk)
                await self._queue.put(chunk)
        except Exception as exc:  # httpx.HTTPError, or anything else: never hang the consumer
            reason = str(exc) or type(exc).__name__
            result = ("failed", text(BODY_FAILED(url=self._url, reason=reason)), "failed")
        finally:
            with contextlib.suppress(Exception):
                await body.aclose()  # type: ignore[attr-defined]
        self._ended = result
        await self._queue.put(None)

    async def _watch(self, cancel: asyncio.Event) -> None:
        """On `cancel`: stop reading, drop what was read ahead, wake the consumer."""
        await cancel.wait()
        self._cancelled = True
        self._tasks[0].cancel()
        while not self._queue.empty():
            self._queue.get_nowait()
        self._queue.put_nowait(None)

    async def _close(self) -> None:
        """Stop the tasks and release the connection (closed unless fully read)."""
        for task in self._tasks:
            task.cancel()
        try:
            if self._tasks:
                await asyncio.wait(self._tasks)
                for task in self._tasks:
                    if not task.cancelled():
                        task.exception()  # retrieved: a failed task never warns later
        finally:
            self._end("cancelled")
            await self._response.aclose()
