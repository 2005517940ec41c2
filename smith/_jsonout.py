"""Indented JSON for large outputs, byte for byte what `json.dumps(value, indent=2)`
writes, in a fraction of its time.

The standard library's C encoder is used only without `indent`; with it every value goes
through the pure-Python encoder (about 1.7 s for the 100,000 entries of a large session's
`sessions show --json`). orjson writes the same layout with OPT_INDENT_2 and the same
escapes as `ensure_ascii=False`; the characters past ASCII are then escaped as the
standard library does by default (DEL included). What orjson writes differently (floats: `1e16` for
`1e+16`, NaN as null; integers past 64 bits; non-string keys; lone surrogates, which it
refuses) is kept out of the fast path: `rows` takes only records whose fields the caller
knows to be strings, None, bools and int64 integers, and any value orjson refuses goes
through the standard library.
"""

from __future__ import annotations

import json
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

# json.dumps's ensure_ascii escapes DEL (0x7f) too; orjson writes it as it is.
_PAST_ASCII = re.compile(r"[^\x00-\x7e]")


def _escape(match: re.Match[str]) -> str:
    """A character past ASCII as json.dumps's default (ensure_ascii) writes it."""
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}"


def ascii_only(text: str) -> str:
    """Valid JSON text with DEL and every character past ASCII escaped (inside JSON text
    they can only be in strings), as json.dumps's default ensure_ascii=True writes them."""
    if text.isascii() and "\x7f" not in text:
        return text
    return _PAST_ASCII.sub(_escape, text)


def rows(items: Sequence[dict[str, object]], depth: int = 0) -> str:
    """`json.dumps(items, indent=2)`, as if nested `depth` levels deep in a document
    written with indent=2 (each line after the first indented 2*depth more). Each item's
    values must be str, int within 64 bits, bool or None: no floats (see the module)."""
    import orjson

    try:
        text = ascii_only(orjson.dumps(items, option=orjson.OPT_INDENT_2).decode())
    except TypeError:  # a lone surrogate, an integer past 64 bits: as the library does
        text = json.dumps(items, indent=2)
    return text.replace("\n", "\n" + "  " * depth) if depth else text


def with_rows(head: dict[str, object], key: str, items: Sequence[dict[str, object]]) -> str:
    """`json.dumps({**head, key: items}, indent=2)`: `head` by the standard library (any
    values), `items` (the bulk; values as `rows` takes them) by `rows`."""
    assert key not in head, key
    text = json.dumps({**head, key: []}, indent=2)
    if not items:
        return text
    tail = "[]\n}"
    assert text.endswith(tail), text[-20:]
    return text[: -len(tail)] + rows(items, depth=1) + "\n}"
