"""What can go wrong in an HTTP exchange, as diagnostics.

    HttpError(SmithError)     no response: the request was refused, could not connect,
                              got no head in time, or broke before the head; `kind` is
                              too_large, connect, timeout, invalid or failed
    HttpResponse.error        a response whose body did not end normally (text; its
                              `error_kind` is timeout, failed or too_large)

Non-2xx statuses are neither: they are responses.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from smith.diagnostics import Diagnostic, DiagnosticKind, SmithError


class HttpError(SmithError):
    """No usable response; `kind` says why, for retry decisions."""

    def __init__(self, diagnostic: Diagnostic, kind: str) -> None:
        super().__init__(diagnostic)
        self.kind = kind


def text(diagnostic: Diagnostic) -> str:
    """A diagnostic as one line, for a stream's End.error."""
    return f"{diagnostic.what} ({diagnostic.why}); {diagnostic.fix}"


def where(url: str) -> str:
    """The URL without its query or user information (a key may hide in either)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "the provider"
    return f"{parts.scheme}://{host}{port}{parts.path}" if host else "the provider"


REQUEST_TOO_LARGE = DiagnosticKind(
    "http.request-too-large",
    what="the request to {url} is {size}, more than the {limit} smith sends",
    why="request bodies above http.max-request are refused before anything is sent; the "
    "conversation, its tool results and attachments are what make a request large",
    fix="compact the conversation or leave out large attachments, or raise http.max-request",
)
CONNECT_FAILED = DiagnosticKind(
    "http.connect",
    what="could not connect to {url}: {reason}",
    why="the connection or its TLS handshake failed before the request was sent; "
    "certificates are checked against the Mozilla root certificates",
    fix="check the provider's base URL, your network and any proxy (HTTPS_PROXY); for a "
    "private certificate authority set SSL_CERT_FILE",
)
HEAD_TIMEOUT = DiagnosticKind(
    "http.head-timeout",
    what="no response from {url} within {seconds} s",
    why="the request was sent but the response head did not arrive within http.head-timeout",
    fix="try again later, or raise http.head-timeout if this provider is known to take "
    "that long before it answers",
)
BAD_URL = DiagnosticKind(
    "http.bad-url",
    what="cannot send a request to {url}: {reason}",
    why="a provider's URL must be an http:// or https:// URL with a host",
    fix="check the provider's base URL (configuration or --base-url)",
)
BAD_HEADER = DiagnosticKind(
    "http.bad-header",
    what="the {header} header of the request to {url} holds {problem}, which HTTP cannot send",
    why="header values are one line of printable ASCII without spaces at either end; stray "
    "characters like these usually come with a key copied from a file or a web page; smith "
    "does not show the value, as it may be a credential",
    fix="check the provider's API key (its environment variable, `smith auth login` or "
    "configuration) and any configured {header} header for stray characters",
)
REQUEST_FAILED = DiagnosticKind(
    "http.failed",
    what="the request to {url} failed before a response arrived: {reason}",
    why="the connection broke or was closed before the server answered",
    fix="try again; if it keeps happening, check your network or proxy",
)
BODY_STALLED = DiagnosticKind(
    "http.stalled",
    what="the response from {url} stalled: no data for {seconds} s",
    why="a silence longer than http.chunk-gap between body chunks ends the body, which is "
    "then incomplete",
    fix="try again; raise http.chunk-gap if this provider pauses that long mid-response",
)
BODY_FAILED = DiagnosticKind(
    "http.body-failed",
    what="the response from {url} was cut off: {reason}",
    why="the connection failed before the body ended, so the response is incomplete",
    fix="try again; if it keeps happening, check your network or proxy",
)
RESPONSE_TOO_LARGE = DiagnosticKind(
    "http.response-too-large",
    what="the response from {url} exceeded {limit} and was cut off",
    why="response bodies stop at http.max-response, so the response is incomplete",
    fix="raise http.max-response if this provider's responses are really that large",
)
