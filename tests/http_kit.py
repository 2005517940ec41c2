"""A scripted HTTP server on 127.0.0.1, for tests of the HTTP engine and provider plugins.

Real sockets, no network beyond loopback. Each request takes the next scripted `Reply`
(or a callable that makes one from the request), and every request is recorded:

    with LoopbackServer() as srv:
        srv.script([Reply(200, SSE, [sse({"a": 1}), Gate(go), sse("[DONE]")])])
        url = srv.url + "/v1/chat/completions"
        ...
        srv.requests[0].json               # the parsed request body

A body is a list of items, sent in order:
- `bytes`: one chunk (sent with chunked transfer encoding unless the reply sets
  content-length, then sent raw);
- `Pause(seconds)`: wait before the next item;
- `Gate(threading.Event)`: wait until the test sets the event (synchronisation without
  sleeping: "the consumer saw chunk 1 before the server sent chunk 2");
- `STALL`: stop sending, keep the connection open, until the client closes it or the
  server stops (a stalled body);
- `UNTIL_CLOSED`: wait until the client closes the connection, then record it.

`Reply(stall_head=True)` never sends the head (a stalled head). `Reply(end=...)` says how
the body ends: "complete" (a proper end), "reset" (TCP reset: SO_LINGER 0 then close),
"close" (the connection closed without the chunked terminator: a cut-off body). A body
that ends properly but lacks the wire format's terminal event is just a Reply whose
chunks leave it out.

`LoopbackServer(tls=context)` serves HTTPS. `srv.script(fn)` with one callable answers
every request with `fn(request)` (multi-turn tests); a list may also mix Replies and
callables, each used once.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import struct
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

SSE = {"content-type": "text/event-stream"}
JSON = {"content-type": "application/json"}


@dataclass(frozen=True)
class Pause:
    seconds: float


@dataclass(frozen=True)
class Gate:
    event: threading.Event


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


STALL = _Marker("STALL")
UNTIL_CLOSED = _Marker("UNTIL_CLOSED")

Item = bytes | Pause | Gate | _Marker


@dataclass
class Reply:
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    chunks: Iterable[Item] = ()
    stall_head: bool = False
    end: Literal["complete", "reset", "close"] = "complete"


def json_reply(status: int, obj: object, headers: Mapping[str, str] | None = None) -> Reply:
    """A reply with a JSON body and a content-length (e.g. a provider's error)."""
    body = json.dumps(obj).encode()
    return Reply(status, {**JSON, "content-length": str(len(body)), **(headers or {})}, [body])


def sse(*objs: object, event: str | None = None) -> bytes:
    """Server-sent events, one per object: `event: NAME` when given, then `data: ` with
    the object as JSON (a str is sent as is, e.g. "[DONE]"), then a blank line."""
    out = []
    for obj in objs:
        data = obj if isinstance(obj, str) else json.dumps(obj)
        lines = [f"event: {event}"] if event is not None else []
        lines += [f"data: {line}" for line in data.split("\n")]
        out.append("\n".join(lines) + "\n\n")
    return "".join(out).encode()


@dataclass
class Recorded:
    """One request as the server received it."""

    method: str
    target: str  # the request-target as sent: a path, or an absolute URL via a proxy
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    closed: threading.Event = field(default_factory=threading.Event)  # the client hung up
    sent: list[bytes] = field(default_factory=list)  # body chunks the server wrote

    @property
    def json(self) -> Any:
        return json.loads(self.body)


Script = Reply | Callable[[Recorded], Reply]


class LoopbackServer:
    """`tls`: serve HTTPS with this server-side context."""

    def __init__(self, *, tls: ssl.SSLContext | None = None) -> None:
        self.requests: list[Recorded] = []
        self.connections = 0
        self.errors: list[BaseException] = []
        self._script: list[Script] = []
        self._every: Callable[[Recorded], Reply] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sockets: set[socket.socket] = set()
        self._server = _Server(("127.0.0.1", 0), _handler(self))
        self._server.tls = tls
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, replies: Iterable[Script] | Callable[[Recorded], Reply]) -> None:
        with self._lock:
            if callable(replies):
                self._every = replies
            else:
                self._script.extend(replies)

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        self._server.shutdown()
        with self._lock:
            for sock in list(self._sockets):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        self._server.server_close()  # joins the handler threads
        self._thread.join()

    # -- used by the handler thread ------------------------------------------------------

    def _next(self, request: Recorded) -> Reply:
        with self._lock:
            self.requests.append(request)
            item: Script | None = self._script.pop(0) if self._script else self._every
        if item is None:
            return json_reply(500, {"error": "the loopback server has no scripted reply"})
        return item(request) if callable(item) else item

    def _wait(self, event: threading.Event) -> bool:
        """Wait for `event`; False when the server stops first."""
        while not event.wait(0.02):
            if self._stop.is_set():
                return False
        return True


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close joins them: no thread outlives a test
    block_on_close = True

    tls: ssl.SSLContext | None = None

    def get_request(self) -> tuple[Any, Any]:
        sock, address = super().get_request()
        if self.tls is not None:  # the handshake happens in the handler's thread
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up mid-reply is what many tests do on purpose


def _handler(srv: LoopbackServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            with srv._lock:
                srv._sockets.add(self.connection)
                srv.connections += 1

        def finish(self) -> None:
            with srv._lock:
                srv._sockets.discard(self.connection)
            with contextlib.suppress(OSError):
                super().finish()

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _any(self) -> None:
            request = self._record()
            reply = srv._next(request)
            try:
                self._reply(request, reply)
            except OSError:
                request.closed.set()
                self.close_connection = True

        do_GET = do_POST = do_PUT = do_DELETE = _any

        def _record(self) -> Recorded:
            headers = {k.lower(): v for k, v in self.headers.items()}
            if headers.get("transfer-encoding", "").lower() == "chunked":
                body = self._read_chunked()
            else:
                body = self.rfile.read(int(headers.get("content-length", "0")))
            path = self.path
            if "://" in path:
                path = "/" + path.split("://", 1)[1].partition("/")[2]
            return Recorded(self.command, self.path, path, headers, body)

        def _read_chunked(self) -> bytes:
            body = b""
            while size := int(self.rfile.readline().split(b";")[0], 16):
                body += self.rfile.read(size)
                self.rfile.readline()
            self.rfile.readline()
            return body

        def _reply(self, request: Recorded, reply: Reply) -> None:
            if reply.stall_head:
                self._until_closed(request)
                return
            headers = {k.lower(): v for k, v in reply.headers.items()}
            chunked = "content-length" not in headers
            if chunked:
                headers["transfer-encoding"] = "chunked"
            self.send_response_only(reply.status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.flush()
            for item in reply.chunks:
                if isinstance(item, bytes):
                    request.sent.append(item)  # before: the client may see it at once
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(item), item) if chunked else item)
                    self.wfile.flush()
                elif isinstance(item, Pause):
                    if srv._stop.wait(item.seconds):
                        return
                elif isinstance(item, Gate):
                    if not srv._wait(item.event):
                        return
                else:  # STALL and UNTIL_CLOSED
                    self._until_closed(request)
                    return
            if reply.end == "reset":
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
                self.connection.close()
                self.close_connection = True
            elif reply.end == "close":
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
            elif chunked:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        def _until_closed(self, request: Recorded) -> None:
            """Keep the connection open without sending until the client closes it."""
            self.close_connection = True
            self.connection.settimeout(0.02)
            while not srv._stop.is_set():
                try:
                    if not self.connection.recv(65536):
                        request.closed.set()
                        return
                except TimeoutError:
                    continue
                except OSError:
                    request.closed.set()
                    return

    return Handler
