"""The contract between the host's HTTP provider and a vendor's wire format.

A provider plugin for an HTTP API supplies a `WireFormat`: pure functions, no I/O, that
turn a `Request` into an `HttpCall` and the response's server-sent events into the
normalized stream (smith.providers._stream). The host (smith.providers._http_provider)
owns everything else: the HTTP engine and its bounds, credentials, cancellation, and the
rule that every stream ends with exactly one `End`.

    wire = ChatCompletions()
    call = wire.build(request, model_info, settings)         # may raise SmithError
    decoder = wire.decoder(model_info)
    for sse_event in parsed_body:
        for event in decoder.feed(sse_event): ...            # TextDelta, ToolCall, ..., End
    for event in decoder.finish(): ...                       # End if none was sent yet
    end = wire.error(status, headers, body_bytes)            # a non-2xx response
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from smith.providers._model import ModelInfo
from smith.providers._stream import End, Request, StreamEvent

# Fields of a request body that the runtime owns: provider extras may not set them.
OWNED_FIELDS = frozenset(
    {
        "model",
        "messages",
        "input",
        "contents",
        "system",
        "system_instruction",
        "systemInstruction",
        "tools",
        "tool_choice",
        "toolConfig",
        "stream",
    }
)


@dataclass(frozen=True, slots=True)
class ProviderSettings:
    """One provider's configuration, resolved by the host."""

    name: str  # the provider as the user named it (openai-compatible, or an endpoint name)
    base_url: str  # without a trailing slash, e.g. https://api.openai.com/v1
    credential: str | None  # the API key or token; None when there is none
    headers: Mapping[str, str] = field(default_factory=dict)  # extra, from configuration
    extra: Mapping[str, object] = field(default_factory=dict)  # body fields merged last


@dataclass(frozen=True, slots=True)
class HttpCall:
    url: str
    headers: dict[str, str]
    body: dict[str, object]  # JSON; the host serializes it and checks its size


class Decoder(Protocol):
    def feed(self, event: str, data: str) -> list[StreamEvent]:
        """The stream events one server-sent event (its event name and data) carries. An
        `End` is returned at most once; nothing is returned after it."""
        ...

    def finish(self) -> list[StreamEvent]:
        """The body ended. If no `End` was returned yet, an error `End` saying the stream
        was cut off before its terminal event (never success)."""
        ...


class WireFormat(Protocol):
    api: str  # one of smith.providers._model.APIS

    def build(self, request: Request, model: ModelInfo, settings: ProviderSettings) -> HttpCall:
        """The HTTP request for `request`. Sampling settings merge deterministically:
        configured defaults, then the request's own, then `settings.extra` last; an extra
        naming an OWNED_FIELDS field, or a setting the model does not advertise (e.g.
        thinking on a model without thinking levels), raises a SmithError diagnostic
        before anything is sent."""
        ...

    def decoder(self, model: ModelInfo) -> Decoder: ...

    def error(self, status: int, headers: Mapping[str, str], body: bytes) -> End:
        """The terminal event for a non-2xx response: outcome error, a message with the
        status and a redacted excerpt of the provider's error, `retryable` for 408, 409,
        429, 5xx and overloaded, `retry_after` from Retry-After (seconds or HTTP date)."""
        ...


class ProviderHost(Protocol):
    """What the host gives a provider plugin's `create(model, host)`: the catalog entry,
    the resolved settings (base URL, credential, extras) and the shared HTTP engine.
    Plugins for HTTP APIs return `HttpProvider(name, wire, info, settings, host.engine,
    info.pricing)` (smith.providers._http_provider)."""

    @property
    def engine(self) -> object: ...  # smith.providers._http.HttpEngine

    def model_info(self, provider: str, model_id: str) -> ModelInfo: ...

    def settings(self, provider: str) -> ProviderSettings: ...
