"""Helpers for the Anthropic and Google wire-format tests: decoding a recorded SSE body
(tests/fixtures/providers/*.sse) through the real SSE parser, and recording a stream as
the runtime records an assistant message, so a later request can be built from it."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from smith.providers._model import ModelInfo
from smith.providers._sse import SSEEvent, SSEParser
from smith.providers._stream import End, StreamEvent, TextDelta, ThinkingDelta, ToolCall
from smith.providers._wire import ProviderSettings, WireFormat

FIXTURES = Path(__file__).parent / "fixtures" / "providers"


def settings(
    name: str,
    *,
    credential: str | None = "test-key-0123456789",
    base_url: str = "https://example.test/v1",
    headers: dict[str, str] | None = None,
    extra: dict[str, object] | None = None,
) -> ProviderSettings:
    return ProviderSettings(name, base_url, credential, headers or {}, extra or {})


def events_of(name: str) -> list[SSEEvent]:
    """The server-sent events of a fixture, parsed by smith's own parser."""
    parser = SSEParser()
    return parser.feed((FIXTURES / name).read_bytes()) + parser.close()


def decode(
    wire: WireFormat, model: ModelInfo, events: Iterable[SSEEvent], *, complete: bool = True
) -> list[StreamEvent]:
    decoder = wire.decoder(model)
    out: list[StreamEvent] = []
    for ev in events:
        out += decoder.feed(ev.event, ev.data)
    if complete:
        out += decoder.finish()
    return out


def record(events: Iterable[StreamEvent], provider: str) -> dict[str, Any]:
    """The assistant message the runtime records for `events` (smith.runtime._steps):
    consecutive deltas of a kind make one part, a thinking part keeps the last signature
    it was given."""
    content: list[dict[str, Any]] = []
    stop = "error"
    for item in events:
        if isinstance(item, TextDelta | ThinkingDelta):
            kind = "text" if isinstance(item, TextDelta) else "thinking"
            if not content or content[-1]["type"] != kind:
                content.append({"type": kind, "text": ""})
            content[-1]["text"] += item.text
            if isinstance(item, ThinkingDelta) and item.signature:
                content[-1]["signature"] = item.signature
        elif isinstance(item, ToolCall):
            content.append(
                {
                    "type": "tool_call",
                    "id": item.id,
                    "name": item.name,
                    "arguments": item.arguments or {},
                }
            )
        elif isinstance(item, End):
            stop = item.outcome
    return {"role": "assistant", "content": content, "provider": provider, "stop": stop}


def ends(events: list[StreamEvent]) -> list[End]:
    return [e for e in events if isinstance(e, End)]


def keys_in(value: object) -> set[str]:
    """Every object key anywhere in a JSON value."""
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keys_in(v)}
    if isinstance(value, list):
        return {k for v in value for k in keys_in(v)}
    return set()


def text_in(value: object) -> str:
    return json.dumps(value)
