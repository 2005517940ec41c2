"""OpenAI's Responses API wire format, without I/O: recorded streams in (reasoning
summaries, encrypted reasoning, function calls, failures), normalized events out; the
input items built from neutral messages, encrypted reasoning carried back."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smith.diagnostics import SmithError
from smith.plugins.providers.openai import Responses
from smith.providers._stream import End, Request, ThinkingDelta, ToolCall, Usage
from tests.openai_kit import (
    GPT5,
    GPT41,
    calls,
    decode,
    end,
    fixture,
    settings,
    text,
    thinking,
    usages,
)

WIRE = Responses()
SUMMARY = "**Finding the file**\n\nThe user asks about app.py.\n\n**Reading it**\n\nI will read it."
ENCRYPTED = "gAAAAABoqL1xEXAMPLE-encrypted_reasoning_0123456789abcdef_ghijklmnopqrstuvwxyz=="


def ev(obj: dict[str, object]) -> bytes:
    return f"event: {obj['type']}\ndata: {json.dumps(obj)}\n\n".encode()


def completed(**response: object) -> bytes:
    return ev({"type": "response.completed", "response": {"status": "completed", **response}})


# -- streams ---------------------------------------------------------------------------


def test_a_text_response() -> None:
    events = decode(WIRE, GPT41, fixture("openai_responses_text.sse"))
    assert text(events) == "It returns hello."
    assert usages(events) == [Usage(input=52, output=6, cache_read=2048, cache_write=0)]
    assert end(events) == End("success")


def test_reasoning_summaries_stream_as_thinking_and_the_call_follows() -> None:
    events = decode(WIRE, GPT5, fixture("openai_responses_reasoning_tool.sse"))
    assert thinking(events) == SUMMARY
    signed = [e for e in events if isinstance(e, ThinkingDelta) and e.signature]
    assert len(signed) == 1 and events.index(signed[0]) < events.index(calls(events)[0])
    assert json.loads(signed[0].signature or "") == {
        "openai-reasoning": "gpt-5",
        "items": [
            {
                "summary": [
                    {
                        "type": "summary_text",
                        "text": "**Finding the file**\n\nThe user asks about app.py.",
                    },
                    {"type": "summary_text", "text": "**Reading it**\n\nI will read it."},
                ],
                "encrypted_content": ENCRYPTED,
            }
        ],
    }
    assert calls(events) == [ToolCall("call_Zp4Vq7", "read", {"path": "src/app.py"})]
    assert usages(events) == [Usage(input=512, output=210, cache_read=0, cache_write=0)]
    assert end(events) == End("tool_use")


@given(st.lists(st.integers(min_value=0, max_value=8000), max_size=12))
def test_the_same_events_however_the_body_is_split(cuts: list[int]) -> None:
    body = fixture("openai_responses_reasoning_tool.sse")
    whole = decode(WIRE, GPT5, body)
    assert decode(WIRE, GPT5, body, chunks=[c % len(body) for c in cuts]) == whole


def test_consecutive_reasoning_items_are_one_part_with_one_signature_for_all() -> None:
    body = b""
    for index, (summary, secret) in enumerate([("First.", "enc-1"), ("Second.", "enc-2")]):
        body += ev(
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {"type": "reasoning"},
            }
        )
        body += ev(
            {
                "type": "response.reasoning_summary_text.delta",
                "output_index": index,
                "summary_index": 0,
                "delta": summary,
            }
        )
        item = {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": summary}],
            "encrypted_content": secret,
        }
        body += ev({"type": "response.output_item.done", "output_index": index, "item": item})
    body += (
        ev({"type": "response.output_text.delta", "output_index": 2, "delta": "Done."})
        + completed()
    )
    events = decode(WIRE, GPT5, body)
    assert thinking(events) == "First.\n\nSecond."
    last = [e for e in events if isinstance(e, ThinkingDelta) and e.signature][-1]
    assert [i["encrypted_content"] for i in json.loads(last.signature or "")["items"]] == [
        "enc-1",
        "enc-2",
    ]


def test_items_whose_text_did_not_stream_are_taken_from_the_done_item() -> None:
    reasoning = {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Quick."}]}
    message = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Hi."}],
    }
    body = (
        ev({"type": "response.output_item.done", "output_index": 0, "item": reasoning})
        + ev({"type": "response.output_item.done", "output_index": 1, "item": message})
        + completed()
    )
    events = decode(WIRE, GPT5, body)
    assert (thinking(events), text(events)) == ("Quick.", "Hi.")
    assert not any(isinstance(e, ThinkingDelta) and e.signature for e in events)  # none to carry


def test_malformed_function_arguments_are_an_explicit_error() -> None:
    item = {"type": "function_call", "call_id": "call_9", "name": "read", "arguments": '{"path": '}
    body = ev({"type": "response.output_item.done", "output_index": 0, "item": item}) + completed()
    [call] = calls(decode(WIRE, GPT5, body))
    assert call.arguments is None and call.error and "not valid JSON" in call.error


def test_arguments_from_deltas_when_the_done_item_lacks_them() -> None:
    added = {"type": "function_call", "call_id": "call_3", "name": "ls", "arguments": ""}
    body = ev({"type": "response.output_item.added", "output_index": 0, "item": added})
    for piece in ['{"pa', 'th": "."}']:
        body += ev(
            {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": piece}
        )
    body += ev(
        {"type": "response.output_item.done", "output_index": 0, "item": {"type": "function_call"}}
    )
    assert calls(decode(WIRE, GPT5, body + completed())) == [
        ToolCall("call_3", "ls", {"path": "."})
    ]


def test_an_incomplete_response_at_the_token_limit_is_a_limit() -> None:
    body = ev({"type": "response.output_text.delta", "output_index": 0, "delta": "Long"}) + ev(
        {
            "type": "response.incomplete",
            "response": {
                "status": "incomplete",
                "incomplete_details": {"reason": "max_output_tokens"},
                "usage": {"input_tokens": 10, "output_tokens": 100},
            },
        }
    )
    events = decode(WIRE, GPT41, body)
    assert end(events) == End("limit") and usages(events)[0].output == 100


def test_an_incomplete_response_for_the_content_filter_is_an_error() -> None:
    details = {"reason": "content_filter"}
    body = ev({"type": "response.incomplete", "response": {"incomplete_details": details}})
    last = end(decode(WIRE, GPT41, body))
    assert last.outcome == "error" and "content filter" in (last.error or "")


def test_a_failed_response_with_a_rate_limit_says_when_to_retry() -> None:
    error = {
        "code": "rate_limit_exceeded",
        "message": "Rate limit reached. Please try again in 1.5s.",
    }
    body = ev({"type": "response.failed", "response": {"status": "failed", "error": error}})
    last = end(decode(WIRE, GPT5, body))
    assert (last.outcome, last.kind, last.retryable, last.retry_after) == (
        "error",
        "rate_limit",
        True,
        1.5,
    )


def test_a_failed_server_error_is_retryable_and_an_invalid_prompt_is_not() -> None:
    failed = {
        "type": "response.failed",
        "response": {"error": {"code": "server_error", "message": "oops"}},
    }
    assert end(decode(WIRE, GPT5, ev(failed))).retryable
    failed["response"] = {"error": {"code": "invalid_prompt", "message": "no"}}
    assert not end(decode(WIRE, GPT5, ev(failed))).retryable


def test_an_error_event_ends_the_stream_and_nothing_follows() -> None:
    error = {
        "type": "error",
        "code": "server_is_overloaded",
        "message": "busy",
        "param": None,
        "sequence_number": 3,
    }
    body = ev({"type": "response.output_text.delta", "output_index": 0, "delta": "a"}) + ev(error)
    body += (
        ev({"type": "response.output_text.delta", "output_index": 0, "delta": "b"}) + completed()
    )
    events = decode(WIRE, GPT5, body)
    assert text(events) == "a"
    assert (end(events).kind, end(events).retryable) == ("overloaded", True)


def test_a_stream_cut_off_before_completed_is_an_error() -> None:
    body = fixture("openai_responses_reasoning_tool.sse")
    body = body[: body.index(b"event: response.completed")]
    events = decode(WIRE, GPT5, body)
    last = end(events)
    assert last.outcome == "error" and last.kind == "malformed" and "cut off" in (last.error or "")
    assert calls(events)  # what did arrive whole was delivered before the error


def test_non_json_data_is_malformed() -> None:
    assert end(decode(WIRE, GPT5, b"event: response.created\ndata: {oops\n\n")).kind == "malformed"


# -- requests --------------------------------------------------------------------------

SIGNATURE = json.dumps(
    {
        "openai-reasoning": "gpt-5",
        "items": [
            {"summary": [{"type": "summary_text", "text": "Plan."}], "encrypted_content": "enc-A"}
        ],
    }
)
CONVERSATION: list[dict[str, object]] = [
    {"role": "user", "content": [{"type": "text", "text": "what does app.py return?"}]},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "text": "Plan.", "signature": SIGNATURE},
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
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]


def _request(messages: list[dict[str, object]] = CONVERSATION, **settings_: object) -> Request:
    return Request(
        model="x", messages=messages, system="Be brief.", tools=TOOLS, settings=settings_
    )


def test_input_items_carry_encrypted_reasoning_back_and_pair_results() -> None:
    call = WIRE.build(_request(thinking="high"), GPT5, settings())
    assert call.url == "https://api.openai.com/v1/responses"
    body = call.body
    assert body["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "what does app.py return?"}],
        },
        {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "Plan."}],
            "encrypted_content": "enc-A",
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Reading."}],
        },
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "read",
            "arguments": '{"path": "src/app.py"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "return 'hello'"},
    ]
    assert (body["instructions"], body["stream"], body["store"]) == ("Be brief.", True, False)
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["max_output_tokens"] == 128000
    assert body["tools"] == [{"type": "function", **TOOLS[0], "strict": False}]


def test_reasoning_of_another_model_or_without_a_signature_is_not_sent() -> None:
    other = replace(GPT5, id="gpt-5-mini")
    assert not any(
        i["type"] == "reasoning" for i in WIRE.build(_request(), other, settings()).body["input"]
    )  # type: ignore[union-attr,index]
    unsigned = json.loads(json.dumps(CONVERSATION))
    del unsigned[1]["content"][0]["signature"]
    items = WIRE.build(_request(unsigned), GPT5, settings()).body["input"]
    assert [i["type"] for i in items] == [
        "message",
        "message",
        "function_call",
        "function_call_output",
    ]  # type: ignore[union-attr,index]


def test_thinking_off_on_a_reasoning_model_is_its_lowest_effort() -> None:
    assert (
        WIRE.build(_request(thinking="off"), GPT5, settings()).body["reasoning"]["effort"]
        == "minimal"
    )  # type: ignore[index]
    assert (
        WIRE.build(_request(thinking="xhigh"), GPT5, settings()).body["reasoning"]["effort"]
        == "high"
    )  # type: ignore[index]


def test_a_model_without_thinking_gets_no_reasoning_fields_and_refuses_a_level() -> None:
    body = WIRE.build(_request(), GPT41, settings()).body
    assert "reasoning" not in body and "include" not in body
    assert not any(i["type"] == "reasoning" for i in body["input"])  # type: ignore[union-attr,index]
    with pytest.raises(SmithError) as caught:
        WIRE.build(_request(thinking="low"), GPT41, settings())
    assert caught.value.diagnostic.code == "provider.thinking-unsupported"


def test_extras_merge_last_and_nested_and_owned_fields_are_refused() -> None:
    extra = {"reasoning": {"summary": "detailed"}, "service_tier": "flex"}
    body = WIRE.build(_request(thinking="low"), GPT5, settings(extra=extra)).body
    assert (
        body["reasoning"] == {"effort": "low", "summary": "detailed"}
        and body["service_tier"] == "flex"
    )
    for owned in ("input", "instructions", "model", "tools"):
        with pytest.raises(SmithError):
            WIRE.build(_request(), GPT5, settings(extra={owned: "x"}))


def test_strict_only_for_strict_schemas_and_images_only_for_image_models() -> None:
    closed = {
        "type": "object",
        "properties": {"p": {"type": "string"}},
        "required": ["p"],
        "additionalProperties": False,
    }
    request = Request(
        model="x",
        messages=[
            {"role": "user", "content": [{"type": "image", "url": "https://example.com/a.png"}]}
        ],
        tools=[{"name": "t", "description": "", "parameters": closed}],
    )
    body = WIRE.build(request, GPT5, settings()).body
    assert body["tools"][0]["strict"] is True  # type: ignore[index]
    assert body["input"][0]["content"] == [
        {"type": "input_image", "image_url": "https://example.com/a.png"}
    ]  # type: ignore[index]
    text_only = replace(GPT41, input=("text",), strict_tools=False)
    body = WIRE.build(request, text_only, settings()).body
    assert body["tools"][0]["strict"] is False  # type: ignore[index]
    assert body["input"][0]["content"][0]["type"] == "input_text"  # type: ignore[index]


def test_http_errors_use_openai_error_bodies() -> None:
    error = {
        "message": "The model `gpt-9` does not exist",
        "type": "invalid_request_error",
        "code": "model_not_found",
    }
    last = WIRE.error(404, {}, json.dumps({"error": error}).encode())
    assert (last.kind, last.retryable) == ("unavailable", False)
    assert "gpt-9" in (last.error or "") and "OpenAI returned HTTP 404" in (last.error or "")


def test_a_temperature_for_a_reasoning_model_fails_before_dispatch() -> None:
    """OpenAI's reasoning models answer a temperature with HTTP 400 ("Unsupported value:
    'temperature' does not support 0.2 with this model"), thinking off included."""
    assert WIRE.build(_request(temperature=0.2), GPT41, settings()).body["temperature"] == 0.2
    for level in ("off", "high"):
        with pytest.raises(SmithError) as caught:
            WIRE.build(_request(temperature=0.2, thinking=level), GPT5, settings())
        assert caught.value.diagnostic.code == "openai.reasoning-temperature"
        assert "openai/gpt-5" in caught.value.diagnostic.what
    assert "temperature" not in WIRE.build(_request(), GPT5, settings()).body
