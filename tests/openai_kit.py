"""Helpers for the OpenAI wire-format tests: models, settings, and decoding a recorded
SSE body (tests/fixtures/providers/*.sse) through the real SSE parser."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from smith.providers._model import ModelInfo
from smith.providers._sse import SSEParser
from smith.providers._stream import End, StreamEvent, TextDelta, ThinkingDelta, ToolCall, Usage
from smith.providers._wire import ProviderSettings, WireFormat

FIXTURES = Path(__file__).parent / "fixtures" / "providers"

PLAIN = ModelInfo(
    provider="openai-compatible",
    id="bar",
    api="openai-chat",
    context_window=32768,
    max_output=4096,
)
GPT4O = ModelInfo(
    provider="openai",
    id="gpt-4o",
    api="openai-chat",
    context_window=128000,
    max_output=16384,
    input=("text", "image"),
    strict_tools=True,
    cache="automatic",
)
GPT5 = ModelInfo(
    provider="openai",
    id="gpt-5",
    api="openai-responses",
    context_window=400000,
    max_output=128000,
    input=("text", "image"),
    thinking=("minimal", "low", "medium", "high"),
    strict_tools=True,
    cache="automatic",
)
GPT41 = replace(GPT5, id="gpt-4.1", thinking=(), context_window=1047576, max_output=32768)


def settings(
    *,
    credential: str | None = "sk-test-0123456789abcdef",
    name: str = "openai",
    base_url: str = "https://api.openai.com/v1",
    headers: dict[str, str] | None = None,
    extra: dict[str, object] | None = None,
) -> ProviderSettings:
    return ProviderSettings(name, base_url, credential, headers or {}, extra or {})


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def decode(
    wire: WireFormat,
    model: ModelInfo,
    body: bytes,
    *,
    chunks: Iterable[int] | None = None,
    complete: bool = True,
) -> list[StreamEvent]:
    """The stream events of `body` fed through the SSE parser, in pieces cut at the
    `chunks` offsets (else whole); `complete` says the body ended (then finish())."""
    decoder = wire.decoder(model)
    parser = SSEParser()
    cuts = [0, *sorted(set(chunks or ())), len(body)]
    out: list[StreamEvent] = []
    for start, stop in itertools.pairwise(cuts):
        for ev in parser.feed(body[start:stop]):
            out += decoder.feed(ev.event, ev.data)
    if complete:
        for ev in parser.close():
            out += decoder.feed(ev.event, ev.data)
        out += decoder.finish()
    return out


def text(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def thinking(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, ThinkingDelta))


def calls(events: list[StreamEvent]) -> list[ToolCall]:
    return [e for e in events if isinstance(e, ToolCall)]


def usages(events: list[StreamEvent]) -> list[Usage]:
    return [e for e in events if isinstance(e, Usage)]


def end(events: list[StreamEvent]) -> End:
    """The one End, which must be the last event."""
    ends = [e for e in events if isinstance(e, End)]
    assert len(ends) == 1, events
    assert events[-1] is ends[0], events
    return ends[0]
