"""JSONL interchange: inspection and import, never the authoritative store.

Line 1 is the session header: {"type": "session", "version", "id", "name", "created",
"cwd", "leaf"}. Each further line is one entry in append order: {"id", "parent", "ts",
"kind", "pair" (only when set), "content"}; bytes inside content are written as
{"$bytes": base64}. After the entries, one line per blob (the bytes of an attached
image, stored once: smith.session._blobs): {"type": "blob", "digest", "media_type",
"data": {"$bytes": base64}}. `import_jsonl` accepts exactly what `dump` writes, and
dump -> import -> dump is byte-identical.
"""

from __future__ import annotations

import base64
import json
import math

from smith._fast import _frames
from smith._fast._arena import Arena, ArenaError
from smith.diagnostics import DiagnosticKind, Source
from smith.session import _codec
from smith.session._blobs import blob_frame, digest_of
from smith.session._session import FORMAT_VERSION, Session, publish
from smith.text import loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from smith.session._store import SessionStore

BAD_JSONL = DiagnosticKind(
    "session.bad-jsonl",
    what="cannot import this line: {problem}",
    why="an import must reproduce the session exactly, so every line has to be a complete, "
    "valid record",
    fix="import a file written by `smith sessions dump` (line 1 the session header, then one "
    "entry per line with id, parent, ts, kind and content), or fix that line",
)


_TAGS = ("$bytes", "$float", "$map")


def _to_json(value: object) -> object:
    """Content as JSON: bytes, non-finite floats and maps that look like those escapes
    are written as one-key objects ({"$bytes": base64}, {"$float": "nan"}, {"$map": ...})."""
    if isinstance(value, bytes):
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": repr(value)}
    if isinstance(value, dict):
        converted = {k: _to_json(v) for k, v in value.items()}
        return {"$map": converted} if len(value) == 1 and next(iter(value)) in _TAGS else converted
    if isinstance(value, list):
        return [_to_json(v) for v in value]
    return value


def _from_json(value: object) -> object:
    if isinstance(value, dict):
        if len(value) == 1:
            [(tag, inner)] = value.items()
            if tag == "$bytes" and isinstance(inner, str):
                return base64.b64decode(inner, validate=True)
            if tag == "$float" and inner in ("nan", "inf", "-inf"):
                return float(inner)
            if tag == "$map" and isinstance(inner, dict):
                return {k: _from_json(v) for k, v in inner.items()}
        return {k: _from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value


def _line(record: dict[str, object]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dump(session: Session) -> Iterator[str]:
    """The session as JSONL lines (without newlines)."""
    yield _line(
        {
            "type": "session",
            "version": FORMAT_VERSION,
            "id": session.id,
            "name": session.name,
            "created": session.info.get("created"),
            "cwd": session.info.get("cwd"),
            "leaf": session.leaf,
        }
    )
    for e in session.entries():
        record: dict[str, object] = {"id": e.id, "parent": e.parent, "ts": e.ts, "kind": e.kind}
        if e.pair is not None:
            record["pair"] = e.pair
        record["content"] = _to_json(e.content)
        yield _line(record)
    for digest, media_type, data in session.blobs.items():
        blob = {"type": "blob", "digest": digest, "media_type": media_type, "data": _to_json(data)}
        yield _line(blob)


class _Reader:
    """Checks one JSONL file line by line; `fail` names the file and line."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lineno = 0
        self.header: dict[str, object] | None = None
        self.frames: list[bytes] = []
        self.blobs: list[bytes] = []  # blob frames, written after the entries
        self.seen: set[str] = set()
        self.last: str | None = None
        # Entries are checked by the same arena that will load them, so an import can
        # never write what a load would then drop.
        self.arena = Arena.empty(_frames.file_header())

    def fail(self, problem: str) -> None:
        raise BAD_JSONL.error(source=Source("file", f"{self.path}:{self.lineno}"), problem=problem)

    def need(self, record: dict[str, object], key: str, kind: type) -> object:
        value = record.get(key)
        if isinstance(value, bool) or not isinstance(value, kind):
            name = "string" if kind is str else "integer"
            self.fail(f"'{key}' must be a JSON {name}, got {json.dumps(value)[:60]}")
        return value

    def read(self) -> None:
        try:
            self._read()
        except UnicodeDecodeError as exc:
            self.fail(f"not UTF-8 text ({exc.reason} at byte {exc.start} of the line)")
        except RecursionError:
            self.fail("content is nested too deeply")

    def _read(self) -> None:
        with open(self.path, encoding="utf-8") as f:
            for self.lineno, text in enumerate(f, start=1):
                if not text.strip():
                    continue
                try:
                    record = loads(text)
                except ValueError as exc:
                    self.fail(f"not JSON ({exc})")
                if not isinstance(record, dict):
                    self.fail("not a JSON object")
                if self.header is None:
                    self.read_header(record)
                elif record.get("type") == "blob":
                    self.read_blob(record)
                else:
                    self.read_entry(record)
        if self.header is None:
            self.lineno = 1
            self.fail("the file is empty")

    def read_header(self, record: dict[str, object]) -> None:
        if record.get("type") != "session":
            self.fail('the first line must be the session header ({"type": "session", ...})')
        version = self.need(record, "version", int)
        if isinstance(version, int) and version > FORMAT_VERSION:
            self.fail(f"format version {version} is newer than this smith reads ({FORMAT_VERSION})")
        for key in ("id", "name", "cwd"):
            self.need(record, key, str)
        self.need(record, "created", int)
        self.header = record

    def read_blob(self, record: dict[str, object]) -> None:
        digest = str(self.need(record, "digest", str))
        media_type = str(self.need(record, "media_type", str))
        try:
            data = _from_json(record.get("data"))
        except ValueError:
            data = None
        if not isinstance(data, bytes):
            self.fail('a blob\'s "data" must be {"$bytes": base64}')
        assert isinstance(data, bytes)
        if digest_of(data) != digest:
            self.fail(f"the blob's bytes do not have the digest {digest[:16]}...")
        self.blobs.append(blob_frame(digest, media_type, data))

    def read_entry(self, record: dict[str, object]) -> None:
        eid = str(self.need(record, "id", str))
        ts = self.need(record, "ts", int)
        kind = str(self.need(record, "kind", str))
        parent, pair = record.get("parent"), record.get("pair")
        if not eid or not kind:
            self.fail("'id' and 'kind' must not be empty")
        if eid in self.seen:
            self.fail(f"entry id '{eid}' appears twice")
        if parent is not None and (not isinstance(parent, str) or parent not in self.seen):
            self.fail(f"parent {json.dumps(parent)[:60]} is not an earlier entry of this file")
        if pair is not None and not isinstance(pair, str):
            self.fail("'pair' must be a string when present")
        if "content" not in record:
            self.fail("the entry has no 'content'")
        assert isinstance(ts, int) and (parent is None or isinstance(parent, str))
        try:
            frame = _codec.entry_frame(
                eid,
                parent,
                ts,
                kind,
                pair if isinstance(pair, str) else None,
                _from_json(record["content"]),
            )
            self.arena.append(frame)
        except ArenaError:
            self.fail(
                "the entry does not fit a session (ts must be 0 to 2**63-1 and ids "
                "shorter than 65,535 bytes)"
            )
        except ValueError as exc:
            self.fail(f"content cannot be stored: {exc}")
        self.frames.append(frame)
        self.seen.add(eid)
        self.last = eid


def import_jsonl(
    path: str, store: SessionStore, *, name: str | None = None, keep_id: bool = True
) -> Session:
    """Create a session from a JSONL file; every line is checked before anything is
    written, and the file is published atomically."""
    from smith.session._session import EXISTS, new_session_id

    reader = _Reader(path)
    reader.read()
    header = reader.header
    assert header is not None
    leaf = header.get("leaf")
    if leaf is not None and (not isinstance(leaf, str) or leaf not in reader.seen):
        reader.lineno = 1
        reader.fail(f"the header's leaf {json.dumps(leaf)[:60]} is not an entry of this file")
    sid = str(header["id"]) if keep_id else new_session_id()
    if store.exists(sid):
        raise EXISTS.error(value=sid, source=Source("file", f"{path}:1"), id=sid)
    info: dict[str, object] = {
        "version": FORMAT_VERSION,
        "id": sid,
        "name": header["name"] if name is None else name,
        "created": header["created"],
        "cwd": header["cwd"],
    }
    tail = [_codec.leaf_frame(leaf)] if isinstance(leaf, str) and leaf != reader.last else []
    target = store.path_for(sid, str(info["cwd"]))
    publish(
        target,
        b"".join(
            [
                _frames.file_header(),
                _codec.session_frame(info),
                *reader.frames,
                *reader.blobs,
                *tail,
            ]
        ),
    )
    return Session.load(target)
