"""HttpProvider: a wire format run over the engine, against a loopback server.

The wire format here is a tiny fake ("toy"): `data: {"t": TEXT}` is text, `data: [DONE]`
ends the turn, and anything else is whatever the test makes of it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pytest

from smith.diagnostics import DiagnosticKind
from smith.providers import End, Pricing, Provider, Request, StreamEvent, TextDelta
from smith.providers._http import HttpEngine, HttpLimits
from smith.providers._http_provider import HttpProvider
from smith.providers._model import ModelInfo
from smith.providers._wire import HttpCall, ProviderSettings
from tests.http_kit import SSE, STALL, UNTIL_CLOSED, Gate, LoopbackServer, Reply, json_reply, sse

KEY = "sk-toy-0123456789abcdefghijklmnop"
TOY_REFUSED = DiagnosticKind(
    "test.toy-refused",
    what="the toy wire refuses '{setting}'",
    why="the toy model does not have it",
    fix="leave it out",
)
LIMITS = HttpLimits(
    max_request=4096, max_response=2000, head_timeout=3, chunk_gap=3, connect_timeout=1
)
IMPATIENT = dataclasses.replace(LIMITS, head_timeout=0.3, chunk_gap=0.3)  # for stalls
INFO = ModelInfo("toy", "toy-1", "openai-chat", context_window=1000, max_output=100)


class ToyDecoder:
    def __init__(self) -> None:
        self.ended = False

    def feed(self, event: str, data: str) -> list[StreamEvent]:
        if self.ended:
            return []
        if data == "[DONE]":
            self.ended = True
            return [End("success")]
        obj = json.loads(data)
        if "boom" in obj:
            raise KeyError(obj["boom"])
        return [TextDelta(obj["t"])]

    def finish(self) -> list[StreamEvent]:
        if self.ended:
            return []
        self.ended = True
        return [End("error", error="the toy stream ended before [DONE]", kind="malformed")]


class ToyWire:
    api = "openai-chat"

    def __init__(self, decoder: Callable[[], Any] = ToyDecoder) -> None:
        self._decoder = decoder

    def build(self, request: Request, model: ModelInfo, settings: ProviderSettings) -> HttpCall:
        if "refuse" in request.settings:
            raise TOY_REFUSED.error(setting="refuse")
        body: dict[str, object] = {"model": model.id, "messages": request.messages}
        body.update(request.settings)
        headers = {"authorization": f"Bearer {settings.credential}", "x-toy": "wire"}
        return HttpCall(settings.base_url + "/chat", headers, body)

    def decoder(self, model: ModelInfo) -> Any:
        return self._decoder()

    def error(self, status: int, headers: Mapping[str, str], body: bytes) -> End:
        retry = headers.get("retry-after")
        return End(
            "error",
            error=f"toy said {status}: {body.decode()}",
            retryable=status == 429 or status >= 500,
            retry_after=float(retry) if retry else None,
            kind="rate_limit" if status == 429 else "invalid",
        )


def provider(
    url: str, wire: Any = None, limits: HttpLimits = LIMITS, **settings: Any
) -> HttpProvider:
    return HttpProvider(
        "toy",
        wire or ToyWire(),
        INFO,
        ProviderSettings("toy", url, KEY, **settings),
        HttpEngine(limits),
        Pricing(1.0, 2.0),
    )


def request(**settings: Any) -> Request:
    return Request(
        "toy-1", [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], settings=settings
    )


def run(main: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(main(), 10))


def events(p: Provider, req: Request | None = None) -> list[StreamEvent]:
    async def main() -> list[StreamEvent]:
        return [e async for e in p.stream(req or request())]

    result: list[StreamEvent] = run(main)
    ends = [e for e in result if isinstance(e, End)]
    assert len(ends) == 1 and result[-1] is ends[0], result  # exactly one End, last
    assert KEY not in repr(result)
    return result


@pytest.fixture
def srv() -> Any:
    with LoopbackServer() as server:
        yield server


TEXT = [sse({"t": "Hel"}), sse({"t": "lo"}), sse("[DONE]")]


def test_a_text_turn(srv: LoopbackServer) -> None:
    srv.script([Reply(200, SSE, TEXT)])
    p: Provider = provider(srv.url + "/v1")
    assert events(p) == [TextDelta("Hel"), TextDelta("lo"), End("success")]
    sent = srv.requests[0]
    assert sent.path == "/v1/chat"
    assert sent.json == {"model": "toy-1", "messages": request().messages}
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.headers["content-type"] == "application/json"
    assert p.pricing("toy-1") == Pricing(1.0, 2.0)


def test_events_stream_as_the_body_arrives(srv: LoopbackServer) -> None:
    go = threading.Event()
    srv.script([Reply(200, SSE, [TEXT[0], Gate(go), TEXT[1], TEXT[2]])])

    async def main() -> list[tuple[StreamEvent, int]]:
        seen = []
        async for event in provider(srv.url).stream(request()):
            seen.append((event, len(srv.requests[0].sent)))
            go.set()
        return seen

    seen = run(main)
    assert seen[0] == (TextDelta("Hel"), 1)  # before the server sent the rest


def test_configured_headers_are_added_over_the_wires(srv: LoopbackServer) -> None:
    srv.script([Reply(200, SSE, TEXT)])
    events(provider(srv.url, headers={"X-Toy": "config", "x-extra": "1"}))
    assert srv.requests[0].headers["x-toy"] == "config"
    assert srv.requests[0].headers["x-extra"] == "1"


def test_a_request_the_wire_refuses_is_never_sent(srv: LoopbackServer) -> None:
    (end,) = events(provider(srv.url), request(refuse=True))
    assert isinstance(end, End)
    assert (end.outcome, end.kind, end.retryable) == ("error", "invalid", False)
    assert end.error is not None and "the toy wire refuses 'refuse'" in end.error
    assert srv.connections == 0


def test_an_oversized_request_is_never_sent(srv: LoopbackServer) -> None:
    (end,) = events(provider(srv.url), request(pad="x" * 5000))
    assert isinstance(end, End)
    assert (end.kind, end.retryable) == ("too_large", False)
    assert end.error is not None and "http.max-request" in end.error
    assert srv.connections == 0


def test_a_non_2xx_status_is_the_wires_error_without_the_credential(
    srv: LoopbackServer,
) -> None:
    echoed = {"error": {"message": f"bad key Bearer {KEY} (api_key={KEY})"}}
    srv.script([json_reply(429, echoed, {"retry-after": "3"})])
    (end,) = events(provider(srv.url))
    assert isinstance(end, End)
    assert (end.kind, end.retryable, end.retry_after) == ("rate_limit", True, 3.0)
    assert end.error is not None and end.error.startswith("toy said 429")
    assert KEY not in end.error and "[secret]" in end.error


def test_a_stalled_head_is_a_retryable_timeout(srv: LoopbackServer) -> None:
    srv.script([Reply(stall_head=True)])
    (end,) = events(provider(srv.url, limits=IMPATIENT))
    assert isinstance(end, End)
    assert (end.outcome, end.kind, end.retryable) == ("error", "timeout", True)


def test_a_stalled_body_ends_with_a_retryable_timeout(srv: LoopbackServer) -> None:
    srv.script([Reply(200, SSE, [TEXT[0], STALL])])
    got = events(provider(srv.url, limits=IMPATIENT))
    assert got[0] == TextDelta("Hel")
    end = got[-1]
    assert isinstance(end, End)
    assert (end.kind, end.retryable) == ("timeout", True)
    assert end.error is not None and "stalled" in end.error


def test_a_reset_mid_stream_is_a_retryable_connection_error(srv: LoopbackServer) -> None:
    srv.script([Reply(200, SSE, [TEXT[0]], end="reset")])
    got = events(provider(srv.url))
    assert got[0] == TextDelta("Hel")
    assert isinstance(got[-1], End) and (got[-1].kind, got[-1].retryable) == ("connect", True)


def test_a_body_without_the_terminal_event_is_the_decoders_error(srv: LoopbackServer) -> None:
    # The half event at the end is never decoded as if it were whole.
    srv.script([Reply(200, SSE, [TEXT[0], b'data: {"t": "lo'])])
    got = events(provider(srv.url))
    assert got == [
        TextDelta("Hel"),
        End("error", error="the toy stream ended before [DONE]", kind="malformed"),
    ]


def test_an_oversized_response_is_cut_off_explicitly(srv: LoopbackServer) -> None:
    srv.script([Reply(200, SSE, [sse({"t": "x" * 900})] * 3 + [TEXT[2]])])
    got = events(provider(srv.url))
    assert got[:2] == [TextDelta("x" * 900)] * 2
    assert isinstance(got[-1], End) and (got[-1].kind, got[-1].retryable) == ("too_large", False)


def test_a_connect_failure_is_retryable() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (end,) = events(provider(f"http://127.0.0.1:{port}"))
    assert isinstance(end, End) and (end.kind, end.retryable) == ("connect", True)


def test_nothing_after_the_terminal_event(srv: LoopbackServer) -> None:
    srv.script([Reply(200, SSE, [TEXT[0], TEXT[2], TEXT[1], UNTIL_CLOSED])])
    assert events(provider(srv.url)) == [TextDelta("Hel"), End("success")]
    assert srv.requests[0].closed.wait(2)  # and the rest of the body is not waited for


def test_a_decoder_that_raises_is_a_malformed_stream(srv: LoopbackServer) -> None:
    srv.script([Reply(200, SSE, [TEXT[0], sse({"boom": "x"}), TEXT[2]])])
    got = events(provider(srv.url))
    assert got[0] == TextDelta("Hel")
    assert isinstance(got[-1], End) and got[-1].kind == "malformed"
    assert got[-1].error is not None and "KeyError" in got[-1].error


def test_a_decoder_that_never_ends_still_gives_one_end(srv: LoopbackServer) -> None:
    class Endless(ToyDecoder):
        def finish(self) -> list[StreamEvent]:
            return []

    srv.script([Reply(200, SSE, [TEXT[0]])])
    got = events(provider(srv.url, wire=ToyWire(Endless)))
    assert isinstance(got[-1], End) and got[-1].kind == "malformed"


def test_cancelling_the_stream_propagates_and_closes_the_connection(srv: LoopbackServer) -> None:
    srv.script([Reply(200, SSE, [TEXT[0], UNTIL_CLOSED])])

    async def main() -> list[StreamEvent]:
        seen: list[StreamEvent] = []
        first = asyncio.Event()

        async def consume() -> None:
            async for event in provider(srv.url).stream(request()):
                seen.append(event)
                first.set()

        task = asyncio.create_task(consume())
        await first.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return seen

    assert run(main) == [TextDelta("Hel")]
    assert srv.requests[0].closed.wait(2)


def test_multi_turn_with_a_callable_reply(srv: LoopbackServer) -> None:
    def answer(req: Any) -> Reply:
        n = len(req.json["messages"])
        return Reply(200, SSE, [sse({"t": f"turn {n}"}), sse("[DONE]")])

    srv.script(answer)
    p = provider(srv.url)
    assert events(p)[0] == TextDelta("turn 1")
    two = Request("toy-1", request().messages * 2)
    assert events(p, two)[0] == TextDelta("turn 2")


def test_a_key_with_a_stray_line_end_is_refused_unsent_and_unshown(srv: LoopbackServer) -> None:
    """A key read from a CRLF file: httpx's error quoted it (escaped, so the registered
    secret did not match it), and the stream called it a retryable connect failure."""
    key = "0123456789abcdefghijklmnopqrstuv"  # no well-known prefix the redactor knows
    p = HttpProvider(
        "toy",
        ToyWire(),
        INFO,
        ProviderSettings("toy", srv.url, key + "\r"),
        HttpEngine(LIMITS),
    )
    (end,) = events(p)
    assert isinstance(end, End)
    assert (end.kind, end.retryable) == ("invalid", False)
    assert end.error is not None and "line break" in end.error and key not in end.error
    assert srv.connections == 0


def test_a_2xx_answer_that_is_not_a_stream_says_what_it_was_and_is_not_retried(
    srv: LoopbackServer,
) -> None:
    """A server that ignores `stream: true` (or a proxy's page) answers 200 with JSON or
    HTML: no server-sent events at all. That is not a cut-off stream worth retrying."""
    srv.script([json_reply(200, {"choices": [{"message": {"content": "whole"}}]})])
    (end,) = events(provider(srv.url))
    assert isinstance(end, End)
    assert (end.kind, end.retryable) == ("malformed", False)
    assert end.error is not None and "application/json" in end.error and "whole" in end.error


def test_a_redirect_says_where_to_and_is_not_followed(srv: LoopbackServer) -> None:
    """Redirects are not followed (the key would go along); the End says where the server
    pointed, with no query (a key may hide there), so the base URL can be corrected."""
    target = "https://elsewhere.example/v1/chat?key=sekrit"
    srv.script([Reply(307, {"location": target, "content-length": "0"}, [])])
    (end,) = events(provider(srv.url + "/v1"))
    assert isinstance(end, End)
    assert (end.kind, end.retryable) == ("invalid", False)
    assert end.error is not None and "https://elsewhere.example/v1/chat" in end.error
    assert "sekrit" not in end.error and len(srv.requests) == 1
