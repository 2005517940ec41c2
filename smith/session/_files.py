"""Files of the session store: atomic publication (a new file never over an existing
one), copies kept beside a file before it is changed (a torn tail cut on open, a
repaired file's original), directory syncs; opening without blocking, and the exclusive
lock an open session holds."""

from __future__ import annotations

import os
import time

from smith._fast import _frames
from smith.diagnostics import Source
from smith.session._problems import EXISTS, LOCKED, NOT_A_SESSION


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


def publish_new(path: str, data: bytes, id: str) -> None:
    """Publish a new session file (a fork, a clone): never over an existing file, which
    would be rewritten with no copy kept (session.exists instead)."""
    try:
        publish(path, data, replace=False)
    except FileExistsError:
        raise EXISTS.error(source=Source("file", path), id=id) from None


def open_regular(path: str, flags: int) -> int:
    """Open `path` without ever blocking (a FIFO would wait for a writer forever), and
    only if it is a regular file: session.not-a-session otherwise."""
    import stat

    fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise NOT_A_SESSION.error(source=Source("file", path), reason=f"it is {kind}")
    if flags & os.O_NONBLOCK == 0:
        os.set_blocking(fd, True)
    return fd


def lock(path: str, timeout: float) -> int:
    """Open `path` for appending under an exclusive lock, waiting up to `timeout` s."""
    import fcntl

    # Never blocks on a FIFO, and a directory fails to open for writing. The file's kind
    # was checked when it was read (open_regular); no fstat here, whose block count
    # would make the cost of taking the lock depend on the session's size.
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_NONBLOCK)
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                sid = os.path.basename(path).rsplit(".", 1)[0]
                raise LOCKED.error(source=Source("file", path), id=sid) from None
            time.sleep(0.02)
