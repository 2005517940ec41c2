"""`smith sessions repair`: rewrite a damaged session file, keeping every intact frame.

Frames whose body checksum fails are dropped (counted); a torn or zero-filled tail is
dropped. A damaged frame header hides where the following frames start: by default the
repaired file ends before it and the bytes after it stay in the backup; with `resync`
the scan jumps to the next place where a header and its body both pass their checksums.
Resynchronising can, rarely, pick up frames that were content inside the damaged frame
(a tool's output that contained session bytes), so it is only done on request.

Intact frames are copied byte for byte, unknown future frame types included. The
original stays beside the file as a hard-linked backup, the repaired file replaces it
atomically, and the session's write lock is held throughout, so a live writer is never
cut off.
"""

from __future__ import annotations

import mmap
import os
import time

from smith._fast import _frames
from smith.diagnostics import Source
from smith.session._session import FORMAT_VERSION, FUTURE_VERSION, NOT_A_SESSION, _lock, publish


def _backup_path(path: str) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    for n in range(1000):
        candidate = f"{path}.damaged-{stamp}" + (f"-{n}" if n else "")
        if not os.path.exists(candidate):
            return candidate
    raise FileExistsError(f"{path}.damaged-{stamp}")


def repair(path: str, *, resync: bool = False, max_skips: int = 1 << 30) -> dict[str, object]:
    fd = _lock(path, 2.0)
    try:
        size = os.fstat(fd).st_size
        if size < len(_frames.MAGIC):
            raise NOT_A_SESSION.error(source=Source("file", path), reason="it is too short")
        with mmap.mmap(fd, size, access=mmap.ACCESS_READ) as data:
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
            scan = _frames.scan(data, max_skips=max_skips, resync=resync)
            kept = b"".join(
                data[offset : offset + _frames.FRAME_OVERHEAD + length]
                for offset, _type, _flags, length in scan.frames
            )
        backup = _backup_path(path)
        os.link(path, backup)
        publish(path, _frames.file_header() + kept)
    finally:
        os.close(fd)
    left = size - scan.end - scan.truncated if scan.error else 0
    return {
        "path": path,
        "backup": backup,
        "frames_kept": len(scan.frames),
        "frames_skipped": len(scan.skipped),
        "bytes_resynced": sum(to - at for at, to in scan.resynced),
        "truncated_bytes": scan.truncated,
        "bytes_left_in_backup": left,
        "stopped_at": None
        if scan.error is None
        else {"problem": scan.error[0], "offset": scan.error[1]},
    }
