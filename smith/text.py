"""Text from outside smith, made safe where it enters and where it is shown.

Four helpers, each the one implementation of its rule:

- `loads(data)`: JSON from anywhere outside smith (RPC and MCP lines, provider streams,
  tool-call arguments, scripts, JSONL imports, command-line values). It is `json.loads`
  that never raises anything but `ValueError` (`JsonInputError`): a text nested deeper
  than `MAX_DEPTH` is refused whatever its depth (a line of 5,000 `[` must not end the
  process with RecursionError), as are NaN and Infinity, which are not JSON, and
  numbers beyond a double's range (1e400), which could not be written back as JSON.
- `replace_surrogates(value)`: lone UTF-16 surrogates (`\\udcff` from a JSON escape, a
  non-UTF-8 byte decoded with surrogateescape) cannot be encoded as UTF-8, so no record,
  request or answer could hold them; they become U+FFFD, and the count says how many,
  so the boundary can record a note.
- `inert(text)`: untrusted text (model output, tool output, names) for a terminal:
  every control character but tab and newline becomes a visible stand-in, so escape
  sequences (OSC 52 clipboard writes, OSC 0 titles, CSI screen clears) are shown, never
  obeyed; so do the bidirectional overrides and isolates, which would reorder what is
  shown after them. Machine-readable output (`--json`) keeps text exact and never uses it.
- `counted(n, noun)`: a count with its noun in the right number for people to read
  ("1 line", "3 lines", "1 entry", "2 entries", "1,204 files").
"""

from __future__ import annotations

from smith._inert import inert
from smith.diagnostics import DiagnosticKind

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "MAX_DEPTH",
    "TEXT_REPLACED",
    "JsonInputError",
    "counted",
    "inert",
    "loads",
    "replace_surrogates",
]

# Deep enough for any real message, schema or argument; shallow enough that what is
# decoded can be encoded again (json, and the session's CBOR encoder, which takes 256
# levels while an entry wraps a value a few levels deep) without running out of stack.
MAX_DEPTH = 128

TEXT_REPLACED = DiagnosticKind(
    "text.replaced",
    severity="warning",
    what="{count} character(s) of {where} could not be encoded and were replaced with U+FFFD",
    why="they are lone UTF-16 surrogates (an unpaired \\uD800-\\uDFFF escape, or a byte "
    "that is not UTF-8), which no UTF-8 record, request or answer can hold",
    fix="nothing, if those characters do not matter; otherwise send valid Unicode from {where}",
)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and `noun`, plural unless `n` is 1: a `y` after a consonant becomes `ies`, an
    `s`, `x`, `ch` or `sh` takes `es`, and `plural` gives any other irregular one."""
    if n == 1:
        return f"1 {noun}"
    if plural is None:
        if noun.endswith("y") and noun[-2:-1] not in tuple("aeiou"):
            plural = noun[:-1] + "ies"
        elif noun.endswith(("s", "x", "ch", "sh")):
            plural = noun + "es"
        else:
            plural = noun + "s"
    return f"{n:,} {plural}"


class JsonInputError(ValueError):
    """JSON from outside that smith will not take: not JSON, or nested too deeply.
    Like json.JSONDecodeError it has `msg` and, where known, `lineno` and `colno`."""

    def __init__(self, msg: str, lineno: int = 1, colno: int = 1) -> None:
        super().__init__(
            msg if (lineno, colno) == (1, 1) else f"{msg}: line {lineno} column {colno}"
        )
        self.msg = msg
        self.lineno = lineno
        self.colno = colno


def loads(data: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """`json.loads` for input smith does not control: only ever raises `JsonInputError`
    (a ValueError), for text that is not JSON, not UTF-8, or nested more than
    `max_depth` arrays and objects deep. Lone surrogates are kept: see
    `replace_surrogates`."""
    import json

    if isinstance(data, bytes | bytearray):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonInputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        value = json.loads(data, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise JsonInputError(_too_deep(max_depth)) from None
    except json.JSONDecodeError as exc:
        raise JsonInputError(exc.msg, exc.lineno, exc.colno) from None
    if _depth_exceeds(value, max_depth):
        raise JsonInputError(_too_deep(max_depth))
    return value


def _no_constant(name: str) -> object:
    raise JsonInputError(f"{name} is not a JSON value")


def _finite(text: str) -> float:
    """A number as a float, refused when it does not fit one (1e400): echoed back, as an
    id or a diagnostic's value, it would be `Infinity`, which is not JSON."""
    import math

    value = float(text)
    if math.isinf(value):
        raise JsonInputError(f"the number {text[:40]} is out of range (beyond about ±1.8e308)")
    return value


def _too_deep(max_depth: int) -> str:
    return f"arrays and objects are nested more than {max_depth} deep"


def _depth_exceeds(value: object, limit: int) -> bool:
    """Whether containers nest more than `limit` deep, without recursion."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def replace_surrogates(value: Any) -> tuple[Any, int]:
    """`value` (text, or lists, tuples and dicts of it, keys included) with every lone
    surrogate replaced by U+FFFD, and how many were replaced. Containers are copied
    (tuples become lists) only when something was replaced; iterative, so any depth is
    safe."""
    if isinstance(value, str):
        return _fix_text(value)
    if not isinstance(value, dict | list | tuple):
        return value, 0
    count = 0
    root: Any = _copy(value)
    stack = [root]
    while stack:
        node = stack.pop()
        items = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        if isinstance(node, dict):
            node.clear()
        for key, child in items:
            new: Any = child
            if isinstance(child, str):
                new, n = _fix_text(child)
                count += n
            elif isinstance(child, dict | list | tuple):
                new = _copy(child)
                stack.append(new)
            name = key
            if isinstance(key, str):
                name, n = _fix_text(key)
                count += n
            node[name] = new
    return (value, 0) if count == 0 else (root, count)


def _copy(item: Any) -> Any:
    """A shallow, mutable copy of a container (tuples become lists)."""
    return dict(item) if isinstance(item, dict) else list(item)


def _fix_text(text: str) -> tuple[str, int]:
    if text.isascii():
        return text, 0
    import re

    return re.subn("[\ud800-\udfff]", "\ufffd", text)
