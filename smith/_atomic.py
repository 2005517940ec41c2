"""Durable, atomic replacement of small files (configuration, trust list), and owner-only
directories and files under smith's data directory."""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile


def write_atomic(path: str, text: str, *, mode: int | None = None) -> None:
    """Replace `path` with `text` so that readers see the old or the new file, never half.

    The new content is written to a temporary file in the same directory, flushed to disk,
    then renamed over the target; the directory is synced so the rename survives a crash.
    An existing file's permission bits are kept.
    """
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    if mode is None:
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o644
    fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


# -- owner-only paths under smith's data directory ($SMITH_HOME) ------------------------
# Everything smith keeps about a project (sessions, file history, caches, logs) is the
# user's alone: directories 0700, files 0600, set explicitly at creation (never through
# the process umask, which the files that tools write in the project follow too).

PRIVATE_DIR, PRIVATE_FILE = 0o700, 0o600
_repaired: set[str] = set()


def private_dirs(path: str, home: str | None = None) -> str:
    """Make directory `path` owner-only and return it: each missing component is created
    0700 and `path` itself loses any group or other bits. With `home` (smith's data
    directory, holding `path`), `home` is made private first (`private_home`)."""
    if home is not None:
        private_home(home)
    missing = []
    current = os.path.abspath(path)
    while not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile by another process
            os.mkdir(directory, PRIVATE_DIR)
            continue
        if not os.path.isdir(directory):
            why = "a file stands where a directory must be"
            raise FileExistsError(errno.EEXIST, why, directory)
    if not missing:
        private_mode(path)
    return path


def private_mode(path: str) -> None:
    """Take group and other bits off `path` (its own; a link is left alone)."""
    try:
        st = os.lstat(path)
    except OSError:
        return
    if st.st_mode & 0o077 and st.st_uid == os.geteuid() and not os.path.islink(path):
        with contextlib.suppress(OSError):
            os.chmod(path, st.st_mode & 0o7700)


def private_home(home: str) -> None:
    """Make smith's data directory owner-only: created 0700, or, once per process, if
    it has group or other bits (made by an earlier smith), those bits are taken off it
    and everything in it. A home that is the user's home directory or `/` is left as it
    is (only what smith made in it would be its own)."""
    home = os.path.abspath(home)
    if home in _repaired:
        return
    if not os.path.isdir(home):
        private_dirs(home)
    else:
        real = os.path.realpath(home)
        if real not in ("/", os.path.realpath(os.path.expanduser("~"))):
            try:
                loose = bool(os.stat(real).st_mode & 0o077)
            except OSError:
                loose = False
            if loose:
                private_tree(real)
    _repaired.add(home)


def private_tree(top: str) -> None:
    """Take group and other bits off `top` and everything under it that the user owns
    (links are not followed), `top` last: once it is 0700 a tree counts as repaired."""
    for directory, dirs, files in os.walk(top, topdown=False):
        for name in files + dirs:
            private_mode(os.path.join(directory, name))
    private_mode(top)
