"""The scripted provider plays a JSON script through the normalized stream (docs/scripted.md)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smith.diagnostics import SmithError
from smith.plugins.providers.scripted import ScriptedProvider, chunks, create
from smith.providers import (
    End,
    Pricing,
    Request,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    Usage,
    resolve_model,
)

USER: dict[str, object] = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
REQUEST = Request(model="m", messages=[USER])


def script(tmp_path: Path, data: object, name: str = "s.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def play(provider: ScriptedProvider, request: Request = REQUEST) -> list[StreamEvent]:
    async def collect() -> list[StreamEvent]:
        return [event async for event in provider.stream(request)]

    return asyncio.run(collect())


def one(tmp_path: Path, response: dict[str, object]) -> list[StreamEvent]:
    return play(create(script(tmp_path, {"responses": [response]})))


TEXT = "Hello there,  this is\na scripted answer\n\n  with odd  spacing. "


@given(st.text())
def test_chunks_concatenate_exactly(text: str) -> None:
    pieces = chunks(text)
    assert "".join(pieces) == text
    assert all(pieces) and pieces == chunks(text)  # no empty deltas, deterministic


def test_deltas_concatenate_exactly_and_are_several(tmp_path: Path) -> None:
    events = one(tmp_path, {"text": TEXT, "thinking": "First I think, then I answer."})
    text = [e.text for e in events if isinstance(e, TextDelta)]
    thinking = [e.text for e in events if isinstance(e, ThinkingDelta)]
    assert "".join(text) == TEXT and len(text) > 2
    assert "".join(thinking) == "First I think, then I answer." and len(thinking) > 1


def test_event_order_and_ids(tmp_path: Path) -> None:
    events = one(
        tmp_path,
        {
            "thinking": "a b c d e f g",
            "text": "one two three four",
            "tool_calls": [
                {"name": "ls", "arguments": {"path": "."}},
                {"name": "read", "arguments": {"path": "x"}, "id": "mine"},
                {"name": "grep", "arguments": {"pattern": "p"}},
            ],
            "usage": {"input": 5, "output": 7},
        },
    )
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["ThinkingDelta"] * 3 + ["TextDelta"] * 2 + ["ToolCall"] * 3 + ["Usage", "End"]
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [c.id for c in calls] == ["call_0_0", "mine", "call_0_2"]
    assert calls[0] == ToolCall("call_0_0", "ls", {"path": "."})
    assert events[-1] == End("tool_use")


def test_ids_count_responses_and_calls(tmp_path: Path) -> None:
    call = {"name": "ls", "arguments": {}}
    provider = create(script(tmp_path, {"responses": [{}, {"tool_calls": [call, call]}]}))
    play(provider)
    ids = [e.id for e in play(provider) if isinstance(e, ToolCall)]
    assert ids == ["call_1_0", "call_1_1"]


@pytest.mark.parametrize(
    ("response", "outcome"),
    [
        ({"stop": "end"}, "success"),
        ({"stop": "tool_use"}, "tool_use"),
        ({"stop": "limit", "text": "cut sh"}, "limit"),
        ({"stop": "error"}, "error"),
        ({}, "success"),
        ({"tool_calls": [{"name": "ls", "arguments": {}}]}, "tool_use"),
        ({"tool_calls": [{"name": "ls", "arguments": {}}], "stop": "end"}, "success"),
        ({"error": "boom"}, "error"),
    ],
)
def test_stop_maps_to_outcome(tmp_path: Path, response: dict[str, object], outcome: str) -> None:
    end = one(tmp_path, response)[-1]
    assert isinstance(end, End) and end.outcome == outcome
    assert (end.error is not None) == (outcome == "error")


def test_error_response_carries_message_and_retry(tmp_path: Path) -> None:
    end = one(
        tmp_path, {"stop": "error", "error": "overloaded", "retryable": True, "retry_after": 2}
    )
    assert end[-1] == End("error", error="overloaded", retryable=True, retry_after=2.0)
    plain = one(tmp_path, {"stop": "error"})[-1]
    assert isinstance(plain, End) and "responses[0]" in (plain.error or "")
    assert not plain.retryable


def test_usage_unknown_unless_given(tmp_path: Path) -> None:
    assert not any(isinstance(e, Usage) for e in one(tmp_path, {"text": "hi"}))
    usage = [e for e in one(tmp_path, {"usage": {"output": 3}}) if isinstance(e, Usage)]
    assert usage == [Usage(input=None, output=3, cache_read=None, cache_write=None)]
    full = {"input": 1, "output": 2, "cache_read": 3, "cache_write": 0}
    assert [e for e in one(tmp_path, {"usage": full}) if isinstance(e, Usage)] == [Usage(**full)]


def test_delay_is_waited_and_cancellable(tmp_path: Path) -> None:
    started = time.monotonic()
    events = one(tmp_path, {"text": "a b c d", "delay_ms": 20})  # two deltas and the end
    assert time.monotonic() - started >= 0.06 and len(events) == 3

    provider = create(script(tmp_path, {"responses": [{"text": "slow", "delay_ms": 600000}]}))
    seen: list[StreamEvent] = []

    async def consume() -> None:
        async for event in provider.stream(REQUEST):
            seen.append(event)

    async def main() -> None:
        task = asyncio.create_task(consume())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    started = time.monotonic()
    asyncio.run(main())
    assert time.monotonic() - started < 5 and seen == []


def test_running_out_of_responses_is_an_error_end(tmp_path: Path) -> None:
    path = script(tmp_path, {"responses": [{"text": "only one"}]})
    provider = create(path)
    assert play(provider)[-1] == End("success")
    for request_number in (2, 3):
        events = play(provider)
        assert len(events) == 1 and isinstance(events[0], End)
        assert events[0].outcome == "error" and not events[0].retryable
        error = events[0].error or ""
        assert f"the script {path} has no response left" in error
        assert f"it has 1 response and this is request {request_number}" in error
    empty = create(script(tmp_path, {"responses": []}, "empty.json"))
    assert "it has 0 responses and this is request 1" in str(play(empty)[0])


def test_string_arguments_are_parsed_when_streamed(tmp_path: Path) -> None:
    calls = [
        {"name": "read", "arguments": '{"path": "README.md"}'},
        {"name": "read", "arguments": '{"path": "README.md"'},
        {"name": "read", "arguments": "[1, 2]"},
    ]
    good, bad, array = [e for e in one(tmp_path, {"tool_calls": calls}) if isinstance(e, ToolCall)]
    assert good == ToolCall("call_0_0", "read", {"path": "README.md"})
    assert bad.arguments is None and "not valid JSON" in (bad.error or "")
    assert array.arguments is None and "must be a JSON object" in (array.error or "")


def test_requests_log_records_every_request(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    path = script(
        tmp_path,
        {"responses": [{"text": "ok"}], "requests_log": "logs/requests.jsonl"},
        "scripts/s.json",
    )
    provider = create(path)
    tool: dict[str, object] = {
        "name": "ls",
        "description": "List.",
        "parameters": {"type": "object"},
    }
    first = Request(
        model="m1", messages=[USER], system="be brief", tools=[tool], settings={"temperature": 0}
    )
    play(provider, first)
    play(provider, Request(model="m2", messages=[USER, USER]))  # no response left: logged too
    lines = (tmp_path / "scripts" / "logs" / "requests.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in lines] == [
        {
            "model": "m1",
            "system": "be brief",
            "messages": [USER],
            "tools": [tool],
            "settings": {"temperature": 0},
        },
        {"model": "m2", "system": "", "messages": [USER, USER], "tools": [], "settings": {}},
    ]


def test_a_request_that_is_not_json_is_an_error_end(tmp_path: Path) -> None:
    provider = create(script(tmp_path, {"responses": [{}], "requests_log": "r.jsonl"}))
    events = play(provider, Request(model="m", messages=[{"role": "user", "content": object()}]))
    assert len(events) == 1 and isinstance(events[0], End) and events[0].outcome == "error"
    assert "cannot be written as JSON" in (events[0].error or "")


def test_pricing(tmp_path: Path) -> None:
    priced = {"responses": [], "pricing": {"input": 3, "output": 15, "cache_read": 0.3}}
    assert create(script(tmp_path, priced)).pricing("m") == Pricing(3.0, 15.0, 0.3, None)
    assert create(script(tmp_path, {"responses": []})).pricing("m") is None


def test_the_registry_makes_it_from_the_model_setting(tmp_path: Path) -> None:
    path = script(tmp_path, {"responses": [{"text": "hi"}]})
    provider, model = resolve_model(f"scripted:{path}")
    assert isinstance(provider, ScriptedProvider) and provider.name == "scripted" and model == path


BAD = [
    ([1], None, "a JSON object", "got a list"),
    ({"responsez": []}, "responsez", "one of the keys", "did you mean 'responses'?"),
    ({}, "responses", "a list of responses", "missing"),
    ({"responses": {}}, "responses", "a list of responses", "got an object"),
    ({"responses": [{}, 3]}, "responses[1]", "a JSON object", "the number 3"),
    ({"responses": [{"stop": "done"}]}, "responses[0].stop", "one of end, tool_use", '"done"'),
    ({"responses": [{}, {}, {"text": 1}]}, "responses[2].text", "a string", "the number 1"),
    ({"responses": [{"toolcalls": []}]}, "responses[0].toolcalls", "keys", "'tool_calls'"),
    ({"responses": [{"tool_calls": {}}]}, "responses[0].tool_calls", "a list", "an object"),
    (
        {"responses": [{"tool_calls": [{"name": "ls", "arguments": {}}, {"arguments": {}}]}]},
        "responses[0].tool_calls[1].name",
        'the key "name"',
        "missing",
    ),
    (
        {"responses": [{"tool_calls": [{"name": "ls"}]}]},
        "responses[0].tool_calls[0].arguments",
        'the key "arguments"',
        "missing",
    ),
    (
        {"responses": [{"tool_calls": [{"name": "ls", "arguments": 5}]}]},
        "responses[0].tool_calls[0].arguments",
        "a JSON object, or a string",
        "the number 5",
    ),
    (
        {"responses": [{"tool_calls": [{"name": "", "arguments": {}}]}]},
        "responses[0].tool_calls[0].name",
        "a non-empty string",
        '""',
    ),
    ({"responses": [{"usage": {"input": -1}}]}, "responses[0].usage.input", "0 or more", "-1"),
    ({"responses": [{"stop": "end", "retry_after": 1}]}, "responses[0].stop", "error", "end"),
    ({"responses": [{"usage": {"output": 1.5}}]}, "responses[0].usage.output", "whole", "1.5"),
    ({"responses": [{"usage": {"input": True}}]}, "responses[0].usage.input", "whole", "true"),
    ({"responses": [{"usage": {"tokens": 1}}]}, "responses[0].usage.tokens", "keys", "tokens"),
    ({"responses": [{"delay_ms": "10"}]}, "responses[0].delay_ms", "a number", '"10"'),
    ({"responses": [], "pricing": {"output": "$15"}}, "pricing.output", "a number", "$15"),
    ({"responses": [], "requests_log": ""}, "requests_log", "a non-empty string", '""'),
    ({"responses": [{"error": "x", "stop": "end"}]}, "responses[0].stop", '"error"', '"end"'),
    ({"responses": [{"retryable": "yes"}]}, "responses[0].retryable", "true or false", "yes"),
]


@pytest.mark.parametrize(("data", "where", "expected", "got"), BAD)
def test_invalid_scripts_name_file_location_and_fix(
    tmp_path: Path, data: object, where: str | None, expected: str, got: str
) -> None:
    path = script(tmp_path, data)
    with pytest.raises(SmithError) as caught:
        create(path)
    d = caught.value.diagnostic
    assert d.code == "scripted.invalid" and d.field == where
    message = str(caught.value)  # the headline: file, JSON location, what
    assert message.startswith(f"{path}: {where + ': ' if where else ''}expected ")
    assert expected in message and got in message + d.fix
    assert "docs/scripted.md" in d.fix and path in d.why


def test_json_with_nan_is_refused(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text('{"responses": [{"delay_ms": NaN}]}')
    # NaN is not JSON: refused when the file is read (smith.text.loads), as every boundary does
    with pytest.raises(SmithError, match=r"NaN is not a JSON value"):
        create(str(tmp_path / "s.json"))


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('{"responses": [\n  {"text": "a",}\n]}')
    with pytest.raises(SmithError) as caught:
        create(str(path))
    d = caught.value.diagnostic
    assert d.code == "scripted.not-json"
    assert str(caught.value).startswith(f"{path}:2:")
    assert "not valid JSON" in d.what and "trailing commas" in d.fix


@pytest.mark.parametrize("kind", ["missing", "directory", "binary"])
def test_unreadable_scripts(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "s.json"
    if kind == "directory":
        path.mkdir()
    elif kind == "binary":
        path.write_bytes(b"\xff\xfe{}")
    with pytest.raises(SmithError) as caught:
        create(str(path))
    d = caught.value.diagnostic
    assert d.code == "scripted.unreadable" and str(path) in d.what
    assert "docs/scripted.md" in d.fix


def test_no_path_is_explained() -> None:
    with pytest.raises(SmithError) as caught:
        create("")
    assert caught.value.diagnostic.code == "scripted.no-path"
    assert "scripted:PATH" in caught.value.diagnostic.fix
