"""The operations of file history: undo, redo, restore (which change files), and diff
and the history listing (which only read). FileHistory's methods call these.

Each change of files moves between two recorded snapshots, `from` and `to`, and touches
exactly the paths that differ between them. Before touching anything the work tree is
scanned: a path that is not as `from` has it (the user or another program changed it
since) is a conflict, and so is a path whose content smith did not write itself (the
user's, recorded by a `user` or `before` snapshot, or there before the first one): it
is the user's file, whatever an earlier forced operation recorded of it. The operation
is refused on a conflict unless forced. The scan is recorded first (a `user` snapshot)
whenever it differs from the last recorded state, so files a forced operation
overwrites can be brought back with `smith restore`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from smith.diagnostics import DiagnosticKind, Source
from smith.vcs import _model
from smith.vcs._model import VCS

if TYPE_CHECKING:
    from smith.session import Session
    from smith.vcs._history import FileHistory
    from smith.vcs._repo import Change, Scan, ShadowRepo

MAX_PATHS = 1000  # listed in a recorded operation (the count is always exact)

HISTORY_PRUNED = DiagnosticKind(
    "history.pruned",
    what="the snapshot of entry '{entry}' is no longer in the file history",
    why="`smith history gc` removed it (or the history was deleted)",
    fix="pick a newer entry from `smith history`",
)
HISTORY_CONFLICT = DiagnosticKind(
    "history.conflict",
    what="{op} was refused: it would overwrite or delete files smith did not write "
    "({count}): {files}",
    why="smith never overwrites or deletes your changes unless told to: {op} touches only "
    "the files that differ between the snapshots involved, and these were changed since "
    "smith last recorded them, or hold content you wrote (recorded as yours, not written "
    "by smith)",
    fix="see what changed with `smith diff {since}`, keep what you need, then run `smith "
    "{command} --force` (your versions are recorded first, so `smith restore` can bring "
    "them back)",
)
HISTORY_BLOCKED = DiagnosticKind(
    "history.blocked",
    what="{op} cannot change {count}, not even with --force: {files}",
    why="smith changes only what it can bring back, so it never overwrites or deletes a file "
    "it could not record, writes through a link, or clears a directory of other files",
    fix="move those aside (a file too large to record can instead be kept by raising "
    "vcs.max-file-size), then run `smith {command}` again",
)
HISTORY_INTERRUPTED = DiagnosticKind(
    "history.interrupted",
    what="{op} stopped part-way through {count}: {reason}",
    why="some of the files are as the {op} meant to make them and some are not yet; the "
    "session records what it set out to do (effect {effect})",
    fix="deal with the cause, then run `smith {command}` again: it finishes the job (files "
    "it changed already are no conflict)",
)
NOTHING_TO_UNDO = DiagnosticKind(
    "history.nothing-to-undo",
    what="there is nothing to undo in session '{id}'",
    why="no turn on its selected branch changed files, or every one is undone already",
    fix="`smith history` lists the turns that changed files; `smith restore ENTRY` goes back "
    "to any of them",
)
NOTHING_TO_REDO = DiagnosticKind(
    "history.nothing-to-redo",
    what="there is nothing to redo in session '{id}'",
    why="redo applies again what the latest undo took back, and nothing was undone since "
    "the last change",
    fix="`smith history` shows what is undone; `smith restore ENTRY` goes to any snapshot",
)
HISTORY_NO_CHANGES = DiagnosticKind(
    "history.no-changes",
    what="session '{id}' has no turn that changed files",
    why="smith records file changes around turns that ran a mutating tool",
    fix="name entries to compare: `smith diff ENTRY [ENTRY]` (see `smith history`)",
)


def undo(history: FileHistory, *, force: bool) -> dict[str, object]:
    history.check_session()
    stacks = _model.Stacks(_model.records(history.session))
    if not stacks.done:
        raise NOTHING_TO_UNDO.error(id=history.session.id)
    unit = stacks.done[-1]
    result = _operate(history, "undo", unit.tree, unit.base, target=unit.last, unit=unit,
                      force=force)  # fmt: skip
    return {**result, "title": _title(history, unit)}


def redo(history: FileHistory, *, force: bool) -> dict[str, object]:
    history.check_session()
    stacks = _model.Stacks(_model.records(history.session))
    if not stacks.undone:
        raise NOTHING_TO_REDO.error(id=history.session.id)
    unit = stacks.undone[-1]
    result = _operate(history, "redo", unit.base, unit.tree, target=unit.last, unit=unit,
                      force=force)  # fmt: skip
    return {**result, "title": _title(history, unit)}


def restore(
    history: FileHistory, ref: str, *, conversation: bool, force: bool
) -> dict[str, object]:
    history.check_session()
    target, entry_id = history.state_at(ref)
    repo = history.repo(create=False)
    with repo.locked():
        head = repo.head()
    current = head[1] if head else _model.last_tree(history.session)
    return _operate(history, "restore", current, target, target=entry_id, unit=None,
                    force=force, select=entry_id if conversation else None)  # fmt: skip


def _operate(
    history: FileHistory,
    op: str,
    from_tree: str | None,
    to_tree: str,
    *,
    target: str,
    unit: _model.Unit | None,
    force: bool,
    select: str | None = None,
) -> dict[str, object]:
    repo = history.repo(create=False)
    session = history.session
    with repo.locked():
        for tree in (from_tree, to_tree):
            if tree is not None and not repo.has_tree(tree):
                raise HISTORY_PRUNED.error(
                    value=target, source=Source("argument", target), entry=target
                )
        scan = history.scan(repo)
        changes = repo.changes(from_tree, to_tree)
        left = repo.ignored_in(to_tree, _deleting(history.root, changes))
        changes = [c for c in changes if c.path not in left]
        missing = repo.missing(changes)  # pruned by another smith: check before any change
        if missing:
            raise HISTORY_PRUNED.error(
                value=target, source=Source("argument", target), entry=target
            )
        blocked, conflicts = _check(history, repo, scan, changes, _model.records(session))
        command = _command(op, target)
        if blocked:
            raise HISTORY_BLOCKED.error(
                value=target if op == "restore" else None, source=Source("argument", target),
                op=op, command=command, files=_listed(blocked), count=_files(len(blocked)),
            )  # fmt: skip
        if conflicts and not force:
            raise HISTORY_CONFLICT.error(
                value=target if op == "restore" else None, source=Source("argument", target),
                op=op, command=command, files=_listed([shown(p) for p in conflicts]),
                count=_files(len(conflicts)), since=_last_record(session, target),
            )  # fmt: skip
        last = _model.last_tree(session)
        if scan.tree != last:
            history.record(repo, scan.tree, "user", last, {"op": op})
        if select is not None:
            session.select(select)
        repo.forget(left)  # left as they are: ignored there, they are not in its snapshot
        if not changes and not left:
            return _result(op, None, target, changes, [], scan.tree, select, left)
        paths = [shown(c.path) for c in changes]
        effect = history.journal.begin(
            op,
            {"target": target, "from": from_tree, "to": to_tree, "paths": paths[:MAX_PATHS]},
            kind="vcs",
            cause={"entry": target, **({"unit": unit.id} if unit else {})},
        )
        try:
            repo.apply(changes, to_tree)
            after = history.scan(repo)
        except BaseException as exc:
            reason = _reason(exc)
            history.journal.finish(
                effect, outcome="error", mutation="unknown",
                output={"error": reason}, summary=", ".join(paths[:5]),
            )  # fmt: skip
            if not isinstance(exc, Exception):
                raise
            raise HISTORY_INTERRUPTED.error(
                op=op, command=command, count=_files(len(paths)), reason=reason, effect=effect.id
            ) from exc
        commit = repo.commit(
            after.tree, f"{op} to {target}\n\nSession: {session.id}\nEffect: {effect.id}\n"
        )
        history.journal.finish(
            effect, outcome="ok", mutation="applied", output={"paths": paths[:MAX_PATHS]}
        )
        content: dict[str, object] = {
            "op": op,
            "tree": after.tree,
            "commit": commit,
            "before": scan.tree,
            "from": from_tree,
            "to": to_tree,
            "target": target,
            "unit": unit.id if unit else None,
            "paths": paths[:MAX_PATHS],
            "files": len(paths),
            "forced": bool(conflicts),
            "overwritten": [shown(p) for p in conflicts[:MAX_PATHS]],
            "effect": effect.id,
            "conversation": select is not None,
            "left": sorted(shown(p) for p in left),
            "project": history.root,
        }
        entry = session.append(VCS, content, durable=True)
        return _result(op, entry.id, target, changes, conflicts, after.tree, select, left)


def _title(history: FileHistory, unit: _model.Unit) -> str:
    """How a unit is named to the user: the turn's entry and prompt, or the restore."""
    if unit.kind == "restore":
        return f"the restore to entry {_target(history.session, unit.id)}"
    content = history.session.entry(unit.id).content
    cause = content.get("cause") if isinstance(content, dict) else None
    if isinstance(cause, dict) and "shell" in cause:  # the user's own `!command`
        return f"the command !{cause.get('command', '')}"
    text = _model.prompt_text(history.session, unit.prompt)
    return f"turn {unit.last}" + (f" ({text})" if text else "")


def _last_record(session: Session, default: str) -> str:
    """The entry of the latest snapshot or operation on the selected branch."""
    found = _model.records(session)
    return found[-1][0].id if found else default


def _deleting(root: str, changes: list[Change]) -> list[str]:
    """The paths the changes delete that hold a file or link now."""
    from smith.vcs._worktree import real_parents

    found = []
    for change in changes:
        if change.new is None and change.old is not None and real_parents(root, change.path):
            full = os.path.join(root, change.path)
            if os.path.islink(full) or (os.path.lexists(full) and not os.path.isdir(full)):
                found.append(change.path)
    return found


def _check(
    history: FileHistory,
    repo: ShadowRepo,
    scan: Scan,
    changes: list[Change],
    found: list[_model.Record],
) -> tuple[list[str], list[str]]:
    """(blocked, conflicts): the changes that may not be made even when forced, each with
    why, and the paths whose content now smith did not write: neither as `from` has them
    nor as the operation makes them (changed since, by the user or another program), or
    as `from` has them but written by the user (see `_written_by_smith`). A path already
    as the operation makes it is neither: an operation stopped part-way can be run again."""
    skipped = {str(s["path"]): s for s in scan.skipped}
    going = {c.path for c in changes if c.new is None}  # deleted before anything is written
    blocked: list[str] = []
    conflicts: list[str] = []
    for change in changes:
        current = repo.entry(scan.tree, change.path)
        why = _obstacle(history, repo, change, current, going, skipped.get(change.path))
        if why is not None:
            blocked.append(f"{shown(change.path)} ({why})")
        elif current not in (change.old, change.new) or (
            current == change.old
            and current not in (None, change.new)
            and not _written_by_smith(repo, found, change.path, current)
        ):
            conflicts.append(change.path)
    return blocked, conflicts


def _written_by_smith(
    repo: ShadowRepo, found: list[_model.Record], path: str, current: tuple[str, int]
) -> bool:
    """Whether smith itself wrote `current` at `path`: the newest record that brought that
    content there is an `after` snapshot (smith's tools wrote it), or an undo, redo or
    restore that changed the path to it (also when an interrupted first attempt wrote
    it, which the `user` snapshot taken before the attempt that finished holds).
    Brought by a `user` or `before` snapshot (the user's edit, recorded so a forced
    operation can be taken back), there before the first record, or of unknown origin:
    the user's."""
    for _entry, content in reversed(found):
        if repo.entry(str(content["tree"]), path) != current:
            return False  # not what the branch last recorded there: the user's
        op = content.get("op")
        old, new = content.get("from"), content.get("to")
        if (
            op in ("undo", "redo", "restore")
            and isinstance(new, str)
            and repo.entry(new, path) == current
            and (not isinstance(old, str) or repo.entry(old, path) != current)
        ):
            return True
        if repo.entry(_model.entering(content), path) == current:
            continue  # already there before this record
        return op == "snapshot" and content.get("phase") == "after"
    return False


def _obstacle(
    history: FileHistory,
    repo: ShadowRepo,
    change: Change,
    current: tuple[str, int] | None,
    going: set[str],
    skipped: dict[str, object] | None,
) -> str | None:
    """Why `change` may not be made even when forced (None: it may): it would destroy
    what the history does not hold (the scan left it out, or it is ignored), or reach
    through a link or a file where a directory must be, or over a directory of files."""
    import stat

    if skipped is not None:
        if skipped["why"] == "too large":
            limit = history.settings.max_file_size
            return f"too large to record: {skipped['size']} bytes, above vcs.max-file-size {limit}"
        return str(skipped["why"])
    root, parts = history.root, change.path.split("/")
    for depth in range(1, len(parts)):
        parent = "/".join(parts[:depth])
        try:
            mode = os.lstat(os.path.join(root, parent)).st_mode
        except FileNotFoundError:
            return None  # nothing there, nor below
        if stat.S_ISDIR(mode):
            continue
        if parent in going or change.new is None:
            return None  # removed first (as recorded) / nothing of the project to delete
        what = "a symbolic link" if stat.S_ISLNK(mode) else "a file"
        return f"{shown(parent)} is {what} where a directory must be"
    full = os.path.join(root, change.path)
    try:
        mode = os.lstat(full).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(mode):
        if change.new is not None and _holds_others(root, change.path, going):
            return "a directory holding other files stands where the file goes"
        return None
    if current is None and not (change.new is not None and repo.holds(full, change.new)):
        # There, but the scan did not take it (and it is not already as it is to be).
        return "ignored, so not in file history" if repo.ignored(change.path) else (
            "not in file history"
        )  # fmt: skip
    return None


def _holds_others(root: str, path: str, going: set[str]) -> bool:
    """Whether the directory at `path` holds a file or link the operation does not delete."""
    for directory, dirs, files in os.walk(os.path.join(root, path)):
        rel = os.path.relpath(directory, root).replace(os.sep, "/")
        links = [d for d in dirs if os.path.islink(os.path.join(directory, d))]
        if any(f"{rel}/{name}" not in going for name in files + links):
            return True
    return False


def _listed(items: list[str]) -> str:
    more = f" and {len(items) - 10} more" if len(items) > 10 else ""
    return ", ".join(items[:10]) + more


def _files(count: int) -> str:
    return f"{count} file{'s' if count != 1 else ''}"


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f" ({shown(os.fsdecode(exc.filename))})" if exc.filename is not None else ""
        return exc.strerror + where
    return f"{type(exc).__name__}: {exc}"


def shown(path: str) -> str:
    """`path` as text that can be recorded and printed: the bytes of a name that are not
    UTF-8 (pygit2 passes them on as surrogates) as `\\x` escapes."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _command(op: str, target: str) -> str:
    return f"restore {target}" if op == "restore" else op


def _result(
    op: str,
    entry: str | None,
    target: str,
    changes: list[Change],
    overwritten: list[str],
    tree: str,
    select: str | None,
    left: set[str],
) -> dict[str, object]:
    return {
        "op": op,
        "entry": entry,
        "target": target,
        "tree": tree,
        "changed": [{"path": shown(c.path), "change": _kind(c)} for c in changes],
        "overwritten": overwritten,
        "left": sorted(shown(p) for p in left),
        "conversation": select,
    }


def _kind(change: Change) -> str:
    if change.old is None:
        return "created"
    if change.new is None:
        return "deleted"
    return "modified" if change.old[0] != change.new[0] else "mode"


def diff(history: FileHistory, a: str | None, b: str | None) -> dict[str, object]:
    history.check_session()
    if a is None:
        stacks = _model.Stacks(_model.records(history.session))
        if not stacks.done:
            raise HISTORY_NO_CHANGES.error(id=history.session.id)
        unit = stacks.done[-1]
        old, new, title = unit.base, unit.tree, _title(history, unit)
        repo = history.repo(create=False)
        if not (repo.has_tree(old) and repo.has_tree(new)):
            raise HISTORY_PRUNED.error(entry=unit.last)
    else:
        old, a_id = history.state_at(a)
        repo = history.repo(create=False)
        if b is None:
            with repo.locked():
                new = history.scan(repo).tree
            title = f"from entry {a_id} to the files now"
        else:
            new, b_id = history.state_at(b)
            title = f"from entry {a_id} to entry {b_id}"
    files, insertions, deletions = repo.stats(old, new)
    return {
        "from": old,
        "to": new,
        "title": title,
        "files": [{"path": shown(c.path), "change": _kind(c)} for c in repo.changes(old, new)],
        "insertions": insertions,
        "deletions": deletions,
        "patch": repo.patch(old, new),
        "files_changed": files,
    }


def listing(history: FileHistory) -> list[dict[str, object]]:
    history.check_session()
    session = history.session
    stacks = _model.Stacks(_model.records(session))
    repo = history.repo(create=False) if stacks.units else None
    items: list[dict[str, object]] = []
    for unit in stacks.units:
        known = repo is not None and repo.has_tree(unit.base) and repo.has_tree(unit.tree)
        files, plus, minus = repo.stats(unit.base, unit.tree) if known and repo else (0, 0, 0)
        items.append(
            {
                "entry": unit.last,
                "first": unit.id,
                "kind": unit.kind,
                "ts": unit.ts,
                "prompt": unit.prompt,
                "text": _model.prompt_text(session, unit.prompt)
                if unit.kind == "turn"
                else f"restore to {_target(session, unit.id)}",
                "files": files,
                "insertions": plus,
                "deletions": minus,
                "undone": unit.undone,
                "pruned": not known,
            }
        )
    return items


def needed_trees(session: Session) -> dict[str, list[dict[str, str]]]:
    """The trees the next undo and the next redo of `session` need, each with what needs
    it (`gc` says which of them it drops)."""
    stacks = _model.Stacks(_model.records(session))
    found: dict[str, list[dict[str, str]]] = {}
    for op, units in (("undo", stacks.done), ("redo", stacks.undone)):
        if units:
            unit = units[-1]
            need = {"session": session.id, "op": op, "kind": unit.kind, "entry": unit.last}
            for tree in (unit.base, unit.tree):
                found.setdefault(tree, []).append(need)
    return found


def _target(session: object, entry_id: str) -> str:
    from smith.session import Session

    assert isinstance(session, Session)
    content = session.entry(entry_id).content
    return str(content.get("target")) if isinstance(content, dict) else "?"
