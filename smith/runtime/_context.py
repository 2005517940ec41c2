"""What the provider sees: the selected branch's messages, after the latest compaction,
under a context policy.

Policies:
- `full`: every message since the compaction boundary.
- `window`: the most recent messages within a bound of `messages`, `chars` or estimated
  `tokens`. A window only ever starts at a user or assistant message, never at a tool
  result, so a result is never separated from the call that asked for it.
Summary compaction (smith.runtime._compaction) is the third policy: a `compaction` entry
stands for everything before the message it keeps first.

A tool result is sent as the model first saw it (`as_presented`): when a plugin replaced
its text, the replacement, so a resumed or replayed session sends what was sent before.

Besides `message` entries, the context holds the notes the runtime recorded for the model
(`NOTE_KINDS`: the environment block, instruction files of directories reached later,
the output of the user's own `!command`s),
each sent at its place in the history as a user-role message marked `context`
(docs/context.md).
"""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass
from itertools import repeat

from smith.session import Session, content_size

BULK = 64  # messages counted at once from which the token count runs as a loop in C

OFF_LOOP = 2_000  # entries: a history this long is first decoded in a worker thread
NOTE_KINDS = ("environment", "instructions", "shell")  # entries sent as context messages
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
    """A provider-independent estimate: about four bytes of the message's canonical CBOR
    a token. The same figure comes from a recorded message's stored size (`size_tokens`),
    so a context is counted from the session's records without decoding it."""
    return size_tokens(content_size(message))


def size_tokens(size: int) -> int:
    """The estimate for a message whose content takes `size` bytes as canonical CBOR."""
    return max(size, 0) // 4 + 1


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
    compaction or a damaged frame) is left out. Well-paired input comes back unchanged.

    A result answers the latest call with its id before it: servers that number calls
    give every turn a call_1, so an id alone does not say which call a result is for."""
    from smith.effects import lost_result

    open_: dict[str, tuple[int, str]] = {}  # call id -> (position of its message, id)
    answers: dict[tuple[int, str], tuple[str, dict[str, object]]] = {}
    for at, (eid, message) in enumerate(messages):
        if message.get("role") == "tool_result":
            call = open_.pop(str(message.get("tool_call_id")), None)
            if call is not None:
                answers[call] = (eid, message)
            continue
        for cid, _ in _call_ids(message):
            open_[cid] = (at, cid)  # an earlier call with this id stays unanswered
    out: list[tuple[str, dict[str, object]]] = []
    for at, (eid, message) in enumerate(messages):
        if message.get("role") == "tool_result":
            continue  # placed after its call below
        out.append((eid, message))
        for cid, name in _call_ids(message):
            found = answers.get((at, cid))
            out.append(found if found is not None else (eid, lost_result(cid, name, False)))
    return out


class ContextCache:
    """What the provider is sent, decoded only as far as a request reaches.

    The branch's messages since the compaction boundary are known from the records:
    their indices and each one's estimated tokens (from its stored size), so counting the
    context decodes nothing. A request decodes messages from the newest back, only as many
    as fit the bound it gives (the model's context window); the decoded part is kept, and
    when the branch has only grown just the new entries are read. Another branch or a new
    compaction starts again from the records.
    """

    def __init__(self) -> None:
        self._leaf: str | None = None
        self._depth = 0  # entries on the path to the leaf
        self._leaf_index = -1
        self._summary: tuple[str, dict[str, object]] | None = None
        self._indices: list[int] = []  # record indices of the messages since the boundary
        self._tokens: list[int] = []  # the estimate of each
        self._notes: list[int] = []  # those of them that are notes (NOTE_KINDS)
        self._total = 0
        # Decoded: messages [_from:] as (entry id, message), None where a message gives
        # the provider nothing (an empty failure, content that is not a message).
        self._from = 0
        self._items: list[tuple[str, dict[str, object]] | None] = []

    @property
    def built(self) -> bool:
        """Whether anything of the context has been decoded yet (by a request)."""
        return self._leaf is not None and self._from < len(self._indices)

    def notes(self, session: Session) -> list[int]:
        """Record indices of the notes (NOTE_KINDS entries) in the context, oldest first,
        from the records alone."""
        self._sync(session)
        return list(self._notes)

    def tokens(self, session: Session) -> int:
        """The estimated tokens of the whole context (for automatic compaction and status
        lines), from the records alone."""
        self._sync(session)
        return self._total + (estimate_tokens(self._summary[1]) if self._summary else 0)

    def get(
        self, session: Session, within: int | None = None
    ) -> list[tuple[str, dict[str, object]]]:
        """(entry id, message) as the provider gets them: all of them, or with `within`
        (estimated tokens) only the newest that fit, starting at a user or assistant
        message; the compaction summary, if any, always first."""
        self._sync(session)
        start = self._start(within)
        self._decode(session, start)
        items = [m for m in self._items[start - self._from :] if m is not None]
        if start > 0:
            while len(items) > 1 and not can_start(items[0][1]):
                items.pop(0)
        if self._summary is not None:
            items.insert(0, self._summary)
        return paired(items)

    async def prepare(self, session: Session, within: int | None = None) -> None:
        """Decode what `get(session, within)` needs in a worker thread (holding the session
        against appends) when it is long, rather than on the event loop: the first
        request of a 100,000-entry session would otherwise stall every frontend."""
        self._sync(session)
        start = self._start(within)
        if self._from - start > OFF_LOOP:
            import asyncio

            leaf, until = self._leaf, self._from

            def work() -> list[tuple[str, dict[str, object]] | None]:
                with session.exclusive():
                    return [self._read(session, i) for i in self._indices[start:until]]

            items = await asyncio.to_thread(work)
            if leaf == self._leaf and until == self._from:  # nothing rebuilt meanwhile
                self._items[:0] = items
                self._from = start

    # -- from the records ------------------------------------------------------------

    def _start(self, within: int | None) -> int:
        """The first message that fits `within` tokens, counting from the newest (which
        is always included)."""
        n = len(self._indices)
        if within is None or not n:
            return 0
        budget = within - (estimate_tokens(self._summary[1]) if self._summary else 0)
        i, used = n - 1, self._tokens[n - 1]
        while i > 0 and used + self._tokens[i - 1] <= budget:
            i -= 1
            used += self._tokens[i]
        return i

    def _sync(self, session: Session) -> None:
        leaf = session.leaf
        if leaf == self._leaf:
            return
        path = session.branch_indices()
        grown = (
            self._leaf is not None
            and len(path) > self._depth
            and int(path[self._depth - 1]) == self._leaf_index
        )
        records = session.records
        new = path[self._depth :] if grown else path
        if not grown or len(records.of_kind("compaction", new)):
            self._rebuild(session, path)
        else:
            decoded = self._from < len(self._indices)
            found = self._add(session, new)
            if decoded:
                self._items += [self._read(session, i) for i in found]
            else:
                self._from = len(self._indices)
        self._leaf, self._depth = leaf, len(path)
        self._leaf_index = int(path[-1]) if len(path) else -1

    def _rebuild(self, session: Session, path: memoryview) -> None:
        records = session.records
        self._summary, self._indices, self._tokens, self._total = None, [], [], 0
        self._notes.clear()
        compactions = records.of_kind("compaction", path)
        start = 0
        if len(compactions):
            at = int(compactions[-1])
            content = session.at(at).content
            assert isinstance(content, dict)
            # Depths from the path's first entry (a child's branch starts at its fork).
            base = len(records.path(int(path[0]))) - 1
            start = len(records.path(at)) - base  # just after the compaction entry
            kept = records.index(str(content.get("first_kept")))
            if kept >= 0:
                depth = len(records.path(kept)) - 1 - base
                if depth < len(path) and int(path[depth]) == kept:
                    start = depth
            self._summary = (records.id(at), summary_message(str(content.get("summary", ""))))
        self._add(session, path[start:])
        self._from, self._items = len(self._indices), []

    def _add(self, session: Session, among: memoryview) -> list[int]:
        """Add the context entries among these path indices; returns their indices."""
        records = session.records
        found = records.of_kind("message", among)
        if len(found) < len(among):  # other kinds here: notes, perhaps (they are rare)
            notes = [i for k in NOTE_KINDS for i in records.of_kind(k, among).tolist()]
            if notes:
                self._notes += sorted(notes)
                # In path order: indices grow along a path.
                indices = sorted([*found.tolist(), *notes])
                sizes = [records.content_size(i) for i in indices]
                return self._count(indices, sizes)
        return self._count(found.tolist(), records.content_sizes(found).tolist())

    def _count(self, indices: list[int], sizes: list[int]) -> list[int]:
        # size_tokens, inline: this runs once per message of a resumed session (at
        # 100,000 messages a loop in C, 5 ms; a size below 0, over the bound, counts 1).
        # A turn's few new messages take the comprehension: the maps and repeats would
        # be 8 allocations more on every turn (tests/memory_counts.py's turn.idle).
        if len(sizes) > BULK and min(sizes) >= 0:
            tokens = list(map(operator.add, map(operator.floordiv, sizes, repeat(4)), repeat(1)))
        else:
            tokens = [max(s, 0) // 4 + 1 for s in sizes]
        self._indices += indices
        self._tokens += tokens
        self._total += sum(tokens)
        return indices

    def _decode(self, session: Session, start: int) -> None:
        if start < self._from:
            self._items[:0] = [self._read(session, i) for i in self._indices[start : self._from]]
            self._from = start

    def _read(self, session: Session, index: int) -> tuple[str, dict[str, object]] | None:
        entry = session.at(index)
        message = entry.content
        if self._notes and index in self._notes:
            text = message.get("text") if isinstance(message, dict) else None
            return (entry.id, note_message(entry.kind, text)) if isinstance(text, str) else None
        if isinstance(message, dict) and not is_empty_failure(message):
            return entry.id, as_presented(message)
        return None


def note_message(kind: str, text: str) -> dict[str, object]:
    """A recorded note (environment, instructions) as the model is sent it: a user-role
    message marked `context`, so a provider sends it as part of the user's turn and
    whatever reads the conversation knows the user did not type it."""
    return {"role": "user", "context": kind, "content": [{"type": "text", "text": text}]}


def as_presented(message: dict[str, object]) -> dict[str, object]:
    """A recorded message as the model was shown it: a tool result whose text a plugin
    replaced (`presented`, smith.sdk ReplaceResult) carries that text instead of the
    tool's own output, which stays in the record; anything else as it is."""
    shown = message.get("presented")
    if not isinstance(shown, dict):
        return message
    sent = {k: v for k, v in message.items() if k != "presented"}
    sent["content"] = [{"type": "text", "text": str(shown.get("text", ""))}]
    return sent


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
