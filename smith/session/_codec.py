"""Entry and session frames: their canonical CBOR bodies and content compression.

Entry body: [id, parent | null, ts (ms), kind, pair | null, content] where `content` is
the canonical CBOR of the entry's content, zstd-compressed (frame flag COMPRESSED) when
it is at least COMPRESS_AT bytes and compression makes it smaller. Frame flag ASIDE marks
an entry appended through a branch cursor other than the selection (smith.session.Branch):
it does not select itself (see `selects`). zstd runs at a fixed
level, so the same entries always produce the same bytes (for one zstandard version).
"""

from __future__ import annotations

import functools

from smith import memory
from smith._fast import _cbor
from smith._fast._arena import TYPE_ENTRY, TYPE_LEAF, TYPE_SESSION
from smith._fast._frames import FLAG_COMPRESSED, MAX_BODY, encode_frame, file_header

TYPE_CHECKING = False
if TYPE_CHECKING:
    import zstandard

    from smith._fast._arena import Arena

COMPRESS_AT = 1024
ZSTD_LEVEL = 3
# Items (every value: array members, map keys and values) one entry's content may decode
# to. Bytes do not bound memory: a byte of CBOR becomes an object of 50 or more, and zstd
# packs 64 million of them in 2 KB. Writing checks it too, so smith never writes content
# it will not read back.
MAX_ITEMS = 1 << 20
# Entry frame flag: appended on a branch of its own (a child agent's), not at the
# selection, so it does not select itself when the file is read (flag bit 0 is
# COMPRESSED, bit 15 the index's own).
FLAG_ASIDE = 0x0002
# Session info and leaf frames are a few values: their bound is small.
MAX_META_ITEMS = 1 << 12


@functools.cache
def _zstd() -> zstandard.ZstdCompressor:
    import zstandard

    return zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_content_size=True, write_checksum=False)


@memory.framed
def entry_frame(
    id: str,
    parent: str | None,
    ts: int,
    kind: str,
    pair: str | None,
    content: object,
    aside: bool = False,
) -> bytes:
    raw = _cbor.encode(content)
    if len(raw) > MAX_ITEMS:  # fewer bytes cannot hold more items: only big content checks
        try:
            _cbor.decode(raw, max_items=MAX_ITEMS)
        except _cbor.DecodeError as exc:
            raise ValueError(
                f"content of {kind} entry {id!r} is over smith's bound of {MAX_ITEMS:,} "
                "items (values, array members, map keys and values) per entry"
            ) from exc
    flags = FLAG_ASIDE if aside else 0
    if len(raw) >= COMPRESS_AT:
        packed = _zstd().compress(raw)
        if len(packed) < len(raw):
            raw, flags = packed, flags | FLAG_COMPRESSED
    return encode_frame(TYPE_ENTRY, flags, _cbor.encode([id, parent, ts, kind, pair, raw]))


def selects(frame: bytes) -> bool:
    """Whether an entry frame selects itself when appended (no ASIDE flag)."""
    return not int.from_bytes(frame[6:8], "little") & FLAG_ASIDE


def content_size(content: object) -> int:
    """The bytes `content` takes as an entry's canonical CBOR, before compression: what
    `Arena.content_size` reads back from a record without decoding."""
    return len(_cbor.encode(content))


def entry_frame_raw(
    id: str, parent: str | None, ts: int, kind: str, pair: str | None, stored: bytes, flags: int
) -> bytes:
    """Re-frame stored content as it is (no re-encoding): used when copying entries."""
    return encode_frame(TYPE_ENTRY, flags, _cbor.encode([id, parent, ts, kind, pair, stored]))


class ContentError(ValueError):
    """Stored content could not be decoded (damaged or over the bound)."""


@memory.framed
def decode_content(stored: bytes, compressed: bool, *, max_size: int = MAX_BODY) -> object:
    if compressed:
        import zstandard

        try:
            declared = zstandard.frame_content_size(stored)
            if declared < 0 or declared > max_size:
                raise ContentError(
                    f"compressed content declares {declared} bytes (bound {max_size})"
                )
            stored = zstandard.ZstdDecompressor().decompress(stored, max_output_size=declared)
        except zstandard.ZstdError as exc:
            raise ContentError(f"compressed content is not valid zstd: {exc}") from exc
        if len(stored) != declared:
            raise ContentError("compressed content is shorter than it declares")
    try:
        return _cbor.decode(stored, strict=True, max_length=max_size, max_items=MAX_ITEMS)
    except ValueError as exc:
        raise ContentError(str(exc)) from exc


def session_frame(info: dict[str, object]) -> bytes:
    return encode_frame(TYPE_SESSION, 0, _cbor.encode(info))


def leaf_frame(leaf: str) -> bytes:
    return encode_frame(TYPE_LEAF, 0, _cbor.encode(leaf))


def decode_meta(body: bytes) -> object:
    """A session info or leaf frame's value (DecodeError past MAX_META_ITEMS items)."""
    return _cbor.decode(body, strict=True, max_items=MAX_META_ITEMS)


def last_selecting(arena: Arena) -> int:
    """The index of the last entry that selected itself when appended (not ASIDE), -1
    if none; entries written aside (a child's branch) are few at the end, if any."""
    i = len(arena) - 1
    while i >= 0 and not selects(arena.frame(i)):
        i -= 1
    return i


def read_meta(arena: Arena) -> tuple[dict[str, object], str | None, list[tuple[int, str]]]:
    """Session info (later session frames update earlier ones) and the explicitly selected
    leaf: the last leaf frame, unless an entry that selects itself (one not written aside
    through a Branch) was appended after it;
    and (offset, reason) of each such frame that passed its checksum but does not decode
    (within its small item bound), which is left out."""
    info: dict[str, object] = {}
    leaf: str | None = None
    leaf_at = -1
    unread: list[tuple[int, str]] = []
    for k, kind in enumerate(arena.meta_types()):
        if kind not in (TYPE_SESSION, TYPE_LEAF):
            continue
        try:
            value = decode_meta(arena.meta_body(k))
        except ValueError as exc:
            unread.append((arena.meta_offset(k), str(exc)))
            continue
        if kind == TYPE_SESSION and isinstance(value, dict):
            info.update({str(key): v for key, v in value.items()})
        elif kind == TYPE_LEAF and isinstance(value, str) and arena.index(value) >= 0:
            leaf, leaf_at = value, arena.meta_offset(k)
    last = last_selecting(arena)
    if leaf is not None and last >= 0 and arena.offset(last) > leaf_at:
        leaf = None
    return info, leaf, unread


def clone_bytes(arena: Arena, info: dict[str, object], leaf: str | None) -> bytes:
    """A new session file with every frame of `arena` (entries, blobs, frames smith does
    not know), header `info` and the selected `leaf` (None: the last entry)."""
    entries = [arena.frame(i) for i in range(len(arena))]
    unknown = [
        frame for kind, frame in arena.meta_frames() if kind not in (TYPE_SESSION, TYPE_LEAF)
    ]
    selected = [leaf_frame(leaf)] if leaf is not None else []
    return b"".join([file_header(), session_frame(info), *entries, *unknown, *selected])


def fork_bytes(
    arena: Arena, index: int, info: dict[str, object], *, select_aside: bool
) -> tuple[bytes, bool]:
    """A new session file holding the path to entry `index` (-1: none) with header
    `info`, and whether it had to select that entry: one appended aside does not select
    itself, so with `select_aside` a leaf frame selects it."""
    if index < 0:
        return file_header() + session_frame(info), False
    unknown = sorted({t for t in arena.meta_types() if t not in (TYPE_SESSION, TYPE_LEAF)})
    data = arena.fork_bytes(index, file_header(), session_frame(info), unknown)
    aside = select_aside and not selects(arena.frame(index))
    if aside:
        data += leaf_frame(arena.id(index))
    return data, aside
