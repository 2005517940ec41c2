"""The anthropic and google plugins end to end: real loopback servers speaking each
vendor's wire format, the host's HTTP engine, and the runtime driving whole turns (text,
thinking, tools), plus every failure path a real API can take."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from smith.plugins.providers import anthropic, google
from smith.providers import End, Provider, Request, StreamEvent, TextDelta
from smith.providers._http import HttpEngine, HttpLimits
from smith.providers._model import ModelInfo
from smith.providers._stream import Pricing
from smith.providers._wire import ProviderSettings
from smith.runtime import Limits
from tests.http_kit import SSE, STALL, UNTIL_CLOSED, LoopbackServer, Recorded, Reply, json_reply
from tests.runtime_kit import World, messages

KEY = "test-key-0123456789abcdefXYZ"
LIMITS = HttpLimits(max_request=1 << 20, max_response=1 << 20, head_timeout=2, chunk_gap=2)


# -- the two vendors, as a loopback server speaks them ------------------------------------


def a_event(obj: dict[str, Any]) -> bytes:
    return f"event: {obj['type']}\ndata: {json.dumps(obj)}\n\n".encode()


def a_stream(
    *,
    thinking: str = "",
    text: str = "",
    call: tuple[str, str, str] | None = None,
    stop: str = "end_turn",
    terminal: bool = True,
) -> list[bytes]:
    """An Anthropic Messages stream: a thinking block (signed), a text block, a tool_use
    block whose input arrives in two JSON deltas, the stop reason and usage."""
    usage = {"input_tokens": 50, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 40}
    out = [
        a_event(
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "model": "claude-sonnet-4-5",
                    "stop_reason": None,
                    "usage": {**usage, "output_tokens": 1},
                },
            }
        )
    ]
    index = 0
    if thinking:
        out += [
            a_event(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                }
            ),
            a_event(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "thinking_delta", "thinking": thinking},
                }
            ),
            a_event(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "signature_delta", "signature": "SIG/" + thinking[:8]},
                }
            ),
            a_event({"type": "content_block_stop", "index": index}),
        ]
        index += 1
    if text:
        out += [
            a_event(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                }
            ),
            a_event({"type": "ping"}),
            *[
                a_event(
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": word},
                    }
                )
                for word in re.split(r"(?<= )", text)
            ],
            a_event({"type": "content_block_stop", "index": index}),
        ]
        index += 1
    if call:
        call_id, name, arguments = call
        half = len(arguments) // 2
        out += [
            a_event(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
                }
            ),
            a_event(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": arguments[:half]},
                }
            ),
            a_event(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": arguments[half:]},
                }
            ),
            a_event({"type": "content_block_stop", "index": index}),
        ]
    out.append(
        a_event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop},
                "usage": {"output_tokens": 30},
            }
        )
    )
    if terminal:
        out.append(a_event({"type": "message_stop"}))
    return out


def g_chunk(parts: list[dict[str, Any]], finish: str | None = None) -> bytes:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    usage = {"promptTokenCount": 90, "cachedContentTokenCount": 40}
    if finish:
        usage |= {"candidatesTokenCount": 20, "thoughtsTokenCount": 10}
    chunk = {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "gemini-2.5-pro"}
    return f"data: {json.dumps(chunk)}\r\n\r\n".encode()


def g_stream(
    *,
    thinking: str = "",
    text: str = "",
    call: tuple[str, str, str] | None = None,
    stop: str = "STOP",
    terminal: bool = True,
) -> list[bytes]:
    """A Gemini stream: thought parts, text parts, a function call carrying the thought
    signature, and the finishReason on the last chunk."""
    out = [g_chunk([{"text": thinking, "thought": True}])] if thinking else []
    words = text.split(" ") if text else []
    out += [g_chunk([{"text": w + " "}]) for w in words[:-1]]
    last: list[dict[str, Any]] = [{"text": words[-1]}] if words else []
    if call:
        _, name, arguments = call
        last.append(
            {
                "functionCall": {"name": name, "args": json.loads(arguments)},
                "thoughtSignature": "R1NJRw==",
            }
        )
    out.append(g_chunk(last, stop if terminal else None))
    return out


@dataclass
class Vendor:
    name: str
    module: Any
    info: ModelInfo
    stream: Callable[..., list[bytes]]
    error_body: Callable[[int, str], dict[str, Any]]
    path: str

    def provider(self, url: str, limits: HttpLimits = LIMITS) -> Provider:
        host = Host(self.info, url, limits)
        provider: Provider = self.module.create(self.info.id, host)
        return provider


class Host:
    """What the host gives a provider plugin's create()."""

    def __init__(self, info: ModelInfo, url: str, limits: HttpLimits) -> None:
        self.info = info
        self.url = url
        self.engine = HttpEngine(limits)

    def model_info(self, provider: str, model_id: str) -> ModelInfo:
        assert (provider, model_id) == (self.info.provider, self.info.id)
        return self.info

    def settings(self, provider: str) -> ProviderSettings:
        return ProviderSettings(provider, self.url, KEY)


ANTHROPIC = Vendor(
    "anthropic",
    anthropic,
    ModelInfo(
        "anthropic",
        "claude-sonnet-4-5",
        "anthropic-messages",
        200_000,
        64_000,
        thinking=("low", "medium", "high"),
        cache="explicit",
        pricing=Pricing(3.0, 15.0, 0.3, 3.75),
    ),
    a_stream,
    lambda status, message: {
        "type": "error",
        "error": {
            "type": {429: "rate_limit_error", 400: "invalid_request_error"}.get(
                status, "api_error"
            ),
            "message": message,
        },
    },
    "/v1/messages",
)
GOOGLE = Vendor(
    "google",
    google,
    ModelInfo(
        "google",
        "gemini-2.5-pro",
        "google-gemini",
        1_048_576,
        65_536,
        thinking=("low", "medium", "high"),
        cache="automatic",
        pricing=Pricing(1.25, 10.0, 0.31),
    ),
    g_stream,
    lambda status, message: {
        "error": {
            "code": status,
            "message": message,
            "status": {429: "RESOURCE_EXHAUSTED", 400: "INVALID_ARGUMENT"}.get(status, "INTERNAL"),
        }
    },
    "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
)
VENDORS = pytest.mark.parametrize("vendor", [ANTHROPIC, GOOGLE], ids=lambda v: v.name)


@pytest.fixture
def srv() -> Any:
    with LoopbackServer() as server:
        yield server


def base(vendor: Vendor, srv: LoopbackServer) -> str:
    return srv.url + ("/v1" if vendor is ANTHROPIC else "/v1beta")


def collect(provider: Provider, request: Request | None = None) -> list[StreamEvent]:
    async def main() -> list[StreamEvent]:
        req = request or Request(
            "m", [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
        )
        return [e async for e in provider.stream(req)]

    result: list[StreamEvent] = asyncio.run(asyncio.wait_for(main(), 10))
    ends = [e for e in result if isinstance(e, End)]
    assert len(ends) == 1 and result[-1] is ends[0], result
    assert KEY not in repr(result)
    return result


# -- whole turns through the runtime ------------------------------------------------------


@VENDORS
def test_a_text_turn(vendor: Vendor, srv: LoopbackServer, tmp_path: Path) -> None:
    srv.script([Reply(200, SSE, vendor.stream(text="Hello from the model."))])
    w = World(tmp_path)
    w.converse(vendor.provider(base(vendor, srv)), prompts=["hi"])
    reply = messages(w.session)[-1]
    assert reply["content"] == [{"type": "text", "text": "Hello from the model."}]
    assert reply["stop"] == "success" and reply["provider"] == vendor.name
    assert reply["usage"]["output"] == 30 and reply["usage"]["cache_read"] == 40
    sent = srv.requests[0]
    assert sent.path.startswith(vendor.path)
    assert KEY in (sent.headers.get("x-api-key"), sent.headers.get("x-goog-api-key"))


@VENDORS
def test_a_thinking_turn(vendor: Vendor, srv: LoopbackServer, tmp_path: Path) -> None:
    srv.script([Reply(200, SSE, vendor.stream(thinking="Weighing it up.", text="Done."))])
    w = World(tmp_path)
    w.converse(vendor.provider(base(vendor, srv)), prompts=["think"], thinking="medium")
    reply = messages(w.session)[-1]
    assert [p["type"] for p in reply["content"]] == ["thinking", "text"]
    assert reply["content"][0]["text"] == "Weighing it up."
    deltas = [e["delta"] for e in w.of("message_delta") if e["channel"] == "thinking"]
    assert "".join(deltas) == "Weighing it up."
    body = srv.requests[0].json
    if vendor is ANTHROPIC:
        assert body["thinking"] == {"type": "enabled", "budget_tokens": 10_000}
    else:
        assert body["generationConfig"]["thinkingConfig"]["includeThoughts"] is True


@VENDORS
def test_a_tool_using_turn_pairs_results_and_returns_signatures(
    vendor: Vendor, srv: LoopbackServer, tmp_path: Path
) -> None:
    arguments = json.dumps({"path": "src/app.py"})

    def reply(request: Recorded) -> Reply:
        if len(srv.requests) == 1:
            first = vendor.stream(
                thinking="Read it first.",
                text="Reading.",
                call=("toolu_01A", "read", arguments),
                stop=("tool_use" if vendor is ANTHROPIC else "STOP"),
            )
            return Reply(200, SSE, first)
        return Reply(200, SSE, vendor.stream(text="It returns hello."))

    srv.script(reply)
    w = World(tmp_path)
    w.converse(vendor.provider(base(vendor, srv)), prompts=["what does app do?"], thinking="high")
    recorded = messages(w.session)
    assert [m["role"] for m in recorded] == ["user", "assistant", "tool_result", "assistant"]
    call = recorded[1]["content"][-1]
    assert call["type"] == "tool_call" and call["arguments"] == {"path": "src/app.py"}
    assert recorded[2]["tool_call_id"] == call["id"] and "hello" in json.dumps(recorded[2])
    assert recorded[-1]["content"] == [{"type": "text", "text": "It returns hello."}]
    second = srv.requests[1].json
    if vendor is ANTHROPIC:
        assistant, results = second["messages"][1], second["messages"][2]
        assert assistant["content"][0] == {
            "type": "thinking",
            "thinking": "Read it first.",
            "signature": "SIG/Read it ",
        }
        assert assistant["content"][-1]["id"] == "toolu_01A"
        assert results["content"][0]["tool_use_id"] == "toolu_01A"
        assert "hello" in json.dumps(results["content"][0]["content"])
    else:
        model, results = second["contents"][1], second["contents"][2]
        assert model["role"] == "model"
        assert model["parts"][-1] == {
            "functionCall": {"name": "read", "args": {"path": "src/app.py"}},
            "thoughtSignature": "R1NJRw==",
        }
        response = results["parts"][0]["functionResponse"]
        assert response["name"] == "read" and "hello" in response["response"]["output"]


# -- failure paths ------------------------------------------------------------------------


@VENDORS
def test_429_with_retry_after(vendor: Vendor, srv: LoopbackServer) -> None:
    srv.script([json_reply(429, vendor.error_body(429, "slow down"), {"retry-after": "7"})])
    (end,) = collect(vendor.provider(base(vendor, srv)))
    assert isinstance(end, End)
    assert end.kind == "rate_limit" and end.retryable and end.retry_after == 7
    assert "429" in (end.error or "") and "slow down" in (end.error or "")


@VENDORS
def test_500_then_success(vendor: Vendor, srv: LoopbackServer, tmp_path: Path) -> None:
    srv.script(
        [
            json_reply(500, vendor.error_body(500, "internal")),
            Reply(200, SSE, vendor.stream(text="recovered")),
        ]
    )
    w = World(tmp_path)
    w.converse(vendor.provider(base(vendor, srv)), limits=Limits(retry_delay=0.001))
    assert len(srv.requests) == 2
    assert messages(w.session)[-1]["content"] == [{"type": "text", "text": "recovered"}]
    assert len(w.of("retry")) == 1


@VENDORS
def test_400_is_not_retried(vendor: Vendor, srv: LoopbackServer, tmp_path: Path) -> None:
    srv.script(
        [
            json_reply(400, vendor.error_body(400, "bad field")),
            Reply(200, SSE, vendor.stream(text="never")),
        ]
    )
    w = World(tmp_path)
    w.converse(vendor.provider(base(vendor, srv)), limits=Limits(retry_delay=0.001))
    assert len(srv.requests) == 1
    reply = messages(w.session)[-1]
    assert reply["stop"] == "error" and "bad field" in reply["error"]


@VENDORS
def test_a_stream_missing_its_terminal_event_is_an_error(
    vendor: Vendor, srv: LoopbackServer
) -> None:
    srv.script([Reply(200, SSE, vendor.stream(text="half an answer", terminal=False))])
    events = collect(vendor.provider(base(vendor, srv)))
    assert TextDelta("half ") in events or TextDelta("half") in events
    end = events[-1]
    assert isinstance(end, End) and end.outcome == "error" and "cut off" in (end.error or "")


@VENDORS
def test_a_reset_mid_stream_is_an_error(vendor: Vendor, srv: LoopbackServer) -> None:
    chunks = vendor.stream(text="one two three four")[:3]
    srv.script([Reply(200, SSE, chunks, end="reset")])
    end = collect(vendor.provider(base(vendor, srv)))[-1]
    assert isinstance(end, End) and end.outcome == "error" and end.retryable


@VENDORS
def test_malformed_json_is_an_error(vendor: Vendor, srv: LoopbackServer) -> None:
    srv.script([Reply(200, SSE, [b'data: {"candidates": [oops\n\n'])])
    end = collect(vendor.provider(base(vendor, srv)))[-1]
    assert isinstance(end, End) and end.outcome == "error" and end.kind == "malformed"


@VENDORS
def test_an_error_inside_a_200_stream_is_retried(
    vendor: Vendor, srv: LoopbackServer, tmp_path: Path
) -> None:
    if vendor is ANTHROPIC:
        failing = [
            a_event({"type": "message_start", "message": {"usage": {"input_tokens": 3}}}),
            a_event(
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
            ),
        ]
    else:
        failing = [f"data: {json.dumps(GOOGLE.error_body(500, 'backend error'))}\n\n".encode()]
    srv.script([Reply(200, SSE, failing), Reply(200, SSE, vendor.stream(text="fine now"))])
    w = World(tmp_path)
    w.converse(vendor.provider(base(vendor, srv)), limits=Limits(retry_delay=0.001))
    assert len(srv.requests) == 2
    assert messages(w.session)[-1]["content"] == [{"type": "text", "text": "fine now"}]


@VENDORS
def test_cancel_mid_stream_closes_the_connection(vendor: Vendor, srv: LoopbackServer) -> None:
    stream = vendor.stream(text="first second")
    upto = next(i for i, chunk in enumerate(stream) if b"first" in chunk)
    chunks = [*stream[: upto + 1], UNTIL_CLOSED]
    srv.script([Reply(200, SSE, chunks)])
    provider = vendor.provider(base(vendor, srv))

    async def main() -> list[StreamEvent]:
        seen: list[StreamEvent] = []

        async def consume() -> None:
            async for event in provider.stream(Request("m", [{"role": "user", "content": "hi"}])):
                seen.append(event)
                if isinstance(event, TextDelta):
                    task.cancel()

        task = asyncio.ensure_future(consume())
        with pytest.raises(asyncio.CancelledError):
            await task
        return seen

    seen = asyncio.run(asyncio.wait_for(main(), 10))
    assert TextDelta("first ") in seen
    assert not any(isinstance(e, End) for e in seen)
    assert srv.requests[0].closed.wait(5)


@VENDORS
def test_a_stalled_head_is_a_retryable_timeout(vendor: Vendor, srv: LoopbackServer) -> None:
    srv.script([Reply(stall_head=True)])
    end = collect(vendor.provider(base(vendor, srv), replace(LIMITS, head_timeout=0.3)))[-1]
    assert isinstance(end, End) and end.kind == "timeout" and end.retryable


@VENDORS
def test_a_stalled_body_ends_with_an_error(vendor: Vendor, srv: LoopbackServer) -> None:
    srv.script([Reply(200, SSE, [*vendor.stream(text="one two three")[:2], STALL])])
    events = collect(vendor.provider(base(vendor, srv), replace(LIMITS, chunk_gap=0.3)))
    end = events[-1]
    assert isinstance(end, End) and end.outcome == "error" and end.kind == "timeout"


@VENDORS
def test_an_oversized_request_is_never_sent(vendor: Vendor, srv: LoopbackServer) -> None:
    big = Request("m", [{"role": "user", "content": [{"type": "text", "text": "x" * 5000}]}])
    end = collect(vendor.provider(base(vendor, srv), replace(LIMITS, max_request=4000)), big)[-1]
    assert isinstance(end, End) and end.kind == "too_large" and not end.retryable
    assert srv.requests == []


@VENDORS
def test_an_oversized_response_is_cut_off_as_an_error(vendor: Vendor, srv: LoopbackServer) -> None:
    srv.script([Reply(200, SSE, vendor.stream(text=" ".join(["word"] * 400)))])
    events = collect(vendor.provider(base(vendor, srv), replace(LIMITS, max_response=3000)))
    end = events[-1]
    assert isinstance(end, End) and end.outcome == "error" and end.kind == "too_large"
    assert any(isinstance(e, TextDelta) for e in events)
