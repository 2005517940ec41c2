"""The SSE parser on a representative streamed response, against a naive parser.

The stream is an Anthropic-style tool-using turn of 2,000 events (about 300 KiB), fed in
the chunk sizes a socket delivers: 1 KiB, 16 KiB, and one event per chunk. The baseline
is the obvious incremental parser, written the way the standard reads: decode, then one
code point at a time. Both are measured in the same run; the ratio is what is tracked.
"""

from __future__ import annotations

import codecs
import json
import timeit
from collections.abc import Callable

from smith.providers._sse import SSEEvent, SSEParser

EVENTS = 2000


def representative_stream(events: int = EVENTS) -> bytes:
    out = [
        b"event: message_start\n"
        b'data: {"type":"message_start","message":{"id":"msg_1","role":"assistant"}}\n\n'
    ]
    for i in range(events - 2):
        if i % 50 == 0:
            out.append(b"event: ping\r\ndata: {}\r\n\r\n")
            continue
        delta = {"type": "text_delta", "text": f"word {i} ünïcödé "}
        if i % 3 == 0:
            delta = {"type": "input_json_delta", "partial_json": '{"path": "src/app.py", '}
        obj = {"type": "content_block_delta", "index": 0, "delta": delta}
        out.append(b"event: content_block_delta\ndata: " + json.dumps(obj).encode() + b"\n\n")
    out.append(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
    return b"".join(out)


def split(stream: bytes, size: int) -> list[bytes]:
    return [stream[i : i + size] for i in range(0, len(stream), size)]


class NaiveParser:
    """The standard's algorithm applied literally, one code point at a time."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._line: list[str] = []
        self._cr = False
        self._data: list[str] = []
        self._event = ""

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        for ch in self._decoder.decode(chunk):
            if self._cr and ch == "\n":
                self._cr = False
                continue
            self._cr = ch == "\r"
            if ch in "\r\n":
                self._dispatch_line("".join(self._line), events)
                self._line = []
            else:
                self._line.append(ch)
        return events

    def _dispatch_line(self, line: str, events: list[SSEEvent]) -> None:
        if not line:
            if self._data:
                events.append(SSEEvent(self._event or "message", "\n".join(self._data)))
            self._data, self._event = [], ""
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "data":
                self._data.append(value)
            elif name == "event":
                self._event = value


def _parse(parser_type: Callable[[], SSEParser | NaiveParser], chunks: list[bytes]) -> int:
    parser = parser_type()
    return sum(len(parser.feed(chunk)) for chunk in chunks)


def _best(run: Callable[[], object], number: int) -> float:
    return min(timeit.repeat(run, number=number, repeat=5)) / number


def speedup(chunks: list[bytes]) -> float:
    """The naive parser's time over smith's for the same chunks (higher is better)."""
    assert _parse(SSEParser, chunks) == _parse(NaiveParser, chunks) == EVENTS
    ours = _best(lambda: _parse(SSEParser, chunks), 20)
    naive = _best(lambda: _parse(NaiveParser, chunks), 2)
    return naive / ours


def figures() -> dict[str, float]:
    stream = representative_stream()
    per_event = [e + b"\n\n" for e in stream.split(b"\n\n")[:-1]]
    return {
        "ms_16k": _best(lambda: _parse(SSEParser, split(stream, 16384)), 20) * 1e3,
        "speedup_1k": speedup(split(stream, 1024)),
        "speedup_16k": speedup(split(stream, 16384)),
        "speedup_per_event": speedup(per_event),
    }


class Parse:
    def setup(self) -> None:
        stream = representative_stream()
        self.small = split(stream, 1024)
        self.large = split(stream, 16384)
        self.per_event = [e + b"\n\n" for e in stream.split(b"\n\n")[:-1]]

    def time_smith_1k_chunks(self) -> None:
        _parse(SSEParser, self.small)

    def time_smith_16k_chunks(self) -> None:
        _parse(SSEParser, self.large)

    def time_smith_event_per_chunk(self) -> None:
        _parse(SSEParser, self.per_event)

    def time_naive_baseline_1k_chunks(self) -> None:
        _parse(NaiveParser, self.small)


class ParseRatio:
    number = 1
    repeat = 1
    unit = "x faster than the naive parser"

    def setup(self) -> None:
        self.stream = representative_stream()

    def track_speedup_1k_chunks(self) -> float:
        return speedup(split(self.stream, 1024))

    def track_speedup_event_per_chunk(self) -> float:
        return speedup([e + b"\n\n" for e in self.stream.split(b"\n\n")[:-1]])


if __name__ == "__main__":
    for name, value in figures().items():
        print(f"{name:<18} {value:8.2f}")
