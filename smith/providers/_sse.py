"""Server-sent events, parsed without I/O: bytes in as they arrive, events out.

    parser = SSEParser()
    for chunk in body:
        for event in parser.feed(chunk):
            decoder.feed(event.event, event.data)
    parser.close()

The rules are the WHATWG EventSource ones ("event stream interpretation"): lines end in
CRLF, LF or CR; a UTF-8 BOM at the very start is dropped; a line starting with ":" is a
comment; `field: value` (one leading space of the value dropped) or a bare `field`;
`data` lines of one event are joined with "\\n"; a blank line dispatches the event, with
the type "message" unless `event` named one; an event without data is not dispatched.
`id` and `retry` are connection state: every event carries the latest of each.

The output is the same however the byte stream was split into chunks: a CR at the end of
one chunk and an LF at the start of the next are one line end, and a UTF-8 code point
split across chunks is decoded whole. At the end of the stream an event that was not
terminated by a blank line is discarded, as the standard says: a body cut off mid-event
never yields a half event that looks complete.

This is on the streaming hot path, so the scanning is done by bytes methods (find,
replace, split, decode) over whole chunks; Python code runs once per line, never per byte.
"""

from __future__ import annotations

from typing import NamedTuple

_BOM = b"\xef\xbb\xbf"


class SSEEvent(NamedTuple):  # a tuple: built on the hot path, twice as fast as a dataclass
    event: str  # "message" unless the stream named a type
    data: str
    id: str | None = None  # the last event id the stream set, if any
    retry: int | None = None  # the last reconnection time (ms) the stream set, if any


class SSEParser:
    __slots__ = ("_data", "_event", "_id", "_pending", "_retry", "_skip_lf", "_started")

    def __init__(self) -> None:
        self._pending: list[bytes] = []  # the bytes of a line not yet ended
        self._skip_lf = False  # the last line ended in CR: an LF next is part of it
        self._started = False  # the BOM check at the start of the stream is done
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """The events completed by `chunk`."""
        if self._skip_lf and chunk:
            self._skip_lf = False
            if chunk[0] == 0x0A:
                chunk = chunk[1:]
        if not self._started:
            head = b"".join(self._pending) + chunk
            if len(head) < 3 and _BOM.startswith(head):
                self._pending = [head] if head else []
                return []  # too short to tell whether a BOM starts the stream
            self._started = True
            self._pending = []
            chunk = head[3:] if head.startswith(_BOM) else head
        if b"\r" in chunk:  # the rare line ends, made LF (pending bytes never hold one)
            self._skip_lf = chunk.endswith(b"\r")
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        end = chunk.rfind(b"\n")
        if end < 0:
            if chunk:
                self._pending.append(chunk)
            return []
        lines = chunk[:end]
        if self._pending:
            lines = b"".join(self._pending) + lines
            self._pending = []
        if end + 1 < len(chunk):
            self._pending.append(chunk[end + 1 :])
        return self._lines(lines.decode("utf-8", "replace").split("\n"))

    def close(self) -> list[SSEEvent]:
        """The stream ended. An event without its terminating blank line is discarded
        (see the module docstring), so this returns no events; the parser is reset for
        reuse except for the connection state (`id`, `retry`)."""
        self._pending = []
        self._data = []
        self._event = ""
        self._skip_lf = False
        self._started = False
        return []

    def _lines(self, lines: list[str]) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        data = self._data
        for line in lines:
            if not line:  # a blank line: dispatch
                if data:
                    events.append(
                        SSEEvent(self._event or "message", "\n".join(data), self._id, self._retry)
                    )
                    data = self._data = []
                self._event = ""
            elif line[:6] == "data: ":  # the common cases first
                data.append(line[6:])
            elif line[:7] == "event: ":
                self._event = line[7:]
            elif line[0] != ":":
                self._field(line)
        return events

    def _field(self, line: str) -> None:
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)
