"""The Chat Completions wire format (OpenAI, llama.cpp, Ollama, vLLM), without I/O:
recorded streams in, normalized events out; requests built from neutral messages."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smith.diagnostics import SmithError
from smith.plugins.providers import openai, openai_compatible
from smith.plugins.providers._openai_chat import ChatCompletions
from smith.providers._stream import End, Request, TextDelta, ThinkingDelta, ToolCall, Usage
from tests.openai_kit import (
    GPT4O,
    PLAIN,
    calls,
    decode,
    end,
    fixture,
    settings,
    text,
    thinking,
    usages,
)

OPENAI = ChatCompletions()
COMPAT = openai_compatible.wire("http://127.0.0.1:8080/v1")


def chunk(delta: dict[str, object], finish: str | None = None, **extra: object) -> bytes:
    obj = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
    obj["choices"][0]["finish_reason"] = finish  # type: ignore[index]
    return b"data: " + json.dumps({**obj, **extra}).encode() + b"\n\n"


DONE = b"data: [DONE]\n\n"


# -- streams ---------------------------------------------------------------------------


def test_openai_text_stream_with_the_usage_only_final_chunk() -> None:
    events = decode(OPENAI, GPT4O, fixture("openai_chat_text.sse"))
    assert text(events) == 'It returns "hello".'
    # prompt_tokens includes the cached ones; smith's input is the uncached rest.
    assert usages(events) == [Usage(input=210, output=5, cache_read=1024, cache_write=0)]
    assert end(events) == End("success")


def test_parallel_tool_calls_accumulate_by_index_and_parse_once() -> None:
    events = decode(OPENAI, GPT4O, fixture("openai_chat_parallel_tools.sse"))
    assert calls(events) == [
        ToolCall("call_7Qf1", "read", {"path": "a.py"}),
        ToolCall("call_8Rg2", "grep", {"pattern": "TODO"}),
    ]
    assert end(events) == End("tool_use")
    assert events.index(calls(events)[1]) < events.index(usages(events)[0])


def test_llamacpp_reasoning_content_tool_call_and_final_usage_frame() -> None:
    events = decode(COMPAT, PLAIN, fixture("llamacpp_reasoning_tool.sse"))
    assert thinking(events) == "The user wants app.py; read it first."
    assert all(isinstance(e, ThinkingDelta) for e in events[:3])
    assert calls(events) == [ToolCall("Xh1sT9bQ2w", "read", {"path": "src/app.py"})]
    assert usages(events) == [Usage(input=30, output=25, cache_read=20, cache_write=0)]
    assert end(events) == End("tool_use")


def test_llamacpp_timings_stand_in_for_usage_and_a_missing_done_is_tolerated() -> None:
    """An older llama.cpp build: counts only in `timings`, and no [DONE]; the body ended
    cleanly after the finish reason, so the finish reason decides."""
    events = decode(COMPAT, PLAIN, fixture("llamacpp_timings_no_done.sse"))
    assert text(events) == "Hello there"
    assert usages(events) == [Usage(input=12, output=2, cache_read=0, cache_write=0)]
    assert end(events) == End("success")


def test_ollama_reasoning_field_and_whole_tool_calls_without_an_index() -> None:
    events = decode(COMPAT, PLAIN, fixture("ollama_reasoning_tools.sse"))
    assert thinking(events) == "Need both files."
    assert calls(events) == [
        ToolCall("call_a1", "read", {"path": "a.py"}),
        ToolCall("call_b2", "read", {"path": "b.py"}),
    ]
    assert usages(events) == [Usage(input=300, output=44, cache_read=0, cache_write=0)]
    assert end(events) == End("tool_use")


def test_a_server_that_omits_usage_leaves_usage_unknown() -> None:
    events = decode(COMPAT, PLAIN, fixture("vllm_no_usage.sse"))
    assert [type(e) for e in events] == [ThinkingDelta, TextDelta, End]
    assert usages(events) == []  # unknown, never a Usage of zeros
    assert end(events) == End("success")


def test_usage_the_server_does_not_break_down_is_unknown_on_a_cached_model() -> None:
    body = chunk({"content": "x"}, "stop") + chunk({}, usage={"prompt_tokens": 7}) + DONE
    body = body.replace(b'"choices": [{"index": 0, "delta": {}, "finish_reason": null}], ', b"")
    [usage] = usages(decode(OPENAI, replace(GPT4O, cache="explicit"), body))
    assert usage == Usage(input=7, output=None, cache_read=None, cache_write=None)


@pytest.mark.parametrize(
    ("reason", "outcome"),
    [("stop", "success"), ("length", "limit"), ("content_filter", "error"), ("eos", "success")],
)
def test_finish_reasons_map_to_outcomes(reason: str, outcome: str) -> None:
    events = decode(COMPAT, PLAIN, chunk({"content": "hi"}) + chunk({}, reason) + DONE)
    assert end(events).outcome == outcome


def test_tool_calls_with_finish_reason_stop_are_still_tool_use() -> None:
    body = (
        chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "ls"}}]})
        + chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}, "stop")
        + DONE
    )
    events = decode(COMPAT, PLAIN, body)
    assert calls(events) == [ToolCall("c1", "ls", {})]
    assert end(events) == End("tool_use")


def test_finish_reason_tool_calls_without_a_call_is_an_error() -> None:
    events = decode(COMPAT, PLAIN, chunk({}, "tool_calls") + DONE)
    assert end(events).outcome == "error" and end(events).kind == "malformed"


@pytest.mark.parametrize(
    ("raw", "why"),
    [('{"path": "a.py"', "not valid JSON"), ("[1, 2]", "not an object"), ('"x"', "not an object")],
)
def test_malformed_arguments_are_an_explicit_tool_call_error(raw: str, why: str) -> None:
    body = (
        chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "read"}}]})
        + chunk({"tool_calls": [{"index": 0, "function": {"arguments": raw}}]})
        + chunk({}, "tool_calls")
        + DONE
    )
    [call] = calls(decode(OPENAI, GPT4O, body))
    assert call.id == "c1" and call.name == "read" and call.arguments is None
    assert call.error is not None and why in call.error


@given(
    arguments=st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.one_of(st.integers(), st.text(max_size=12), st.booleans(), st.none()),
        max_size=4,
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=8),
)
def test_arguments_split_anywhere_parse_to_the_same_object(
    arguments: dict[str, object], cuts: list[int]
) -> None:
    raw = json.dumps(arguments)
    points = sorted({c % (len(raw) + 1) for c in cuts} | {0, len(raw)})
    pieces = [raw[a:b] for a, b in itertools.pairwise(points)]
    body = chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f"}}]})
    for piece in pieces:
        body += chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
    body += chunk({}, "tool_calls") + DONE
    assert calls(decode(OPENAI, GPT4O, body)) == [ToolCall("c1", "f", arguments)]


@pytest.mark.parametrize(
    ("error", "kind", "retryable"),
    [
        ({"error": {"message": "The server had an error", "type": "server_error"}}, "server", True),
        (
            {"error": {"code": 500, "message": "llama.cpp: decode failed", "type": "server_error"}},
            "server",
            True,
        ),
        (
            {"object": "error", "message": "bad", "type": "BadRequestError", "code": 400},
            "invalid",
            False,
        ),
        (
            {"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}},
            "rate_limit",
            True,
        ),
        ({"error": "model is overloaded"}, "server", True),
    ],
)
def test_an_error_object_inside_the_stream_ends_it(
    error: dict[str, object], kind: str, retryable: bool
) -> None:
    body = chunk({"content": "partial"}) + b"data: " + json.dumps(error).encode() + b"\n\n"
    events = decode(COMPAT, PLAIN, body + chunk({"content": "after"}, "stop") + DONE)
    assert text(events) == "partial"  # nothing after the error
    last = end(events)
    assert (last.outcome, last.kind, last.retryable) == ("error", kind, retryable)
    assert last.error is not None and "in the stream" in last.error


def test_done_without_a_finish_reason_is_an_error() -> None:
    events = decode(COMPAT, PLAIN, chunk({"content": "half"}) + DONE)
    assert end(events).outcome == "error" and end(events).kind == "malformed"


def test_a_body_cut_off_before_the_finish_reason_is_an_error_not_success() -> None:
    body = fixture("openai_chat_parallel_tools.sse")
    cut = body.index(b'"finish_reason":"tool_calls"')
    body = body[: body.rindex(b"data:", 0, cut)]
    events = decode(OPENAI, GPT4O, body)
    assert calls(events) == []  # half-accumulated calls are never delivered
    last = end(events)
    assert last.outcome == "error" and last.retryable and "incomplete" in (last.error or "")


def test_an_event_that_is_not_json_is_malformed() -> None:
    events = decode(COMPAT, PLAIN, chunk({"content": "a"}) + b"data: {nope\n\n" + DONE)
    assert end(events).kind == "malformed"


def test_nothing_is_emitted_after_the_end() -> None:
    decoder = COMPAT.decoder(PLAIN)
    decoder.feed(
        "message", json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    )
    assert decoder.feed("message", "[DONE]") == [End("success")]
    assert (
        decoder.feed("message", json.dumps({"choices": [{"index": 0, "delta": {"content": "x"}}]}))
        == []
    )
    assert decoder.feed("message", "[DONE]") == []
    assert decoder.finish() == []


def test_other_choices_and_comments_are_ignored() -> None:
    other = b'data: {"choices": [{"index": 1, "delta": {"content": "B"}}]}\n\n'
    body = b": keep-alive\n\n" + chunk({"content": "A"}) + other + chunk({}, "stop") + DONE
    assert text(decode(OPENAI, GPT4O, body)) == "A"


# -- HTTP errors -----------------------------------------------------------------------


def _error(status: int, body: object, headers: dict[str, str] | None = None) -> End:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return OPENAI.error(status, headers or {}, raw)


def test_429_with_retry_after_is_a_retryable_rate_limit() -> None:
    body = {
        "error": {
            "message": "Rate limit reached for gpt-4o",
            "type": "requests",
            "code": "rate_limit_exceeded",
        }
    }
    last = _error(429, body, {"Retry-After": "3"})
    assert (last.outcome, last.kind, last.retryable, last.retry_after) == (
        "error",
        "rate_limit",
        True,
        3.0,
    )
    assert "HTTP 429" in (last.error or "") and "Rate limit reached" in (last.error or "")
    assert _error(429, body, {"retry-after-ms": "1500", "retry-after": "9"}).retry_after == 1.5


def test_exhausted_quota_is_a_rate_limit_that_waiting_does_not_fix() -> None:
    body = {
        "error": {
            "message": "You exceeded your current quota",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        }
    }
    last = _error(429, body)
    assert (last.kind, last.retryable) == ("rate_limit", False)


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (400, "invalid", False),
        (401, "auth", False),
        (403, "auth", False),
        (404, "unavailable", False),
        (408, "timeout", True),
        (409, "server", True),
        (413, "too_large", False),
        (500, "server", True),
        (502, "server", True),
        (503, "overloaded", True),
    ],
)
def test_statuses_map_to_kinds_and_retryability(status: int, kind: str, retryable: bool) -> None:
    last = _error(status, {"error": {"message": "nope", "type": "server_error"}})
    assert (last.outcome, last.kind, last.retryable) == ("error", kind, retryable)


def test_400_is_never_retryable_whatever_the_body_says() -> None:
    assert not _error(400, {"error": {"message": "x", "type": "server_error"}}).retryable


def test_an_error_excerpt_is_redacted_and_short() -> None:
    key = "sk-proj-abcdefghijklmnop0123456789"
    body = {
        "error": {
            "message": f"Incorrect API key provided: {key}. " + "x" * 1000,
            "code": "invalid_api_key",
        }
    }
    last = _error(401, body)
    assert key not in (last.error or "") and "sk-" in (last.error or "")
    assert len(last.error or "") < 400


def test_error_bodies_of_other_servers_are_understood() -> None:
    ollama = COMPAT.error(404, {}, b'{"error":"model \\"bar\\" not found, try pulling it first"}')
    assert ollama.kind == "unavailable" and "not found" in (ollama.error or "")
    assert "127.0.0.1:8080" in (ollama.error or "")
    html = COMPAT.error(502, {}, b"<html><body>Bad Gateway</body></html>")
    assert html.retryable and "Bad Gateway" in (html.error or "")


# -- requests --------------------------------------------------------------------------

CONVERSATION: list[dict[str, object]] = [
    {"role": "user", "content": [{"type": "text", "text": "what does app.py return?"}]},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "text": "Read it."},
            {"type": "text", "text": "Reading."},
            {
                "type": "tool_call",
                "id": "call_1",
                "name": "read",
                "arguments": {"path": "src/app.py"},
            },
        ],
    },
    {
        "role": "tool_result",
        "tool_call_id": "call_1",
        "tool_name": "read",
        "content": [{"type": "text", "text": "return 'hello'"}],
        "is_error": False,
    },
]
TOOLS: list[dict[str, object]] = [
    {
        "name": "read",
        "description": "Read a file",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    }
]


def _request(**settings_: object) -> Request:
    return Request(
        model="x", messages=CONVERSATION, system="Be brief.", tools=TOOLS, settings=settings_
    )


def test_messages_pair_tool_results_with_their_calls() -> None:
    call = OPENAI.build(_request(), GPT4O, settings())
    assert call.url == "https://api.openai.com/v1/chat/completions"
    assert call.body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "what does app.py return?"},
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path": "src/app.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "return 'hello'"},
    ]
    assert call.body["stream"] is True and call.body["stream_options"] == {"include_usage": True}
    assert call.body["tools"] == [{"type": "function", "function": {**TOOLS[0]}}]


def test_sampling_defaults_then_request_then_extras() -> None:
    body = OPENAI.build(_request(), GPT4O, settings()).body
    assert body["max_completion_tokens"] == 16384 and "temperature" not in body
    body = OPENAI.build(_request(temperature=0.2, max_tokens=100), GPT4O, settings()).body
    assert (body["temperature"], body["max_completion_tokens"]) == (0.2, 100)
    extra = {"temperature": 0.9, "top_p": 0.5, "stream_options": {"include_usage": False}}
    body = OPENAI.build(_request(temperature=0.2), GPT4O, settings(extra=extra)).body
    assert (body["temperature"], body["top_p"], body["stream_options"]) == (
        0.9,
        0.5,
        {"include_usage": False},
    )
    assert COMPAT.build(_request(), PLAIN, settings()).body["max_tokens"] == 4096


@pytest.mark.parametrize("owned", ["model", "messages", "tools", "tool_choice", "stream"])
def test_an_extra_naming_an_owned_field_fails_before_dispatch(owned: str) -> None:
    with pytest.raises(SmithError) as caught:
        COMPAT.build(_request(), PLAIN, settings(name="local", extra={owned: 1, "top_k": 3}))
    d = caught.value.diagnostic
    assert d.code == "provider.owned-extra-field" and owned in d.what and "local" in d.what


def test_thinking_on_a_model_without_thinking_fails_before_dispatch() -> None:
    with pytest.raises(SmithError) as caught:
        COMPAT.build(_request(thinking="high"), PLAIN, settings())
    d = caught.value.diagnostic
    assert d.code == "provider.thinking-unsupported" and "openai-compatible/bar" in d.what
    assert "reasoning_effort" not in COMPAT.build(_request(thinking="off"), PLAIN, settings()).body


def test_reasoning_effort_follows_the_advertised_levels() -> None:
    thinker = replace(PLAIN, thinking=("low", "medium", "high"))
    assert (
        COMPAT.build(_request(thinking="medium"), thinker, settings()).body["reasoning_effort"]
        == "medium"
    )
    assert (
        COMPAT.build(_request(thinking="xhigh"), thinker, settings()).body["reasoning_effort"]
        == "high"
    )
    assert (
        COMPAT.build(_request(thinking="minimal"), thinker, settings()).body["reasoning_effort"]
        == "low"
    )
    # OpenAI-style reasoning models cannot stop reasoning: off is the lowest level.
    assert (
        COMPAT.build(_request(thinking="off"), thinker, settings()).body["reasoning_effort"]
        == "low"
    )


def test_reasoning_goes_back_only_to_a_compatible_server_model_that_thinks() -> None:
    thinker = replace(PLAIN, thinking=("low", "high"))
    assistant = COMPAT.build(_request(), thinker, settings()).body["messages"][2]  # type: ignore[index]
    assert assistant["reasoning_content"] == "Read it."
    assert (
        "reasoning_content" not in COMPAT.build(_request(), PLAIN, settings()).body["messages"][2]
    )  # type: ignore[index]
    openai_thinker = replace(GPT4O, thinking=("low",))
    assert (
        "reasoning_content"
        not in OPENAI.build(_request(), openai_thinker, settings()).body["messages"][2]
    )  # type: ignore[index]


def test_the_key_is_a_bearer_token_and_no_key_sends_no_authorization() -> None:
    call = COMPAT.build(_request(), PLAIN, settings(credential="sk-bar-9f8e7d6c5b4a"))
    assert call.headers["authorization"] == "Bearer sk-bar-9f8e7d6c5b4a"
    call = COMPAT.build(_request(), PLAIN, settings(credential=None, headers={"x-team": "a"}))
    assert not any(k.lower() == "authorization" for k in call.headers)
    assert call.headers["accept"] == "text/event-stream"


def test_strict_tools_only_for_strict_models_with_strict_schemas() -> None:
    strict_schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
        "additionalProperties": False,
    }
    tools = [{"name": "read", "description": "", "parameters": strict_schema}]
    request = Request(model="x", messages=CONVERSATION, tools=tools)
    assert OPENAI.build(request, GPT4O, settings()).body["tools"][0]["function"]["strict"] is True  # type: ignore[index]
    loose = OPENAI.build(_request(), GPT4O, settings()).body["tools"][0]["function"]  # type: ignore[index]
    assert "strict" not in loose  # optional properties: strict mode would reject the schema
    assert "strict" not in COMPAT.build(request, PLAIN, settings()).body["tools"][0]["function"]  # type: ignore[index]


def test_images_go_only_to_models_that_take_them() -> None:
    image = {"type": "image", "media_type": "image/png", "data": "iVBORw0KGgo="}
    message = {"role": "user", "content": [{"type": "text", "text": "what is this?"}, image]}
    request = Request(model="x", messages=[message])
    content = OPENAI.build(request, GPT4O, settings()).body["messages"][0]["content"]  # type: ignore[index]
    assert content[1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
    }
    content = COMPAT.build(request, PLAIN, settings()).body["messages"][0]["content"]  # type: ignore[index]
    assert [p["type"] for p in content] == ["text", "text"] and "image input" in content[1]["text"]


def test_a_model_without_tool_use_gets_no_tools() -> None:
    assert "tools" not in COMPAT.build(_request(), replace(PLAIN, tools=False), settings()).body


def test_the_openai_plugin_picks_the_wire_format_by_api() -> None:
    chat = openai.wire_for(GPT4O)
    assert isinstance(chat, ChatCompletions) and chat.max_tokens_field == "max_completion_tokens"
    assert openai.wire_for(replace(GPT4O, api="openai-responses")).api == "openai-responses"
    assert openai.CREDENTIAL_ENV == ("OPENAI_API_KEY",)
    # a local server gets only the key configured for it, never OpenAI's
    assert openai_compatible.CREDENTIAL_ENV == ()


# -- capabilities ----------------------------------------------------------------------


def _keys_and_types(value: object) -> tuple[set[str], set[str], list[object]]:
    """Every key, every "type" value and every "strict" value anywhere in a body."""
    keys: set[str] = set()
    types: set[str] = set()
    stricts: list[object] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            keys |= set(item)
            if isinstance(item.get("type"), str):
                types.add(item["type"])
            if "strict" in item:
                stricts.append(item["strict"])
            stack += item.values()
        elif isinstance(item, list):
            stack += item
    return keys, types, stricts


def test_no_request_body_contains_an_unadvertised_capability() -> None:
    """A model that advertises nothing optional (no thinking, text only, no strict tools)
    gets no reasoning control, no reasoning replay, no images and no strict mode, from
    every OpenAI-style wire format, whatever the conversation holds."""
    from smith.plugins.providers.openai import SIGNATURE_TAG, Responses

    closed = {
        "type": "object",
        "properties": {"p": {"type": "string"}},
        "required": ["p"],
        "additionalProperties": False,
    }
    signature = json.dumps(
        {SIGNATURE_TAG: "bar", "items": [{"summary": [], "encrypted_content": "e"}]}
    )
    messages: list[dict[str, object]] = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "hi"},
                {"type": "image", "data": "AAAA", "media_type": "image/png"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "text": "hmm", "signature": signature},
                {"type": "tool_call", "id": "c1", "name": "t", "arguments": {"p": "x"}},
            ],
        },
        {
            "role": "tool_result",
            "tool_call_id": "c1",
            "tool_name": "t",
            "content": [{"type": "text", "text": "ok"}],
        },
    ]
    request = Request(
        model="bar",
        messages=messages,
        tools=[{"name": "t", "description": "", "parameters": closed}],
    )
    for wire, model in [
        (COMPAT, PLAIN),
        (OPENAI, replace(PLAIN, provider="openai")),
        (Responses(), replace(PLAIN, provider="openai", api="openai-responses")),
    ]:
        body = wire.build(request, model, settings()).body
        keys, types, stricts = _keys_and_types(body)
        assert not keys & {"reasoning", "reasoning_effort", "include", "reasoning_content"}, wire
        assert not types & {"image_url", "input_image", "reasoning"}, wire
        assert all(s is False for s in stricts), wire  # Responses says false: strict is its default
        bare = wire.build(request, replace(model, tools=False), settings()).body
        assert "tools" not in bare


def test_a_null_error_field_in_a_chunk_is_not_an_error() -> None:
    body = chunk({"content": "ok"}, error=None) + chunk({}, "stop") + DONE
    events = decode(COMPAT, PLAIN, body)
    assert text(events) == "ok" and end(events) == End("success")


def test_retry_after_as_an_http_date_or_garbage() -> None:
    from email.utils import parsedate_to_datetime

    from smith.providers._wire import retry_after

    date = "Wed, 21 Oct 2015 07:28:00 GMT"
    now = parsedate_to_datetime(date).timestamp() - 30
    assert retry_after({"Retry-After": date}, now=now) == 30.0
    assert retry_after({"Retry-After": "soon"}) is None
    assert retry_after({"retry-after": "-1"}) is None
    assert retry_after({}) is None


def test_a_temperature_for_an_openai_reasoning_model_fails_but_a_local_one_takes_it() -> None:
    thinker = replace(GPT4O, id="o4-mini", thinking=("low", "medium", "high"))
    with pytest.raises(SmithError) as caught:
        OPENAI.build(_request(temperature=0.2), thinker, settings())
    assert caught.value.diagnostic.code == "openai.reasoning-temperature"
    local = replace(PLAIN, thinking=("low", "high"))
    assert COMPAT.build(_request(temperature=0.2), local, settings()).body["temperature"] == 0.2


def test_calls_a_server_sent_without_ids_get_ids_unique_across_responses() -> None:
    """Some servers send tool calls with no id. The ids smith gives them must not repeat
    from one response to the next: results are paired with calls by id, so a second
    turn's call_1 would take (or hide) the first turn's result."""
    body = (
        chunk({"tool_calls": [{"index": 0, "function": {"name": "ls", "arguments": "{}"}}]})
        + chunk({"tool_calls": [{"index": 1, "function": {"name": "ls", "arguments": "{}"}}]})
        + chunk({}, "tool_calls")
        + DONE
    )
    ids = [c.id for _ in range(2) for c in calls(decode(COMPAT, PLAIN, body))]
    assert len(ids) == 4 and all(ids) and len(set(ids)) == 4, ids
