"""The one HTTP engine of the host, over httpx.

    engine = shared_engine()
    async with engine.request("POST", url, headers=headers, content=body) as response:
        if response.status >= 400:
            excerpt = await response.read(4096)
        else:
            async for chunk in response.chunks(): ...
        response.outcome          # complete | truncated | cancelled | failed

Requests larger than `limits.max_request` are refused before anything is sent; the head
must arrive within `head_timeout`; the body streams as `HttpResponse` describes. TLS is
checked against certifi's Mozilla roots (plus SSL_CERT_FILE / SSL_CERT_DIR when set, for
private certificate authorities); proxies come from the environment (HTTP_PROXY,
HTTPS_PROXY, ALL_PROXY, NO_PROXY), as httpx reads them.

An httpx client belongs to the event loop it first ran on, and smith runs several loops
over its life (each `asyncio.run` of eval, the app's own loop). So the engine keeps one
client per running loop, and closes it with that loop: an async generator, started on the
loop, is closed by the loop's `shutdown_asyncgens` (which `asyncio.run` calls) and closes
the client as it ends. `aclose()` closes the current loop's client earlier.

httpx is imported on first use, never at import time: `import smith.providers` stays cheap.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import TYPE_CHECKING

from smith.providers._http._errors import (
    BAD_HEADER,
    BAD_URL,
    CONNECT_FAILED,
    HEAD_TIMEOUT,
    REQUEST_FAILED,
    REQUEST_TOO_LARGE,
    HttpError,
    where,
)
from smith.providers._http._limits import HttpLimits, size
from smith.providers._http._response import HttpResponse

if TYPE_CHECKING:
    import ssl

    import httpx


class HttpEngine:
    def __init__(
        self,
        limits: HttpLimits | None = None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.limits = limits or HttpLimits()  # may be replaced; read at each request
        self._transport = transport
        self._lock = threading.Lock()  # loops may run in several threads
        self._clients: dict[
            asyncio.AbstractEventLoop, tuple[httpx.AsyncClient, AsyncGenerator[None, None]]
        ] = {}
        self._ssl: ssl.SSLContext | None = None

    @contextlib.asynccontextmanager
    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        content: bytes = b"",
        cancel: asyncio.Event | None = None,
    ) -> AsyncIterator[HttpResponse]:
        """Send a request and give its response once the head has arrived. Raises
        HttpError when there is no response; any status is a response."""
        import httpx

        limits = self.limits
        shown = where(url)
        if len(content) > limits.max_request:
            raise HttpError(
                REQUEST_TOO_LARGE(
                    url=shown, size=size(len(content)), limit=size(limits.max_request)
                ),
                "too_large",
            )
        _check_headers(headers or {}, shown)
        client = await self._client()
        timeout = httpx.Timeout(
            connect=limits.connect_timeout,
            read=None,  # the head and chunk-gap bounds below are smith's own
            write=limits.head_timeout,
            pool=limits.head_timeout,
        )
        try:
            request = client.build_request(
                method, url, headers=headers, content=content, timeout=timeout
            )
            async with asyncio.timeout(limits.head_timeout):
                response = await client.send(request, stream=True)
        except TimeoutError:
            seconds = f"{limits.head_timeout:g}"
            raise HttpError(HEAD_TIMEOUT(url=shown, seconds=seconds), "timeout") from None
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.ProxyError) as exc:
            diagnostic = CONNECT_FAILED(url=shown, reason=_reason(exc))
            raise HttpError(diagnostic, "connect") from exc
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise HttpError(BAD_URL(url=shown, reason=_reason(exc)), "invalid") from exc
        except httpx.HTTPError as exc:
            diagnostic = REQUEST_FAILED(url=shown, reason=_reason(exc))
            raise HttpError(diagnostic, "failed") from exc
        result = HttpResponse(response, limits, cancel)
        try:
            yield result
        finally:
            await result._close()

    async def aclose(self) -> None:
        """Close the client of the running loop (the next request opens a new one)."""
        with self._lock:
            entry = self._clients.pop(asyncio.get_running_loop(), None)
        if entry is not None:
            await entry[1].aclose()

    async def _client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        with self._lock:
            for old, (client, _) in list(self._clients.items()):
                # A loop closed without shutdown_asyncgens keeps its entry: dropping its
                # unfinished generator would have it finalized on a closed loop.
                if old.is_closed() and client.is_closed:
                    del self._clients[old]
            entry = self._clients.get(loop)
        if entry is not None:
            return entry[0]
        import httpx

        from smith import __version__

        client = httpx.AsyncClient(
            verify=self._ssl_context(),
            trust_env=True,
            transport=self._transport,
            follow_redirects=False,
            headers={"user-agent": f"smith/{__version__}"},
        )
        keeper = _close_with_loop(client)
        with self._lock:
            self._clients[loop] = (client, keeper)
        await anext(keeper)  # now the loop knows the generator and will close it
        return client

    def _ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            import ssl

            import certifi

            context = ssl.create_default_context(cafile=certifi.where())
            cafile, capath = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
            if cafile or capath:  # a private authority too; an unreadable one changes nothing
                with contextlib.suppress(OSError, ssl.SSLError):
                    context.load_verify_locations(cafile=cafile or None, capath=capath or None)
            self._ssl = context
        return self._ssl


async def _close_with_loop(client: httpx.AsyncClient) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        await client.aclose()


# What HTTP/1.1 (h11, under httpx) sends as a header: a token name, and a value of
# printable ASCII and tabs that neither starts nor ends with a space or tab.
_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VALUE = re.compile(r"(?:[\x21-\x7e](?:[\x20-\x7e\t]*[\x21-\x7e])?)?")


def _check_headers(headers: Mapping[str, str], url: str) -> None:
    """Refuse, before anything is sent, a header httpx would refuse while sending: its
    error quotes the value (an API key, in the authorization header), or is not even an
    httpx error (UnicodeEncodeError for a non-ASCII value)."""
    for name, value in headers.items():
        if not _NAME.fullmatch(name):
            problem, header = "characters a header name cannot have", repr(name)
        elif not _VALUE.fullmatch(value):
            problem, header = _flaw(value), name
        else:
            continue
        raise HttpError(BAD_HEADER(header=header, url=url, problem=problem), "invalid")


def _flaw(value: str) -> str:
    """What is wrong with a header value, without showing it."""
    if "\r" in value or "\n" in value:
        return "a line break"
    if not value.isascii():
        return "a character that is not ASCII"
    if value != value.strip(" \t"):
        return "a leading or trailing space"
    return "a control character"


def _reason(exc: BaseException) -> str:
    """Why a request failed. httpx reports a refused or reset connection only as "All
    connection attempts failed"; the errno of the socket error beneath says which."""
    reason = str(exc) or type(exc).__name__
    cause = exc.__cause__ or exc.__context__
    for _ in range(8):  # a chain is short; a cycle must not hang
        if cause is None:
            break
        if isinstance(cause, ConnectionError) and cause.errno:
            reason = os.strerror(cause.errno).lower()  # "connection refused"
            break
        cause = cause.__cause__ or cause.__context__
    if "CERTIFICATE_VERIFY_FAILED" in reason:
        reason += " (the server's certificate is not trusted)"
    return reason


_shared: list[HttpEngine] = []  # the process-wide engine, once made
_shared_lock = threading.Lock()


def shared_engine(limits: HttpLimits | None = None) -> HttpEngine:
    """The process-wide engine the providers use; `limits`, when given, become its
    limits from the next request on (the host sets them from configuration)."""
    with _shared_lock:
        if not _shared:
            _shared.append(HttpEngine(limits))
        elif limits is not None:
            _shared[0].limits = limits
        return _shared[0]
