"""Files of the session store: atomic publication, copies kept beside a file before it
is changed (a torn tail cut on open, a repaired file's original), directory syncs."""

from __future__ import annotations

import os
import time

from smith._fast import _frames


def _new_id() -> str:
    return os.urandom(4).hex()


def publish(path: str, data: bytes, *, replace: bool = True) -> None:
    """Create `path` holding `data` atomically: readers see nothing or the whole file.

    With `replace=False` an existing file is never overwritten (FileExistsError).
    """
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.{_new_id()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    if replace:
        os.replace(tmp, path)
    else:
        try:
            os.link(tmp, path)  # atomic, and fails if `path` exists
        finally:
            os.unlink(tmp)
    _fsync_directory(directory)


def backup_path(path: str, what: str) -> str:
    """A free name beside `path` for a copy of (part of) it: PATH.WHAT-STAMP[-N]."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    for n in range(1000):
        candidate = f"{path}.{what}-{stamp}" + (f"-{n}" if n else "")
        if not os.path.lexists(candidate):
            return candidate
    raise FileExistsError(f"{path}.{what}-{stamp}")


def keep_tail(fd: int, path: str, start: int) -> str | None:
    """Copy what the open file `fd` holds from `start` to its end into a new file beside
    `path` (PATH.torn-at-START-STAMP, owner-only; holes stay holes), read in bounded
    chunks; None, writing nothing, when it is only zeros (a zero-filled or sparse tail)."""
    size = os.fstat(fd).st_size
    out, target = -1, None
    try:
        for begin, stop in _frames.data_extents(fd, start, size):
            at = begin
            while at < stop:
                chunk = os.pread(fd, min(1 << 20, stop - at), at)
                if not chunk:
                    break
                if out < 0 and chunk.count(0) < len(chunk):
                    target = backup_path(path, f"torn-at-{start}")
                    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
                    out = os.open(target, flags, 0o600)
                if out >= 0:
                    os.pwrite(out, chunk, at - start)
                at += len(chunk)
        if out < 0:
            return None
        os.ftruncate(out, size - start)
        os.fsync(out)
    finally:
        if out >= 0:
            os.close(out)
    _fsync_directory(os.path.dirname(os.path.abspath(path)))
    return target


def _fsync_directory(directory: str) -> None:
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
