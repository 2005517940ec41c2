"""What a scan of the shadow repository looks at, for the change tracker (_watch.py): which
paths can change its result (`excluded`, `recorded`: the tracker's Coverage) and what
outside the work tree it depends on (`fence`).

A scan takes the files git would: tracked ones, and untracked ones no ignore rule hides.
So a path is out of scope when an ignore rule hides it and no file at or under it is
recorded (in the shadow index, or tracked by the project's git, which a scan compares or
adds even where ignored). Ignore rules in `.gitignore` files are part of the work tree and
reach the tracker as events; the others (the shadow's `info/exclude`, git's global
excludes and configuration) and the two indexes are in the fence, whose change makes the
next check scan and re-arm.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pygit2

from smith.diagnostics import SmithError

if TYPE_CHECKING:
    from smith.vcs._repo import ShadowRepo


def stamp(path: str) -> tuple[int, int, int, int] | None:
    """What changes when the file at `path` does (None: there is none)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def index_key(path: str) -> tuple[object, ...] | None:
    """What changes when the index at `path` does: its stat data and the checksum of its
    content that ends the file (stat data alone can repeat within a clock tick)."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            f.seek(max(st.st_size - 20, 0))
            checksum = f.read(20)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns, checksum


class Scope:
    """The scope of `repo`'s scans (it follows `repo.repo` and `repo.index`, which `gc`
    replaces). Cached per state of the indexes."""

    def __init__(self, repo: ShadowRepo) -> None:
        self.repo = repo
        self._rules: list[str] | None = None
        self._tree: tuple[object, pygit2.Tree] | None = None  # (index stamp, its tree)

    def fence(self) -> tuple[object, ...]:
        """Stat data of what a scan depends on besides the work tree: the shadow index
        (first), the ignore rules kept outside the work tree, the project's index."""
        repo = self.repo
        if self._rules is None:
            self._rules = repo.rule_sources()
        gitdir = repo.project.gitdir()
        project = [os.path.join(gitdir, "index")] if gitdir else []
        return (self.index_key(), *(stamp(p) for p in self._rules), *map(index_key, project))

    def index_key(self) -> tuple[object, ...] | None:
        return index_key(os.path.join(self.repo.path, "index"))

    def excluded(self, rel: str, is_dir: bool) -> bool:
        """Whether a scan never looks at `rel` or below: ignored, and nothing recorded.
        False when that cannot be known safely (a rule file on the way would hang
        libgit2: the scan that follows says so)."""
        try:
            ignored = self.repo.ignored(rel + "/" if is_dir else rel)
        except SmithError:
            return False
        return ignored and not self.recorded(rel)

    def recorded(self, rel: str) -> bool:
        """Whether a file at or under `rel` is in the shadow index or tracked by the
        project's git."""
        repo = self.repo
        index_stamp = self.index_key()
        if self._tree is None or self._tree[0] != index_stamp:
            repo.index.read(False)
            tree = repo.repo[repo.index.write_tree()]  # kept in the index: nothing hashed
            assert isinstance(tree, pygit2.Tree)
            self._tree = (index_stamp, tree)
        if rel in self._tree[1]:
            return True
        project = repo.project.index()
        return project is not None and (rel in project[2] or rel in repo.project.tracked_dirs())
