"""Content-addressed blobs: bytes a session refers to by digest, stored once per file.

An image the user attaches (or a tool returns) can be megabytes; a message that carried
it would be copied with every replay, fork and resend of the conversation. Instead the
bytes go into a blob frame of their own and the message names them by SHA-256:

    digest = session.blobs.put(data, "image/png")   # written once, however often put
    media_type, data = session.blobs.get(digest)

A blob frame has type TYPE_BLOB and the canonical CBOR body `[digest, media_type,
data]` (digest the lowercase hex SHA-256 of data). It is not an entry: it has no place in
the tree, so it never shows in a branch, and the arena keeps it as any non-entry frame,
byte for byte (forks and clones copy it with the other frames they keep). A blob frame
that does not decode, or whose bytes do not match its digest, is ignored: a message
naming it then finds no blob, as it would after damage.
"""

from __future__ import annotations

import hashlib
import threading

from smith._fast import _cbor
from smith._fast._frames import encode_frame

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.session._session import Session

TYPE_BLOB = 4


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def blob_frame(digest: str, media_type: str, data: bytes) -> bytes:
    return encode_frame(TYPE_BLOB, 0, _cbor.encode([digest, media_type, data]))


class Blobs:
    """The blobs of one session: which digests its file holds, read from the arena's
    non-entry frames on first use and kept up to date by `put`."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._index: dict[str, int] | None = None  # digest -> meta frame number
        self._lock = threading.Lock()

    def _known(self) -> dict[str, int]:
        if self._index is None:
            arena = self._session.records
            index: dict[str, int] = {}
            for k, kind in enumerate(arena.meta_types()):
                if kind == TYPE_BLOB:
                    found = _decode(arena.meta_body(k))
                    if found is not None:
                        index.setdefault(found[0], k)
            self._index = index
        return self._index

    def __contains__(self, digest: object) -> bool:
        with self._lock:
            return digest in self._known()

    def __len__(self) -> int:
        with self._lock:
            return len(self._known())

    def put(self, data: bytes, media_type: str) -> str:
        """Store `data` unless the session holds it already; its digest either way."""
        digest = digest_of(data)
        with self._lock:
            known = self._known()
            if digest not in known:
                arena = self._session.records
                before = len(arena.meta_types())
                self._session.append_frame(blob_frame(digest, media_type, data))
                known[digest] = before
        return digest

    def items(self) -> list[tuple[str, str, bytes]]:
        """(digest, media type, bytes) of every blob, in file order (`dump`)."""
        with self._lock:
            frames = sorted(self._known().values())
        found = [_decode(self._session.records.meta_body(k)) for k in frames]
        return [blob for blob in found if blob is not None]

    def get(self, digest: str) -> tuple[str, bytes] | None:
        """(media type, bytes) of the blob `digest`; None if the session has none."""
        with self._lock:
            k = self._known().get(digest)
        if k is None:
            return None
        found = _decode(self._session.records.meta_body(k))
        return None if found is None else (found[1], found[2])


def _decode(body: bytes) -> tuple[str, str, bytes] | None:
    try:
        value = _cbor.decode(body, strict=True, max_items=4)  # [digest, type, data]
    except ValueError:
        return None
    if not (isinstance(value, list) and len(value) == 3):
        return None
    digest, media_type, data = value
    if not (isinstance(digest, str) and isinstance(media_type, str) and isinstance(data, bytes)):
        return None
    return (digest, media_type, data) if digest_of(data) == digest else None


__all__ = ["TYPE_BLOB", "Blobs", "blob_frame", "digest_of"]
