"""A provider for an HTTP API: a vendor's WireFormat run over the host's HTTP engine.

    provider = HttpProvider("openai", ChatCompletions(), info, settings, engine)
    async for event in provider.stream(request): ...

The wire format knows the vendor (the request body, the meaning of each server-sent
event, the error bodies); this module owns what every vendor shares:

- the request is built and checked before anything is sent: a SmithError from
  `wire.build` or a body above `http.max-request` ends the stream with an `invalid` or
  `too_large` error and no request;
- a non-2xx status ends the stream with `wire.error(status, headers, excerpt)`, a
  redirect (never followed: the key would go along) with where it pointed;
- a 2xx body is parsed as server-sent events, fed to the wire's decoder as it arrives;
  one of another content type (a server that ignored `stream`, a proxy's page) ends the
  stream with a non-retryable error quoting it;
- a transport failure ends the stream with an error End whose `kind` says what failed
  (connect, timeout: retryable; too_large, invalid: not), a body that did not end
  normally with one saying it was cut off, and a complete body without the wire's
  terminal event with the decoder's own `finish()` error;
- exactly one End, always, and nothing after it; task cancellation propagates as
  CancelledError once the response is closed;
- credentials never reach an End's error: the credential is registered as a secret and
  every error passes through the redactor.

Configured headers (`settings.headers`) are added to every request here, over the
wire's own, so a wire format need not merge them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping
from urllib.parse import urljoin

from smith import memory
from smith._redact import redact_text
from smith.diagnostics import SmithError, register_secret, scrub
from smith.providers._http import HttpEngine, HttpError, shared_engine
from smith.providers._http._errors import text, where
from smith.providers._model import ModelInfo
from smith.providers._sse import SSEEvent, SSEParser
from smith.providers._stream import End, Pricing, Request, StreamEvent
from smith.providers._wire import Decoder, ProviderSettings, WireFormat, excerpt

ERROR_EXCERPT = 64 * 1024  # bytes of a non-2xx body given to wire.error
# HttpError kinds -> (End kind, retryable)
_FAILURES = {
    "too_large": ("too_large", False),
    "connect": ("connect", True),
    "timeout": ("timeout", True),
    "invalid": ("invalid", False),
    "failed": ("connect", True),  # the connection broke before the head: as a connect
}
# HttpResponse.error_kind of a body that did not end normally -> (End kind, retryable)
_BODY_FAILURES = {
    "timeout": ("timeout", True),  # stalled longer than http.chunk-gap
    "failed": ("connect", True),  # the connection broke mid-body
    "too_large": ("too_large", False),  # cut off at http.max-response
}


class HttpProvider:
    def __init__(
        self,
        name: str,
        wire: WireFormat,
        model: ModelInfo,
        settings: ProviderSettings,
        engine: HttpEngine | None = None,
        pricing: Pricing | None = None,
    ) -> None:
        self.name = name
        self.wire = wire
        self.model = model
        self.settings = settings
        self._engine = engine
        self._pricing = pricing
        if settings.credential:
            register_secret(settings.credential)  # never shown in any diagnostic

    def pricing(self, model: str) -> Pricing | None:
        return self._pricing

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        ended = False
        # With memory accounting on, the request's own steps are an io scope.
        events_in_io = memory.iterate("io", self.name, self._events(request))
        async with contextlib.aclosing(events_in_io) as events:
            async for event in events:
                if isinstance(event, End):
                    yield self._clean(event)
                    ended = True
                    break
                yield event
        if not ended:  # a decoder that broke its contract; never a silent success
            yield End(
                "error",
                error=f"the {self.name} stream ended without a terminal event",
                kind="malformed",
            )

    async def _events(self, request: Request) -> AsyncGenerator[StreamEvent, None]:
        try:
            settings = await self._renewed()
            call = self.wire.build(request, self.model, settings)
            body = json.dumps(call.body, ensure_ascii=False, separators=(",", ":")).encode()
        except SmithError as exc:
            yield End("error", error=text(exc.diagnostic), kind="invalid")
            return
        except (TypeError, ValueError) as exc:  # a body that is not JSON: a wire bug
            yield End("error", error=f"the {self.name} request is not JSON: {exc}", kind="invalid")
            return
        headers = {"content-type": "application/json", **call.headers}
        lower = {k.lower(): k for k in headers}
        for key, value in self.settings.headers.items():
            headers.pop(lower.get(key.lower(), key), None)
            headers[key] = value
        engine = self._engine or shared_engine()
        try:
            async with engine.request("POST", call.url, headers=headers, content=body) as resp:
                if not 200 <= resp.status < 300:
                    excerpt = await resp.read(ERROR_EXCERPT)
                    yield self._error(resp.status, resp.headers, excerpt, call.url)
                    return
                media = resp.headers.get("content-type", "").partition(";")[0].strip().lower()
                if media and media != "text/event-stream":
                    yield self._not_a_stream(resp.status, media, await resp.read(ERROR_EXCERPT))
                    return
                try:
                    decoder = self.wire.decoder(self.model)
                except Exception as exc:  # a wire bug: still exactly one End
                    yield self._malformed(exc)
                    return
                parser = SSEParser()
                async with contextlib.aclosing(resp.chunks()) as chunks:
                    async for chunk in chunks:
                        for event in self._decode(decoder, parser.feed(chunk)):
                            yield event
                            if isinstance(event, End):
                                return
                if resp.outcome != "complete":
                    kind, retryable = _BODY_FAILURES.get(resp.error_kind or "", ("connect", True))
                    yield End("error", error=resp.error, retryable=retryable, kind=kind)
                    return
                for event in self._decode(decoder, parser.close(), finish=True):
                    yield event
        except HttpError as exc:
            kind, retryable = _FAILURES.get(exc.kind, ("connect", True))
            error = text(exc.diagnostic)
            origin = self.settings.base_url_origin
            if kind == "connect" and origin:  # which setting to correct, if it is wrong
                error += f"; the base URL {self.settings.base_url} is {origin}"
            yield End("error", error=error, retryable=retryable, kind=kind)

    async def _renewed(self) -> ProviderSettings:
        """The settings with a renewable credential renewed when it has expired."""
        if self.settings.renew is None:
            return self.settings
        credential = await self.settings.renew()
        if credential != self.settings.credential:
            if credential:
                register_secret(credential)
            self.settings = dataclasses.replace(self.settings, credential=credential)
        return self.settings

    def _error(self, status: int, headers: Mapping[str, str], excerpt: bytes, url: str) -> End:
        location = headers.get("location")
        if 300 <= status < 400 and location:
            return End(
                "error",
                error=f"{self.name} answered HTTP {status}, a redirect to "
                f"{where(urljoin(self.settings.base_url, location))}, "
                "which smith does not follow (the request carries the key); if that is the "
                f"provider's address, use it as the base URL instead of {self.settings.base_url}",
                kind="invalid",
            )
        try:
            end = self.wire.error(status, headers, excerpt)
        except Exception as exc:  # a wire bug must not hide the provider's answer
            retryable = status in (408, 409, 429) or status >= 500
            return End(
                "error",
                error=f"{self.name} answered HTTP {status} ({type(exc).__name__}: {exc})",
                retryable=retryable,
                kind="server" if status >= 500 else "invalid",
            )
        return self._not_found(end, url) if status == 404 else end

    def _not_found(self, end: End, url: str) -> End:
        """A 404 from a base URL the user gave (not a first-party API's own endpoint)
        usually means the URL lacks the API's version path: say which URL was requested
        and the form the base URL takes."""
        origin = self.settings.base_url_origin
        if origin is None:
            return end
        hint = (
            f"; the request went to {where(url)}, built from the base URL "
            f"{where(self.settings.base_url)} ({origin}); a base URL for {self.name} has the "
            f"form {self.wire.base_url_form}"
        )
        return dataclasses.replace(end, error=(end.error or "HTTP 404") + hint)

    def _not_a_stream(self, status: int, media: str, body: bytes) -> End:
        """A 2xx answer that is not server-sent events: a server that ignored the
        request to stream, or something else at the base URL (a proxy's page). Asking
        again would get the same, so it is not retryable."""
        shown = excerpt(body.decode("utf-8", "replace"), 200)
        said = f": {shown}" if shown else ""
        return End(
            "error",
            error=f"{self.name} answered HTTP {status} with {media}, not a stream of "
            f"server-sent events{said}; check that {self.settings.base_url} is the "
            "provider's API",
            kind="malformed",
        )

    def _decode(
        self, decoder: Decoder, events: Iterable[SSEEvent], *, finish: bool = False
    ) -> Iterable[StreamEvent]:
        """The decoder's events for parsed server-sent events (and its finish); a decoder
        that raises is a malformed stream, not a crash."""
        try:
            for sse in events:
                yield from decoder.feed(sse.event, sse.data)
            if finish:
                yield from decoder.finish()
        except Exception as exc:
            yield self._malformed(exc)

    def _malformed(self, exc: Exception) -> End:
        reason = f"{type(exc).__name__}: {exc}"
        return End(
            "error",
            error=f"the {self.name} stream could not be decoded: {reason}",
            kind="malformed",
        )

    def _clean(self, end: End) -> End:
        """The End with its error text free of credentials, and for a refused credential
        what to do about it."""
        if end.error is None:
            return end
        error = end.error + (self._auth_fix() if end.kind == "auth" else "")
        return dataclasses.replace(end, error=redact_text(scrub(error)))

    def _auth_fix(self) -> str:
        """What to do when the provider refused the credential (HTTP 401 or 403, or an
        authentication error in the stream): the server said only what was wrong."""
        name = self.settings.name
        store = (
            f"`smith auth login {name}` stores a key for it, or providers.{name}.api-key-env "
            "names the environment variable that holds one"
        )
        if not self.settings.credential:
            return f"; smith sent {name} no key: {store}"
        source = self.settings.credential_source
        sent = f"the key from {source}" if source else "the key smith sent"
        return f"; {sent} was refused (or has no access to this model): check it; {store}"
