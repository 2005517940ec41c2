"""The anthropic-messages wire format: recorded streams in, smith's stream out; neutral
requests in, Messages API bodies out. Pure: no sockets (see test_provider_loopback.py)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smith.diagnostics import SmithError
from smith.plugins.providers import anthropic
from smith.providers._model import ModelInfo
from smith.providers._sse import SSEEvent
from smith.providers._stream import End, Request, TextDelta, ThinkingDelta, ToolCall, Usage
from tests.vendor_kit import decode, ends, events_of, keys_in, record, settings

SONNET = ModelInfo(
    provider="anthropic",
    id="claude-sonnet-4-5",
    api="anthropic-messages",
    context_window=200_000,
    max_output=64_000,
    input=("text", "image"),
    thinking=("minimal", "low", "medium", "high", "xhigh"),
    cache="explicit",
)
PLAIN = replace(SONNET, id="claude-3-5-haiku", input=("text",), thinking=(), cache="none")
WIRE = anthropic.Messages()
SETTINGS = settings("anthropic", base_url="https://api.anthropic.com/v1")
TOOL = {
    "name": "get_weather",
    "description": "weather of a place",
    "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
}


def build(messages: list[dict[str, object]], model: ModelInfo = SONNET, **kw: object) -> dict:
    system = str(kw.pop("system", "be brief"))
    tools = kw.pop("tools", [TOOL])
    request = Request(model=model.id, messages=messages, system=system, tools=tools, settings=kw)  # type: ignore[arg-type]
    return WIRE.build(request, model, SETTINGS).body


USER = {"role": "user", "content": [{"type": "text", "text": "weather in Paris?"}]}


# -- decoding -----------------------------------------------------------------------------


def test_a_text_stream_with_cache_usage() -> None:
    events = decode(WIRE, SONNET, events_of("anthropic_text.sse"))
    assert events == [
        Usage(input=11, output=None, cache_read=1800, cache_write=0),
        TextDelta("Hello"),
        TextDelta(" there"),
        TextDelta("!"),
        Usage(output=6),
        End("success"),
    ]


def test_thinking_text_and_a_tool_call_with_json_deltas() -> None:
    events = decode(WIRE, SONNET, events_of("anthropic_thinking_tool.sse"))
    assert events == [
        Usage(input=377, cache_read=0, cache_write=2048),
        ThinkingDelta("The user wants the weather in Paris.\n"),
        ThinkingDelta("I should call get_weather."),
        ThinkingDelta(
            "", signature="anthropic:EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
        ),
        TextDelta("I'll check the current weather in Paris for you."),
        ToolCall("toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather", {"location": "Paris"}),
        Usage(output=65),
        End("tool_use"),
    ]


def test_thinking_blocks_go_back_unchanged_with_their_signatures() -> None:
    events = decode(WIRE, SONNET, events_of("anthropic_thinking_tool.sse"))
    message = record(events, "anthropic")
    result = {
        "role": "tool_result",
        "tool_call_id": "toolu_01NRLabsLyVHZPKxbKvkfSMn",
        "tool_name": "get_weather",
        "content": [{"type": "text", "text": "18C"}],
    }
    body = build([USER, message, result], thinking="medium")
    assistant = body["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"] == [
        {
            "type": "thinking",
            "thinking": "The user wants the weather in Paris.\nI should call get_weather.",
            "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
        },
        {"type": "text", "text": "I'll check the current weather in Paris for you."},
        {
            "type": "tool_use",
            "id": "toolu_01NRLabsLyVHZPKxbKvkfSMn",
            "name": "get_weather",
            "input": {"location": "Paris"},
        },
    ]
    results = body["messages"][2]
    assert results["role"] == "user"
    assert results["content"][0]["type"] == "tool_result"
    assert results["content"][0]["tool_use_id"] == "toolu_01NRLabsLyVHZPKxbKvkfSMn"


def test_redacted_thinking_survives_the_runtime_merging_thinking_blocks() -> None:
    events = decode(WIRE, SONNET, events_of("anthropic_redacted.sse"))
    assert events[-1] == End("success")
    assert events[0] == Usage(input=90)  # null cache counts are unknown, not 0
    message = record(events, "anthropic")
    assert [p["type"] for p in message["content"]] == ["thinking", "text"]
    body = build([USER, message, {"role": "user", "content": "go on"}])
    blocks = body["messages"][1]["content"]
    assert blocks[0] == {"type": "thinking", "thinking": "Let me think.", "signature": "SIG-ONE"}
    assert blocks[1]["type"] == "redacted_thinking"
    assert blocks[1]["data"].startswith("EmwKAhgBEgy3va3pzix")
    assert blocks[2] == {"type": "text", "text": "Done."}


def test_malformed_tool_json_is_a_call_with_an_error() -> None:
    events = decode(WIRE, SONNET, events_of("anthropic_tool_invalid_json.sse"))
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert len(calls) == 1
    assert calls[0].arguments is None
    assert calls[0].error is not None and "not valid JSON" in calls[0].error
    assert events[-1] == End("tool_use")


def test_an_overloaded_error_event_ends_the_stream_retryably() -> None:
    events = decode(WIRE, SONNET, events_of("anthropic_overloaded.sse"))
    (end,) = ends(events)
    assert events[-1] is end
    assert end.outcome == "error" and end.retryable and end.kind == "overloaded"
    assert "Overloaded" in (end.error or "")


def test_refusal_is_a_final_error() -> None:
    end = decode(WIRE, SONNET, events_of("anthropic_refusal.sse"))[-1]
    assert isinstance(end, End)
    assert end.outcome == "error" and not end.retryable and "refus" in (end.error or "")


@pytest.mark.parametrize(
    ("reason", "outcome"),
    [
        ("end_turn", "success"),
        ("stop_sequence", "success"),
        ("tool_use", "tool_use"),
        ("max_tokens", "limit"),
        ("pause_turn", "limit"),
    ],
)
def test_stop_reasons(reason: str, outcome: str) -> None:
    decoder = WIRE.decoder(SONNET)
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": reason},
        "usage": {"output_tokens": 3},
    }
    assert decoder.feed("message_delta", json.dumps(delta)) == [Usage(output=3)]
    assert decoder.feed("message_stop", '{"type":"message_stop"}') == [End(outcome)]  # type: ignore[arg-type]


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=4), st.data())
def test_tool_input_split_anywhere_parses_to_the_same_arguments(
    arguments: dict[str, object], data: st.DataObject
) -> None:
    text = json.dumps(arguments)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    start = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}},
    }
    events = [SSEEvent("content_block_start", json.dumps(start))]
    events += [
        SSEEvent(
            "content_block_delta",
            json.dumps(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                }
            ),
        )
        for piece in pieces
    ]
    events.append(SSEEvent("content_block_stop", '{"type":"content_block_stop","index":0}'))
    assert decode(WIRE, SONNET, events, complete=False) == [ToolCall("toolu_1", "f", arguments)]


FULL = events_of("anthropic_thinking_tool.sse")


@given(st.integers(min_value=0, max_value=len(FULL) - 1))
def test_a_stream_cut_anywhere_before_message_stop_is_an_error(cut: int) -> None:
    events = decode(WIRE, SONNET, FULL[:cut])
    (end,) = ends(events)
    assert events[-1] is end
    assert end.outcome == "error" and end.kind == "malformed" and "cut off" in (end.error or "")


def test_nothing_follows_the_end() -> None:
    decoder = WIRE.decoder(SONNET)
    for ev in events_of("anthropic_text.sse"):
        decoder.feed(ev.event, ev.data)
    assert decoder.feed("content_block_delta", '{"type":"content_block_delta"}') == []
    assert decoder.finish() == []


@pytest.mark.parametrize(
    "event",
    [
        SSEEvent("message_start", "{not json"),
        SSEEvent(
            "content_block_delta",
            '{"type":"content_block_delta","index":7,"delta":{"type":"text_delta","text":"x"}}',
        ),
        SSEEvent("message_stop", '{"type":"message_stop"}'),  # no stop reason came
    ],
)
def test_malformed_events_end_the_stream_explicitly(event: SSEEvent) -> None:
    (end,) = decode(WIRE, SONNET, [event], complete=False)
    assert isinstance(end, End) and end.outcome == "error" and end.kind == "malformed"


def test_a_tool_input_given_whole_at_the_start() -> None:
    block = {"type": "tool_use", "id": "toolu_2", "name": "f", "input": {"a": 1}}
    start = {"type": "content_block_start", "index": 0, "content_block": block}
    events = [
        SSEEvent("content_block_start", json.dumps(start)),
        SSEEvent("content_block_stop", '{"type":"content_block_stop","index":0}'),
    ]
    assert decode(WIRE, SONNET, events, complete=False) == [ToolCall("toolu_2", "f", {"a": 1})]


def test_unknown_event_types_are_ignored() -> None:
    decoder = WIRE.decoder(SONNET)
    assert decoder.feed("future_event", '{"type":"future_event","x":1}') == []


# -- errors -------------------------------------------------------------------------------


def _error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> End:
    body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_1"}
    return WIRE.error(status, headers or {}, json.dumps(body).encode())


def test_http_errors_map_to_kinds_and_retry_hints() -> None:
    overloaded = _error(529, "overloaded_error", "Overloaded")
    assert overloaded.retryable and overloaded.kind == "overloaded"
    assert "529" in (overloaded.error or "") and "Overloaded" in (overloaded.error or "")
    limited = _error(429, "rate_limit_error", "slow down", {"Retry-After": "12"})
    assert limited.retryable and limited.kind == "rate_limit" and limited.retry_after == 12
    server = _error(500, "api_error", "Internal server error")
    assert server.retryable and server.kind == "server"
    invalid = _error(400, "invalid_request_error", "max_tokens: too large")
    assert not invalid.retryable and invalid.kind == "invalid"
    missing = _error(404, "not_found_error", "model: claude-nope")
    assert not missing.retryable and missing.kind == "unavailable"
    auth = _error(401, "authentication_error", "invalid x-api-key")
    assert not auth.retryable and auth.kind == "auth"


def test_error_text_is_redacted_and_short() -> None:
    key = "sk-ant-api03-" + "A" * 40
    end = _error(401, "authentication_error", f"bad key {key} " + "x" * 2000)
    assert key not in (end.error or "") and len(end.error or "") < 500
    html = WIRE.error(502, {}, b"<html><body>Bad gateway</body></html>")
    assert html.retryable and html.kind == "server" and "Bad gateway" in (html.error or "")


# -- requests -----------------------------------------------------------------------------


def test_the_request_has_the_messages_api_shape() -> None:
    call = WIRE.build(
        Request(model=SONNET.id, messages=[USER], system="sys", tools=[TOOL]), SONNET, SETTINGS
    )
    assert call.url == "https://api.anthropic.com/v1/messages"
    assert call.headers["x-api-key"] == "test-key-0123456789"
    assert call.headers["anthropic-version"] == "2023-06-01"
    body = call.body
    assert body["model"] == "claude-sonnet-4-5" and body["stream"] is True
    assert body["max_tokens"] == SONNET.max_output  # the model's limit by default
    assert body["tools"][0]["input_schema"] == TOOL["parameters"]
    assert "temperature" not in body and "thinking" not in body


def test_thinking_levels_become_budgets_below_max_tokens() -> None:
    body = build([USER], thinking="medium")
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 10_000}
    assert body["max_tokens"] == SONNET.max_output
    asked = build([USER], thinking="medium", max_tokens=4000)
    assert asked["max_tokens"] == 14_000  # the answer keeps the room asked for
    small = replace(SONNET, max_output=8000)
    tight = build([USER], small, thinking="xhigh", max_tokens=4000)
    assert tight["max_tokens"] == 8000 and tight["thinking"]["budget_tokens"] == 7999
    with pytest.raises(SmithError) as raised:
        build([USER], replace(SONNET, max_output=1000), thinking="low")
    assert raised.value.diagnostic.code == "anthropic.thinking-no-room"


def test_max_tokens_leaves_the_prompt_its_room_in_the_context_window() -> None:
    long = {"role": "user", "content": [{"type": "text", "text": "x" * 450_000}]}
    assert 49_900 < build([long])["max_tokens"] < 50_000  # 450,000 characters: ~150,000 tokens
    image = {
        "role": "user",
        "content": [{"type": "image", "media_type": "image/png", "data": "A" * 900_000}],
    }
    assert build([image])["max_tokens"] == SONNET.max_output  # image data is not text
    full = {"role": "user", "content": [{"type": "text", "text": "x" * 900_000}]}
    assert build([full])["max_tokens"] == anthropic.MIN_ROOM
    assert build([full], thinking="high")["thinking"]["budget_tokens"] == anthropic.MIN_ROOM - 1


def test_thinking_on_a_model_without_thinking_fails_before_dispatch() -> None:
    with pytest.raises(SmithError) as raised:
        build([USER], PLAIN, thinking="high")
    assert raised.value.diagnostic.code == "provider.thinking-unsupported"
    assert "thinking" not in build([USER], PLAIN, thinking="off")


def test_temperature_only_without_thinking() -> None:
    assert build([USER], temperature=0.2)["temperature"] == 0.2
    with pytest.raises(SmithError) as raised:
        build([USER], thinking="low", temperature=0.2)
    assert raised.value.diagnostic.code == "anthropic.thinking-temperature"


def test_extras_merge_last_but_cannot_touch_owned_fields() -> None:
    extra = settings(
        "anthropic", extra={"top_k": 5, "max_tokens": 99, "metadata": {"user_id": "u"}}
    )
    body = WIRE.build(Request(model=SONNET.id, messages=[USER]), SONNET, extra).body
    assert body["top_k"] == 5 and body["max_tokens"] == 99 and body["metadata"] == {"user_id": "u"}
    for owned in ("messages", "model", "stream", "tools", "system"):
        bad = settings("anthropic", extra={owned: []})
        with pytest.raises(SmithError) as raised:
            WIRE.build(Request(model=SONNET.id, messages=[USER]), SONNET, bad)
        assert raised.value.diagnostic.code == "provider.owned-extra-field"


def test_cache_breakpoints_only_for_explicit_caching() -> None:
    body = build(
        [
            USER,
            {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
            {"role": "user", "content": [{"type": "text", "text": "more"}]},
        ]
    )
    assert body["system"] == [
        {"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in json.dumps(body["messages"][:-1])
    no_system = build([USER], system="")
    assert no_system["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in json.dumps(build([USER], replace(SONNET, cache="automatic")))


def test_tool_results_lead_one_user_message_with_paired_ids() -> None:
    call = {
        "role": "assistant",
        "content": [
            {"type": "tool_call", "id": "call.1/a", "name": "read", "arguments": {"path": "a"}},
            {"type": "tool_call", "id": "call_2", "name": "read", "arguments": {"path": "b"}},
        ],
    }
    results = [
        {
            "role": "tool_result",
            "tool_call_id": "call.1/a",
            "tool_name": "read",
            "content": [{"type": "text", "text": "A"}],
            "is_error": False,
        },
        {
            "role": "tool_result",
            "tool_call_id": "call_2",
            "tool_name": "read",
            "content": [{"type": "text", "text": "no such file"}],
            "is_error": True,
        },
        {"role": "user", "content": [{"type": "text", "text": "and then?"}]},
    ]
    body = build([USER, call, *results])
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    uses = body["messages"][1]["content"]
    blocks = body["messages"][2]["content"]
    assert [b["type"] for b in blocks] == ["tool_result", "tool_result", "text"]
    assert (
        [b["tool_use_id"] for b in blocks[:2]] == [u["id"] for u in uses] == ["call_1_a", "call_2"]
    )
    assert "is_error" not in blocks[0] and blocks[1]["is_error"] is True


def test_foreign_and_unsigned_thinking_is_left_out() -> None:
    message = {
        "role": "assistant",
        "provider": "google",
        "content": [
            {"type": "thinking", "text": "gemini thought", "signature": 'google:{"thought":"x"}'},
            {"type": "thinking", "text": "cut short"},
            {"type": "text", "text": "answer"},
        ],
    }
    body = build([USER, message, {"role": "user", "content": "next"}])
    assert body["messages"][1]["content"] == [{"type": "text", "text": "answer"}]


def test_empty_assistant_messages_are_left_out() -> None:
    failed = {"role": "assistant", "content": [{"type": "text", "text": " \n"}], "stop": "error"}
    body = build([USER, failed, {"role": "user", "content": "again"}])
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert [b["text"] for b in body["messages"][0]["content"]] == ["weather in Paris?", "again"]


def test_no_key_fails_before_dispatch() -> None:
    with pytest.raises(SmithError) as raised:
        WIRE.build(
            Request(model=SONNET.id, messages=[USER]),
            SONNET,
            settings("anthropic", credential=None),
        )
    assert raised.value.diagnostic.code == "anthropic.no-key"
    assert "ANTHROPIC_API_KEY" in raised.value.diagnostic.fix


IMAGE = {
    "role": "user",
    "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "image", "media_type": "image/png", "data": "iVBORw0KGgo="},
    ],
}


def test_images_only_for_a_model_that_takes_them() -> None:
    seen = build([IMAGE], replace(SONNET, cache="none"))["messages"][0]["content"][1]
    assert seen == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }
    blind = build([IMAGE], PLAIN)["messages"][0]["content"][1]
    assert blind["type"] == "text" and "image" in blind["text"]


def test_no_body_carries_an_unadvertised_capability() -> None:
    bare = replace(PLAIN, tools=False)
    thinking = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "text": "t", "signature": "anthropic:S"},
            {"type": "text", "text": "x"},
        ],
    }
    body = build([IMAGE, thinking, USER], bare, thinking="off")
    keys = keys_in(body)
    assert not keys & {"tools", "cache_control", "strict", "temperature"}
    assert "thinking" not in body and "budget_tokens" not in keys
    assert '"type": "image"' not in json.dumps(body)
