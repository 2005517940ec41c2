"""The state of the project's own git repository, summarised for the model
(smith.runtime's environment block): whether there is one, its branch, and how many
files differ from HEAD, with the first few paths.

The repository is only read, and nothing in it runs: the repository may come from
anywhere (a clone with its own .git, one the model made), and git runs programs its
configuration names (filter drivers' clean and process commands, core.fsmonitor, hooks),
with the environment it is given. So git itself is never run. The branch comes from
pygit2 (no scan of the work tree); the status from libgit2 too, which has no external
filter drivers, fsmonitor or hooks (only its built-in crlf and ident filters), in a
child process (smith.effects' helper rules: the caller's environment, without provider
keys) ended at a timeout, so a huge tree, or a tree that makes libgit2 loop, costs at
most the timeout. Why a status is not known is said in a few masked words, never in
text the repository could write at length.

The child also finds the repository and its branch, so smith's own process need not
import pygit2 (40 ms and more) to describe the project: a prompt that changes no file
never imports it (smith.vcs._repo does, for the file history); and where nothing from
the project up is what a repository is made of (a `.git` file, a HEAD), no child starts.
Where the child gives no answer (it did not start, failed or took too long), or,
confined, found none where discovery also looks above what it was shown, smith finds
the repository and its branch itself, as before.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeAlias

    # The reader's run: what it printed, or why it did not finish.
    Read: TypeAlias = subprocess.CompletedProcess[bytes] | subprocess.TimeoutExpired | OSError

TIMEOUT = 2.0  # seconds the status may take before it is left out
REASON_CHARS = 120  # of why a status is not known


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


# The reader: libgit2 through pygit2, found on smith's own import path (given whole, -I
# -S: nothing of the project's is imported). Given a path, it finds the repository
# holding it and prints `-\0` when there is none (or it cannot be opened), else
# `@BRANCH\0` (named as `_branch` names it), then `B` for a bare repository; given a
# repository smith found (--found), only the status: `!REASON` when libgit2 refuses,
# else `FLAGS PATH\0` per entry.
READER = """\
import os, sys
sys.path[:] = sys.argv[1].split("\\n")
import pygit2
out = sys.stdout.buffer
found = sys.argv[2]
if sys.argv[3:] != ["--found"]:
    found = pygit2.discover_repository(found)
    try:
        repo = pygit2.Repository(found) if found is not None else None
    except pygit2.GitError:
        repo = None
    if repo is None:
        out.write(b"-\\0")
        sys.exit(0)
    try:
        if repo.head_is_unborn:
            name = str(repo.references["HEAD"].target).removeprefix("refs/heads/")
            branch = f"{name} (no commits yet)"
        elif repo.head_is_detached:
            branch = f"detached at {str(repo.head.target)[:7]}"
        else:
            branch = str(repo.head.shorthand)
    except (pygit2.GitError, KeyError):
        branch = "unknown"
    out.write(b"@" + branch.encode("utf-8", "surrogateescape") + b"\\0")
    if repo.is_bare:
        out.write(b"B")
        sys.exit(0)
try:
    status = pygit2.Repository(found).status(untracked_files="normal")
except pygit2.GitError as exc:
    out.write(b"!" + str(exc).encode("utf-8", "replace"))
    sys.exit(0)
for path, flags in sorted(status.items()):
    out.write(b"%d " % flags + os.fsencode(path) + b"\\0")
"""
NOT_FOUND = b"-\0"
BARE = b"B"
IGNORED = 1 << 14  # GIT_STATUS_IGNORED
WT_NEW = 1 << 7  # GIT_STATUS_WT_NEW
INDEX_ANY = 0x1F  # GIT_STATUS_INDEX_NEW ... INDEX_TYPECHANGE


def git_state(
    path: str,
    *,
    limit: int = 5,
    timeout: float = TIMEOUT,
    confine: Callable[[list[str], str], list[str]] | None = None,
    env: Mapping[str, str] | None = None,
) -> GitState | None:
    """The git repository holding `path` (None when there is none): its branch and a
    status bounded to `limit` paths and `timeout` seconds. The status is read by a child
    process with environment `env` (None: only HOME and XDG_CONFIG_HOME, where git's own
    configuration is); `confine(argv, cwd)` runs it in a sandbox (read-only:
    smith.effects.Sandbox) besides."""
    from smith.vcs._rules import check_gitdirs

    if not check_gitdirs(path):  # libgit2 would block opening it
        return GitState("unknown", unknown="a file in its .git is a FIFO or a device")
    real = os.path.realpath(path)
    holders = _holders(real)
    if not holders:  # nothing that libgit2's discovery takes for a repository
        return None
    if env is None:
        env = {k: v for k, v in os.environ.items() if k in ("HOME", "XDG_CONFIG_HOME")}
    read = _read(real, real, env, timeout, confine)
    answer = _answer(read)
    if answer is not None:  # the reader found it: its branch, then its status
        return _state(*answer, limit)
    if _said(read, NOT_FOUND) and (confine is None or holders == [real]):
        return None  # and it saw all that discovery looks at
    # No answer about the repository: found here (pygit2 imported only now).
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
    if _said(read, NOT_FOUND):
        # Confined to the path, the reader did not see the repository above it (under
        # the sandbox's private /tmp): read again, its work tree confined with it.
        read = _read(found, repo.workdir or path, env, timeout, confine, found=True)
    if isinstance(read, subprocess.TimeoutExpired):
        return GitState(branch, unknown=f"reading it took over {timeout:g} s")
    if isinstance(read, OSError):
        return GitState(branch, unknown=_reason(f"it could not be read: {read.strerror or read}"))
    if read.returncode != 0:  # what it printed is not passed on: the repository shaped it
        return GitState(branch, unknown=f"its reader failed (exit status {read.returncode})")
    return _state(branch, read.stdout, limit)


def _holders(real: str) -> list[str]:
    """The directories from the real path `real` up that may be or hold a repository:
    libgit2's discovery takes a `.git` file (a link to one), or a directory with a HEAD,
    `.git` or the directory itself (a bare one)."""
    found, current = [], real
    while True:
        dot = os.path.join(current, ".git")
        heads = (os.path.join(dot, "HEAD"), os.path.join(current, "HEAD"))
        if os.path.isfile(dot) or any(os.path.lexists(h) for h in heads):
            found.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            return found
        current = parent


def _said(read: Read, out: bytes) -> bool:
    """Whether the reader finished and printed `out`."""
    if not isinstance(read, subprocess.CompletedProcess) or read.returncode != 0:
        return False
    return read.stdout == out


def _read(
    path: str,
    workdir: str,
    env: Mapping[str, str],
    timeout: float,
    confine: Callable[[list[str], str], list[str]] | None,
    *,
    found: bool = False,
) -> Read:
    """The reader's run on the repository holding `path` (`found`: the repository at
    `path`, its status only), or why it did not finish."""
    where = [p for p in sys.path if os.path.isabs(p) and "\n" not in p]
    argv = [sys.executable, "-I", "-S", "-c", READER, "\n".join(where), path]
    argv += ["--found"] if found else []
    if confine is not None:
        argv = confine(argv, workdir)
    try:
        return _run(argv, workdir, env, timeout)
    except (subprocess.TimeoutExpired, OSError) as exc:
        return exc


def _answer(read: Read) -> tuple[str, bytes] | None:
    """(the branch, the status output after it) where the reader found the repository."""
    if not isinstance(read, subprocess.CompletedProcess) or read.returncode != 0:
        return None
    if not read.stdout.startswith(b"@"):
        return None
    head, _, rest = read.stdout[1:].partition(b"\0")
    return head.decode("utf-8", "surrogateescape"), rest


def _state(branch: str, out: bytes, limit: int) -> GitState:
    """The state the reader's status output `out` (after its branch) says."""
    if out == BARE:
        return GitState(branch, unknown="a bare repository")
    if out.startswith(b"!"):
        return GitState(branch, unknown=_reason(out[1:].decode("utf-8", "replace")))
    return _counted(_entries(out), branch, limit)


def _run(argv: list[str], cwd: str, env: Mapping[str, str],
         timeout: float) -> subprocess.CompletedProcess[bytes]:  # fmt: skip
    """The reader as one of smith's helper processes: ended and waited for at the
    timeout, with everything it started (smith._spawn.run_child)."""
    from smith._spawn import run_child

    return run_child(argv, cwd=cwd, env=env, timeout=timeout)


def _reason(text: str) -> str:
    """A short, masked, one-line reason for the block the model is sent."""
    from smith.diagnostics import masked

    line = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    line = masked(line)
    return line if len(line) <= REASON_CHARS else line[: REASON_CHARS - 1] + "…"


def _entries(out: bytes) -> list[tuple[str, str]]:
    """(XY-like code, path) of each entry the reader printed: '??' untracked, ' M' any
    other difference from HEAD; ignored files left out."""
    entries: list[tuple[str, str]] = []
    for item in out.split(b"\0"):
        flags, _, raw = item.partition(b" ")
        if not flags.isdigit() or not raw:
            continue
        bits = int(flags)
        if bits & IGNORED:
            continue
        untracked = bits & WT_NEW and not bits & INDEX_ANY
        path = raw.decode("utf-8", "backslashreplace")
        entries.append(("??" if untracked else " M", path))
    return entries


def _branch(repo: object) -> str:
    """The branch, as the reader names it too."""
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


def _counted(entries: list[tuple[str, str]], branch: str, limit: int) -> GitState:
    changed = [p for c, p in entries if c not in ("??", "!!")]
    untracked = [p for c, p in entries if c == "??"]
    return GitState(branch, len(changed), len(untracked), tuple((changed + untracked)[:limit]))
