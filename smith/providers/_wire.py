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

import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from smith.diagnostics import DiagnosticKind, Source, scrub
from smith.providers._model import ModelInfo
from smith.providers._stream import End, Request, StreamEvent

if TYPE_CHECKING:
    from smith.providers._http import HttpEngine

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
        "instructions",  # the system prompt of OpenAI's Responses API
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
    # For a renewable credential: gives the credential for the next request, renewing
    # it first when it has expired (the host calls it before building each request).
    renew: Callable[[], Awaitable[str | None]] | None = field(
        default=None, compare=False, repr=False
    )
    # Where base_url came from, when a user who cannot reach it needs to know: "--base-url",
    # "providers.lab.base-url", or the default of a self-hosted provider. None for the
    # fixed endpoint of a first-party API.
    base_url_origin: str | None = None
    # Where the credential came from ("env OPENAI_API_KEY", "auth file /x/auth.json"),
    # said when the provider refuses it; None without one.
    credential_source: str | None = None


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
    # The form a base URL for this API takes, said when a base URL the user gave answers
    # 404 (a missing /v1 is the usual cause), e.g. "https://api.anthropic.com/v1: the API
    # root, ending in /v1 (smith adds /messages)".
    base_url_form: str

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
    def engine(self) -> HttpEngine: ...

    def model_info(self, provider: str, model_id: str) -> ModelInfo: ...

    def settings(self, provider: str) -> ProviderSettings: ...


# -- helpers every wire format shares ---------------------------------------------------

THINKING_ORDER = ("off", "minimal", "low", "medium", "high", "xhigh")

OWNED_EXTRA_FIELD = DiagnosticKind(
    "provider.owned-extra-field",
    what="the extra request fields of provider {provider} name {names}, which smith sets itself",
    why="smith builds the model, messages, system prompt, tools, tool choice and streaming "
    "fields of every request from the conversation, so configured extras may not replace them",
    fix="remove {names} from the extra fields of provider {provider}; choose the model with "
    "--model and the tools and system prompt through smith's own settings",
)
THINKING_UNSUPPORTED = DiagnosticKind(
    "provider.thinking-unsupported",
    what="thinking is set to '{level}', but model {model} does not think",
    why="the capabilities of {model} ({origin}) list no thinking levels, and smith never sends "
    "a reasoning setting a model does not advertise",
    fix="set thinking to off (`smith config set thinking off`), or choose a model whose "
    "capabilities list thinking levels (`smith models`)",
)


def merge_body(
    base: dict[str, object],
    extra: Mapping[str, object],
    *,
    provider: str,
    source: Source | None = None,
) -> dict[str, object]:
    """`base` (the body a wire format built: configured defaults, then the request's own
    settings) with the provider's configured `extra` fields merged last. Nested objects
    merge key by key, so an extra `{"reasoning": {"summary": "detailed"}}` keeps the
    effort smith chose; any other value replaces. An extra naming a field the runtime owns
    (OWNED_FIELDS) raises before anything is sent, naming every such field at once."""
    owned = sorted(name for name in extra if name in OWNED_FIELDS)
    if owned:
        raise OWNED_EXTRA_FIELD.error(
            value=owned[0],
            source=source,
            field="extra",
            provider=provider,
            names=", ".join(owned),
        )
    return _merged(base, extra)


def _merged(base: Mapping[str, object], extra: Mapping[str, object]) -> dict[str, object]:
    out = dict(base)
    for name, value in extra.items():
        old = out.get(name)
        if isinstance(value, Mapping) and isinstance(old, Mapping):
            out[name] = _merged(old, value)
        else:
            out[name] = _copied(value)
    return out


def _copied(value: object) -> object:
    """A copy of a JSON value, so a body never shares mutable parts with configuration."""
    if isinstance(value, Mapping):
        return {k: _copied(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_copied(v) for v in value]
    return value


def thinking_level(request: Request, model: ModelInfo) -> str | None:
    """The thinking level to send for `request`: None when thinking is off (or unset),
    else one of the levels `model` advertises. A level the model does not list becomes
    the nearest one it does (the lower of two equally near), since the user asked for
    "more" or "less" thinking, not for a vendor's exact word. Any level but off on a
    model that lists none raises THINKING_UNSUPPORTED before dispatch: silently not
    thinking would hide that the setting has no effect."""
    level = request.settings.get("thinking") or "off"
    if level == "off":
        return None
    if not model.thinking:
        raise THINKING_UNSUPPORTED.error(
            value=level,
            field="thinking",
            level=str(level),
            model=model.key,
            origin=model.provenance.get("thinking", "the model catalog"),
        )
    if level in model.thinking:
        return str(level)
    offered = sorted(model.thinking, key=level_rank)
    return min(offered, key=lambda x: abs(level_rank(x) - level_rank(level)))  # ties: lower


def level_rank(level: object) -> int:
    """The place of a thinking level in THINKING_ORDER; an unknown one ranks last."""
    return THINKING_ORDER.index(level) if level in THINKING_ORDER else len(THINKING_ORDER)


def status_kind(status: int) -> tuple[str, bool]:
    """End.kind and whether trying again may help, for an HTTP error status."""
    if status in (401, 403):
        return "auth", False
    if status == 404:
        return "unavailable", False
    if status == 408:
        return "timeout", True
    if status == 413:
        return "too_large", False
    if status == 429:
        return "rate_limit", True
    if status in (503, 529):
        return "overloaded", True
    if status >= 500 or status == 409:  # 409: a conflicting request in flight
        return "server", True
    return "invalid", False


def retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds the server asked to wait before trying again: `retry-after-ms` (OpenAI's
    precise form), else `Retry-After` in seconds or as an HTTP date; None when absent or
    unreadable."""
    lower = {k.lower(): v for k, v in headers.items()}
    try:
        ms = float(lower.get("retry-after-ms", ""))
        if math.isfinite(ms) and ms >= 0:
            return ms / 1000
    except ValueError:
        pass
    value = lower.get("retry-after", "").strip()
    if not value:
        return None
    try:
        seconds = float(value)
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    except ValueError:
        pass
    import email.utils  # here: importing it cost every start that reads configuration

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def excerpt(text: str, limit: int = 300) -> str:
    """A provider's error text fit for a message: registered secrets and anything that
    looks like a credential masked (before cutting, so no half-secret survives a cut),
    whitespace collapsed to one line, at most `limit` characters."""
    from smith._redact import redact_text

    line = " ".join(redact_text(scrub(text)).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def error_end(
    status: int,
    headers: Mapping[str, str],
    *,
    label: str,
    detail: str,
    kind: str | None = None,
    retryable: bool | None = None,
) -> End:
    """The error End for an HTTP error response: `label` (who answered, e.g. "OpenAI")
    and the status, a redacted excerpt of `detail` (the provider's own message), the kind
    and retryability of the status unless the provider's error said better, and the
    server's retry hint. 400 and 404 are never retryable: the same request fails alike."""
    default_kind, default_retryable = status_kind(status)
    retry = default_retryable if retryable is None else retryable
    shown = excerpt(detail)
    return End(
        "error",
        error=f"{label} returned HTTP {status}" + (f": {shown}" if shown else ""),
        retryable=retry and status not in (400, 404),
        retry_after=retry_after(headers),
        kind=kind or default_kind,
    )
