"""A session's entries as a tree of branches, for the /tree navigator.

Linear runs collapse: a run is a chain of entries that each have one child, ending at a
branch point (two or more children) or a leaf. The navigator shows runs and, inside an
opened run, its user turns; nothing else becomes a node.

It must stay fast at 100,000 entries, so the shape comes from the session's records
alone (parent links are integers in the arena: one pass of a few tens of milliseconds)
and content is decoded only for what is shown: a run's first prompt, and its turns a page
at a time, newest first, when it is opened.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from smith.diagnostics import SmithError
from smith.text import inert

from ._mentions import typed_text

if TYPE_CHECKING:
    from smith.runtime import SessionTree

PAGE = 100  # turns decoded and shown at a time when a run is opened
PROMPT_SCAN = 64  # entries looked through for a run's first prompt
LABEL = 70  # characters of a prompt in a label


@dataclass(frozen=True, slots=True)
class Spot:
    """What a navigator node stands for.

    run: the run starting at entry `index` (Enter: its newest leaf, `target`);
    turn: the user message at `index` (Enter: the last entry of that turn, `target`);
    more: older turns of the run at `run`, continuing at entry `index`.
    """

    kind: Literal["run", "turn", "more"]
    index: int
    target: int
    run: int = -1
    text: str = ""  # a turn's prompt


class BranchMap:
    """The tree's shape over entry indices, and labels decoded on demand."""

    def __init__(self, tree: SessionTree) -> None:
        # The arena's integer links, not Entry objects: 100,000 of those cost 0.1 s.
        self._tree = tree
        self._arena = arena = tree.records
        n = len(arena)
        parent = [arena.parent(i) for i in range(n)]
        child = [-1] * n  # the last child appended (the only one, in a run)
        forks: dict[int, list[int]] = {}  # branch point -> its children, oldest first
        newest = list(range(n))  # the newest entry below each one: always a leaf
        for i, p in enumerate(parent):
            if p >= 0:
                if child[p] >= 0:
                    forks.setdefault(p, [child[p]]).append(i)
                child[p] = i
        # A child is appended after its parent, so one backward pass settles `newest`.
        for i in range(n - 1, -1, -1):
            p = parent[i]
            if p >= 0 and newest[i] > newest[p]:
                newest[p] = newest[i]
        self._parent, self._child, self._forks, self._newest = parent, child, forks, newest
        self.roots = [i for i, p in enumerate(parent) if p < 0]
        leaf = tree.leaf
        self.leaf = tree.leaf_index
        self.path = set(arena.path(self.leaf).tolist()) if leaf is not None else set()
        self.decoded = 0  # entries whose content was decoded (the cost that matters)
        self._ends: dict[int, tuple[int, int]] = {}

    def id(self, i: int) -> str:
        return self._arena.id(i)

    def end(self, start: int) -> tuple[int, int]:
        """The last entry of the run from `start`, and the run's length."""
        if start not in self._ends:
            i, length = start, 1
            while i not in self._forks and self._child[i] >= 0:
                i = self._child[i]
                length += 1
            self._ends[start] = (i, length)
        return self._ends[start]

    def branches(self, start: int) -> list[int]:
        """The runs that follow the run from `start` (none if it ends at a leaf)."""
        return self._forks.get(self.end(start)[0], [])

    def newest(self, i: int) -> int:
        return self._newest[i]

    def holds_leaf(self, start: int, last: int) -> bool:
        """Whether the chain from `start` to `last` holds the selected entry."""
        return start in self.path and (last == self.leaf or last not in self.path)

    def on_path(self, i: int) -> bool:
        return i in self.path

    # -- content -----------------------------------------------------------------------

    def _user_text(self, i: int) -> str | None:
        """The text of a user message at entry i; None for any other entry."""
        arena = self._arena
        if arena.kind(i) != "message" or arena.pair(i) is not None:
            return None  # tool results carry their call's id; nothing else is a prompt
        self.decoded += 1
        try:
            content = self._tree.at(i).content
        except SmithError:
            return None
        if not isinstance(content, dict) or content.get("role") != "user":
            return None
        return typed_text(content)  # as typed: not the files its @paths attached

    def prompt(self, start: int) -> str | None:
        """The first prompt of the run from `start`, if one is near its start."""
        end, _ = self.end(start)
        i = start
        for _ in range(PROMPT_SCAN):
            text = self._user_text(i)
            if text is not None:
                return text
            if i == end:
                break
            i = self._child[i]
        return None

    def turns(self, run: int, at: int) -> tuple[list[Spot], int | None]:
        """Up to PAGE user turns of the run from `run`, walking back from entry `at`
        (its end on the first page), oldest first; and where older ones continue."""
        found: list[Spot] = []
        last = at  # the last entry of the turn being walked back through
        i = at
        while True:
            text = self._user_text(i)
            if text is not None:
                found.append(Spot("turn", i, last, text=text))
                last = self._parent[i]
                if len(found) == PAGE:
                    found.reverse()
                    return found, (last if i != run else None)
            if i == run:
                break
            i = self._parent[i]
        found.reverse()
        return found, None


def label(text: str | None) -> str:
    """A prompt as a one-line label."""
    if text is None:
        return "(no prompt)"
    first = inert(text.strip().splitlines()[0] if text.strip() else "")
    return first if len(first) <= LABEL else first[: LABEL - 1] + "…"
