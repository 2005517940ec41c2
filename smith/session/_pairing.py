"""Pairing ids of messages, so that calls and results can be matched from the records
alone (no content decoded): a tool result's pairing id is its call's id; an assistant
message that makes tool calls has a pairing id listing them, each after a unit separator
(U+001F), which no result's id starts with.

Messages recorded before assistant messages carried their calls have none; readers fall
back to the content for them (smith.runtime's context pairs calls and results there).
"""

from __future__ import annotations

CALLS = "\x1f"
MAX_PAIR = 0xFFFE  # bytes a record's pairing id can hold


def calls_pair(ids: list[str]) -> str | None:
    """The pairing id of an assistant message making the calls `ids`; None when it makes
    none, or when they cannot be listed faithfully (an id holding the separator, or more
    ids than a record holds)."""
    if not ids or any(CALLS in i or not i for i in ids):
        return None
    pair = "".join(CALLS + i for i in ids)
    return pair if len(pair.encode("utf-8", "surrogateescape")) <= MAX_PAIR else None


def pair_calls(pair: str | None) -> list[str] | None:
    """The call ids an assistant message's pairing id lists; None for any other pairing
    id (a result's, an effect's) or none."""
    if not pair or pair[0] != CALLS:
        return None
    return pair.split(CALLS)[1:]
