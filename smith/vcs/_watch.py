"""A change tracker over Linux inotify, so that finding nothing changed since the last
scan costs the events since then, not an `lstat` per file.

    tracker = ChangeTracker(root)
    tracker.prepare(coverage)     # arm (or re-arm) BEFORE the scan it is to vouch for
    scan = repo.scan(...)         # the baseline
    ...
    if tracker.quiet(coverage):   # no event under the scanned paths since prepare()
        ...                       # the files are still as that scan found them
    tracker.close()               # the watches go with the descriptor

Watches go on every directory a scan looks into: not `.git`, not ignored directories
(unless a file under one is recorded: `Coverage.recorded`), nested repositories included;
directories made later get theirs as their creation is read, before the scan that follows
it. The kernel queues each event before the system call that caused it returns, so when
`quiet` has read the queue empty, every change finished before the check is accounted
for. Events on paths a scan never looks at (ignored, unrecorded) do not count.

Only "nothing changed" is ever taken on trust, and only when nothing on the way was in
doubt; any doubt means a full scan: the queue overflowed, a directory moved (the paths of
its watches are wrong now) or a `.gitignore` or `.git` changed (the set of directories to
watch may have) -> re-armed before the next scan; a watch could not be added (above all
ENOSPC: fs.inotify.max_user_watches), inotify is missing (not Linux, or no instance left)
or the project is on a filesystem whose changes inotify does not see (NFS, SMB, FUSE and
other network or cluster filesystems, checked with statfs) -> `broken` for good, and
every check scans. A new process starts unarmed, so its first check scans.

Not seen (as with watchman and git's fsmonitor): writes through a shared memory mapping,
and writes to a file hard-linked from outside the project made through that other path;
`vcs.watch false` turns tracking off where those matter. No pip dependency: inotify_simple
would replace only the forty lines of ctypes and parsing below, and statfs is needed anyway.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import struct
import sys
import weakref
from collections.abc import Iterator
from typing import Protocol

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_UNMOUNT, IN_Q_OVERFLOW, IN_IGNORED = (
    0x400, 0x800, 0x2000, 0x4000, 0x8000,
)  # fmt: skip
IN_ONLYDIR, IN_DONT_FOLLOW, IN_EXCL_UNLINK, IN_ISDIR = 0x1000000, 0x2000000, 0x4000000, 0x40000000
MASK = (
    IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE
    | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK
)  # fmt: skip
HEADER = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then the name)
READ_SIZE = 64 * 1024

# statfs f_type of filesystems where changes can be made that inotify never reports (by
# another machine, or by a user-space server): <linux/magic.h> and the filesystems' sources.
UNTRUSTED_FS = {
    0x6969: "NFS",
    0x517B: "SMB",
    0xFF534D42: "CIFS",
    0xFE534D42: "SMB2",
    0x65735546: "FUSE",
    0x01021997: "9P",
    0x00C36400: "Ceph",
    0x5346414F: "AFS",
    0x6B414653: "AFS",
    0x73757245: "Coda",
    0x564C: "NCP",
    0x01161970: "GFS2",
    0x7461636F: "OCFS2",
    0x0BD00BD0: "Lustre",
    0x47504653: "GPFS",
    0x786F4256: "VirtualBox shared folder",
}


class Coverage(Protocol):
    """Which paths a scan looks at (implemented by ShadowRepo; paths are relative to the
    root, with `/`)."""

    def excluded(self, rel: str, is_dir: bool) -> bool:
        """Whether a scan never looks at `rel` nor below it: it is ignored and nothing at
        or under it is recorded."""
        ...

    def recorded(self, rel: str) -> bool:
        """Whether a file at or under `rel` is in the shadow index or tracked by the
        project's git (a scan compares those even where ignored)."""
        ...


class Libc:
    """The few libc functions the tracker needs, typed."""

    def __init__(self) -> None:
        lib = ctypes.CDLL(None, use_errno=True)
        self.init1 = lib.inotify_init1
        self.init1.argtypes, self.init1.restype = [ctypes.c_int], ctypes.c_int
        self.add_watch = lib.inotify_add_watch
        self.add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self.add_watch.restype = ctypes.c_int
        self.statfs = lib.statfs
        self.statfs.argtypes, self.statfs.restype = [ctypes.c_char_p, ctypes.c_void_p], ctypes.c_int


@functools.cache
def libc() -> Libc | None:
    """libc's inotify and statfs, or None where there are none."""
    try:
        return Libc()
    except (OSError, AttributeError):
        return None


def fs_type(lib: Libc, path: bytes) -> int | None:
    """statfs(2) f_type of the filesystem holding `path`, or None if it cannot be read."""
    buf = ctypes.create_string_buffer(256)  # struct statfs is 120 bytes on 64-bit Linux
    if lib.statfs(path, buf) != 0:
        return None
    # f_type comes first; a long (__fsword_t) everywhere but s390x, where it is 32 bits.
    word = ctypes.c_uint if platform.machine().startswith("s390") else ctypes.c_long
    return int(word.from_buffer(buf).value) & 0xFFFFFFFF


def untrusted_fs(lib: Libc, path: bytes) -> str | None:
    """The name of the filesystem holding `path` if inotify cannot be trusted there."""
    kind = fs_type(lib, path)
    if kind is None:
        return "an unknown filesystem (statfs failed)"
    return UNTRUSTED_FS.get(kind)


def mounts_under(root: bytes) -> list[bytes]:
    """Mount points strictly inside `root`, relative to it (from /proc/self/mountinfo)."""
    try:
        with open("/proc/self/mountinfo", "rb") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    prefix = root.rstrip(b"/") + b"/"
    found = []
    for line in lines:
        fields = line.split(b" ")
        if len(fields) > 4:
            point = fields[4].decode("unicode_escape").encode("latin-1")  # \040 and co.
            if point.startswith(prefix) and len(point) > len(prefix):
                found.append(point[len(prefix) :])
    return found


def events(data: bytes) -> Iterator[tuple[int, int, bytes]]:
    """(watch descriptor, mask, name) of each `struct inotify_event` in `data`."""
    offset = 0
    while offset + HEADER.size <= len(data):
        wd, mask, _, length = HEADER.unpack_from(data, offset)
        start = offset + HEADER.size
        yield wd, mask, data[start : start + length].rstrip(b"\0")
        offset = start + length


def _join(parent: str, name: str) -> str:
    return f"{parent}/{name}" if parent else name


class ChangeTracker:
    """Watches over one project's directories (see the module docstring). Not
    thread-safe: FileHistory calls it under its lock."""

    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)
        self.fd: int | None = None
        self.broken: str | None = None  # why it can never vouch (set once, for good)
        self.stale: str | None = "not armed yet"  # why the watches must be set up again
        self.changed = True  # an event under the scanned paths since prepare()
        self.watches: dict[int, str] = {}  # watch descriptor -> directory (relative)
        self.arms = 0
        self._lib: Libc | None = None
        self._finalizer: weakref.finalize[[int], ChangeTracker] | None = None

    @property
    def doubt(self) -> str | None:
        """Why the tracker cannot say the files are unchanged now (None: it can)."""
        return self.broken or self.stale or ("changed" if self.changed else None)

    # -- the two questions ----------------------------------------------------------------

    def quiet(self, coverage: Coverage) -> bool:
        """True if nothing a scan looks at changed since `prepare()` (events are read
        without blocking); False on any change or doubt."""
        if self.broken is None and self.stale is None and not self.changed:
            self._drain(coverage)
        return self.doubt is None

    def prepare(self, coverage: Coverage) -> None:
        """Take in what happened so far (re-arming if the watches are in doubt) and start
        counting afresh: call right before the scan the tracker is then to vouch for."""
        if self.broken is not None:
            return
        if self.stale is None:
            self._drain(coverage)
        if self.stale is not None and self.broken is None:
            self._arm(coverage)
        self.changed = False

    def invalidate(self, reason: str) -> None:
        """Set up the watches again before the next scan (what is watched may change)."""
        self.stale = self.stale or reason

    def close(self) -> None:
        """Close the descriptor, and with it every watch."""
        self._release()
        self.broken = self.broken or "closed"

    # -- arming -----------------------------------------------------------------------------

    def _arm(self, coverage: Coverage) -> None:
        self._release()
        lib = libc() if sys.platform == "linux" else None
        if lib is None:
            self.broken = f"inotify is not available on {sys.platform}"
            return
        root = os.fsencode(self.root)
        kind = untrusted_fs(lib, root)
        if kind is not None:
            self.broken = f"the project is on {kind}, where inotify misses changes"
            return
        fd = lib.init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            self.broken = f"inotify_init1 failed: {os.strerror(ctypes.get_errno())}"
            return
        self.fd, self.stale, self.arms, self._lib = fd, None, self.arms + 1, lib
        self._finalizer = weakref.finalize(self, os.close, fd)
        self._watch_tree("", coverage)
        watched = set(self.watches.values())
        for point in mounts_under(root) if self.broken is None else []:
            if os.fsdecode(point) in watched:
                kind = untrusted_fs(lib, os.path.join(root, point))
                if kind is not None:
                    self._fail(f"{os.fsdecode(point)} is on {kind}, where inotify misses changes")
                    break

    def _watch_tree(self, top: str, coverage: Coverage) -> None:
        """Watch directory `top` and every directory below it that a scan looks into.
        Each directory is watched before it is listed, so one made in it meanwhile is
        either listed or reported."""
        lib = self._lib
        assert lib is not None and self.fd is not None
        stack = [top]
        while stack and self.broken is None:
            rel = stack.pop()
            path = os.fsencode(_join(self.root, rel) if rel else self.root)
            wd = lib.add_watch(self.fd, path, MASK)
            if wd < 0:
                code = ctypes.get_errno()
                if code in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                    continue  # gone or replaced since it was listed: its parent saw that
                why = os.strerror(code)
                if code == errno.ENOSPC:
                    why = "the limit fs.inotify.max_user_watches is reached"
                self._fail(f"cannot watch {os.fsdecode(path)}: {why}")
                return
            self.watches[wd] = rel
            try:
                with os.scandir(path) as listing:
                    entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in listing]
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as exc:
                self._fail(f"cannot list {os.fsdecode(path)}: {exc.strerror}")
                return
            for name, is_dir in entries:
                if is_dir and name.lower() != b".git":  # a nested repository's files count
                    child = _join(rel, os.fsdecode(name))
                    if not coverage.excluded(child, True):
                        stack.append(child)

    def _fail(self, reason: str) -> None:
        self.broken = reason
        self._release()

    def _release(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # closes the descriptor, once
            self._finalizer = None
        self.fd = None
        self.watches = {}
        self.stale = self.stale or "released"

    # -- reading events ------------------------------------------------------------------------

    def read(self, fd: int) -> bytes:
        """The pending events (raises BlockingIOError when there are none)."""
        return os.read(fd, READ_SIZE)

    def _drain(self, coverage: Coverage) -> None:
        made: list[str] = []
        while self.fd is not None and self.stale is None:
            try:
                data = self.read(self.fd)
            except BlockingIOError:
                break
            except OSError as exc:
                self.stale = f"reading events failed: {exc}"
                break
            for wd, mask, name in events(data):
                self._take(wd, mask, name, made, coverage)
        if self.stale is None and self.broken is None:
            for rel in sorted(set(made)):
                self._watch_tree(rel, coverage)

    def _take(self, wd: int, mask: int, name: bytes, made: list[str], coverage: Coverage) -> None:
        """Account for one event; `made` collects directories that need watches."""
        if self.stale is not None:
            return  # the watches are set up again and everything scanned anyway
        if mask & IN_Q_OVERFLOW:
            self.stale = self.stale or "the event queue overflowed"
            self.changed = True
            return
        parent = self.watches.get(wd)
        if mask & IN_IGNORED:  # the watch is gone (its directory was deleted)
            self.watches.pop(wd, None)
            if parent == "":
                self.stale = self.stale or "the project directory went away"
            self.changed = True
            return
        if parent is None or mask & (IN_MOVE_SELF | IN_DELETE_SELF | IN_UNMOUNT):
            if parent is None or parent == "" or not mask & IN_DELETE_SELF:
                self.stale = self.stale or "a watched directory moved or was unmounted"
            self.changed = True
            return
        is_dir = bool(mask & IN_ISDIR)
        rel = _join(parent, os.fsdecode(name))
        if name in (b".gitignore", b".git"):
            self.stale = self.stale or f"{rel} changed (what a scan looks at may have)"
            self.changed = True
            return
        if is_dir and mask & IN_MOVED_FROM:
            self.stale = self.stale or f"directory {rel} moved"
            self.changed = True
            return
        made_dir = is_dir and bool(mask & (IN_CREATE | IN_MOVED_TO))
        if (made_dir or not self.changed) and coverage.excluded(rel, is_dir):
            return  # a scan never looks there
        if made_dir:
            made.append(rel)
        self.changed = True


__all__ = ["UNTRUSTED_FS", "ChangeTracker", "Coverage"]
