"""The shadow repository: a git repository under $SMITH_HOME whose work tree is the project.

    repo = ShadowRepo.open(home, root)
    with repo.locked():
        scan = repo.scan(max_file_size=10 << 20, max_files=100_000)   # index -> tree
        commit = repo.commit(scan.tree, "message")
        repo.apply(repo.changes(newer_tree, older_tree))              # back in time

One repository per project at `$SMITH_HOME/vcs/<project key>`, created bare and then
given the project as `core.worktree` (pygit2 cannot create a repository with a separate
work tree directly). It has an index of its own: libgit2 compares each file's stat data
with it and hashes only files whose stat changed, so a snapshot costs one `lstat` per file
plus the work on what changed. The project's own `.git` is never written: its index is
only read, to find tracked files its .gitignore would hide and tracked files that may
exceed the size limit. Nested repositories (a vendored clone, a folder of repositories)
are snapshotted like any directory, never their `.git`: libgit2 does not look into a
directory holding a `.git` until the index has files in it, so a scan adds a new one's
files itself, once. Before libgit2 reads the ignore and attribute rules, `_rules.py`
checks them (some would hang it). Everything here is owner-only (0700, 0600): objects
are written through a loose backend given those modes, the files libgit2 writes
otherwise (index, branch, config) are set so after each write, and a repository an
earlier smith left open is repaired when opened.

Content goes in and comes out byte for byte: `info/attributes` turns off every
conversion (end of line, filters, ident, encodings) whatever the project's
.gitattributes or the user's git configuration say. Snapshots are commits on one branch,
`snapshots`, so `git --git-dir $SMITH_HOME/vcs/<key> log` shows them; `gc` rewrites that
branch without the snapshots it drops and deletes the objects nothing reaches any more.

pygit2 is imported in smith/vcs only, and nowhere else in smith (tests/test_architecture.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import threading
import time
from collections.abc import Collection, Iterator
from typing import Any

import pygit2
from pygit2.enums import DeltaStatus, DiffOption

from smith._atomic import PRIVATE_FILE, private_home, private_mode, private_tree
from smith.diagnostics import DiagnosticKind, Source
from smith.vcs import _rules, _setup, _worktree
from smith.vcs._project import ProjectGit
from smith.vcs._worktree import EXECUTABLE, GITLINK, LINK, TREE

BRANCH = "refs/heads/snapshots"
LOCK_TIMEOUT = 30.0  # seconds another smith may hold the shadow repository
SCAN = (
    DiffOption.INCLUDE_UNTRACKED
    | DiffOption.RECURSE_UNTRACKED_DIRS
    | DiffOption.ENABLE_FAST_UNTRACKED_DIRS
    | DiffOption.SKIP_BINARY_CHECK
)
STATE = "smith-state.json"
STALE_LOCKS = ("index.lock", "refs/heads/snapshots.lock", "packed-refs.lock", "HEAD.lock")

HISTORY_WRONG_PROJECT = DiagnosticKind(
    "history.wrong-project",
    what="the file history at {path} belongs to {other}, not to {root}",
    why="each project has its own shadow repository, named after its path; this one was "
    "made for another project",
    fix="move {path} aside (nothing of this project is in it) and run the command again",
)
HISTORY_LOCKED = DiagnosticKind(
    "history.locked",
    what="the file history of {root} is busy in another smith process ({holder})",
    why="snapshots and undo of one project are made one at a time, so they cannot interleave",
    fix="wait for the other smith to finish its turn or command, then try again (if that "
    "process is stuck, end it: the lock goes with it)",
)


class TooManyFiles(Exception):
    """The work tree holds more files than the configured limit allows."""

    def __init__(self, count: int) -> None:
        super().__init__(f"{count} files")
        self.count = count


class Change:
    """One path that differs between two trees: its entry before and after, each an
    `(object id, mode)` or None where the path does not exist."""

    __slots__ = ("new", "old", "path")

    def __init__(self, path: str, old: tuple[str, int] | None, new: tuple[str, int] | None) -> None:
        self.path = path
        self.old = old
        self.new = new

    def __repr__(self) -> str:
        return f"<Change {self.path} {self.old} -> {self.new}>"


class Scan:
    """What a scan of the work tree found: its tree, the files left out (path, size,
    why) and how many bytes of file content were stored."""

    __slots__ = ("files", "skipped", "tree", "written")

    def __init__(self, tree: str, skipped: list[dict[str, object]], written: int, files: int):
        self.tree = tree
        self.skipped = skipped
        self.written = written
        self.files = files


def repo_path(home: str, root: str) -> str:
    from smith.session import project_key

    return os.path.join(home, "vcs", project_key(root))


class ShadowRepo:
    """The shadow repository of one project. Not thread-safe: hold `locked()`."""

    def __init__(self, path: str, root: str, repo: pygit2.Repository) -> None:
        self.path = path
        self.root = root
        self.repo = repo
        self.index = repo.index
        self._thread_lock = threading.RLock()
        self._held = False  # whether this process holds the lock file
        self.project = ProjectGit(root, path)  # the project's own git, only read
        self.rules = _rules.RuleFiles(root)  # the work tree's rule files, checked
        self.guard = _setup.RuleGuard(path)  # the rule files outside the work tree

    # -- opening ------------------------------------------------------------------------

    @classmethod
    def open(cls, home: str, root: str, *, create: bool = True) -> ShadowRepo | None:
        """The project's shadow repository; made on first use when `create`, else None
        if there is none yet."""
        root = os.path.realpath(root)
        path = repo_path(home, root)
        if not os.path.exists(os.path.join(path, "HEAD")):
            if not create:
                return None
            _setup.init(path, root, home)
        else:
            private_home(home)
            if os.stat(path).st_mode & 0o077:  # made by an earlier smith: owner-only now
                private_tree(path)
        repo = _setup.open_repo(path)
        other = repo.config["smith.project"] if "smith.project" in repo.config else None  # noqa: SIM401
        if other != root:
            raise HISTORY_WRONG_PROJECT.error(
                value=path, source=Source("file", path), path=path, other=other, root=root
            )
        shadow = cls(path, root, repo)
        shadow.guard.guard(repo)
        return shadow

    @contextlib.contextmanager
    def locked(self, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
        """Exclusive use of the repository: by this thread, and by this process among
        the smith processes working on the project."""
        with self._thread_lock:
            if self._held:  # re-entered by the thread that holds it
                yield
                return
            fd = os.open(os.path.join(self.path, "smith.lock"), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                deadline = time.monotonic() + timeout
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() >= deadline:
                            pid = os.pread(fd, 32, 0).decode(errors="replace").strip()
                            holder = f"process {pid}" if pid.isdigit() else "which one is unknown"
                            raise HISTORY_LOCKED.error(
                                source=Source("file", self.path), root=self.root, holder=holder
                            ) from None
                        time.sleep(0.02)
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)  # who holds it, for the above
                self._held = True
                self._clear_stale_locks()
                try:
                    yield
                finally:
                    self._held = False
            finally:
                os.close(fd)

    def _clear_stale_locks(self) -> None:
        """Remove the lock files libgit2 leaves when a smith is killed while writing the
        index or the branch: every writer holds the lock taken here first, so whoever
        made them is gone, and while they stay every later write fails."""
        for name in STALE_LOCKS:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(self.path, name))

    # -- state kept beside the repository -----------------------------------------------

    def state(self) -> dict[str, object]:
        try:
            with open(os.path.join(self.path, STATE), encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def save_state(self, **changes: object) -> None:
        """Replace the state file (atomically, not durably: it only caches what can be
        measured again, so losing an update to a crash costs a measurement, not data)."""
        path = os.path.join(self.path, STATE)
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
        with open(fd, "w", encoding="utf-8") as f:
            json.dump({**self.state(), **changes}, f)
        os.replace(tmp, path)

    # -- what libgit2 reads besides the files (_rules.py) ---------------------------------

    def rule_sources(self) -> list[str]:
        """The files outside the work tree whose change can change what is ignored."""
        return self.guard.sources()

    def check_tree(self) -> None:
        """Check every rule file a scan can read in the work tree (HISTORY_UNSAFE_RULES
        when one would hang libgit2), and refresh the copy of the global excludes."""
        self.guard.sync()
        index = self.index
        tree: list[pygit2.Tree] = []

        def enters(rel: str) -> bool:
            try:
                if not self.repo.path_is_ignored(rel + "/"):
                    return True
            except (pygit2.GitError, ValueError):
                return True
            if not tree:
                found = self.repo[index.write_tree()]
                assert isinstance(found, pygit2.Tree)
                tree.append(found)
            return rel in tree[0] or rel in self.project.tracked_dirs()

        # What else decides which directories a scan enters: the rules kept outside the
        # work tree (a change there re-walks the tree) and the files tracked by git.
        project = self.project.index()
        outside = [os.path.join(self.path, "info", "exclude"), self.guard.copy]
        key = (None if project is None else project[0], *map(_rules.stamp, outside))
        self.rules.check_tree(enters, key)

    def size(self) -> int:
        """Bytes the history takes on disk: measured once, then kept up to date with an
        upper bound of what each scan stores (file sizes before compression)."""
        known = self.state().get("size")
        if isinstance(known, int):
            return known
        measured = self.measure()
        self.save_state(size=measured)
        return measured

    def measure(self) -> int:
        total = 0
        for directory, _, names in os.walk(os.path.join(self.path, "objects")):
            for name in names:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(directory, name)).st_size
        return total

    # -- snapshots ----------------------------------------------------------------------

    def scan(self, *, max_file_size: int, max_files: int) -> Scan:
        """Bring the index up to date with the work tree and write its tree.

        Tracked and untracked-but-not-ignored files are taken, nested repositories' files
        included (never a `.git`); files the project's git does not track that are larger
        than `max_file_size` are left out (a version stored earlier stays), as are
        unreadable files. Raises TooManyFiles, storing nothing, if the result would hold
        more than `max_files`, and HISTORY_UNSAFE_RULES, reading nothing, if a rule file
        would hang libgit2."""
        index = self.index
        index.read(False)  # only if another process wrote it
        self.check_tree()
        adds: list[str] = []
        removes: list[str] = []
        skipped: list[dict[str, object]] = []
        nested: list[str] = []
        written = 0
        new = 0
        tracked: frozenset[str] | None = None
        for delta in index.diff_to_workdir(SCAN).deltas:
            if delta.status == DeltaStatus.DELETED:
                removes.append(delta.old_file.path)
                continue
            path, size = delta.new_file.path, delta.new_file.size
            if path.endswith("/"):
                nested.append(path[:-1])  # libgit2 does not look into a new nested repository
                continue
            if size > max_file_size:
                tracked = self.project.tracked() if tracked is None else tracked
                if path not in tracked:
                    skipped.append({"path": path, "size": size, "why": "too large"})
                    continue
            new += delta.status == DeltaStatus.UNTRACKED
            adds.append(path)
            written += size
        for top in nested:  # once: with files of it in the index, libgit2 looks into it
            for path, size in self._nested_files(top):
                if size > max_file_size:
                    skipped.append({"path": path, "size": size, "why": "too large"})
                    continue
                new += 1
                adds.append(path)
                written += size
        if len(index) + new - len(removes) > max_files:
            raise TooManyFiles(len(index) + new - len(removes))
        for path in removes:
            index.remove(path)
        for path in adds:
            try:
                index.add(path)
            except (OSError, pygit2.GitError, UnicodeError) as exc:
                skipped.append({"path": path, "size": None, "why": f"unreadable: {exc}"})
        added = self._add_tracked_ignored(index)
        if adds or removes or added:
            self.write_index()
        return Scan(str(index.write_tree()), skipped, written, len(index))

    def write_index(self) -> None:
        self.index.write()
        private_mode(os.path.join(self.path, "index"))

    def _nested_files(self, top: str) -> Iterator[tuple[str, int]]:
        """(path, size) of each file and link under the nested repository at `top` that
        no ignore rule hides, its own `.git` (and any other) left out. The rule files on
        the way were checked by `check_tree`, which enters every directory this does."""

        def ignored(rel: str) -> bool:
            try:
                return bool(self.repo.path_is_ignored(rel))
            except (pygit2.GitError, ValueError):
                return False

        stack = [top]
        while stack:
            directory = stack.pop()
            try:
                with os.scandir(os.path.join(self.root, directory)) as listing:
                    entries = list(listing)
            except OSError:
                continue
            for entry in entries:
                if entry.name.lower() == ".git":
                    continue
                rel = f"{directory}/{entry.name}"
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if not ignored(rel + "/"):
                            stack.append(rel)
                    elif (
                        entry.is_file(follow_symlinks=False) or entry.is_symlink()
                    ) and not ignored(rel):
                        yield rel, entry.stat(follow_symlinks=False).st_size
                except OSError:
                    continue

    def _add_tracked_ignored(self, index: pygit2.Index) -> int:
        """Add files the project's git tracks that the shadow has not got: those its
        .gitignore hides (force-added ones). Runs when the project's index changed."""
        project = self.project.index()
        if project is None:
            return 0
        key = list(project[0])
        if self.state().get("project_index") == key:
            return 0
        added = 0
        for path in project[2]:
            if path not in index and not path.startswith(".git/"):
                full = os.path.join(self.root, path)
                if os.path.isfile(full) or os.path.islink(full):
                    with contextlib.suppress(OSError, pygit2.GitError):
                        index.add(path)
                        added += 1
        self.save_state(project_index=key)
        return added

    def head(self) -> tuple[str, str] | None:
        """(commit, tree) of the latest snapshot, or None before the first."""
        try:
            commit = self.repo.lookup_reference(BRANCH).peel(pygit2.Commit)
        except (KeyError, pygit2.GitError):
            return None
        return str(commit.id), str(commit.tree_id)

    def commit(self, tree: str, message: str) -> str:
        """A commit of `tree` on the snapshots branch (the head itself if it has that
        tree already)."""
        head = self.head()
        if head is not None and head[1] == tree:
            return head[0]
        signature = pygit2.Signature("smith", "smith@localhost", int(time.time()), 0)
        parents = [pygit2.Oid(hex=head[0])] if head else []
        oid = self.repo.create_commit(
            BRANCH, signature, signature, message, pygit2.Oid(hex=tree), parents
        )
        private_mode(os.path.join(self.path, BRANCH))
        return str(oid)

    def has_tree(self, tree: str) -> bool:
        try:
            return isinstance(self.repo.get(tree), pygit2.Tree)
        except (ValueError, pygit2.GitError):
            return False

    # -- comparing ----------------------------------------------------------------------

    def entry(self, tree: str | None, path: str) -> tuple[str, int] | None:
        """(object id, mode) of the file or link at `path` in `tree`; None if there is
        none (a directory there counts as none: its files are entries of their own)."""
        found = self._lookup(tree, path)
        if found is None or found[1] == TREE:
            return None
        return found

    def _lookup(self, tree: str | None, path: str) -> tuple[str, int] | None:
        if tree is None:
            return None
        root = self.repo[tree]
        assert isinstance(root, pygit2.Tree)
        try:
            obj = root[path]
        except KeyError:
            return None
        return str(obj.id), int(obj.filemode)

    def _diff(self, a: str | None, b: str | None) -> pygit2.Diff:
        empty = self.repo.TreeBuilder().write()
        left = self.repo[a or empty]
        right = self.repo[b or empty]
        assert isinstance(left, pygit2.Tree) and isinstance(right, pygit2.Tree)
        return left.diff_to_tree(right)

    def changes(self, a: str | None, b: str | None) -> list[Change]:
        """Every path whose entry differs between trees `a` and `b`, sorted."""
        paths = set()
        for delta in self._diff(a, b).deltas:
            paths.add(delta.old_file.path)
            paths.add(delta.new_file.path)
        return [Change(p, self.entry(a, p), self.entry(b, p)) for p in sorted(paths)]

    def stats(self, a: str | None, b: str | None) -> tuple[int, int, int]:
        """(files changed, lines added, lines deleted) from `a` to `b`."""
        stats = self._diff(a, b).stats
        return stats.files_changed, stats.insertions, stats.deletions

    def patch(self, a: str | None, b: str | None) -> str:
        return self._diff(a, b).patch or ""

    def missing(self, changes: list[Change]) -> list[str]:
        """Paths whose content `apply` would need but the repository no longer holds:
        another smith's `gc` deleted it, while this process still had its trees cached."""
        odb = self.repo.odb
        return [
            c.path
            for c in changes
            if c.new is not None and c.new[1] not in (GITLINK, TREE) and not odb.exists(c.new[0])
        ]

    def ignored(self, path: str) -> bool:
        """Whether an ignore rule hides `path` (a directory with a trailing `/`); raises
        HISTORY_UNSAFE_RULES, asking libgit2 nothing, if a rule file it would read for
        that would hang it."""
        self.rules.check_above(path)
        try:
            return bool(self.repo.path_is_ignored(path))
        except (pygit2.GitError, ValueError):
            return False

    def ignored_in(self, tree: str | None, paths: list[str]) -> set[str]:
        """Which of `paths` the ignore rules as `tree` has them hide: its `.gitignore`
        files above each path, with the rules kept outside the work tree (the shadow's
        exclude file, the user's global excludes). The files are not in `tree`, but that
        says nothing of whether they existed then: a snapshot leaves ignored files out."""
        if not paths:
            return set()
        import tempfile

        with tempfile.TemporaryDirectory(prefix="smith-ignore-") as rules:
            for rel in {_gitignore(p, depth) for p in paths for depth in range(p.count("/") + 1)}:
                found = self.entry(tree, rel)
                if found is not None and found[1] != LINK:  # (git follows no linked rules)
                    blob = self.repo[found[0]]
                    assert isinstance(blob, pygit2.Blob)
                    os.makedirs(os.path.dirname(os.path.join(rules, rel)), exist_ok=True)
                    with open(os.path.join(rules, rel), "wb") as f:
                        f.write(_rules.neutralised(blob.data))  # as git reads them
            probe = _setup.open_repo(self.path)
            probe.workdir = rules  # this object only; the configuration is not written
            hidden: set[str] = set()
            for path in paths:
                with contextlib.suppress(pygit2.GitError, ValueError):
                    if probe.path_is_ignored(path):
                        hidden.add(path)
            probe.free()
            return hidden

    def forget(self, paths: set[str]) -> None:
        """Take `paths` out of the index, leaving the files: ignored, they drop out of
        the snapshots from the next scan on."""
        self.index.read(False)
        for path in paths:
            with contextlib.suppress(OSError, pygit2.GitError, KeyError):
                self.index.remove(path)
        if paths:
            self.write_index()

    def holds(self, full: str, entry: tuple[str, int]) -> bool:
        """Whether the file or link at `full` is exactly `entry` (content and mode)."""
        oid, mode = entry
        try:
            st = os.lstat(full)
            if mode == LINK:
                target = os.fsencode(os.readlink(full)) if stat.S_ISLNK(st.st_mode) else None
                return target is not None and str(pygit2.hash(target)) == oid
            executable = bool(st.st_mode & 0o100)
            if not stat.S_ISREG(st.st_mode) or executable != (mode == EXECUTABLE):
                return False
            return str(pygit2.hashfile(full)) == oid
        except OSError:
            return False

    # -- changing the work tree -----------------------------------------------------------

    def apply(self, changes: list[Change], target: str | None) -> None:
        """Make each changed path as it is in `target` (its `new` entry): deletions
        first, then directories they emptied (unless `target` has files there), then
        content, byte for byte, with its executable bit, or a symbolic link."""
        removed_dirs: set[str] = set()
        changes = [c for c in changes if not _worktree.in_git_dir(c.path)]
        for change in changes:
            if change.new is None and _worktree.remove(self.root, change.path):
                removed_dirs.add(os.path.dirname(change.path))
        for directory in sorted(removed_dirs, key=len, reverse=True):
            self._prune_dirs(directory, target)
        for change in changes:
            if change.new is not None:
                oid, mode = change.new
                if mode in (GITLINK, TREE):
                    continue
                blob = self.repo[oid]
                assert isinstance(blob, pygit2.Blob)
                _worktree.write(self.root, change.path, blob.data, mode)

    def _prune_dirs(self, directory: str, target: str | None) -> None:
        while directory:
            if target is not None and self._lookup(target, directory) is not None:
                return
            try:
                os.rmdir(os.path.join(self.root, directory))
            except OSError:
                return  # not empty (or gone): leave it
            directory = os.path.dirname(directory)

    # -- keeping it bounded --------------------------------------------------------------

    def snapshots(self) -> list[pygit2.Commit]:
        """The snapshot commits, newest first."""
        head = self.head()
        if head is None:
            return []
        found: list[pygit2.Commit] = []
        commit: pygit2.Commit | None = self.repo[head[0]].peel(pygit2.Commit)
        while commit is not None:
            found.append(commit)
            commit = commit.parents[0] if commit.parents else None
        return found

    def gc(
        self,
        *,
        keep_days: int,
        keep_count: int,
        dry_run: bool = False,
        needed: Collection[str] = (),
    ) -> dict[str, Any]:
        """Drop snapshots older than `keep_days` or beyond the newest `keep_count` (the
        newest is always kept), then delete every stored object nothing reaches. The
        report's `lost` lists the trees of `needed` (those an undo or redo needs) that
        are stored now and will not be after."""
        from smith.vcs._gc import gc

        return gc(self, keep_days=keep_days, keep_count=keep_count, dry_run=dry_run,
                  needed=needed, branch=BRANCH)  # fmt: skip

    def reopen(self) -> None:
        """Open the repository afresh (libgit2 caches objects it has read)."""
        self.repo = _setup.open_repo(self.path)
        self.index = self.repo.index


def _gitignore(path: str, depth: int) -> str:
    """The `.gitignore` of the `depth`-th directory above file `path` (0: the root)."""
    return "/".join([*path.split("/")[:depth], ".gitignore"])
