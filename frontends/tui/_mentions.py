"""A user message as the user typed it: the files its `@path`s attached
(smith.runtime._attach) are text parts after the typed text, each wrapped in
`<attached path="..." lines="...">`, which the model reads and the user never wrote. The
transcript shows them as a line each ("read src/calc.py, 19 lines") and the /tree
navigator's labels leave them out; both ask here."""

from __future__ import annotations

import re
from typing import Any

_TAG = '<attached path="'
_FIELDS = re.compile(r'<attached path="([^"]*)" lines="([^"]*)"')


def _parts(message: dict[str, Any]) -> list[Any]:
    content = message.get("content", [])
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _attached(part: dict[str, Any], first: bool) -> bool:
    """Whether a text part is an attached file (never the typed text, which is first)."""
    return not first and str(part.get("text") or "").startswith(_TAG)


def typed_text(message: dict[str, Any]) -> str:
    """The text of a user message without the files its `@path`s attached."""
    out: list[str] = []
    for part in _parts(message):
        text = isinstance(part, dict) and part.get("type") == "text"
        if text and not _attached(part, not out):
            out.append(str(part.get("text") or ""))
    return "".join(out)


def _lines(lines: str) -> str:
    """`1-19 of 19` -> `19 lines`; a cut window as it is: `lines 1-2000 of 5000`."""
    window, _, total = lines.partition(" of ")
    if window == f"1-{total}" or (total == "0" and window.startswith("1-")):
        return f"{total} line{'s' * (total != '1')}"
    return f"lines {lines}"


def attachment_lines(message: dict[str, Any]) -> list[str]:
    """A line per file the message's `@path`s attached: "read src/calc.py, 19 lines"."""
    notes = message.get("attached")
    if isinstance(notes, list) and notes:
        out = []
        for note in notes:
            if not isinstance(note, dict):
                continue
            path = str(note.get("path") or "?")
            if note.get("image"):
                out.append(f"attached {path} (an image)")
            else:
                cut = ", cut" if note.get("cut") else ""
                out.append(f"read {path}, {_lines(str(note.get('lines') or ''))}{cut}")
        return out
    out, first = [], True  # no notes (an older record): what the parts' tags say
    for part in _parts(message):
        if isinstance(part, dict) and part.get("type") == "text":
            found = _FIELDS.match(str(part.get("text") or "")) if not first else None
            if found:
                out.append(f"read {found.group(1)}, {_lines(found.group(2))}")
            first = False
    return out


__all__ = ["attachment_lines", "typed_text"]
