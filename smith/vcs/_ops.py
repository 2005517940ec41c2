"""The operations of file history: undo, redo, restore (which change files), and diff
and the history listing (which only read). FileHistory's methods call these.

Each change of files moves between two recorded snapshots, `from` and `to`, and touches
exactly the paths that differ between them. Before touching anything the work tree is
scanned: a path that is not as `from` has it (the user or another program changed it
since) is a conflict, and the operation is refused unless forced. The scan is recorded
first (a `user` snapshot) whenever it differs from the last recorded state, so files a
forced operation overwrites can be brought back with `smith restore`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smith.diagnostics import DiagnosticKind, Source
from smith.vcs import _model
from smith.vcs._model import VCS

if TYPE_CHECKING:
    from smith.vcs._history import FileHistory
    from smith.vcs._repo import Change

MAX_PATHS = 1000  # listed in a recorded operation (the count is always exact)

HISTORY_CONFLICT = DiagnosticKind(
    "history.conflict",
    what="{op} was refused: files it would change were changed since smith last recorded "
    "them ({count}): {files}",
    why="smith never overwrites changes it has not recorded; {op} touches only the files "
    "that differ between the snapshots involved, and these are not as it left them",
    fix="see what changed with `smith diff`, keep what you need, then run `smith {command} "
    "--force` (your versions are recorded first, so `smith restore` can bring them back)",
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
    from smith.vcs._history import HISTORY_PRUNED

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
        skipped = {str(s["path"]) for s in scan.skipped}
        going = {c.path for c in changes if c.new is None}  # deleted before anything is written
        conflicts = [
            c.path
            for c in changes
            if c.path in skipped
            or repo.entry(scan.tree, c.path) != c.old
            or (c.new is not None and _blocked(history.root, c.path, going))
        ]
        if conflicts and not force:
            shown = ", ".join(conflicts[:10]) + (
                f" and {len(conflicts) - 10} more" if len(conflicts) > 10 else ""
            )
            raise HISTORY_CONFLICT.error(
                value=target if op == "restore" else None, source=Source("argument", target),
                op=op, command=_command(op, target), files=shown,
                count=f"{len(conflicts)} file{'s' if len(conflicts) != 1 else ''}",
            )  # fmt: skip
        last = _model.last_tree(session)
        if scan.tree != last:
            history.record(repo, scan.tree, "user", last, {"op": op})
        if select is not None:
            session.select(select)
        if not changes:
            return _result(op, None, target, changes, [], scan.tree, select)
        paths = [c.path for c in changes]
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
            history.journal.finish(
                effect, outcome="error", mutation="unknown",
                output={"error": f"{type(exc).__name__}: {exc}"}, summary=", ".join(paths[:5]),
            )  # fmt: skip
            raise
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
            "overwritten": conflicts[:MAX_PATHS],
            "effect": effect.id,
            "conversation": select is not None,
            "project": history.root,
        }
        entry = session.append(VCS, content, durable=True)
        return _result(op, entry.id, target, changes, conflicts, after.tree, select)


def _title(history: FileHistory, unit: _model.Unit) -> str:
    """How a unit is named to the user: the turn's entry and prompt, or the restore."""
    if unit.kind == "restore":
        return f"the restore to entry {_target(history.session, unit.id)}"
    text = _model.prompt_text(history.session, unit.prompt)
    return f"turn {unit.last}" + (f" ({text})" if text else "")


def _blocked(root: str, path: str, going: set[str]) -> bool:
    """Whether something the operation does not remove stands in the way of writing
    `path`: a file or link where it needs a directory, or a directory where the file
    goes that holds more than the operation deletes."""
    import os

    full = os.path.join(root, path)
    if os.path.isdir(full) and not os.path.islink(full):
        for directory, _, files in os.walk(full):
            rel = os.path.relpath(directory, root)
            if any(os.path.join(rel, name).replace(os.sep, "/") not in going for name in files):
                return True
    parent = os.path.dirname(path)
    while parent and parent not in going:
        full = os.path.join(root, parent)
        if os.path.islink(full) or (os.path.lexists(full) and not os.path.isdir(full)):
            return True
        parent = os.path.dirname(parent)
    return False


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
) -> dict[str, object]:
    return {
        "op": op,
        "entry": entry,
        "target": target,
        "tree": tree,
        "changed": [{"path": c.path, "change": _kind(c)} for c in changes],
        "overwritten": overwritten,
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
            from smith.vcs._history import HISTORY_PRUNED

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
        "files": [{"path": c.path, "change": _kind(c)} for c in repo.changes(old, new)],
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


def _target(session: object, entry_id: str) -> str:
    from smith.session import Session

    assert isinstance(session, Session)
    content = session.entry(entry_id).content
    return str(content.get("target")) if isinstance(content, dict) else "?"
