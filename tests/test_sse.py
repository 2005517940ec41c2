"""The SSE parser: WHATWG event-stream rules, and the same events however bytes are split."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from smith.providers._sse import SSEEvent, SSEParser


def parse(*chunks: bytes) -> list[SSEEvent]:
    parser = SSEParser()
    events = [e for chunk in chunks for e in parser.feed(chunk)]
    return events + parser.close()


def reference(stream: bytes) -> list[SSEEvent]:
    """The standard's algorithm, written as plainly as possible: one whole stream, one
    code point at a time (the oracle the fast parser is checked against)."""
    text = stream.decode("utf-8", "replace")
    text = text.removeprefix("\ufeff")
    lines, line, i = [], "", 0
    while i < len(text):
        c = text[i]
        if c in "\r\n":
            lines.append(line)
            line = ""
            if c == "\r" and text[i + 1 : i + 2] == "\n":
                i += 1
        else:
            line += c
        i += 1
    # `line` is an unterminated last line: the standard discards it.
    events, data, event, last_id, retry = [], "", "", None, None
    for line in lines:
        if line == "":
            if data:
                events.append(SSEEvent(event or "message", data.removesuffix("\n"), last_id, retry))
            data, event = "", ""
            continue
        if line.startswith(":"):
            continue
        if ":" in line:
            name, value = line.split(":", 1)
            value = value.removeprefix(" ")
        else:
            name, value = line, ""
        if name == "event":
            event = value
        elif name == "data":
            data += value + "\n"
        elif name == "id" and "\0" not in value:
            last_id = value
        elif name == "retry" and value and all(ch in "0123456789" for ch in value):
            retry = int(value)
    return events


# -- examples -----------------------------------------------------------------------------


def test_data_lines_of_one_event_are_joined_with_newlines() -> None:
    assert parse(b"data: a\ndata: b\n\n") == [SSEEvent("message", "a\nb")]


def test_event_names_and_the_default_type() -> None:
    stream = b"event: message_start\ndata: {}\n\ndata: 1\n\n"
    assert parse(stream) == [SSEEvent("message_start", "{}"), SSEEvent("message", "1")]


def test_crlf_cr_and_lf_line_ends_are_equal() -> None:
    for end in (b"\n", b"\r\n", b"\r"):
        stream = b"event: e" + end + b"data: x" + end + end
        assert parse(stream) == [SSEEvent("e", "x")], end


def test_cr_at_the_end_of_a_chunk_and_lf_at_the_start_of_the_next_are_one_line_end() -> None:
    # Were they two line ends, the empty line between would dispatch "a" without "b".
    assert parse(b"data: a\r", b"\ndata: b\r\n\r\n") == [SSEEvent("message", "a\nb")]
    assert parse(b"data: a\r", b"\r") == [SSEEvent("message", "a")]


def test_comments_are_ignored() -> None:
    assert parse(b": keep-alive\n\n: ping\ndata: x\n\n") == [SSEEvent("message", "x")]


def test_a_field_without_a_colon_has_an_empty_value() -> None:
    assert parse(b"data\ndata\n\n") == [SSEEvent("message", "\n")]
    assert parse(b"event\ndata: x\n\n") == [SSEEvent("message", "x")]


def test_only_one_leading_space_is_dropped_from_a_value() -> None:
    assert parse(b"data:  two\n\ndata:none\n\n") == [
        SSEEvent("message", " two"),
        SSEEvent("message", "none"),
    ]


def test_an_event_without_data_is_not_dispatched_and_its_type_does_not_leak() -> None:
    assert parse(b"event: ping\n\ndata: x\n\n") == [SSEEvent("message", "x")]


def test_a_bom_at_the_start_is_dropped_even_when_split() -> None:
    assert parse(b"\xef", b"\xbb", b"\xbfdata: x\n\n") == [SSEEvent("message", "x")]
    # Only at the start: later it is part of the field name, which is then unknown.
    assert parse(b"data: x\n\n\xef\xbb\xbfdata: y\n\n") == [SSEEvent("message", "x")]


def test_a_code_point_split_across_chunks_is_decoded_whole() -> None:
    stream = "data: héllo 🙂\n\n".encode()
    for cut in range(len(stream)):
        assert parse(stream[:cut], stream[cut:]) == [SSEEvent("message", "héllo 🙂")]


def test_invalid_utf8_becomes_replacement_characters() -> None:
    assert parse(b"data: \xff\n\n") == [SSEEvent("message", "\ufffd")]


def test_id_and_retry_are_connection_state_carried_by_later_events() -> None:
    stream = b"id: 7\nretry: 1500\ndata: a\n\ndata: b\n\nid: bad\0id\nretry: soon\ndata: c\n\n"
    assert parse(stream) == [
        SSEEvent("message", "a", "7", 1500),
        SSEEvent("message", "b", "7", 1500),
        SSEEvent("message", "c", "7", 1500),
    ]


def test_an_event_cut_off_before_its_blank_line_is_discarded() -> None:
    parser = SSEParser()
    assert parser.feed(b'data: {"done": true}\n\ndata: {"half":') == [
        SSEEvent("message", '{"done": true}')
    ]
    assert parser.close() == []
    assert parse(b"data: [DONE]\n") == []


def test_unknown_fields_are_ignored() -> None:
    assert parse(b"foo: bar\ndata: x\n\n") == [SSEEvent("message", "x")]


def test_a_long_line_arriving_in_many_chunks() -> None:
    payload = json.dumps({"text": "x" * 10_000})
    stream = f"data: {payload}\n\n".encode()
    chunks = [stream[i : i + 7] for i in range(0, len(stream), 7)]
    assert parse(*chunks) == [SSEEvent("message", payload)]


def test_vendor_shaped_streams() -> None:
    anthropic = (
        b"event: message_start\n"
        b'data: {"type":"message_start","message":{"id":"msg_1"}}\n\n'
        b"event: ping\ndata: {}\n\n"
        b"event: content_block_delta\n"
        b'data: {"type":"content_block_delta","delta":{"type":"text_delta","text":"Hi"}}\n\n'
    )
    assert [e.event for e in parse(anthropic)] == ["message_start", "ping", "content_block_delta"]
    openai = b'data: {"choices":[]}\r\n\r\ndata: [DONE]\r\n\r\n'
    assert [e.data for e in parse(openai)] == ['{"choices":[]}', "[DONE]"]


# -- however the stream is split ----------------------------------------------------------

PIECES = [
    b"data: ",
    b"data:",
    b"data",
    b"event: ",
    b"event",
    b"id: ",
    b"retry: ",
    b": comment",
    b"x",
    b"42",
    b"{}",
    b"\n",
    b"\r",
    b"\r\n",
    b"\n\n",
    b":",
    b" ",
    "é🙂".encode(),
    b"\xef\xbb\xbf",
    b"\xff",
    b"\0",
]
streams = st.lists(st.sampled_from(PIECES), max_size=40).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(streams)
def test_the_parser_follows_the_standard(stream: bytes) -> None:
    assert parse(stream) == reference(stream)


@settings(max_examples=150, deadline=None)
@given(streams)
def test_every_single_split_point_gives_the_same_events(stream: bytes) -> None:
    whole = parse(stream)
    for cut in range(len(stream) + 1):
        assert parse(stream[:cut], stream[cut:]) == whole, cut


@settings(max_examples=300, deadline=None)
@given(streams, st.lists(st.integers(0, 400), max_size=12))
def test_random_split_points_give_the_same_events(stream: bytes, cuts: list[int]) -> None:
    points = sorted({min(c, len(stream)) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    assert parse(*chunks) == parse(stream)


@settings(max_examples=50, deadline=None)
@given(streams)
def test_byte_at_a_time(stream: bytes) -> None:
    assert parse(*[stream[i : i + 1] for i in range(len(stream))]) == parse(stream)
