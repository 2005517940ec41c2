"""File history of one session in one project: the one structured API behind `smith
undo/redo/restore/diff/history`, the runtime's snapshots, RPC and plugins.

    history = FileHistory(settings, session, root)
    snap = history.snapshot("before", cause={"turn": 2})       # the runtime, around
    history.snapshot("after", base=snap.tree, cause={...})      # mutating tool batches
    history.undo(); history.redo(); history.restore("a1b2c3d4", conversation=True)
    history.diff(); history.history()

Safety rules every operation keeps: it touches only the paths that differ between the
two snapshots it moves between; it refuses (HISTORY_CONFLICT, listing the files) when
one of those paths is not as smith last recorded it or holds content smith did not
write (the user's), unless forced, and records the user's versions as a snapshot before
overwriting them; a file nobody recorded is never deleted. Targets are checked (the
entry is in this session, of this project, and its snapshot still exists) and each
operation is bracketed by effect records and recorded as a `vcs` entry, so it can
itself be undone and replayed (see _model.py).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from smith.diagnostics import Diagnostic, DiagnosticKind, SmithError, Source
from smith.vcs import _guard, _model, _ops
from smith.vcs._model import VCS
from smith.vcs._ops import HISTORY_CONFLICT, HISTORY_PRUNED, NOTHING_TO_REDO, NOTHING_TO_UNDO

if TYPE_CHECKING:
    from smith.effects import EffectJournal
    from smith.session import Session
    from smith.vcs._repo import Scan, ShadowRepo
    from smith.vcs._scope import Scope
    from smith.vcs._settings import HistorySettings
    from smith.vcs._watch import ChangeTracker

NEAR_CAP = 0.8  # warn once the history takes this share of vcs.max-size

HISTORY_OFF = DiagnosticKind(
    "history.off",
    what="file history is off for this project: {reason}",
    why="smith takes no snapshots here, so it has nothing to undo, redo, restore or compare",
    fix="to turn it on: {remedy}",
)
HISTORY_EMPTY = DiagnosticKind(
    "history.empty",
    what="this project ({root}) has no file history yet",
    why="smith snapshots files around turns that run a mutating tool, and none has run here",
    fix="run a turn that changes files first",
)
SNAPSHOT_SKIPPED_FILES = DiagnosticKind(
    "history.files-skipped",
    severity="warning",
    what="files were left out of the file history ({count}): {files}",
    why="files the project's git does not track and that are larger than vcs.max-file-size "
    "({limit} bytes) are not copied into history, nor are files smith cannot read; undo "
    "and restore leave them as they are",
    fix="add them to .gitignore to silence this, or raise vcs.max-file-size to keep them",
)
SNAPSHOT_FAILED = DiagnosticKind(
    "history.snapshot-failed",
    severity="warning",
    what="the files could not be snapshotted: {reason}",
    why="the turn went on, but what it changes cannot be undone with `smith undo`",
    fix="check that smith's data directory ({home}) is writable and has space; run with "
    "--debug for details",
)
SNAPSHOT_ABANDONED = DiagnosticKind(
    "history.snapshot-abandoned",
    severity="warning",
    what="a snapshot of the files was abandoned: {reason}",
    why="smith does not wait for file history when it is being stopped; what the turn "
    "changed may not be undoable with `smith undo`",
    fix="if snapshots of this project are slow, see what makes them so (a huge tree, a "
    "slow or stalled filesystem); `smith history` lists what was recorded",
)
HISTORY_NEAR_LIMIT = DiagnosticKind(
    "history.near-limit",
    severity="warning",
    what="the file history of this project takes {size} MiB of its {limit} MiB limit",
    why="once vcs.max-size is reached smith stops taking snapshots, so new turns could not "
    "be undone",
    fix="run `smith history gc` to drop old snapshots, or raise vcs.max-size",
)
HISTORY_OVER_LIMIT = DiagnosticKind(
    "history.over-limit",
    severity="warning",
    what="no snapshot was taken: the file history of this project has reached its limit "
    "({size} of {limit} MiB)",
    why="vcs.max-size bounds the disk space file history may use",
    fix="run `smith history gc` to drop old snapshots, or raise vcs.max-size; until then "
    "turns cannot be undone",
)
HISTORY_BUSY = DiagnosticKind(
    "history.busy",
    what="the file history of {root} is busy: an abandoned snapshot is still running",
    why="a snapshot that did not end when smith was stopping goes on in the background, "
    "holding the history until it ends",
    fix="try again in a moment; if it never ends, restart smith",
)
HISTORY_OTHER_PROJECT = DiagnosticKind(
    "history.other-project",
    what="session '{id}' belongs to {cwd}, not to this project ({root})",
    why="file history acts on the files of the project a session was recorded in",
    fix="run the command in {cwd}, or pick one of this project's sessions with --session",
)
HISTORY_NO_SNAPSHOT = DiagnosticKind(
    "history.no-snapshot",
    what="there is no file snapshot at or after entry '{entry}'",
    why="smith snapshots files only around turns that ran a mutating tool, and none did "
    "on that path of the session",
    fix="pick an entry listed by `smith history`",
)
HISTORY_AMBIGUOUS_ENTRY = DiagnosticKind(
    "history.ambiguous-entry",
    what="'{entry}' matches {count} entries of this session",
    why="an entry prefix must name exactly one entry",
    fix="type more of the id (`smith history` lists them)",
)


class Snapshot:
    """What `FileHistory.snapshot` did: the files' tree (None when none was taken), the
    entry it recorded (None when nothing had changed), and warnings for the caller."""

    __slots__ = ("entry", "tree", "warnings")

    def __init__(self) -> None:
        self.tree: str | None = None
        self.entry: str | None = None
        self.warnings: list[Diagnostic] = []


class FileHistory:
    def __init__(
        self,
        settings: HistorySettings,
        session: Session,
        root: str,
        *,
        journal: EffectJournal | None = None,
        watch: bool = False,
        stopping: Callable[[], bool] | None = None,
    ) -> None:
        """`watch`: track changes with inotify (if `settings.watch` allows), so that a
        scan finding nothing changed costs the events since the last one, not an lstat
        per file; for a long-lived owner that scans often (the runtime), which must
        `close()` it. Arming costs about one scan, so one-shot commands leave it off.
        `stopping`: true while the work a snapshot is part of is being stopped (the
        runtime's abort); a snapshot still running then is abandoned a few seconds later
        (_guard.py), so no hang of libgit2 keeps smith from ending."""
        from smith.effects import EffectJournal

        self.settings = settings
        self.session = session
        self.root = os.path.realpath(root)
        self.journal = journal if journal is not None else EffectJournal(session)
        self.watch = watch and settings.watch
        self._repo: ShadowRepo | None = None
        self._off: Diagnostic | None = None  # why snapshots stopped, once known
        self._warned: set[str] = set()
        self._lock = threading.Lock()
        self.tracker: ChangeTracker | None = None  # armed at the first scan when watching
        self._watch_lock = threading.Lock()  # the tracker, its descriptor and what it vouches
        self._scope: Scope | None = None
        self._vouched: tuple[Scan, tuple[object, ...]] | None = None  # (scan, its fence)
        self.stopping = stopping
        self._job: _guard.Job | None = None  # the latest snapshot's work

    def close(self) -> None:
        """Release the change tracker's watches (the history stays usable, scanning).
        An abandoned snapshot that still runs keeps them: they go with the process."""
        if self._running():
            self.watch = False
            return
        with self._watch_lock:
            self.watch = False
            self._vouched = None
            if self.tracker is not None:
                self.tracker.close()
                self.tracker = None

    def __enter__(self) -> FileHistory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the repository -----------------------------------------------------------------

    def _running(self) -> bool:
        """Whether an abandoned snapshot still runs (in its own thread)."""
        job = self._job
        return job is not None and not job.done and job.abandoned

    def repo(self, *, create: bool = True) -> ShadowRepo:
        """The project's shadow repository; raises HISTORY_OFF where history is off, and
        HISTORY_BUSY while an abandoned snapshot still runs."""
        if self._running():
            raise HISTORY_BUSY.error(root=self.root)
        self.check_on()
        if self._repo is None:
            from smith.vcs._repo import ShadowRepo

            found = ShadowRepo.open(self.settings.home, self.root, create=create)
            if found is None:
                raise HISTORY_EMPTY.error(root=self.root)
            self._repo = found
        return self._repo

    def check_on(self) -> None:
        """Raise HISTORY_OFF if this project takes no snapshots, saying why."""
        if self._off is not None:
            raise SmithError(self._off)
        if not self.settings.enabled:
            raise self._off_error("vcs.enabled is false", "set vcs.enabled to true")
        if self.root in (self.settings.user_home, "/") and not self.settings.allow_home:
            raise self._off_error(
                f"its root {self.root} is a home directory or the filesystem root",
                "run smith in a project directory, or set vcs.allow-home to true to "
                "snapshot it anyway",
            )

    def _off_error(self, reason: str, remedy: str) -> SmithError:
        return HISTORY_OFF.error(
            value=self.root, source=Source("argument", self.root), reason=reason, remedy=remedy
        )

    def scan(self, repo: ShadowRepo) -> Scan:
        """The work tree's state now; too many files turns snapshots off (and raises).
        When watching and the tracker vouches that nothing the last scan looked at has
        changed (nor its fence: the indexes, ignore rules outside the work tree), that
        scan's result, without looking at the files."""
        from smith.vcs._repo import Scan

        with self._watch_lock:
            tracker, scope, fence = self._tracker(repo), self._scope, None
            if tracker is not None and scope is not None:
                vouched, self._vouched = self._vouched, None
                fence = scope.fence()
                if vouched is not None and vouched[1] == fence and tracker.quiet(scope):
                    self._vouched = vouched
                    return Scan(vouched[0].tree, vouched[0].skipped, 0, vouched[0].files)
                if vouched is not None and vouched[1] != fence:
                    tracker.invalidate("the indexes or ignore rules changed")
                tracker.prepare(scope)  # armed before the scan it is to vouch for
            scan = self._full_scan(repo)
            if scope is not None and fence is not None:
                # The scan may have written the index (under the repository's lock): that
                # write is no change; the rest of the fence is as read before the scan.
                self._vouched = (scan, (scope.index_key(), *fence[1:]))
            return scan

    def _full_scan(self, repo: ShadowRepo) -> Scan:
        from smith.vcs._repo import TooManyFiles

        settings = self.settings
        try:  # off the main thread, which must stay free to take a signal
            scan = _guard.off_main(
                lambda: repo.scan(
                    max_file_size=settings.max_file_size, max_files=settings.max_files
                )
            )
        except TooManyFiles as exc:
            error = self._off_error(
                f"it holds {exc.count} files, more than vcs.max-files ({self.settings.max_files})",
                "ignore generated files in .gitignore, or raise vcs.max-files to snapshot "
                "this project anyway",
            )
            self._off = error.diagnostic
            raise error from None
        if scan.written:
            repo.save_state(size=repo.size() + scan.written)
        return scan

    def _tracker(self, repo: ShadowRepo) -> ChangeTracker | None:
        """The change tracker when watching (made at the first scan), unless it broke."""
        if not self.watch:
            return None
        if self.tracker is None:
            from smith.vcs._watch import ChangeTracker

            self.tracker = ChangeTracker(self.root)
        if self._scope is None or self._scope.repo is not repo:
            from smith.vcs._scope import Scope

            self._scope, self._vouched = Scope(repo), None
        return self.tracker if self.tracker.broken is None else None

    # -- recording ----------------------------------------------------------------------

    def snapshot(
        self, phase: str, *, base: str | None = None, cause: dict[str, Any] | None = None
    ) -> Snapshot:
        """Snapshot the files (the runtime calls this, in a worker thread, before and
        after each batch of tool calls that may change files). Records a `vcs` entry
        when they differ from `base` (`after`) or from the branch's last recorded state
        (`before`). Never raises for a problem of the history itself: that becomes a
        warning (each kind once) and the turn goes on."""
        if not self.settings.enabled:
            return Snapshot()
        if phase == "after" and base is None:
            phase = "before"  # no snapshot before the batch: record the state, not a turn
        abandoned = Snapshot()
        if self._running():
            reason = "the one before it has not ended yet"
            self._warn_once(SNAPSHOT_ABANDONED(reason=reason), abandoned.warnings)
            return abandoned
        job = self._job = _guard.Job()
        work = lambda: self._snapshot(job, phase, base, cause)  # noqa: E731
        taken = _guard.run(job, work, stopping=self.stopping)
        if taken is None:
            reason = f"it had not ended {_guard.GRACE:g} s after smith began to stop"
            self._warn_once(SNAPSHOT_ABANDONED(reason=reason), abandoned.warnings)
            return abandoned
        return taken

    def _snapshot(
        self, job: _guard.Job, phase: str, base: str | None, cause: dict[str, Any] | None
    ) -> Snapshot:
        result = Snapshot()
        with self._lock:
            try:
                repo = self.repo()
                with repo.locked():
                    if not self._room(repo, result.warnings):
                        return result
                    scan = self.scan(repo)
                    result.tree = scan.tree
                    self._report_skipped(scan, result.warnings)
                    against = base if phase == "after" else _model.last_tree(self.session)
                    if scan.tree != against and job.commit():  # not if abandoned meanwhile
                        result.entry = self.record(repo, scan.tree, phase, against, cause)
            except SmithError as exc:
                self._warn_once(exc.diagnostic, result.warnings)
            except Exception as exc:  # a broken shadow repository must not stop turns
                reason = f"{type(exc).__name__}: {exc}"
                self._warn_once(
                    SNAPSHOT_FAILED(reason=reason, home=self.settings.home), result.warnings
                )
        return result

    def record(
        self,
        repo: ShadowRepo,
        tree: str,
        phase: str,
        base: str | None,
        cause: dict[str, Any] | None,
    ) -> str:
        """Commit `tree` and record it as a snapshot entry; returns the entry id."""
        from smith.session import new_id

        prompt = _model.prompt_of(self.session)
        entry_id = new_id()
        while self._exists(entry_id):
            entry_id = new_id()
        title = (
            "changes made outside smith"
            if phase == "user"
            else _model.prompt_text(self.session, prompt) or "(no prompt)"
        )
        commit = repo.commit(
            tree, f"{phase} snapshot: {title}\n\nSession: {self.session.id}\nEntry: {entry_id}\n"
        )
        changed = [] if base is None else [_ops.shown(c.path) for c in repo.changes(base, tree)]
        content: dict[str, object] = {
            "op": "snapshot",
            "phase": phase,
            "tree": tree,
            "commit": commit,
            "base": base,
            "prompt": prompt,
            "cause": dict(cause or {}),
            "files": len(changed),
            "paths": changed[:100],
            "project": self.root,
        }
        self.session.append(VCS, content, id=entry_id)
        return entry_id

    def _exists(self, entry_id: str) -> bool:
        try:
            self.session.entry(entry_id)
        except SmithError:
            return False
        return True

    def _room(self, repo: ShadowRepo, warnings: list[Diagnostic]) -> bool:
        size, limit = repo.size(), self.settings.max_size
        mib, limit_mib = size // (1024 * 1024), limit // (1024 * 1024)
        if size >= limit:
            self._warn_once(HISTORY_OVER_LIMIT(size=mib, limit=limit_mib), warnings)
            return False
        if size >= limit * NEAR_CAP:
            self._warn_once(HISTORY_NEAR_LIMIT(size=mib, limit=limit_mib), warnings)
        return True

    def _report_skipped(self, scan: Scan, warnings: list[Diagnostic]) -> None:
        new = [s for s in scan.skipped if f"skip:{s['path']}" not in self._warned]
        if not new:
            return
        self._warned.update(f"skip:{s['path']}" for s in new)
        files = ", ".join(_described(s) for s in new[:10])
        more = f" and {len(new) - 10} more" if len(new) > 10 else ""
        warnings.append(
            SNAPSHOT_SKIPPED_FILES(
                count=f"{len(new)} file{'s' if len(new) != 1 else ''}",
                files=files + more,
                limit=self.settings.max_file_size,
            )
        )

    def _warn_once(self, diagnostic: Diagnostic, warnings: list[Diagnostic]) -> None:
        if diagnostic.code not in self._warned:
            self._warned.add(diagnostic.code)
            warnings.append(diagnostic)

    # -- operations (smith/vcs/_ops.py) -------------------------------------------------

    def undo(self, *, force: bool = False) -> dict[str, object]:
        """Take back the newest done turn (or restore)."""
        return _ops.undo(self, force=force)

    def redo(self, *, force: bool = False) -> dict[str, object]:
        """Apply again what the latest undo took back."""
        return _ops.redo(self, force=force)

    def restore(
        self, ref: str, *, conversation: bool = False, force: bool = False
    ) -> dict[str, object]:
        """Make the files as they were at session entry `ref`; with `conversation`, also
        continue the session from that entry (a new branch)."""
        return _ops.restore(self, ref, conversation=conversation, force=force)

    def diff(self, a: str | None = None, b: str | None = None) -> dict[str, object]:
        """The changes from entry `a` to entry `b` (default: the files now); without
        either, the newest done turn's."""
        return _ops.diff(self, a, b)

    def history(self) -> list[dict[str, object]]:
        """The turns and restores of the selected branch, oldest first."""
        return _ops.listing(self)

    # -- targets --------------------------------------------------------------------------

    def check_session(self) -> None:
        """Raise unless history is on and the session was recorded in this project."""
        self.check_on()
        cwd = self.session.info.get("cwd")
        if isinstance(cwd, str) and cwd and os.path.realpath(cwd) != self.root:
            raise HISTORY_OTHER_PROJECT.error(
                value=self.session.id,
                source=Source("argument", self.session.id),
                id=self.session.id,
                cwd=cwd,
                root=self.root,
            )

    def resolve(self, ref: str) -> str:
        """The id of the session entry `ref` names (an id or an unambiguous prefix)."""
        if self._exists(ref):
            return ref
        matches = [e.id for e in self.session.entries() if e.id.startswith(ref)] if ref else []
        if len(matches) == 1:
            return matches[0]
        source = Source("argument", ref)
        if matches:
            raise HISTORY_AMBIGUOUS_ENTRY.error(
                value=ref, source=source, entry=ref, count=len(matches)
            )
        from smith.session import UNKNOWN_ENTRY

        raise UNKNOWN_ENTRY.error(value=ref, source=source, entry=ref, id=self.session.id)

    def state_at(self, ref: str) -> tuple[str, str]:
        """(tree, entry id) of the files as they were at the entry `ref` names, checked:
        recorded in this project, and still in the history."""
        entry_id = self.resolve(ref)
        found = _model.state_at(self.session, entry_id)
        if found is None:
            raise HISTORY_NO_SNAPSHOT.error(
                value=ref, source=Source("argument", ref), entry=entry_id
            )
        tree, via = found
        content = self.session.entry(via).content
        project = content.get("project") if isinstance(content, dict) else None
        if isinstance(project, str) and project != self.root:
            raise HISTORY_OTHER_PROJECT.error(
                value=ref, source=Source("argument", ref), id=self.session.id,
                cwd=project, root=self.root,
            )  # fmt: skip
        if not self.repo(create=False).has_tree(tree):
            raise HISTORY_PRUNED.error(value=ref, source=Source("argument", ref), entry=entry_id)
        return tree, entry_id


def _described(skipped: dict[str, object]) -> str:
    size = "" if skipped["size"] is None else f", {skipped['size']} bytes"
    return f"{_ops.shown(str(skipped['path']))} ({skipped['why']}{size})"


__all__ = [
    "HISTORY_CONFLICT",
    "HISTORY_OFF",
    "NOTHING_TO_REDO",
    "NOTHING_TO_UNDO",
    "FileHistory",
    "Snapshot",
]
