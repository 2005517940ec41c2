"""A branch cursor: one session file written on several branches at once.

    child = Branch(session, at=call_entry.id)       # a cursor of its own at that entry
    child.append("message", {...})                  # under the cursor's leaf; moves it
    session.leaf                                     # unchanged: still the parent's

A `Session` is itself the cursor that follows the file's selection: its appends go
under the selected leaf and select the new entry. A `Branch` is a `Session` over the
same open file (the same arena, lock and descriptor) with a leaf of its own: its
appends go under that leaf and move only it, and are written ASIDE (an entry frame
flag), so the file's selected leaf changes only by a `select` on the session (or an
append at the selection). Reopening the file therefore selects what it did before the
branch was written: the last leaf frame, or the last entry appended at the selection,
never an entry written aside. Everything a `Session` reads relative to its leaf
(`branch()`, `entries_between`, `compaction_boundary`) reads the branch's own leaf, so
the runtime, the effect journal and file history work on a branch unchanged.

A Branch made `apart` starts its conversation after its fork point: `branch()` and
`branch_indices()` leave out the entries up to `at`, so a child agent's context,
effects and file history are its own, while the file still links its first entry to
`at`.
"""

from __future__ import annotations

from smith.session import _blobs
from smith.session._session import _MISSING, Entry, Session


class Branch(Session):
    """A cursor of its own over an open `session` (never closes it: its owner does)."""

    def __init__(self, session: Session, at: str | None, *, apart: bool = False) -> None:
        owner = session.session if isinstance(session, Branch) else session
        super().__init__(session.path, session.records, session.info, None, None)
        self._owner = owner
        self._write_lock = owner.exclusive()
        self.tail_backup = owner.tail_backup
        self.unread_meta = owner.unread_meta
        self._at = at
        if at is not None:
            self.entry(at)  # UNKNOWN_ENTRY if it is not here
        # The fork point of an `apart` branch: (its record index, its depth).
        self._base: tuple[int, int] | None = None
        if apart and at is not None:
            index = self.entry(at).index
            self._base = (index, len(self.records.path(index)))
        self.fork_point = at

    @property
    def session(self) -> Session:
        """The session this is a branch of (the cursor that follows the selection)."""
        return self._owner

    @property
    def leaf(self) -> str | None:
        """This branch's own leaf (the file's selection is `session.leaf`)."""
        return self._at

    def select(self, leaf: str, *, durable: bool = False) -> None:
        """Move this cursor to `leaf` (the file's selection is left as it is)."""
        self.entry(leaf)
        with self._write_lock:
            self._at = leaf

    def append(
        self,
        kind: str,
        content: object,
        *,
        parent: str | object | None = _MISSING,
        pair: str | None = None,
        id: str | None = None,
        ts: int | None = None,
        durable: bool = False,
    ) -> Entry:
        """Append an entry under `parent` (default: this branch's leaf), written aside,
        and move this cursor (only) to it."""
        with self._write_lock:
            entry = self._append(kind, content, parent, pair, id, ts, durable, False)
            self._at = entry.id
            return entry

    def branch_indices(self, leaf: str | None = None) -> memoryview:
        path = super().branch_indices(leaf)
        if self._base is not None:
            index, depth = self._base
            if len(path) >= depth and int(path[depth - 1]) == index:
                return path[depth:]
        return path

    # -- the file is the owner's ------------------------------------------------------

    def _write(self, frame: bytes, durable: bool) -> None:
        self._owner._write(frame, durable)

    def sync(self) -> None:
        self._owner.sync()

    def close(self) -> None:
        """Nothing: the file stays open for its session, which closes it."""

    @property
    def blobs(self) -> _blobs.Blobs:
        return self._owner.blobs

    def clone(self, path: str, *, name: str | None = None, id: str | None = None) -> Session:
        return self._owner.clone(path, name=name, id=id)

    def __repr__(self) -> str:
        return f"<Branch of {self.id} at {self._at}>"


__all__ = ["Branch"]
