"""The openai and openai-compatible providers end to end: a real server on 127.0.0.1
speaking each wire format (streams from tests/fixtures/providers), the host's HTTP
engine, and the runtime. Text, thinking and tool-using turns; every failure path."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from smith.plugins.providers import openai, openai_compatible
from smith.plugins.providers._openai_chat import ChatCompletions
from smith.providers._http import HttpEngine, HttpLimits
from smith.providers._http_provider import HttpProvider
from smith.providers._model import ModelInfo
from smith.providers._stream import End, Request, StreamEvent, TextDelta
from smith.runtime import Limits
from tests.http_kit import (
    SSE,
    STALL,
    UNTIL_CLOSED,
    Gate,
    LoopbackServer,
    Recorded,
    Reply,
    json_reply,
)
from tests.openai_kit import GPT4O, GPT5, PLAIN, fixture, settings
from tests.runtime_kit import World, messages

KEY = "sk-loop-5f4e3d2c1b0a99887766"
LIMITS = HttpLimits(max_request=64 * 1024, max_response=64 * 1024, head_timeout=2.0, chunk_gap=2.0)


def events_of(body: bytes) -> list[bytes]:
    """A recorded body as one chunk per server-sent event, as a server flushes them."""
    return [part + b"\n\n" for part in body.split(b"\n\n") if part]


def chat_chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    obj = {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


CHAT_READ = [
    chat_chunk({"role": "assistant", "content": None}),
    chat_chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_r1",
                    "type": "function",
                    "function": {"name": "read", "arguments": ""},
                }
            ]
        }
    ),
    chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path": "src/'}}]}),
    chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'app.py"}'}}]}),
    chat_chunk({}, "tool_calls"),
    b"data: [DONE]\n\n",
]


@dataclass
class Case:
    """One provider as a server speaks it: the wire, the model, where requests go, and
    the streams of a tool-call turn and of a text turn."""

    name: str
    provider: str
    wire: Callable[[str], Any]
    model: ModelInfo
    path: str
    tool_turn: list[bytes]
    text_turn: list[bytes]
    has_tool_result: Callable[[dict[str, Any]], bool]

    def make(self, srv: LoopbackServer, *, credential: str | None = KEY, **kw: Any) -> HttpProvider:
        base = srv.url + "/v1"
        config = settings(name=self.provider, base_url=base, credential=credential, **kw)
        return HttpProvider(self.provider, self.wire(base), self.model, config, HttpEngine(LIMITS))


def _chat_result(body: dict[str, Any]) -> bool:
    return any(m.get("role") == "tool" for m in body.get("messages", []))


def _responses_result(body: dict[str, Any]) -> bool:
    return any(i.get("type") == "function_call_output" for i in body.get("input", []))


CASES = [
    Case(
        "openai-responses",
        "openai",
        lambda base: openai.Responses(),
        GPT5,
        "/v1/responses",
        events_of(fixture("openai_responses_reasoning_tool.sse")),
        events_of(fixture("openai_responses_text.sse")),
        _responses_result,
    ),
    Case(
        "openai-chat",
        "openai",
        lambda base: ChatCompletions(),
        GPT4O,
        "/v1/chat/completions",
        CHAT_READ,
        events_of(fixture("openai_chat_text.sse")),
        _chat_result,
    ),
    Case(
        "openai-compatible",
        "openai-compatible",
        openai_compatible.wire,
        replace(PLAIN, thinking=("low", "medium", "high")),
        "/v1/chat/completions",
        events_of(fixture("llamacpp_reasoning_tool.sse")),
        events_of(fixture("openai_chat_text.sse")),
        _chat_result,
    ),
]


@pytest.fixture(params=CASES, ids=lambda c: c.name)
def case(request: pytest.FixtureRequest) -> Case:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def srv() -> Any:
    with LoopbackServer() as server:
        yield server


def stream(provider: HttpProvider, *, prompt: str = "hi", **settings_: object) -> list[StreamEvent]:
    request = Request(
        model=provider.model.id,
        messages=[{"role": "user", "content": [{"type": "text", "text": prompt}]}],
        settings=settings_,
    )

    async def main() -> list[StreamEvent]:
        return [e async for e in provider.stream(request)]

    return asyncio.run(asyncio.wait_for(main(), 20))


def only_end(events: list[StreamEvent]) -> End:
    ends = [e for e in events if isinstance(e, End)]
    assert len(ends) == 1 and events[-1] is ends[0], events
    return ends[0]


# -- turns through the runtime ---------------------------------------------------------


def test_a_text_turn(case: Case, srv: LoopbackServer, tmp_path: Path) -> None:
    srv.script([Reply(200, SSE, case.text_turn)])
    w = World(tmp_path)
    w.converse(case.make(srv), prompts=["what does app.py return?"])
    [request] = srv.requests
    assert request.path == case.path and request.headers["authorization"] == f"Bearer {KEY}"
    reply = messages(w.session)[-1]
    assert reply["role"] == "assistant" and reply["stop"] == "success"
    assert "returns" in "".join(p["text"] for p in reply["content"] if p["type"] == "text")
    assert reply["usage"]["output"] is not None
    assert KEY.encode() not in Path(w.path).read_bytes()


def test_a_thinking_and_tool_using_turn(case: Case, srv: LoopbackServer, tmp_path: Path) -> None:
    """The model thinks (where the case does), calls read, gets the file back paired with
    its call id, and answers; a Responses model also gets its encrypted reasoning back."""

    def answer(request: Recorded) -> Reply:
        turn = case.text_turn if case.has_tool_result(request.json) else case.tool_turn
        return Reply(200, SSE, turn)

    srv.script(answer)
    w = World(tmp_path)
    level = "medium" if case.model.thinking else "off"
    w.converse(case.make(srv), prompts=["what does app.py return?"], thinking=level)
    assert len(srv.requests) == 2
    first, second = (r.json for r in srv.requests)
    recorded = messages(w.session)
    call_message = next(m for m in recorded if m["role"] == "assistant")
    assert call_message["stop"] == "tool_use"
    [call] = [p for p in call_message["content"] if p["type"] == "tool_call"]
    assert (call["name"], call["arguments"]) == ("read", {"path": "src/app.py"})
    result = next(m for m in recorded if m["role"] == "tool_result")
    assert "hello" in json.dumps(result["content"])
    if case.name == "openai-responses":
        [part] = [p for p in call_message["content"] if p["type"] == "thinking"]
        assert part["text"].startswith("**Finding the file**") and part["signature"]
        assert first["reasoning"]["effort"] == "medium"
        items = second["input"]
        reasoning = [i for i in items if i["type"] == "reasoning"]
        assert reasoning and reasoning[0]["encrypted_content"].startswith("gAAAA")
        [output] = [i for i in items if i["type"] == "function_call_output"]
        assert output["call_id"] == call["id"] == "call_Zp4Vq7" and "hello" in output["output"]
    else:
        [tool] = [m for m in second["messages"] if m["role"] == "tool"]
        assert tool["tool_call_id"] == call["id"] and "hello" in tool["content"]
    if case.name == "openai-compatible":
        [part] = [p for p in call_message["content"] if p["type"] == "thinking"]
        assert part["text"] == "The user wants app.py; read it first."
        assert first["reasoning_effort"] == "medium"
        assistant = next(m for m in second["messages"] if m["role"] == "assistant")
        assert assistant["reasoning_content"] == part["text"]
    final = recorded[-1]
    assert final["stop"] == "success" and "returns" in json.dumps(final["content"])


def test_500_then_success_is_retried(case: Case, srv: LoopbackServer, tmp_path: Path) -> None:
    srv.script(
        [
            json_reply(500, {"error": {"message": "boom", "type": "server_error"}}),
            Reply(200, SSE, case.text_turn),
        ]
    )
    w = World(tmp_path)
    w.converse(case.make(srv), limits=Limits(retry_delay=0.001))
    assert len(srv.requests) == 2 and len(w.of("retry")) == 1
    assert messages(w.session)[-1]["stop"] == "success"


def test_400_is_not_retried(case: Case, srv: LoopbackServer, tmp_path: Path) -> None:
    srv.script(
        lambda r: json_reply(
            400, {"error": {"message": "bad field", "type": "invalid_request_error"}}
        )
    )
    w = World(tmp_path)
    w.converse(case.make(srv), limits=Limits(retry_delay=0.001))
    assert len(srv.requests) == 1 and not w.of("retry")
    last = messages(w.session)[-1]
    assert last["stop"] == "error" and "HTTP 400" in last["error"] and "bad field" in last["error"]


# -- failure paths, provider level -----------------------------------------------------


def test_429_with_retry_after(case: Case, srv: LoopbackServer) -> None:
    body = {"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}
    srv.script([json_reply(429, body, {"retry-after": "7"})])
    end = only_end(stream(case.make(srv)))
    assert (end.kind, end.retryable, end.retry_after) == ("rate_limit", True, 7.0)


def test_stalled_head(case: Case, srv: LoopbackServer) -> None:
    srv.script([Reply(stall_head=True)])
    provider = case.make(srv)
    provider._engine = HttpEngine(replace(LIMITS, head_timeout=0.3))
    end = only_end(stream(provider))
    assert (end.outcome, end.kind, end.retryable) == ("error", "timeout", True)


def test_stalled_body_after_some_output(case: Case, srv: LoopbackServer) -> None:
    srv.script([Reply(200, SSE, [*case.text_turn[:-3], STALL])])
    provider = case.make(srv)
    provider._engine = HttpEngine(replace(LIMITS, chunk_gap=0.3))
    events = stream(provider)
    assert any(isinstance(e, TextDelta) for e in events)
    assert only_end(events).kind == "timeout"


def test_reset_mid_stream(case: Case, srv: LoopbackServer) -> None:
    srv.script([Reply(200, SSE, case.text_turn[:-3], end="reset")])
    events = stream(case.make(srv))
    end = only_end(events)
    assert end.outcome == "error" and end.retryable


def test_missing_terminal_event(case: Case, srv: LoopbackServer) -> None:
    srv.script([Reply(200, SSE, case.text_turn[:-3])])  # a clean end, but cut short
    end = only_end(stream(case.make(srv)))
    assert (end.outcome, end.kind) == ("error", "malformed")


def test_malformed_json_in_the_stream(case: Case, srv: LoopbackServer) -> None:
    srv.script([Reply(200, SSE, [case.text_turn[0], b"data: {not json\n\n", *case.text_turn[1:]])])
    end = only_end(stream(case.make(srv)))
    assert (end.outcome, end.kind) == ("error", "malformed")


def test_oversized_request_is_refused_before_sending(case: Case, srv: LoopbackServer) -> None:
    end = only_end(stream(case.make(srv), prompt="x" * 70_000))
    assert end.kind == "too_large" and not srv.requests


def test_oversized_response_is_cut_off(case: Case, srv: LoopbackServer) -> None:
    huge = b": " + b"x" * 70_000 + b"\n\n"  # a comment: only its size matters
    srv.script([Reply(200, SSE, [case.text_turn[0], huge, *case.text_turn[1:]])])
    end = only_end(stream(case.make(srv)))
    assert (end.outcome, end.kind, end.retryable) == ("error", "too_large", False)


def test_cancel_mid_stream_closes_the_connection(case: Case, srv: LoopbackServer) -> None:
    srv.script([Reply(200, SSE, [*case.text_turn[:-3], UNTIL_CLOSED])])
    provider = case.make(srv)
    request = Request(model="m", messages=[{"role": "user", "content": "hi"}])

    async def main() -> list[StreamEvent]:
        seen: list[StreamEvent] = []
        first = asyncio.Event()

        async def consume() -> None:
            async for event in provider.stream(request):
                seen.append(event)
                if isinstance(event, TextDelta):
                    first.set()

        task = asyncio.create_task(consume())
        await first.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        closed = await asyncio.to_thread(lambda: srv.requests[0].closed.wait(5))
        assert closed
        return seen

    seen = asyncio.run(asyncio.wait_for(main(), 20))
    assert not any(isinstance(e, End) for e in seen)


def test_a_key_in_an_error_body_never_reaches_the_end(case: Case, srv: LoopbackServer) -> None:
    body = {"error": {"message": f"Incorrect API key provided: {KEY}", "code": "invalid_api_key"}}
    srv.script([json_reply(401, body)])
    end = only_end(stream(case.make(srv)))
    assert end.kind == "auth" and KEY not in (end.error or "")


def test_a_local_server_without_a_key_gets_no_authorization(srv: LoopbackServer) -> None:
    case = CASES[2]
    srv.script([Reply(200, SSE, case.text_turn)])
    assert only_end(stream(case.make(srv, credential=None))).outcome == "success"
    assert "authorization" not in srv.requests[0].headers


def test_thinking_on_a_model_without_it_fails_before_dispatch(srv: LoopbackServer) -> None:
    provider = CASES[2].make(srv)
    provider.model = PLAIN
    end = only_end(stream(provider, thinking="high"))
    assert end.kind == "invalid" and "does not think" in (end.error or "") and not srv.requests


def test_gate_keeps_events_streaming_before_the_body_ends(srv: LoopbackServer) -> None:
    """Deltas reach the consumer while the server still holds the rest of the body."""
    import threading

    go = threading.Event()
    case = CASES[2]
    srv.script([Reply(200, SSE, [*case.text_turn[:3], Gate(go), *case.text_turn[3:]])])
    provider = case.make(srv)
    request = Request(model="m", messages=[{"role": "user", "content": "hi"}])

    async def main() -> list[StreamEvent]:
        seen: list[StreamEvent] = []
        async for event in provider.stream(request):
            seen.append(event)
            if isinstance(event, TextDelta) and not go.is_set():
                assert len(srv.requests[0].sent) <= 3  # the rest was not even sent yet
                go.set()
        return seen

    events = asyncio.run(asyncio.wait_for(main(), 20))
    assert only_end(events).outcome == "success"


def test_the_acceptance_exchange_through_the_runtime(srv: LoopbackServer, tmp_path: Path) -> None:
    """The exchange of /work/shared/acceptance/06-providers minus the CLI: a llama.cpp
    style server, a tool round trip, the key only ever in the Authorization header."""
    secret = "sk-bar-9f8e7d6c5b4a"
    base = {"id": "c1", "object": "chat.completion.chunk", "model": "bar"}

    def answer(request: Recorded) -> Reply:
        def sse(obj: object) -> bytes:
            return b"data: " + json.dumps(obj).encode() + b"\n\n"

        if not _chat_result(request.json):
            call = {
                "index": 0,
                "id": "call_1",
                "type": "function",
                "function": {"name": "read", "arguments": ""},
            }
            chunks = [
                {
                    **base,
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"role": "assistant", "content": None, "tool_calls": [call]},
                        }
                    ],
                },
                {
                    **base,
                    "choices": [
                        {
                            "index": 0,
                            "delta": {
                                "tool_calls": [{"index": 0, "function": {"arguments": '{"pa'}}]
                            },
                        }
                    ],
                },
                {
                    **base,
                    "choices": [
                        {
                            "index": 0,
                            "delta": {
                                "tool_calls": [
                                    {"index": 0, "function": {"arguments": 'th": "src/app.py"}'}}
                                ]
                            },
                        }
                    ],
                },
                {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
                {
                    **base,
                    "choices": [],
                    "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
                },
            ]
        else:
            chunks = [
                {**base, "choices": [{"index": 0, "delta": {"content": w}}]}
                for w in ["It ", "returns ", "hello."]
            ]
            chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        return Reply(200, SSE, [*map(sse, chunks), b"data: [DONE]\n\n"])

    srv.script(answer)
    w = World(tmp_path)
    w.converse(CASES[2].make(srv, credential=secret), prompts=["what does app.py return?"])
    assert len(srv.requests) == 2
    assert all(r.headers["authorization"] == f"Bearer {secret}" for r in srv.requests)
    [tool] = [m for m in srv.requests[1].json["messages"] if m["role"] == "tool"]
    assert tool["tool_call_id"] == "call_1" and "hello" in tool["content"]
    recorded = messages(w.session)
    assert recorded[1]["usage"] == {"input": 50, "output": 10, "cache_read": 0, "cache_write": 0}
    assert recorded[-1]["usage"] is None  # that server sent no usage: unknown, not zero
    assert "".join(p["text"] for p in recorded[-1]["content"]) == "It returns hello."
    assert secret.encode() not in Path(w.path).read_bytes()
