"""The transport of a connection, watched: its end wakes the connection's holder (the
server is gone), and each write marks the operation that made it (it may have reached
the server, so it is not sent again)."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any


class Sent:
    """Whether the operation of this task wrote a request to the transport."""

    __slots__ = ("written",)

    def __init__(self) -> None:
        self.written = False


WRITTEN: contextvars.ContextVar[Sent | None] = contextvars.ContextVar("mcp_written", default=None)


class Broken:
    """How many HTTP exchanges with a server broke (the request failed, or its answer's
    stream did): a CONNECTION_CLOSED error meanwhile is the connection's loss."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


def marked(broken: Broken) -> Any:
    """An httpx2 transport that counts in `broken` the exchanges that broke."""
    import httpx2

    class Stream(httpx2.AsyncByteStream):
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def __aiter__(self) -> Any:
            try:
                async for chunk in self.inner:
                    yield chunk
            except Exception:
                broken.count += 1
                raise

        async def aclose(self) -> None:
            await self.inner.aclose()

    class Transport(httpx2.AsyncBaseTransport):
        def __init__(self) -> None:
            self.inner = httpx2.AsyncHTTPTransport()

        async def handle_async_request(self, request: Any) -> Any:
            try:
                response = await self.inner.handle_async_request(request)
            except Exception:
                broken.count += 1
                raise
            response.stream = Stream(response.stream)
            return response

        async def aclose(self) -> None:
            await self.inner.aclose()

    return Transport()


class with_client:
    """The HTTP transport, closing the httpx2 client it was given after it."""

    def __init__(self, http: Any, inner: Any) -> None:
        self.http, self.inner = http, inner

    async def __aenter__(self) -> Any:
        await self.http.__aenter__()
        try:
            return await self.inner.__aenter__()
        except BaseException:
            await self.http.__aexit__(None, None, None)
            raise

    async def __aexit__(self, *exc: Any) -> Any:
        try:
            return await self.inner.__aexit__(*exc)
        finally:
            await self.http.__aexit__(None, None, None)


class Watched:
    """A transport whose end wakes the connection's holder (the server is gone), and
    whose writes mark the operation that made them (it may have reached the server)."""

    def __init__(self, inner: Any, wake: asyncio.Event) -> None:
        self.inner, self.wake = inner, wake

    async def __aenter__(self) -> tuple[Any, Any]:
        read, write = await self.inner.__aenter__()
        return _Reader(read, self.wake), _Writer(write)

    async def __aexit__(self, *exc: Any) -> Any:
        return await self.inner.__aexit__(*exc)


class _Reader:
    def __init__(self, inner: Any, wake: asyncio.Event) -> None:
        self.inner, self.wake = inner, wake

    @property
    def last_context(self) -> Any:
        return getattr(self.inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self.inner.receive()
        except Exception:  # its end (a cancellation is no end)
            self.wake.set()
            raise

    def __aiter__(self) -> _Reader:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.inner.__anext__()
        except StopAsyncIteration:
            self.wake.set()
            raise

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> _Reader:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self.inner.__aexit__(*exc)


class _Writer:
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def send(self, item: Any) -> None:
        sent = WRITTEN.get()
        if sent is not None:
            sent.written = True
        await self.inner.send(item)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> _Writer:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self.inner.__aexit__(*exc)
