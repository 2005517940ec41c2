"""The session as frontends reach it: the runtime's operations (ops.SessionInfo, Entries,
Tree, Select, Fork) and its `entry` event, never the Session object itself; and the
project's sessions as the assembly hands them out (ProjectSessions: new, open, latest,
listing, fork, a temporary store, a file read for replay or a dump).

What the app draws comes from `Entries`: the entries of some kinds on a branch, since an
entry already shown, or the whole branch read from the records in bulk. At 100,000
entries the first frame was about 300 ms, mostly per-entry Python: an Entry made for
every entry of the branch, its kind, id and pairing each read through a property. Here
the wanted kinds are found from the records (Arena.of_kind), only their entries are made,
and ids and pairings are read in one pass each.
"""

from __future__ import annotations

import array
import os
from itertools import repeat

from smith.session import Entry, Session, SessionStore, new_session_id

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

    from smith.diagnostics import Diagnostic


class Shown:
    """Entries of a branch in branch order, with their ids and pairings (a tool result's
    call id, else None). `whole`: they are the whole branch from its root (no `since`, or
    `since` is not on the branch), else only what follows `since`; `leaf`: the branch's
    last entry (None: the session is empty)."""

    __slots__ = ("entries", "ids", "leaf", "pairs", "whole")

    def __init__(
        self,
        entries: list[Entry],
        ids: list[str],
        pairs: Sequence[str | None],
        leaf: str | None,
        whole: bool,
    ) -> None:
        self.entries = entries
        self.ids = ids
        self.pairs = pairs
        self.leaf = leaf
        self.whole = whole


def entries(
    session: Session, since: str | None, leaf: str | None, kinds: Iterable[str] | None
) -> Shown:
    """The entries of `kinds` (None: all) on the branch ending at `leaf` (None: the
    selected one), after `since` when it is on that branch."""
    leaf = session.leaf if leaf is None else leaf
    if leaf is None:
        return Shown([], [], [], None, True)
    wanted = None if kinds is None else frozenset(kinds)
    if since is not None and (new := session.entries_between(since, leaf)) is not None:
        found = [e for e in new if wanted is None or e.kind in wanted]
        return Shown(found, [e.id for e in found], [e.pair for e in found], leaf, False)
    records = session.records
    path = session.branch_indices(leaf)
    if wanted is None:
        indices = path.tolist()
    else:  # indices grow along a path (a parent is always earlier): sorted is branch order
        indices = sorted([i for kind in wanted for i in records.of_kind(kind, path).tolist()])
    pairs = records.pairs(memoryview(array.array("q", indices)))
    made = list(map(Entry, repeat(records), indices))  # as session.at(i) makes them
    return Shown(made, list(map(records.id, indices)), pairs, leaf, True)


def info(session: Session) -> dict[str, object]:
    """What a frontend shows of the session: its id, name, file, entry count, selected
    leaf and the directory it was started in."""
    return {
        "id": session.id,
        "name": session.name,
        "path": session.path,
        "entries": len(session),
        "leaf": session.leaf,
        "cwd": session.info.get("cwd"),
    }


class Tree:
    """The shape of every branch of a session, for a navigator: the records (integer
    parent links; content decoded only for what is shown) and the selected leaf."""

    __slots__ = ("_session", "id", "leaf", "leaf_index", "name", "records")

    def __init__(self, session: Session) -> None:
        self._session = session
        self.id = session.id
        self.name = session.name
        self.records = session.records
        self.leaf = session.leaf
        self.leaf_index = session.entry(self.leaf).index if self.leaf is not None else -1

    def at(self, index: int) -> Entry:
        return self._session.at(index)

    def leaves(self) -> list[Entry]:
        """The tips of the branches, oldest first."""
        children = self._session.children()
        return [e for e in self._session.entries() if not children.get(e.id)]

    def branch(self, leaf: str) -> list[Entry]:
        """The entries from the root to `leaf`."""
        return self._session.branch(leaf)

    def children(self) -> dict[str | None, list[str]]:
        return self._session.children()

    def all(self) -> Iterable[Entry]:
        return self._session.entries()


def fork(session: Session, at: str | None = None, name: str | None = None) -> Session:
    """A new session file beside `session` holding its branch up to `at` (default: its
    selected leaf; an id not in it is session.unknown-entry), named `name` (default:
    "fork of" its name)."""
    at = session.leaf if at is None else at
    if at is not None:
        session.entry(at)
    new_id = new_session_id()
    suffix = os.path.splitext(session.path)[1]
    path = os.path.join(os.path.dirname(session.path), new_id + suffix)
    return session.fork(path, at=at, name=name or f"fork of {session.name or session.id}",
                        id=new_id)  # fmt: skip


class ProjectSessions:
    """This project's sessions, as frontends get them from the assembly
    (`Assembly.sessions`; they open no session file themselves): a new one, one by id,
    the latest, the files newest first, a fork, and a file read without the lock
    (listings, replay, MCP's resources)."""

    def __init__(
        self, home: str, project: str, *, warn: Callable[[Diagnostic], None] | None = None
    ) -> None:
        self.project = project
        self.store = SessionStore(home, warn=warn)

    def new(self, name: str) -> Session:
        return self.store.create(name=name, cwd=self.project)

    def latest(self) -> Session | None:
        path = self.store.latest(self.project)
        return Session.open(path) if path is not None else None

    def open(self, which: str) -> Session:
        """The session `which` names (an id or id prefix, this project's first; or its
        file), open for writing."""
        return Session.open(
            which if os.path.isabs(which) else self.store.lookup(which, self.project)
        )

    @staticmethod
    def in_memory(info: dict[str, object]) -> Session:
        """An empty session held in memory only, with `info` as its header (replay's
        view, into which the recorded entries are played)."""
        return Session.from_entries([], info=info)

    @staticmethod
    def read(path: str) -> Session:
        """The session at `path`, read whole and not locked (nothing is written to it)."""
        return Session.load(path)

    def find(self, id: str) -> str:
        """The file of the session with exactly this id, in any project (session.not-found)."""
        return self.store.find(id)

    @staticmethod
    def dump(session: Session) -> Iterator[str]:
        """The session as JSONL lines (`smith sessions dump`)."""
        from smith.session import dump

        return dump(session)

    def paths(self, *, every_project: bool = False) -> list[str]:
        """Session files, newest first: this project's, or every project's."""
        return self.store.paths() if every_project else self.store.paths_for_project(self.project)

    def fork(self, session: Session, at: str | None = None, name: str | None = None) -> Session:
        return fork(session, at, name)
