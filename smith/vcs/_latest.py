"""Which session the project's latest file change belongs to: what `smith undo`, `redo`,
`history`, `diff` and `restore` act on when no session is named.

Each session keeps its own undo stack, but the user thinks of the project's: after a turn
in the app and a later `smith eval` that changed nothing, `smith undo` means the app's
turn. The shadow repository already orders every change of the project, whichever
session made it: each snapshot and operation is a commit on its one branch, newest
first, whose message names its session (`Session: ID`). So the answer is found by
walking back from the branch's head and reading only the sessions met on the way (each
once), usually one: the cost follows the changes walked, not the number of sessions.

- undo: the session of the newest commit that recorded what its session's next undo
  takes back (that unit's last snapshot, its restore, or a redo of it): the newest
  change not undone yet;
- redo: the session of the newest undo whose unit is still that session's next redo,
  looking back past redos and changes made outside smith, never past a new turn or a
  restore (as in an editor, a new change ends what can be redone);
- history (and diff, restore): the session undo would act on, else the session of the
  newest commit.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from smith.vcs import _model

if TYPE_CHECKING:
    from collections.abc import Iterator

    import pygit2

    from smith.session import SessionStore
    from smith.vcs._settings import HistorySettings

MAX_WALK = 10_000  # commits looked at, at most (gc keeps vcs.keep-count, 1000 by default)


class _Undo:
    """What one session's undo stacks say of the commits that name it."""

    __slots__ = ("effects", "stacks")

    def __init__(self, records: list[_model.Record]) -> None:
        self.stacks = _model.Stacks(records)
        # effect id -> (op, the unit it acted on or the restore's own entry)
        self.effects: dict[str, tuple[str, str]] = {}
        for entry, content in records:
            op, effect = content.get("op"), content.get("effect")
            if op in ("undo", "redo", "restore") and isinstance(effect, str):
                unit = content.get("unit") if op != "restore" else entry.id
                self.effects[effect] = (str(op), str(unit))

    def made(self, unit: _model.Unit, commit: _Commit) -> bool:
        """Whether `commit` recorded the state `unit` left (its last snapshot, the
        restore itself, or a redo of it)."""
        if commit.kind == "after":
            return commit.entry == unit.last
        acted = self.effects.get(commit.effect or "")
        return acted is not None and acted[0] in ("redo", "restore") and acted[1] == unit.id

    def next_undo(self, commit: _Commit) -> bool:
        done = self.stacks.done
        return bool(done) and self.made(done[-1], commit)

    def next_redo(self, commit: _Commit) -> bool:
        undone = self.stacks.undone
        acted = self.effects.get(commit.effect or "")
        return bool(undone) and acted == ("undo", undone[-1].id)


class _Commit:
    """What a snapshot commit's message says (see FileHistory.record, _ops._operate)."""

    __slots__ = ("effect", "entry", "kind", "session")

    def __init__(self, kind: str, session: str, entry: str | None, effect: str | None) -> None:
        self.kind = kind  # undo, redo, restore, or a snapshot's phase: before, after, user
        self.session = session
        self.entry = entry
        self.effect = effect


def latest_session(
    settings: HistorySettings, store: SessionStore, root: str, op: str
) -> str | None:
    """The file of the session `op` (undo, redo, or anything else: history) acts on by
    default in project `root`; None when the history names no session that still
    exists. When nothing is left to undo or redo, the session of the newest change."""
    from smith.vcs._repo import ShadowRepo

    repo = ShadowRepo.open(settings.home, root, create=False)  # by the real path
    if repo is None:
        return None
    read: dict[str, _Undo | None] = {}
    newest: str | None = None
    # Read without the repository's lock: a reference is replaced whole, and a running
    # snapshot must not hold up a command that only looks.
    for commit in _commits(repo.repo, repo.head()):
        path = _path(store, commit.session, root)
        if commit.session not in read:
            read[commit.session] = _undo(path)
        undo = read[commit.session]
        if undo is None or path is None:
            continue  # the session is gone (removed) or cannot be read
        newest = newest or path
        if op == "redo":
            if commit.kind in ("after", "restore"):
                break  # a new change: nothing before it can be redone
            if commit.kind == "undo" and undo.next_redo(commit):
                return path
        elif undo.next_undo(commit):
            return path
    return newest


def _commits(repo: pygit2.Repository, head: tuple[str, str] | None) -> Iterator[_Commit]:
    """The snapshot commits smith wrote, newest first."""
    import pygit2

    if head is None:
        return
    commit: pygit2.Commit | None = repo[head[0]].peel(pygit2.Commit)
    for _ in range(MAX_WALK):
        if commit is None:
            return
        parsed = _parse(commit.message)
        if parsed is not None:
            yield parsed
        commit = commit.parents[0] if commit.parents else None


def _parse(message: str) -> _Commit | None:
    lines = message.splitlines()
    first = lines[0].split(" ", 2) if lines else []
    if len(first) < 2 or not (
        (first[0] in ("undo", "redo", "restore") and first[1] == "to")
        or first[1].startswith("snapshot")
    ):
        return None
    fields = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    session = fields.get("Session")
    if session is None:
        return None
    return _Commit(first[0], session.strip(), fields.get("Entry"), fields.get("Effect"))


def _path(store: SessionStore, session: str, root: str) -> str | None:
    """The file of this project's session `session`, None if it has none by that id."""
    from smith.diagnostics import SmithError

    try:
        path = store.path_for(session, root)
    except SmithError:  # not a session id
        return None
    return path if os.path.isfile(path) else None


def _undo(path: str | None) -> _Undo | None:
    """The undo stacks of the session at `path` (its selected branch), or None when it
    is gone or cannot be read."""
    from smith.diagnostics import SmithError
    from smith.session import Session

    if path is None:
        return None
    try:
        return _Undo(_model.records(Session.load(path)))
    except (OSError, SmithError):
        return None
