"""The loopback end of an OAuth redirect (RFC 8252): an HTTP server on 127.0.0.1 that
takes one authorization response, for smith.plugins._mcp_oauth. It logs nothing: the
request line holds the authorization code. Each connection is served in a thread of its
own, and one idle for READ_TIMEOUT seconds is dropped, so no client holds the login up;
an answer whose `state` is not the login's is refused, and the login waits on."""

from __future__ import annotations

import hmac
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio

CALLBACK_PATH = "/callback"
READ_TIMEOUT = 10.0  # seconds a connection may stay silent before it is dropped


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a connection still open never holds the login's end
    block_on_close = False
    loopback: Loopback


class _Callback(BaseHTTPRequestHandler):
    server: _Server
    timeout = READ_TIMEOUT

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if parts.path != CALLBACK_PATH:
            self._answer(404, "Not found.")
            return
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        taken = self.server.loopback.take(query)
        if taken == "taken":
            done = "error" not in query
            text = (
                "smith: the login is complete; you may close this page."
                if done
                else "smith: the login was refused; see the terminal."
            )
            self._answer(200 if done else 400, text)
        elif taken == "foreign":
            self._answer(400, "smith: this answer is not for the login under way.")
        elif taken == "answered":
            self._answer(409, "smith: this login has already been answered.")
        else:
            self._answer(400, "smith: this is no authorization response.")

    def _answer(self, status: int, text: str) -> None:
        body = f"<!doctype html><title>smith</title><p>{text}</p>\n".encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Nothing: the request line holds the authorization code."""


class Loopback:
    """The redirect's end: an HTTP server on 127.0.0.1 that takes one authorization
    response. Binding happens at construction (port 0: any free port), so the port is the
    server's before any URL names it."""

    def __init__(self, port: int = 0) -> None:
        self._server = _Server(("127.0.0.1", port), _Callback)
        self._server.loopback = self
        self.port: int = self._server.server_address[1]
        self._answer: dict[str, str] | None = None
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        # The login's `state` (from its authorization URL): answers without it are
        # someone else's (a page that knows the port), never the login's end.
        self.state: str | None = None

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    def take(self, query: dict[str, str]) -> str:
        """Keep the first answer (a code or an error) that carries the login's `state`:
        "taken"; "foreign" for one without it, "answered" for any later one, "none" for
        a query that is no answer."""
        if "code" not in query and "error" not in query:
            return "none"
        state = self.state
        if state is not None and not hmac.compare_digest(
            query.get("state", "").encode(), state.encode()
        ):
            return "foreign"
        with self._lock:
            if self._answer is not None:
                return "answered"
            self._answer = query
        self._done.set()
        return "taken"

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever, name="smith-mcp-oauth", daemon=True
            )
            self._thread.start()

    def close(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()
        self._done.set()

    async def wait(self, timeout: float) -> dict[str, str] | None:
        """The answer, or None if none came within `timeout` seconds."""
        await anyio.to_thread.run_sync(self._done.wait, timeout, abandon_on_cancel=True)
        return self._answer


def free_port() -> int:
    loopback = Loopback()
    loopback.close()
    return loopback.port
