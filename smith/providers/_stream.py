"""The normalized provider stream: what every provider plugin turns its wire format into.

A provider is an object with a `name` and an async `stream(request)` that yields
`TextDelta`, `ThinkingDelta`, `ToolCall` and `Usage` events in the order the model
produced them, and ends with exactly one `End`. The runtime sees nothing else of a
vendor: no wire format, no endpoint, no credential name.

    async for event in provider.stream(Request(model="m", messages=[...], tools=[...])):
        ...

`End.outcome` is one of OUTCOMES: `success` (the model finished), `tool_use` (it wants
tool results), `limit` (it stopped at a token or length limit), `abort` (the request was
cancelled), `error` (the provider failed; `error` says how, `retryable` whether trying
again may help). A stream that stops without an `End` is malformed; the runtime treats it
as an error, never as success.

Messages in a request use smith's provider-neutral form (docs/events.md, "Messages"):

    {"role": "user", "content": [{"type": "text", "text": "..."}]}
    {"role": "assistant", "content": [{"type": "thinking", "text": "..."},
                                      {"type": "text", "text": "..."},
                                      {"type": "tool_call", "id": "...", "name": "...",
                                       "arguments": {...}}]}
    {"role": "tool_result", "tool_call_id": "...", "tool_name": "...",
     "content": [{"type": "text", "text": "..."}], "is_error": false}
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

OUTCOMES = ("success", "tool_use", "limit", "abort", "error")
Outcome = Literal["success", "tool_use", "limit", "abort", "error"]


def content_parts(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The parts of a neutral message's content; a bare string counts as one text part,
    and anything that is not a part is skipped."""
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [p for p in content if isinstance(p, dict)]
    return []


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    text: str
    signature: str | None = None  # opaque, for providers that must see it again


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One complete tool call: its arguments were accumulated and parsed once. A call
    whose arguments were not valid JSON is still delivered, with `arguments` None and
    `error` saying why, so the model is told instead of the call vanishing."""

    id: str
    name: str
    arguments: dict[str, object] | None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one response; None means the provider did not say (unknown is
    never 0). Later Usage events of a stream replace earlier ones field by field."""

    input: int | None = None
    output: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None

    def to_dict(self) -> dict[str, int | None]:
        return {
            "input": self.input,
            "output": self.output,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
        }


@dataclass(frozen=True, slots=True)
class End:
    """The one terminal event of a stream."""

    outcome: Outcome
    error: str | None = None
    retryable: bool = False
    retry_after: float | None = None  # seconds, when the provider said
    # Why an error happened, for retry and failover decisions (None when not an error):
    # rate_limit, overloaded, server (5xx), connect, timeout, invalid (4xx request),
    # auth, unavailable (unknown model), too_large, malformed, cancelled.
    kind: str | None = None


StreamEvent = TextDelta | ThinkingDelta | ToolCall | Usage | End


@dataclass(frozen=True, slots=True)
class Request:
    model: str
    messages: list[dict[str, object]]
    system: str = ""
    tools: list[dict[str, object]] = field(default_factory=list)  # ToolSpec.definition()s
    # Sampling and reasoning: temperature, max_tokens, thinking (a THINKING_LEVELS name).
    settings: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Pricing:
    """US dollars per million tokens of each kind; None where the price is not known."""

    input: float | None
    output: float | None
    cache_read: float | None = None
    cache_write: float | None = None


class Provider(Protocol):
    @property
    def name(self) -> str:
        """The provider plugin's name (recorded with each message it produced)."""
        ...

    def stream(self, request: Request) -> AsyncIterator[StreamEvent]: ...

    def pricing(self, model: str) -> Pricing | None:
        """The model's prices, or None when they are not known (cost stays unknown)."""
        ...
