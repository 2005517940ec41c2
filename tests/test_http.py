"""The host HTTP engine, through real sockets on 127.0.0.1 (tests/http_kit.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from smith.providers._http import (
    HttpEngine,
    HttpError,
    HttpLimits,
    HttpResponse,
    limits_from,
    shared_engine,
)
from tests.conftest import SmithEnv
from tests.http_kit import SSE, STALL, UNTIL_CLOSED, Gate, LoopbackServer, Reply, json_reply

SMALL = HttpLimits(
    max_request=1024,
    max_response=1000,
    head_timeout=3,
    chunk_gap=3,
    connect_timeout=1.0,
    channel=4,
)
IMPATIENT = dataclasses.replace(SMALL, head_timeout=0.3, chunk_gap=0.3)  # for stalls


def run(main: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(main(), 10))


@pytest.fixture
def srv() -> Any:
    with LoopbackServer() as server:
        yield server


async def collect(response: HttpResponse) -> list[bytes]:
    return [chunk async for chunk in response.chunks()]


# -- streaming ------------------------------------------------------------------------------


def test_chunks_arrive_one_by_one_before_the_server_sends_the_next(srv: LoopbackServer) -> None:
    go = threading.Event()
    srv.script([Reply(200, SSE, [b"data: 1\n\n", Gate(go), b"data: 2\n\n"])])

    async def main() -> tuple[list[bytes], list[list[bytes]]]:
        seen, sent_then = [], []
        async with HttpEngine(SMALL).request("POST", srv.url + "/s", content=b"{}") as r:
            async for chunk in r.chunks():
                seen.append(chunk)
                sent_then.append(list(srv.requests[0].sent))
                go.set()
            assert r.outcome == "complete" and r.error is None
        return seen, sent_then

    seen, sent_then = run(main)
    assert seen == [b"data: 1\n\n", b"data: 2\n\n"]
    assert sent_then[0] == [b"data: 1\n\n"]  # the server had not sent chunk 2 yet


def test_the_request_is_sent_as_given(srv: LoopbackServer) -> None:
    srv.script([json_reply(200, {"ok": True})])

    async def main() -> bytes:
        headers = {"authorization": "Bearer k", "content-type": "application/json"}
        async with HttpEngine(SMALL).request(
            "POST", srv.url + "/v1/x?alt=sse", headers=headers, content=b'{"a": 1}'
        ) as r:
            return await r.read()

    assert run(main) == b'{"ok": true}'
    request = srv.requests[0]
    assert (request.method, request.target, request.json) == ("POST", "/v1/x?alt=sse", {"a": 1})
    assert request.headers["authorization"] == "Bearer k"
    assert request.headers["user-agent"].startswith("smith/")


def test_a_non_2xx_status_is_a_response_not_an_error(srv: LoopbackServer) -> None:
    srv.script([json_reply(429, {"error": "slow down"}, {"retry-after": "7"})])

    async def main() -> tuple[int, str, bytes, str | None]:
        async with HttpEngine(SMALL).request("POST", srv.url, content=b"{}") as r:
            body = await r.read(1000)
            return r.status, r.headers["Retry-After"], body, r.outcome

    assert run(main) == (429, "7", b'{"error": "slow down"}', "complete")


def test_read_stops_at_its_limit(srv: LoopbackServer) -> None:
    srv.script([Reply(500, {}, [b"x" * 300, b"y" * 300])])

    async def main() -> tuple[bytes, str | None]:
        async with HttpEngine(SMALL).request("GET", srv.url) as r:
            return await r.read(400), r.outcome

    assert run(main) == (b"x" * 300 + b"y" * 100, "truncated")


def test_read_of_a_body_of_exactly_the_limit_is_complete(srv: LoopbackServer) -> None:
    srv.script([Reply(500, {}, [b"x" * 300, b"y" * 100])])

    async def main() -> tuple[bytes, str | None]:
        async with HttpEngine(SMALL).request("GET", srv.url) as r:
            return await r.read(400), r.outcome

    assert run(main) == (b"x" * 300 + b"y" * 100, "complete")


# -- bounds ---------------------------------------------------------------------------------


def test_an_oversized_request_is_refused_before_anything_is_sent(srv: LoopbackServer) -> None:
    async def main() -> HttpError:
        with pytest.raises(HttpError) as caught:
            async with HttpEngine(SMALL).request("POST", srv.url + "/big", content=b"x" * 1025):
                pass
        return caught.value

    error = run(main)
    assert error.kind == "too_large"
    assert srv.connections == 0 and srv.requests == []
    d = error.diagnostic
    assert d.code == "http.request-too-large"
    assert "1025 bytes" in d.what and "1 KiB (1024 bytes)" in d.what and "/big" in d.what
    assert "http.max-request" in d.why + d.fix


def test_a_request_at_the_bound_is_sent(srv: LoopbackServer) -> None:
    srv.script([json_reply(200, {})])

    async def main() -> int:
        async with HttpEngine(SMALL).request("POST", srv.url, content=b"x" * 1024) as r:
            return r.status

    assert run(main) == 200
    assert len(srv.requests[0].body) == 1024


def test_an_oversized_response_is_cut_at_the_bound(srv: LoopbackServer) -> None:
    srv.script([Reply(200, SSE, [b"a" * 600, b"b" * 600, b"c" * 600])])

    async def main() -> tuple[bytes, HttpResponse]:
        async with HttpEngine(SMALL).request("GET", srv.url) as r:
            return b"".join(await collect(r)), r

    body, r = run(main)
    assert body == b"a" * 600 + b"b" * 400
    assert (r.outcome, r.error_kind) == ("truncated", "too_large")
    assert r.error is not None and "http.max-response" in r.error


def test_a_stalled_head_is_a_timeout(srv: LoopbackServer) -> None:
    srv.script([Reply(stall_head=True), json_reply(200, {"next": "fine"})])

    async def main() -> tuple[HttpError, bytes]:
        engine = HttpEngine(IMPATIENT)
        with pytest.raises(HttpError) as caught:
            async with engine.request("POST", srv.url + "/slow", content=b"{}"):
                pass
        async with engine.request("GET", srv.url) as r:  # the engine is still usable
            return caught.value, await r.read()

    error, after = run(main)
    assert after == b'{"next": "fine"}'
    assert error.kind == "timeout"
    assert error.diagnostic.code == "http.head-timeout"
    assert "within 0.3 s" in error.diagnostic.what
    assert srv.requests[0].closed.wait(2)  # the engine hung up


def test_a_stalled_body_fails_after_the_chunk_gap(srv: LoopbackServer) -> None:
    srv.script([Reply(200, SSE, [b"data: 1\n\n", STALL])])

    async def main() -> tuple[list[bytes], HttpResponse]:
        async with HttpEngine(IMPATIENT).request("GET", srv.url) as r:
            return await collect(r), r

    chunks, r = run(main)
    assert chunks == [b"data: 1\n\n"]
    assert (r.outcome, r.error_kind) == ("failed", "timeout")
    assert r.error is not None and "no data for 0.3 s" in r.error
    assert srv.requests[0].closed.wait(2)


def test_slow_chunks_within_the_gap_are_fine(srv: LoopbackServer) -> None:
    from tests.http_kit import Pause

    # Each pause is within the gap; all of them together are not.
    srv.script([Reply(200, SSE, [b"1", Pause(0.3), b"2", Pause(0.3), b"3", Pause(0.3), b"4"])])
    limits = HttpLimits(head_timeout=3, chunk_gap=0.8)

    async def main() -> tuple[list[bytes], str | None]:
        async with HttpEngine(limits).request("GET", srv.url) as r:
            return await collect(r), r.outcome

    assert run(main) == ([b"1", b"2", b"3", b"4"], "complete")


@pytest.mark.parametrize("end", ["reset", "close"])
def test_a_connection_lost_mid_body_fails(srv: LoopbackServer, end: Any) -> None:
    srv.script([Reply(200, SSE, [b"data: 1\n\n"], end=end)])

    async def main() -> tuple[list[bytes], HttpResponse]:
        async with HttpEngine(SMALL).request("GET", srv.url) as r:
            return await collect(r), r

    chunks, r = run(main)
    assert chunks == [b"data: 1\n\n"]
    assert (r.outcome, r.error_kind) == ("failed", "failed")
    assert r.error is not None and "cut off" in r.error


def test_connect_failure() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed

    async def main() -> HttpError:
        with pytest.raises(HttpError) as caught:
            async with HttpEngine(SMALL).request("GET", f"http://127.0.0.1:{port}/v1?key=sekrit"):
                pass
        return caught.value

    error = run(main)
    assert error.kind == "connect"
    assert error.diagnostic.code == "http.connect"
    assert f"127.0.0.1:{port}/v1" in error.diagnostic.what
    assert "sekrit" not in str(error.diagnostic.to_dict())


def test_a_url_that_is_not_http_is_a_diagnostic() -> None:
    async def main() -> HttpError:
        with pytest.raises(HttpError) as caught:
            async with HttpEngine(SMALL).request("GET", "ftp://example.invalid/x"):
                pass
        return caught.value

    error = run(main)
    assert (error.kind, error.diagnostic.code) == ("invalid", "http.bad-url")


# -- cancellation ---------------------------------------------------------------------------


def test_cancel_event_mid_stream_delivers_nothing_more_and_closes(srv: LoopbackServer) -> None:
    go = threading.Event()
    srv.script([Reply(200, SSE, [b"one", Gate(go), b"two", b"three", UNTIL_CLOSED])])

    async def main() -> tuple[list[bytes], str | None]:
        cancel = asyncio.Event()
        seen = []
        async with HttpEngine(SMALL).request("GET", srv.url, cancel=cancel) as r:
            async for chunk in r.chunks():
                seen.append(chunk)
                cancel.set()
                go.set()  # the server sends more; none of it may be delivered
        return seen, r.outcome

    assert run(main) == ([b"one"], "cancelled")
    assert srv.requests[0].closed.wait(2)


def test_cancel_while_the_consumer_waits_wakes_it(srv: LoopbackServer) -> None:
    go = threading.Event()
    srv.script([Reply(200, SSE, [b"one", Gate(go), b"two", UNTIL_CLOSED])])

    async def main() -> tuple[list[bytes], str | None]:
        cancel = asyncio.Event()
        seen: list[bytes] = []
        got_one = asyncio.Event()

        async def canceller() -> None:
            await got_one.wait()
            await asyncio.sleep(0.05)  # let the consumer block on the empty channel
            cancel.set()
            go.set()

        helper = asyncio.create_task(canceller())
        async with HttpEngine(SMALL).request("GET", srv.url, cancel=cancel) as r:
            async for chunk in r.chunks():
                seen.append(chunk)
                got_one.set()
        await helper
        return seen, r.outcome

    assert run(main) == ([b"one"], "cancelled")
    assert srv.requests[0].closed.wait(2)


def test_chunks_already_read_ahead_are_not_delivered_after_cancel(srv: LoopbackServer) -> None:
    srv.script([Reply(200, SSE, [b"one", b"two", b"three", UNTIL_CLOSED])])
    limits = HttpLimits(head_timeout=2, chunk_gap=2, channel=8)

    async def main() -> list[bytes]:
        cancel = asyncio.Event()
        seen = []
        async with HttpEngine(limits).request("GET", srv.url, cancel=cancel) as r:
            async for chunk in r.chunks():
                seen.append(chunk)
                while r._queue.qsize() < 1:  # the reader has read ahead
                    await asyncio.sleep(0.005)
                cancel.set()
        return seen

    assert run(main) == [b"one"]


def test_cancelling_the_consumer_closes_the_connection(srv: LoopbackServer) -> None:
    srv.script([Reply(200, SSE, [b"one", UNTIL_CLOSED])])

    async def main() -> HttpResponse:
        got_one = asyncio.Event()
        holder: list[HttpResponse] = []

        async def consume() -> None:
            async with HttpEngine(SMALL).request("GET", srv.url) as r:
                holder.append(r)
                async for _ in r.chunks():
                    got_one.set()

        task = asyncio.create_task(consume())
        await got_one.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return holder[0]

    r = run(main)
    assert r.outcome == "cancelled"
    assert srv.requests[0].closed.wait(2)


def test_leaving_early_closes_the_connection(srv: LoopbackServer) -> None:
    srv.script([Reply(200, SSE, [b"one", UNTIL_CLOSED])])

    async def main() -> str | None:
        async with HttpEngine(SMALL).request("GET", srv.url) as r:
            async for _ in r.chunks():
                break
        return r.outcome

    assert run(main) == "cancelled"
    assert srv.requests[0].closed.wait(2)


# -- environment, TLS, loops ----------------------------------------------------------------


def test_proxy_from_the_environment(srv: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", srv.url)
    srv.script([json_reply(200, {"via": "proxy"})])

    async def main() -> bytes:
        url = "http://api.example.invalid/v1/chat"  # unresolvable: only the proxy answers
        async with HttpEngine(SMALL).request("POST", url, content=b"{}") as r:
            return await r.read()

    assert run(main) == b'{"via": "proxy"}'
    assert srv.requests[0].target == "http://api.example.invalid/v1/chat"


def test_tls_uses_the_bundled_mozilla_roots(monkeypatch: pytest.MonkeyPatch) -> None:
    import certifi

    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    bundle = Path(certifi.where()).read_text()
    context = HttpEngine()._ssl_context()
    assert len(context.get_ca_certs()) == bundle.count("BEGIN CERTIFICATE")
    assert "ISRG Root X1" in str(context.get_ca_certs())  # a Mozilla root, e.g.


def _tls_server(tmp_path: Path) -> tuple[Any, str]:
    import ssl

    if subprocess.run(["openssl", "version"], capture_output=True).returncode != 0:
        pytest.skip("openssl is not installed")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context, str(cert)


def test_tls_rejects_an_untrusted_certificate_and_ssl_cert_file_adds_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    context, cert = _tls_server(tmp_path)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)

    async def main(srv: LoopbackServer) -> Any:
        url = f"https://127.0.0.1:{srv.port}/v1"
        try:
            async with HttpEngine(SMALL).request("GET", url) as r:
                return await r.read()
        except HttpError as exc:
            return exc

    with LoopbackServer(tls=context) as srv:
        srv.script(lambda request: json_reply(200, {"tls": True}))
        error = run(lambda: main(srv))
        assert isinstance(error, HttpError) and error.kind == "connect"
        assert "certificate is not trusted" in error.diagnostic.what
        monkeypatch.setenv("SSL_CERT_FILE", cert)
        assert run(lambda: main(srv)) == b'{"tls": true}'


def test_one_engine_serves_several_event_loops_and_closes_with_each(
    srv: LoopbackServer,
) -> None:
    srv.script(lambda request: json_reply(200, {"n": len(srv.requests)}))
    engine = HttpEngine(SMALL)
    clients = []

    async def main() -> bytes:
        async with engine.request("GET", srv.url) as r:
            body = await r.read()
        clients.append(next(iter(engine._clients.values()))[0])
        return body

    assert run(main) == b'{"n": 1}'
    assert clients[0].is_closed  # closed as its loop shut down
    assert run(main) == b'{"n": 2}'
    assert clients[1] is not clients[0] and clients[1].is_closed
    assert len(engine._clients) == 1  # the closed loop's entry was dropped


def test_aclose_closes_the_running_loops_client(srv: LoopbackServer) -> None:
    srv.script(lambda request: json_reply(200, {}))
    engine = HttpEngine(SMALL)

    async def main() -> bool:
        async with engine.request("GET", srv.url) as r:
            await r.read()
        client = engine._clients[asyncio.get_running_loop()][0]
        await engine.aclose()
        return client.is_closed and not engine._clients

    assert run(main)


def test_shared_engine_is_one_engine_whose_limits_can_be_set() -> None:
    engine = shared_engine()
    assert shared_engine() is engine
    before = engine.limits
    try:
        assert shared_engine(SMALL) is engine and engine.limits == SMALL
    finally:
        shared_engine(before)


def test_limits_come_from_configuration(senv: SmithEnv) -> None:
    from smith.config import resolve

    senv.write_user_config("http { max-request 2048; chunk-gap 9; }\n")
    env = {**senv.env, "SMITH_HTTP_HEAD_TIMEOUT": "5"}
    limits = limits_from(resolve(env=env, cwd=str(senv.root)))
    assert limits == HttpLimits(
        max_request=2048, max_response=64 * 1024 * 1024, head_timeout=5.0, chunk_gap=9.0
    )


def test_importing_the_providers_does_not_import_httpx() -> None:
    code = (
        "import sys, smith.providers, smith.providers._http, smith.providers._http_provider; "
        "print('httpx' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


# -- header values and connect failures (review of issue 7) ------------------------------

SECRETISH = "sk0123456789abcdefghijklmnopqrstuv"  # a key without a well-known prefix


@pytest.mark.parametrize(
    "value",
    [SECRETISH + "\r", SECRETISH + "\n", SECRETISH + " ", SECRETISH + "\u2026", "a\x00b"],
    ids=["cr", "lf", "trailing-space", "non-ascii", "nul"],
)
def test_a_header_value_http_cannot_carry_is_refused_before_sending_and_never_shown(
    srv: LoopbackServer, value: str
) -> None:
    """httpx would raise LocalProtocolError with the value in its message (a key read from
    a file with a CRLF line end leaked into End.error that way), or UnicodeEncodeError,
    which is no HttpError at all."""

    async def main() -> HttpError:
        with pytest.raises(HttpError) as caught:
            headers = {"authorization": f"Bearer {value}"}
            async with HttpEngine(SMALL).request("POST", srv.url + "/x", headers=headers):
                pass
        return caught.value

    error = run(main)
    assert (error.kind, error.diagnostic.code) == ("invalid", "http.bad-header")
    shown = str(error.diagnostic.to_dict())
    assert "authorization" in shown
    assert SECRETISH not in shown and "a\\x00b" not in shown
    assert srv.requests == []


def test_a_refused_connection_says_so() -> None:
    """httpx says only "All connection attempts failed"; the cause is further down."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    async def main() -> HttpError:
        with pytest.raises(HttpError) as caught:
            async with HttpEngine(SMALL).request("GET", f"http://127.0.0.1:{port}/v1"):
                pass
        return caught.value

    error = run(main)
    assert "connection refused" in error.diagnostic.what.lower()
