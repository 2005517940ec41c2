"""What `/resume` lists of a project's sessions: each by its first prompt (or the name the
user gave it), with how long ago it was last written and its size, newest first; a
session with no message yet (opened and left) is not listed."""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from smith.session import Session

WIDTH = 56  # characters of the first prompt shown
# The names smith gives sessions itself (smith.runtime.session_name, and forks of them):
# a label and the time; a name the user gave (`--session NAME`) is anything else.
_GIVEN = re.compile(r"(fork of )*\S+ \d{4}-\d\d-\d\d \d\d:\d\d:\d\d( .*)?")


def first_prompt(session: Session) -> str | None:
    """The first line of the first thing the user said in `session`; None if nothing."""
    for entry in session.entries("message"):
        content = entry.content
        if not isinstance(content, dict) or content.get("role") != "user":
            continue
        parts = content.get("content")
        texts = [parts] if isinstance(parts, str) else [
            p.get("text") for p in parts or [] if isinstance(p, dict) and p.get("type") == "text"
        ]  # fmt: skip
        for text in texts:
            if isinstance(text, str) and text.strip():
                return text.strip().splitlines()[0]
        return ""
    return None


def given_name(session: Session) -> str | None:
    """The session's name when the user gave it, not one smith made up."""
    return given(session.name)


def given(name: str | None) -> str | None:
    """`name` when the user gave it, not one smith made up."""
    return name if name and not _GIVEN.fullmatch(name) else None


def age(seconds: float) -> str:
    if seconds < 60:
        return "just now"
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes} min ago"
    hours = minutes // 60
    if hours < 24:
        return f"{hours} h ago"
    days = hours // 24
    return "yesterday" if days == 1 else f"{days} days ago"


def size(messages: int, nbytes: int) -> str:
    unit = f"{nbytes / 1024:.0f} KB" if nbytes < 1024 * 1024 else f"{nbytes / 1048576:.1f} MB"
    return f"{messages} message{'' if messages == 1 else 's'}, {unit}"


def label(session: Session, mtime: float, nbytes: int, now: float | None = None) -> str | None:
    """The row of `session` in /resume's list; None for a session without messages."""
    from smith.text import inert

    prompt = first_prompt(session)
    if prompt is None:
        return None
    messages = sum(1 for _ in session.entries("message"))
    said = inert(prompt)
    said = said if len(said) <= WIDTH else said[: WIDTH - 1] + "…"
    name = given_name(session)
    title = f"{inert(name)}: {said}" if name else said or "(no text)"
    when = age(max(0.0, (time.time() if now is None else now) - mtime))
    return f"{title}  · {when} · {size(messages, nbytes)}"


__all__ = ["age", "first_prompt", "given_name", "label", "size"]
