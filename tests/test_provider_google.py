"""The google-gemini wire format: recorded streams in, smith's stream out; neutral
requests in, Gemini bodies out. Pure: no sockets (see test_provider_loopback.py)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smith.diagnostics import SmithError
from smith.plugins.providers import google
from smith.providers._model import ModelInfo
from smith.providers._sse import SSEEvent
from smith.providers._stream import End, Request, TextDelta, ThinkingDelta, ToolCall, Usage
from tests.vendor_kit import decode, ends, events_of, keys_in, record, settings

PRO = ModelInfo(
    provider="google",
    id="gemini-2.5-pro",
    api="google-gemini",
    context_window=1_048_576,
    max_output=65_536,
    input=("text", "image"),
    thinking=("low", "medium", "high"),
    cache="automatic",
)
PLAIN = replace(PRO, id="gemma-3", input=("text",), thinking=(), tools=False)
WIRE = google.Gemini()
SETTINGS = settings("google", base_url="https://generativelanguage.googleapis.com/v1beta")
TOOL = {
    "name": "get_weather",
    "description": "weather of a place",
    "parameters": {
        "type": "object",
        "properties": {"location": {"type": "string"}},
        "additionalProperties": False,
    },
}
USER = {"role": "user", "content": [{"type": "text", "text": "weather in Paris?"}]}


def build(messages: list[dict[str, object]], model: ModelInfo = PRO, **kw: object) -> dict:
    system = str(kw.pop("system", "be brief"))
    request = Request(model=model.id, messages=messages, system=system, tools=[TOOL], settings=kw)
    return WIRE.build(request, model, SETTINGS).body


# -- decoding -----------------------------------------------------------------------------


def test_a_text_stream_ends_at_the_finish_reason() -> None:
    events = decode(WIRE, PRO, events_of("google_text.sse"))
    assert events == [
        TextDelta("The"),
        Usage(input=8, output=None, cache_read=0, cache_write=0),
        TextDelta(" quick brown fox jumps"),
        Usage(input=8, output=5, cache_read=0, cache_write=0),
        TextDelta(" over the lazy dog."),
        # thoughts are output too; missing counts of the final chunk are zeros
        Usage(input=8, output=37, cache_read=0, cache_write=0),
        End("success"),
    ]


def test_thoughts_and_function_calls_with_a_signature() -> None:
    events = decode(WIRE, PRO, events_of("google_thinking_tool.sse"))
    thinking = [e for e in events if isinstance(e, ThinkingDelta)]
    assert [t.text for t in thinking if t.text] == [
        "**Checking the weather**\n\nThe user asks about Paris, so ",
        "I will call get_weather.",
    ]
    signature = 'google:{"next": "CiQBVKhc7vB+ZxnbnMRcZCnd1a2V0c2lnbmF0dXJl"}'
    assert ThinkingDelta("", signature=signature) in events
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [(c.name, c.arguments) for c in calls] == [
        ("get_weather", {"location": "Paris", "unit": "celsius"}),
        ("get_time", {"city": "Paris"}),
    ]
    assert all(c.id.startswith(google.GENERATED) for c in calls)
    assert len({c.id for c in calls}) == 2
    assert Usage(input=56, output=70, cache_read=64, cache_write=0) in events
    assert events[-1] == End("tool_use")


def test_signatures_go_back_on_the_part_they_came_on() -> None:
    events = decode(WIRE, PRO, events_of("google_thinking_tool.sse"))
    message = record(events, "google")
    calls = [p for p in message["content"] if p["type"] == "tool_call"]
    results = [
        {
            "role": "tool_result",
            "tool_call_id": c["id"],
            "tool_name": c["name"],
            "content": [{"type": "text", "text": "ok"}],
            "is_error": i == 1,
        }
        for i, c in enumerate(calls)
    ]
    body = build([USER, message, *results], thinking="high")
    model_turn = body["contents"][1]
    assert model_turn["role"] == "model"
    parts = model_turn["parts"]
    assert parts[0] == {"text": "Let me look that up."}  # the unsigned thoughts are left out
    assert parts[1] == {
        "functionCall": {"name": "get_weather", "args": {"location": "Paris", "unit": "celsius"}},
        "thoughtSignature": "CiQBVKhc7vB+ZxnbnMRcZCnd1a2V0c2lnbmF0dXJl",
    }
    assert parts[2] == {"functionCall": {"name": "get_time", "args": {"city": "Paris"}}}
    answers = body["contents"][2]
    assert answers["role"] == "user"
    assert answers["parts"] == [
        {"functionResponse": {"name": "get_weather", "response": {"output": "ok"}}},
        {"functionResponse": {"name": "get_time", "response": {"error": "ok"}}},
    ]


def test_a_signed_thought_and_a_signed_call_in_one_run_keep_both() -> None:
    chunk = {
        "candidates": [
            {
                "content": {
                    "parts": [
                        {"text": "pondering", "thought": True, "thoughtSignature": "T1"},
                        {
                            "functionCall": {"name": "f", "args": {}, "id": "fc_9"},
                            "thoughtSignature": "N1",
                        },
                        {"text": "done", "thoughtSignature": "N2"},
                    ]
                },
                "finishReason": "STOP",
            }
        ]
    }
    events = decode(WIRE, PRO, [SSEEvent("message", json.dumps(chunk))])
    message = record(events, "google")
    body = build(
        [
            USER,
            message,
            {"role": "tool_result", "tool_call_id": "fc_9", "tool_name": "f", "content": []},
        ]
    )
    assert body["contents"][1]["parts"] == [
        {"thought": True, "text": "pondering", "thoughtSignature": "T1"},
        {"functionCall": {"name": "f", "args": {}, "id": "fc_9"}, "thoughtSignature": "N1"},
        {"text": "done", "thoughtSignature": "N2"},
    ]
    assert body["contents"][2]["parts"][0]["functionResponse"]["id"] == "fc_9"


def test_a_trailing_signature_goes_back_onto_the_last_part() -> None:
    chunks = [
        {"candidates": [{"content": {"parts": [{"text": "All done."}]}}]},
        {
            "candidates": [
                {
                    "content": {"parts": [{"text": "", "thoughtSignature": "END"}]},
                    "finishReason": "STOP",
                }
            ]
        },
    ]
    events = decode(WIRE, PRO, [SSEEvent("message", json.dumps(c)) for c in chunks])
    assert events[-1] == End("success")
    body = build([USER, record(events, "google"), {"role": "user", "content": "thanks"}])
    assert body["contents"][1]["parts"] == [{"text": "All done.", "thoughtSignature": "END"}]


def test_safety_is_a_final_error() -> None:
    events = decode(WIRE, PRO, events_of("google_safety.sse"))
    (end,) = ends(events)
    assert end.outcome == "error" and not end.retryable and "SAFETY" in (end.error or "")


@pytest.mark.parametrize(
    ("reason", "outcome", "retryable"),
    [
        ("STOP", "success", False),
        ("MAX_TOKENS", "limit", False),
        ("RECITATION", "error", False),
        ("MALFORMED_FUNCTION_CALL", "error", True),
        ("OTHER", "error", True),
    ],
)
def test_finish_reasons(reason: str, outcome: str, retryable: bool) -> None:
    chunk = {"candidates": [{"content": {"parts": [{"text": "x"}]}, "finishReason": reason}]}
    end = decode(WIRE, PRO, [SSEEvent("message", json.dumps(chunk))])[-1]
    assert isinstance(end, End) and end.outcome == outcome and end.retryable is retryable


def test_a_stream_without_a_finish_reason_is_an_error() -> None:
    events = decode(WIRE, PRO, events_of("google_cut_off.sse"))
    assert events[0] == TextDelta("Half of an ans")
    (end,) = ends(events)
    assert (
        end.outcome == "error" and end.kind == "malformed" and "finishReason" in (end.error or "")
    )


FULL = events_of("google_thinking_tool.sse")


@given(st.integers(min_value=0, max_value=len(FULL) - 1))
def test_a_stream_cut_before_its_last_chunk_is_an_error(cut: int) -> None:
    events = decode(WIRE, PRO, FULL[:cut])
    (end,) = ends(events)
    assert events[-1] is end and end.outcome == "error" and "cut off" in (end.error or "")


def test_a_blocked_prompt_ends_the_stream() -> None:
    chunk = {
        "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
        "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7},
    }
    (usage, end) = decode(WIRE, PRO, [SSEEvent("message", json.dumps(chunk))])
    assert usage == Usage(input=7, output=None, cache_read=0, cache_write=0)
    assert (
        isinstance(end, End)
        and end.outcome == "error"
        and "PROHIBITED_CONTENT" in (end.error or "")
    )


def test_an_error_object_in_the_stream_ends_it() -> None:
    chunk = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    events = decode(
        WIRE,
        PRO,
        [SSEEvent("message", json.dumps(chunk)), SSEEvent("message", '{"candidates": []}')],
    )
    (end,) = events
    assert isinstance(end, End) and end.retryable and end.kind == "overloaded"


def test_function_call_arguments_are_still_checked() -> None:
    chunk = {
        "candidates": [
            {
                "content": {
                    "parts": [
                        {"functionCall": {"name": "f", "args": ["not", "an", "object"]}},
                        {"functionCall": {"args": {}}},
                    ]
                },
                "finishReason": "STOP",
            }
        ]
    }
    calls = [
        e
        for e in decode(WIRE, PRO, [SSEEvent("message", json.dumps(chunk))])
        if isinstance(e, ToolCall)
    ]
    assert calls[0].arguments is None and "not an object" in (calls[0].error or "")
    assert calls[1].arguments is None and "named no function" in (calls[1].error or "")


def test_non_json_chunks_end_the_stream() -> None:
    (end,) = decode(WIRE, PRO, [SSEEvent("message", "{oops")], complete=False)
    assert isinstance(end, End) and end.kind == "malformed"


# -- errors -------------------------------------------------------------------------------


def _error(status: int, name: str, message: str, **extra: object) -> End:
    body = {"error": {"code": status, "message": message, "status": name, **extra}}
    return WIRE.error(status, {}, json.dumps(body).encode())


def test_http_errors_map_to_kinds_and_retry_hints() -> None:
    limited = _error(
        429,
        "RESOURCE_EXHAUSTED",
        "Quota exceeded",
        details=[{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "21s"}],
    )
    assert limited.retryable and limited.kind == "rate_limit" and limited.retry_after == 21
    assert not _error(400, "INVALID_ARGUMENT", "bad").retryable
    assert _error(404, "NOT_FOUND", "no model").kind == "unavailable"
    assert _error(403, "PERMISSION_DENIED", "denied").kind == "auth"
    busy = _error(503, "UNAVAILABLE", "The model is overloaded.")
    assert busy.retryable and busy.kind == "overloaded"
    listed = WIRE.error(
        500,
        {"retry-after": "3"},
        json.dumps(
            [{"error": {"code": 500, "message": "Internal error", "status": "INTERNAL"}}]
        ).encode(),
    )
    assert listed.retryable and listed.kind == "server" and listed.retry_after == 3
    key = "AIza" + "B" * 35
    assert key not in (_error(400, "INVALID_ARGUMENT", f"API key {key} not valid").error or "")


# -- requests -----------------------------------------------------------------------------


def test_the_request_has_the_gemini_shape() -> None:
    call = WIRE.build(
        Request(model=PRO.id, messages=[USER], system="sys", tools=[TOOL]), PRO, SETTINGS
    )
    assert call.url == (
        "https://generativelanguage.googleapis.com/v1beta/models/"
        "gemini-2.5-pro:streamGenerateContent?alt=sse"
    )
    assert call.headers["x-goog-api-key"] == "test-key-0123456789"
    body = call.body
    assert body["contents"] == [{"role": "user", "parts": [{"text": "weather in Paris?"}]}]
    assert body["systemInstruction"] == {"parts": [{"text": "sys"}]}
    declared = body["tools"][0]["functionDeclarations"][0]
    assert declared["parametersJsonSchema"] == TOOL["parameters"]
    assert body["generationConfig"] == {"maxOutputTokens": PRO.max_output}


def test_thinking_levels_become_budgets() -> None:
    config = build([USER], thinking="medium")["generationConfig"]
    assert config["thinkingConfig"] == {"thinkingBudget": 8192, "includeThoughts": True}
    asked = build([USER], thinking="low", max_tokens=1000, temperature=0.5)["generationConfig"]
    assert asked["maxOutputTokens"] == 3048 and asked["temperature"] == 0.5
    nearest = build([USER], thinking="xhigh")["generationConfig"]["thinkingConfig"]
    assert nearest["thinkingBudget"] == google.BUDGETS["high"]  # the model's highest level
    assert "thinkingConfig" not in build([USER], thinking="off")["generationConfig"]


def test_thinking_on_a_model_without_thinking_fails_before_dispatch() -> None:
    with pytest.raises(SmithError) as raised:
        build([USER], PLAIN, thinking="low")
    assert raised.value.diagnostic.code == "provider.thinking-unsupported"


def test_extras_merge_into_nested_config_but_not_owned_fields() -> None:
    extra = settings(
        "google",
        extra={
            "generationConfig": {"topK": 40},
            "safetySettings": [{"category": "X", "threshold": "Y"}],
        },
    )
    body = WIRE.build(Request(model=PRO.id, messages=[USER]), PRO, extra).body
    assert body["generationConfig"] == {"maxOutputTokens": PRO.max_output, "topK": 40}
    assert body["safetySettings"] == [{"category": "X", "threshold": "Y"}]
    for owned in ("contents", "systemInstruction", "tools", "toolConfig"):
        with pytest.raises(SmithError) as raised:
            WIRE.build(
                Request(model=PRO.id, messages=[USER]), PRO, settings("google", extra={owned: {}})
            )
        assert raised.value.diagnostic.code == "provider.owned-extra-field"


def test_no_key_fails_before_dispatch() -> None:
    with pytest.raises(SmithError) as raised:
        WIRE.build(Request(model=PRO.id, messages=[USER]), PRO, settings("google", credential=None))
    assert raised.value.diagnostic.code == "google.no-key"


def test_calls_and_results_of_other_providers_pair_by_name() -> None:
    call = {
        "role": "assistant",
        "provider": "anthropic",
        "content": [
            {"type": "thinking", "text": "claude thought", "signature": "anthropic:SIG"},
            {"type": "tool_call", "id": "toolu_1", "name": "read", "arguments": {"path": "a"}},
        ],
    }
    result = {
        "role": "tool_result",
        "tool_call_id": "toolu_1",
        "content": [{"type": "text", "text": "A"}],
    }
    body = build([USER, call, result])
    assert body["contents"][1]["parts"] == [
        {"functionCall": {"name": "read", "args": {"path": "a"}}}
    ]
    assert body["contents"][2]["parts"] == [
        {"functionResponse": {"name": "read", "response": {"output": "A"}}}
    ]


IMAGE = {
    "role": "user",
    "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "image", "media_type": "image/png", "data": "iVBORw0KGgo="},
    ],
}


def test_images_only_for_a_model_that_takes_them() -> None:
    seen = build([IMAGE])["contents"][0]["parts"][1]
    assert seen == {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}
    blind = build([IMAGE], PLAIN)["contents"][0]["parts"][1]
    assert "inlineData" not in blind and "image" in blind["text"]


def test_no_body_carries_an_unadvertised_capability() -> None:
    signed = {
        "role": "assistant",
        "provider": "google",
        "content": [
            {"type": "thinking", "text": "t", "signature": 'google:{"thought": "S"}'},
            {"type": "text", "text": "x"},
        ],
    }
    body = build([IMAGE, signed, USER], PLAIN, thinking="off")
    keys = keys_in(body)
    assert not keys & {"tools", "thinkingConfig", "inlineData", "temperature", "thought"}
    assert "thoughtSignature" not in keys
