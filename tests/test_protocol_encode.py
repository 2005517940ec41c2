"""The typed path's encoders write what the standard library wrote before them: `smith
eval --json`'s lines byte for byte, RPC lines byte for byte (floats aside: the same value,
another exponent form)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from smith.protocol import dumps_event, encode_line

AWKWARD = '\x1b[31m\x00\x01\x08\x0c\t\n\r"\\ /\x7f\u2028\u2029é😀'

CASES: list[dict[str, Any]] = [
    {"type": "message_delta", "message_id": "m1", "channel": "text", "delta": AWKWARD},
    {
        "type": "tool_end",
        "tool_call_id": "c",
        "name": "read",
        "outcome": None,
        "is_error": False,
        "result": {"text": "x, y: z", "details": {}, "ok": True, "list": [[], {}, [{}], ""]},
    },
    {"type": "settled", "queue": 0, "n": -3, "big": 2**63 + 5, "t": True, "f": 1.5},
    {"type": "message_delta", "delta": "a lone \udcff surrogate"},
    {"type": "turn_end", "turn": (1, 2), "stop": None, "submission": "p-1"},
]


def _old_eval(ev: dict[str, Any]) -> str:
    return json.dumps(ev, ensure_ascii=False)


def _old_line(message: object) -> bytes:
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), default=str)
    return text.encode("utf-8", "backslashreplace") + b"\n"


@pytest.mark.parametrize("event", CASES)
def test_eval_json_lines_are_unchanged(event: dict[str, Any]) -> None:
    assert dumps_event(event) == _old_eval(event)


@pytest.mark.parametrize("event", CASES)
def test_rpc_lines_are_unchanged(event: dict[str, Any]) -> None:
    line = encode_line({"jsonrpc": "2.0", "method": "event", "params": event})
    assert line == _old_line({"jsonrpc": "2.0", "method": "event", "params": event})
    assert line.count(b"\n") == 1 and line.endswith(b"\n")


def test_what_json_has_no_type_for_is_its_str_in_rpc() -> None:
    class Odd:
        def __str__(self) -> str:
            return "odd"

    assert encode_line({"x": Odd()}) == b'{"x":"odd"}\n'


def test_floats_are_the_same_values() -> None:
    values = [0.1, 1e16, 1e-7, -0.0, 123456789012345678.0, 3e-06]
    assert json.loads(encode_line(values)) == values
    assert json.loads(dumps_event({"v": values})) == {"v": values}
