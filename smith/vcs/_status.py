"""The state of the project's own git repository, summarised for the model
(smith.runtime's environment block): whether there is one, its branch, and how many
files differ from HEAD, with the first few paths.

The repository is only read. The branch comes from pygit2 (no scan of the work tree);
the status from `git status` with a timeout and without optional locks, so a huge tree
costs at most the timeout and never takes the index lock from the user's own git. When
git is not installed, pygit2 scans the tree instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

TIMEOUT = 2.0  # seconds `git status` may take before the status is left out


@dataclass(frozen=True)
class GitState:
    branch: str  # "main", "detached at 1a2b3c4", "main (no commits yet)"
    changed: int | None = None  # tracked files that differ from HEAD; None: not known
    untracked: int | None = None
    paths: tuple[str, ...] = ()  # the first few of them, changed first
    unknown: str = ""  # why the counts are not known

    def summary(self) -> str:
        """One line, e.g. 'branch main; 2 changed, 1 untracked: a.py, b.py, c.txt'."""
        head = f"branch {self.branch}"
        if self.changed is None or self.untracked is None:
            return f"{head}; status not known ({self.unknown})"
        if not self.changed and not self.untracked:
            return f"{head}; clean"
        counts = f"{self.changed} changed, {self.untracked} untracked"
        more = self.changed + self.untracked - len(self.paths)
        listed = ", ".join(self.paths) + (f" and {more} more" if more > 0 else "")
        return f"{head}; {counts}: {listed}"

    def to_dict(self) -> dict[str, object]:
        return {"branch": self.branch, "changed": self.changed, "untracked": self.untracked,
                "paths": list(self.paths), "unknown": self.unknown or None}  # fmt: skip


# A repository's own configuration must not run programs for smith's status: the model
# may have written it (a fresh `git init`, core.fsmonitor set to a script).
SAFE = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
        "-c", "core.untrackedCache=false")  # fmt: skip


def git_state(
    path: str,
    *,
    limit: int = 5,
    timeout: float = TIMEOUT,
    confine: Callable[[list[str], str], list[str]] | None = None,
) -> GitState | None:
    """The git repository holding `path` (None when there is none): its branch and a
    status bounded to `limit` paths and `timeout` seconds. `confine(argv, cwd)` runs git
    in a sandbox (read-only: smith.effects.Sandbox), so nothing the repository's files
    make git run (filters, say) can reach outside it."""
    import pygit2

    found = pygit2.discover_repository(path)
    if found is None:
        return None
    try:
        repo = pygit2.Repository(found)
    except pygit2.GitError:
        return None
    branch = _branch(repo)
    if repo.is_bare:
        return GitState(branch, unknown="a bare repository")
    workdir = repo.workdir or path
    git = shutil.which("git")
    if git is None:
        return _scanned(repo, branch, limit)
    argv = [git, *SAFE, "--no-optional-locks", "status", "--porcelain=v1", "-z",
            "--untracked-files=normal"]  # fmt: skip
    if confine is not None:
        argv = confine(argv, workdir)
    try:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL,
            cwd=workdir, capture_output=True, timeout=timeout, check=False,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"},
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return GitState(branch, unknown=f"git status took over {timeout:g} s")
    except OSError as exc:
        return GitState(branch, unknown=f"git could not run: {exc.strerror or exc}")
    if done.returncode != 0:
        first = done.stderr.decode("utf-8", "replace").strip().splitlines()[:1]
        return GitState(branch, unknown=first[0] if first else "git status failed")
    return _counted(_porcelain(done.stdout), branch, limit)


def _branch(repo: object) -> str:
    import pygit2

    assert isinstance(repo, pygit2.Repository)
    try:
        if repo.head_is_unborn:
            target = repo.references["HEAD"].target
            name = str(target).removeprefix("refs/heads/")
            return f"{name} (no commits yet)"
        if repo.head_is_detached:
            return f"detached at {str(repo.head.target)[:7]}"
        return str(repo.head.shorthand)
    except (pygit2.GitError, KeyError):
        return "unknown"


def _porcelain(out: bytes) -> list[tuple[str, str]]:
    """(XY code, path) of each entry of `git status --porcelain=v1 -z`."""
    fields = out.split(b"\0")
    entries: list[tuple[str, str]] = []
    i = 0
    while i < len(fields):
        item = fields[i]
        i += 1
        if len(item) < 4:
            continue
        code, path = item[:2].decode("ascii", "replace"), item[3:].decode("utf-8", "replace")
        if "R" in code or "C" in code:
            i += 1  # the original path of a rename or copy follows
        entries.append((code, path))
    return entries


def _counted(entries: list[tuple[str, str]], branch: str, limit: int) -> GitState:
    changed = [p for c, p in entries if c not in ("??", "!!")]
    untracked = [p for c, p in entries if c == "??"]
    return GitState(branch, len(changed), len(untracked), tuple((changed + untracked)[:limit]))


def _scanned(repo: object, branch: str, limit: int) -> GitState:
    import pygit2

    assert isinstance(repo, pygit2.Repository)
    try:
        status = repo.status(untracked_files="normal")
    except pygit2.GitError as exc:
        return GitState(branch, unknown=str(exc))
    entries = [
        ("??" if flags & pygit2.enums.FileStatus.WT_NEW else " M", path)
        for path, flags in sorted(status.items())
        if not flags & pygit2.enums.FileStatus.IGNORED
    ]
    return _counted(entries, branch, limit)
