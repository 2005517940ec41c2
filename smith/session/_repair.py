"""`smith sessions repair`: rewrite a damaged session file, keeping every intact frame.

The scan resynchronises past damaged stretches (the next offset where a frame header and
its body both pass their checksums), skips frames whose body checksum fails, and drops a
torn or zero-filled tail. Intact frames are copied byte for byte, unknown future frame
types included. The original stays beside the file as a hard-linked backup, and the
repaired file replaces it atomically.
"""

from __future__ import annotations

import os
import time

from smith._fast import _frames
from smith.session._session import publish


def repair(path: str, *, max_skips: int = 1 << 30) -> dict[str, object]:
    with open(path, "rb") as f:
        data = f.read()
    try:
        _frames.read_file_header(data)
        start = _frames.HEADER_SIZE
    except ValueError:
        start = 0  # a damaged file header: look for frames from the first byte
    scan = _frames.scan(data, start=start, max_skips=max_skips, resync=True)
    kept = [
        data[offset : offset + _frames.FRAME_OVERHEAD + length]
        for offset, _type, _flags, length in scan.frames
    ]
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    backup = f"{path}.damaged-{stamp}"
    os.link(path, backup)
    publish(path, _frames.file_header() + b"".join(kept))
    return {
        "path": path,
        "backup": backup,
        "frames_kept": len(kept),
        "frames_skipped": len(scan.skipped),
        "bytes_resynced": sum((to if to >= 0 else len(data)) - at for at, to in scan.resynced),
        "truncated_bytes": scan.truncated,
        "error": None
        if scan.error is None
        else {"problem": scan.error[0], "offset": scan.error[1]},
    }
