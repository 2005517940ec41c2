"""The project's own git repository, as file history reads it (never writes it): which
files it tracks under the project's root, so that a snapshot keeps them even where a
.gitignore would hide them. Its `.git` files are checked before libgit2 opens them
(_rules.check_gitdirs): a FIFO there would hang it.
"""

from __future__ import annotations

import os

import pygit2

from smith.vcs import _rules


class ProjectGit:
    """The git repository holding `root`, if any (not the shadow repository at `shadow`);
    what it tracks is cached while its index file is unchanged."""

    def __init__(self, root: str, shadow: str) -> None:
        self.root = root
        self.shadow = shadow
        self._gitdir: str | bool | None = False  # (False: not looked for yet)
        self._index: tuple[tuple[int, ...], str, frozenset[str]] | None = None
        self._dirs: tuple[tuple[int, ...], frozenset[str]] | None = None

    def gitdir(self) -> str | None:
        """The project's own git directory (None: it has none)."""
        if self._gitdir is False:
            # Discovery reads `.git` files and a git directory's files: none may hang it.
            safe = _rules.check_gitdirs(self.root)
            found = pygit2.discover_repository(self.root) if safe else None
            mine = found is not None and os.path.realpath(found) == os.path.realpath(self.shadow)
            self._gitdir = None if mine else found
        return self._gitdir if isinstance(self._gitdir, str) else None

    def index(self) -> tuple[tuple[int, ...], str, frozenset[str]] | None:
        """(stat of the project's index, prefix of this root in it, tracked paths under
        the root relative to it); read-only, cached while the index file is unchanged."""
        gitdir = self.gitdir()
        if gitdir is None:
            return None
        index_path = os.path.join(gitdir, "index")
        try:
            st = os.stat(index_path)
        except OSError:
            return None
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        if self._index is not None and self._index[0] == key:
            return self._index
        try:
            if not _rules.check_gitdirs(self.root):
                return None
            project = pygit2.Repository(gitdir)
            workdir = project.workdir
            paths = [entry.path for entry in project.index] if workdir else []
        except pygit2.GitError:
            return None
        prefix = os.path.relpath(self.root, os.path.realpath(workdir or self.root))
        prefix = "" if prefix == "." else prefix.replace(os.sep, "/") + "/"
        under = frozenset(p[len(prefix) :] for p in paths if p.startswith(prefix))
        self._index = (key, prefix, under)
        return self._index

    def tracked(self) -> frozenset[str]:
        project = self.index()
        return frozenset() if project is None else project[2]

    def tracked_dirs(self) -> frozenset[str]:
        """The directories holding files the project's git tracks (cached per index)."""
        project = self.index()
        if project is None:
            return frozenset()
        if self._dirs is None or self._dirs[0] != project[0]:
            dirs: set[str] = set()
            for path in project[2]:
                end = path.rfind("/")
                while end > 0 and path[:end] not in dirs:
                    dirs.add(path[:end])
                    end = path.rfind("/", 0, end)
            self._dirs = (project[0], frozenset(dirs))
        return self._dirs[1]
