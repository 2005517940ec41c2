"""`smith sessions repair`: rewrite a damaged session file, keeping every intact frame.

Frames whose body checksum fails are dropped (counted), and so are entry frames that pass
it but that the arena cannot index (a malformed header: a session holding more than a
few cannot be opened for writing), entries repeating an earlier entry's id, and session
info or leaf frames that do not decode; a torn or zero-filled tail is dropped. Everything
dropped stays in the backup. A damaged frame header hides where the following frames
start: by default the repaired file ends before it and the bytes after it stay in the
backup; with `resync` the scan jumps to the next place where a header and its body both
pass their checksums. Resynchronising can, rarely, pick up frames that were content
inside the damaged frame (a tool's output that contained session bytes), so it is only
done on request. Its searches share one work budget, so crafted input keeps it linear.

Intact frames are copied byte for byte, unknown future frame types included. The
original stays beside the file as a hard-linked backup, the repaired file replaces it
atomically, and the session's write lock is held throughout, so a live writer is never
cut off. A sparse file is read where it holds data: its holes cost no memory.
"""

from __future__ import annotations

import mmap
import os

from smith._fast import _frames
from smith._fast._arena import TYPE_ENTRY, TYPE_LEAF, TYPE_SESSION
from smith.diagnostics import Source
from smith.session import _codec
from smith.session._files import backup_path, publish
from smith.session._files import lock as _lock
from smith.session._problems import FUTURE_VERSION, NOT_A_SESSION
from smith.session._session import FORMAT_VERSION


def _read(fd: int, size: int) -> mmap.mmap:
    """The file as a buffer: mapped when it has no holes; otherwise its data read into
    private anonymous memory (holes stay untouched zero pages) up to where a frame that
    starts in data could end (past that a sparse file is zeros, which hold no frame)."""
    hold, data = _frames.readable_length(fd, size)
    if data is None:
        return mmap.mmap(fd, size, access=mmap.ACCESS_READ)
    buf = mmap.mmap(-1, max(hold, 1), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for start, stop in _frames.data_extents(fd, 0, hold):
        _frames.read_into(fd, buf, start, stop, start)
    return buf


def _entry_id(body: bytes) -> bytes:
    """The id bytes of an entry body whose header the scan checked as the arena reads it
    (an array of six whose first item is a text shorter than 65,535 bytes)."""
    info = body[1] & 31
    width = 0 if info < 24 else 1 << (info - 24)
    n = info if info < 24 else int.from_bytes(body[2 : 2 + width], "big")
    return body[2 + width : 2 + width + n]


def _decodes(frame: bytes) -> bool:
    """Whether a session info or leaf frame's body decodes (as loading reads it)."""
    try:
        _codec.decode_meta(frame[_frames.FRAME_OVERHEAD :])
    except ValueError:
        return False
    return True


def repair(path: str, *, resync: bool = False, max_skips: int = 1 << 30) -> dict[str, object]:
    fd = _lock(path, 2.0)
    try:
        size = os.fstat(fd).st_size
        if size < len(_frames.MAGIC):
            raise NOT_A_SESSION.error(source=Source("file", path), reason="it is too short")
        with _read(fd, size) as data:
            if data[: len(_frames.MAGIC)] != _frames.MAGIC:
                raise NOT_A_SESSION.error(
                    source=Source("file", path), reason="it does not start with the session magic"
                )
            try:
                version = _frames.read_file_header(data)
            except ValueError:
                version = FORMAT_VERSION  # a damaged header checksum: frames start as usual
            if version > FORMAT_VERSION:
                raise FUTURE_VERSION.error(
                    source=Source("file", path), version=version, supported=FORMAT_VERSION
                )
            scan = _frames.scan(data, max_skips=max_skips, resync=resync, check_entries=True)
            kept: list[bytes] = []
            seen: set[bytes] = set()
            duplicates = unread = 0
            for offset, kind, _flags, length in scan.frames:
                frame = data[offset : offset + _frames.FRAME_OVERHEAD + length]
                if kind == TYPE_ENTRY:
                    eid = _entry_id(frame[_frames.FRAME_OVERHEAD :])
                    if eid in seen:
                        duplicates += 1
                        continue
                    seen.add(eid)
                elif kind in (TYPE_SESSION, TYPE_LEAF) and not _decodes(frame):
                    unread += 1
                    continue
                kept.append(frame)
        backup = backup_path(path, "damaged")
        os.link(path, backup)
        publish(path, _frames.file_header() + b"".join(kept))
    finally:
        os.close(fd)
    left = size - scan.end - scan.truncated if scan.error else 0
    return {
        "path": path,
        "backup": backup,
        "frames_kept": len(kept),
        "frames_skipped": len(scan.skipped),
        "duplicates_dropped": duplicates,
        "unreadable_meta_dropped": unread,
        "bytes_resynced": sum(to - at for at, to in scan.resynced),
        "truncated_bytes": size - scan.end if scan.error is None else 0,
        "bytes_left_in_backup": left,
        "stopped_at": None
        if scan.error is None
        else {"problem": scan.error[0], "offset": scan.error[1]},
    }
