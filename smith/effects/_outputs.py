"""Where long command output is saved, and how it is kept safe and bounded.

bash keeps the end of a long output for the result and saves all of it (up to a per-file
bound) to a file in the outputs folder (`$SMITH_HOME/outputs/`) that the result names.
Two things hold for that folder as for everything else smith writes:

- registered secrets never reach it as plaintext: the text is masked as it is written
  (`MaskedFile`, over the same mask the runtime applies to tool results, so the file
  holds `{{secret:NAME}}` where the result would), holding back only as much as could
  be the start of a secret;
- it is bounded: files older than a week go, and past `tools.bash.outputs-max-bytes`
  the oldest go first (`prune`), never the file a result has just named.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO, Protocol

    class Mask(Protocol):
        """What masks secrets in text (smith.runtime's SecretProxy is one)."""

        def redact(self, value: object) -> object: ...

        def redact_stream(self, pending: str) -> tuple[str, str]: ...


KEEP_DAYS = 7
MAX_BYTES = 256 * 1024 * 1024  # default of tools.bash.outputs-max-bytes


class MaskedFile:
    """A binary file that text is written to masked. Bytes that are not UTF-8 pass
    through unchanged (surrogateescape); text that could still be the start of a secret
    is held until more arrives or the file is closed."""

    def __init__(self, file: BinaryIO, mask: Mask | None) -> None:
        self.file = file
        self.mask = mask
        self.decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        self.held = ""

    def write(self, data: bytes) -> None:
        text = self.decoder.decode(data)
        if self.mask is None:
            self.file.write(text.encode("utf-8", "surrogateescape"))
            return
        done, self.held = self.mask.redact_stream(self.held + text)
        self.file.write(done.encode("utf-8", "surrogateescape"))

    def close(self) -> None:
        rest = self.held + self.decoder.decode(b"", final=True)
        if self.mask is not None:
            rest = str(self.mask.redact(rest))
        self.file.write(rest.encode("utf-8", "surrogateescape"))
        self.held = ""
        self.file.close()


def prune(directory: str, max_bytes: int = MAX_BYTES, *, keep: str | None = None) -> None:
    """Remove saved output older than a week, then the oldest files until the folder
    holds at most `max_bytes`. `keep` (a file a result has just named) is never
    removed. Files another process removes meanwhile are simply gone."""
    cutoff = time.time() - KEEP_DAYS * 86400
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return
    files: list[tuple[float, int, str]] = []
    for entry in entries:
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if st.st_mtime < cutoff and entry.path != keep:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
            continue
        files.append((st.st_mtime, st.st_size, entry.path))
    total = sum(size for _, size, _ in files)
    for _, size, path in sorted(files):  # oldest first
        if total <= max_bytes:
            break
        if path == keep:
            continue
        with contextlib.suppress(OSError):
            os.unlink(path)
        total -= size
