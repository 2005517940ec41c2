"""Durable, atomic replacement of small files (configuration, trust list)."""

from __future__ import annotations

import contextlib
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
