"""Events and protocol records as JSON, through msgspec's encoder (the typed path).

The same JSON the standard library writes, several times faster (benchmarks/
bench_protocol.py): keys in the event's order, every character as it is (UTF-8), line
breaks inside strings escaped. Where msgspec writes a value differently it is still the
same JSON value: a float's exponent (`1e16` for `1e+16`), NaN and infinities as null
(the standard library writes `NaN`, which is no JSON). A lone surrogate, which UTF-8
cannot hold, makes msgspec refuse; such a record goes through the standard library,
as before.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

_ENCODER = msgspec.json.Encoder(enc_hook=str)
_STRICT = msgspec.json.Encoder()


def encode_line(message: object) -> bytes:
    """`message` as one protocol line (`smith rpc`): compact JSON in UTF-8 and a LF; a
    value JSON has no type for is written as its str(); a lone surrogate becomes its
    JSON escape (`\\udcff`)."""
    try:
        return _ENCODER.encode(message) + b"\n"
    except UnicodeEncodeError:
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), default=str)
        return text.encode("utf-8", "backslashreplace") + b"\n"


def dumps_event(event: dict[str, Any]) -> str:
    """`event` as `smith eval --json` prints it: the text `json.dumps(event,
    ensure_ascii=False)` returns (`, ` and `: ` between items), without the line break."""
    try:
        return msgspec.json.format(_STRICT.encode(event), indent=0).decode()
    except UnicodeEncodeError:
        return json.dumps(event, ensure_ascii=False)
