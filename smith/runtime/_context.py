"""What the provider sees: the selected branch's messages, after the latest compaction,
under a context policy.

Policies:
- `full`: every message since the compaction boundary.
- `window`: the most recent messages within a bound of `messages`, `chars` or estimated
  `tokens`. A window only ever starts at a user or assistant message, never at a tool
  result, so a result is never separated from the call that asked for it.
Summary compaction (smith.runtime._compaction) is the third policy: a `compaction` entry
stands for everything before the message it keeps first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from smith.session import Session

OFF_LOOP = 2_000  # entries: a history this long is first decoded in a worker thread
SUMMARY_PREFIX = "The conversation so far, summarised (earlier messages are not shown):\n\n"


@dataclass(frozen=True, slots=True)
class ContextPolicy:
    kind: str = "full"  # full | window
    unit: str = "messages"  # messages | chars | tokens (window only)
    limit: int = 0

    def __post_init__(self) -> None:
        if self.kind not in ("full", "window"):
            raise ValueError(f"context policy must be full or window, not {self.kind!r}")
        if self.kind == "window" and (self.unit not in ("messages", "chars", "tokens")):
            raise ValueError(
                f"a window is measured in messages, chars or tokens, not {self.unit!r}"
            )
        if self.kind == "window" and self.limit <= 0:
            raise ValueError("a window needs a positive limit")


def estimate_tokens(message: dict[str, object]) -> int:
    """A provider-independent estimate: about four characters a token."""
    return len(json.dumps(message, ensure_ascii=False)) // 4 + 1


def _size(message: dict[str, object], unit: str) -> int:
    if unit == "messages":
        return 1
    if unit == "chars":
        return len(json.dumps(message, ensure_ascii=False))
    return estimate_tokens(message)


def can_start(message: dict[str, object]) -> bool:
    """A context may begin here without orphaning a tool result."""
    return message.get("role") in ("user", "assistant")


def is_empty_failure(message: dict[str, object]) -> bool:
    """An assistant message that failed or was aborted before saying anything: recorded,
    but it gives the model nothing to continue from."""
    return (
        message.get("role") == "assistant"
        and message.get("stop") in ("error", "abort")
        and not message.get("content")
    )


def branch_messages(session: Session) -> list[tuple[str, dict[str, object]]]:
    """(entry id, message) on the selected branch since the compaction boundary, with the
    boundary's summary first."""
    path = session.branch()
    boundary = session.compaction_boundary()
    out: list[tuple[str, dict[str, object]]] = []
    start = 0
    if boundary is not None:
        ids = [entry.id for entry in path]
        at = ids.index(boundary)
        content = path[at].content
        assert isinstance(content, dict)
        first_kept = content.get("first_kept")
        start = ids.index(str(first_kept)) if first_kept in ids else at + 1
        out.append((boundary, summary_message(str(content.get("summary", "")))))
    for entry in path[start:]:
        if entry.kind != "message":
            continue
        message = entry.content
        if isinstance(message, dict) and not is_empty_failure(message):
            out.append((entry.id, message))
    return paired(out)


def _call_ids(message: dict[str, object]) -> list[tuple[str, str]]:
    """(id, name) of each tool call an assistant message makes."""
    parts = message.get("content")
    if message.get("role") != "assistant" or not isinstance(parts, list):
        return []
    return [
        (str(p.get("id")), str(p.get("name")))
        for p in parts
        if isinstance(p, dict) and p.get("type") == "tool_call"
    ]


def paired(
    messages: list[tuple[str, dict[str, object]]],
) -> list[tuple[str, dict[str, object]]]:
    """`messages` as every provider accepts them: each assistant message with tool calls
    followed at once by one result per call, and no result without its call. A result
    recorded later (after other messages) moves up to its call, a call with no result
    gets one saying its outcome is unknown, and a result whose call is gone (cut by
    compaction or a damaged frame) is left out. Well-paired input comes back unchanged."""
    from smith.effects import lost_result

    results = {
        str(m.get("tool_call_id")): (eid, m)
        for eid, m in messages
        if m.get("role") == "tool_result"
    }
    out: list[tuple[str, dict[str, object]]] = []
    for eid, message in messages:
        if message.get("role") == "tool_result":
            continue  # placed after its call below
        out.append((eid, message))
        for cid, name in _call_ids(message):
            found = results.pop(cid, None)
            out.append(found if found is not None else (eid, lost_result(cid, name, False)))
    return out


class ContextCache:
    """`branch_messages`, decoded once: when the branch has only grown since the last
    call, just the new entries are decoded; another branch or a new compaction rebuilds.
    A long session therefore costs each turn what that turn added, not its history."""

    def __init__(self) -> None:
        self._leaf: str | None = None
        self._messages: list[tuple[str, dict[str, object]]] = []
        self._tokens: list[int] = []  # estimates, filled in as they are asked for

    async def prepare(self, session: Session) -> None:
        """Decode a long history in a worker thread (holding the session against appends)
        rather than on the event loop: the first request of a 100,000-entry session would
        otherwise stall every frontend for a second or more."""
        if self._leaf is None and len(session) > OFF_LOOP:
            import asyncio

            def build() -> None:
                with session.exclusive():
                    self.tokens(session)  # decodes, and counts for the status line

            await asyncio.to_thread(build)

    @property
    def built(self) -> bool:
        """Whether the context has been decoded yet (by a request or a count)."""
        return self._leaf is not None

    def tokens(self, session: Session) -> int:
        """The estimated tokens of the whole context (for automatic compaction)."""
        messages = self.get(session)
        del self._tokens[len(messages) :]
        self._tokens += [estimate_tokens(m) for _, m in messages[len(self._tokens) :]]
        return sum(self._tokens)

    def get(self, session: Session) -> list[tuple[str, dict[str, object]]]:
        leaf = session.leaf
        if leaf is None:
            return []
        if leaf == self._leaf:
            return self._messages
        new = session.entries_between(self._leaf, leaf) if self._leaf is not None else None
        if new is None or any(entry.kind == "compaction" for entry in new):
            self._messages = branch_messages(session)
            self._tokens = []
        else:
            for entry in new:
                message = entry.content if entry.kind == "message" else None
                if isinstance(message, dict) and not is_empty_failure(message):
                    self._messages.append((entry.id, message))
        self._leaf = leaf
        return self._messages


def summary_message(summary: str) -> dict[str, object]:
    return {"role": "user", "content": [{"type": "text", "text": SUMMARY_PREFIX + summary}]}


def apply_policy(
    messages: list[tuple[str, dict[str, object]]], policy: ContextPolicy
) -> list[tuple[str, dict[str, object]]]:
    if policy.kind == "full" or not messages:
        return messages
    total = 0
    start = len(messages)
    for i in range(len(messages) - 1, -1, -1):
        total += _size(messages[i][1], policy.unit)
        if total > policy.limit and start < len(messages):
            break
        if can_start(messages[i][1]):
            start = i
    return messages[start:]
