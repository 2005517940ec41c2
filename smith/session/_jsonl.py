"""JSONL interchange: inspection and import, never the authoritative store.

Line 1 is the session header: {"type": "session", "version", "id", "name", "created",
"cwd", "leaf"}. Each further line is one entry in append order: {"id", "parent", "ts",
"kind", "pair" (only when set), "content"}; bytes inside content are written as
{"$bytes": base64}. After the entries, one line per blob (the bytes of an attached
image, stored once: smith.session._blobs): {"type": "blob", "digest", "media_type",
"data": {"$bytes": base64}}. `import_jsonl` accepts exactly what `dump` writes, and
dump -> import -> dump is byte-identical.

Import streams: each line is checked and its frame written as it is read, so memory
holds one line (at most MAX_LINE) and the ids seen, whatever the file's length, and the
file is written beside its final name and published only once every line passed (it is
removed on any failure). A dump refuses what JSON text cannot hold (a header field smith
never writes, an entry id that is not UTF-8, an integer of thousands of digits), naming
the entry and the way around it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import os

from smith._fast import _frames
from smith._fast._arena import Arena, ArenaError
from smith.diagnostics import DiagnosticKind, SmithError, Source
from smith.session import _codec, _header
from smith.session._blobs import blob_frame, digest_of
from smith.session._session import FORMAT_VERSION, Session, new_id
from smith.text import loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import BinaryIO, NoReturn

    from smith.session._store import SessionStore

# A line holds one entry: a frame's 64 MiB of content as JSON (base64, escapes) fits.
MAX_LINE = 128 << 20

BAD_JSONL = DiagnosticKind(
    "session.bad-jsonl",
    what="cannot import this line: {problem}",
    why="an import must reproduce the session exactly, so every line has to be a complete, "
    "valid record",
    fix="import a file written by `smith sessions dump` (line 1 the session header, then one "
    "entry per line with id, parent, ts, kind and content), or fix that line",
)
NOT_A_DUMP = DiagnosticKind(
    "session.jsonl-not-a-file",
    what="cannot import this: it is {kind}, not a regular file",
    why="an import reads a dump written to a file; a device never ends and a FIFO waits for "
    "a writer, so smith reads neither",
    fix="save the dump to a file first (`smith sessions dump ID -o FILE`), then import that",
)
DUMP_UNWRITABLE = DiagnosticKind(
    "session.dump-unwritable",
    what="cannot dump entry {entry}: {problem}",
    why="a dump is JSON text that imports back exactly, and JSON text cannot hold this; "
    "smith never writes such a value, so the session was made or changed by another program",
    fix="fork the session at an entry before it (`smith sessions fork {id} --at ENTRY`, "
    "ENTRY from `smith sessions show {id}`), which leaves it out, and dump the fork",
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
    """The session as JSONL lines (without newlines). SmithError when it holds what JSON
    text cannot (session.header-unusable, session.dump-unwritable), raised at the line."""
    unusable = _header.unusable(session, "dump it")
    if unusable is not None:
        raise SmithError(unusable)
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
        for field in ("id", "parent", "kind", "pair"):
            value = record.get(field)
            if isinstance(value, str) and _header.text_problem(value):
                raise _unwritable(session, e.id, f"its {field} is not UTF-8 text")
        record["content"] = _to_json(e.content)
        try:
            yield _line(record)
        except ValueError:  # json's int() past sys.get_int_max_str_digits
            raise _unwritable(
                session, e.id, "its content holds an integer too long to write as text"
            ) from None
    for digest, media_type, data in session.blobs.items():
        blob = {"type": "blob", "digest": digest, "media_type": media_type, "data": _to_json(data)}
        yield _line(blob)


def _unwritable(session: Session, entry: str, problem: str) -> SmithError:
    # The id as its bytes were: an id that is not UTF-8 shows its bytes as \xNN.
    shown = entry.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return DUMP_UNWRITABLE.error(source=Source("file", session.path), entry=repr(shown),
                                 problem=problem, id=session.id)  # fmt: skip


class _Reader:
    """Reads one JSONL file line by line, checking each; `fail` names the file and line."""

    def __init__(self, path: str, f: BinaryIO) -> None:
        self.path = path
        self.f = f
        self.lineno = 0
        self.last: str | None = None
        # Every entry is checked by an arena as a load will check it (ids, parent, ts),
        # from a frame of its fields alone: what it holds is the ids, not the content.
        self.arena = Arena.empty(_frames.file_header())

    def fail(self, problem: str) -> NoReturn:
        raise BAD_JSONL.error(source=Source("file", f"{self.path}:{self.lineno}"), problem=problem)

    def need(self, record: dict[str, object], key: str, kind: type) -> object:
        value = record.get(key)
        if isinstance(value, bool) or not isinstance(value, kind):
            name = "string" if kind is str else "integer"
            self.fail(f"'{key}' must be a JSON {name}, got {_shown(value)}")
        return value

    def records(self) -> Iterator[dict[str, object]]:
        """Each record of the file, in order; blank lines are passed over."""
        while True:
            line = self.f.readline(MAX_LINE + 1)
            if not line:
                return
            self.lineno += 1
            if len(line) > MAX_LINE:
                self.fail(
                    f"the line is longer than {MAX_LINE >> 20} MiB: no entry of a session is "
                    "(a frame holds at most 64 MiB); is this a dump?"
                )
            if not line.strip():
                continue
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                self.fail(f"not UTF-8 text ({exc.reason} at byte {exc.start} of the line)")
            try:
                record = loads(text)
            except ValueError as exc:
                self.fail(f"not JSON ({exc})")
            if not isinstance(record, dict):
                self.fail("not a JSON object")
            yield record

    def header(self) -> dict[str, object]:
        record = next(self.records(), None)
        if record is None:
            self.lineno = 1
            self.fail("the file is empty")
        if record.get("type") != "session":
            self.fail('the first line must be the session header ({"type": "session", ...})')
        version = self.need(record, "version", int)
        if isinstance(version, int) and not 1 <= version <= FORMAT_VERSION:
            self.fail(
                f"format version {version} is not one this smith reads (1 to {FORMAT_VERSION})"
            )
        for key in ("id", "name", "cwd"):
            problem = _header.text_problem(self.need(record, key, str), path=key == "cwd")
            if problem:
                self.fail(f"'{key}' holds {problem}")
        created = self.need(record, "created", int)
        if isinstance(created, int) and not 0 <= created <= _header.MAX_TS:
            self.fail(
                f"'created' must be milliseconds since 1970 (0 to 2**63-1), got {_shown(created)}"
            )
        return record

    def frames(self) -> Iterator[bytes]:
        """The frame of each line after the header."""
        for record in self.records():
            yield self.blob(record) if record.get("type") == "blob" else self.entry(record)

    def blob(self, record: dict[str, object]) -> bytes:
        digest = str(self.need(record, "digest", str))
        media_type = str(self.need(record, "media_type", str))
        try:
            data = _from_json(record.get("data"))
        except ValueError:
            data = None
        if not isinstance(data, bytes):
            self.fail('a blob\'s "data" must be {"$bytes": base64}')
        if digest_of(data) != digest:
            self.fail(f"the blob's bytes do not have the digest {digest[:16]}...")
        try:
            return blob_frame(digest, media_type, data)
        except ValueError as exc:
            self.fail(f"the blob cannot be stored: {exc}")

    def entry(self, record: dict[str, object]) -> bytes:
        eid = str(self.need(record, "id", str))
        ts = self.need(record, "ts", int)
        kind = str(self.need(record, "kind", str))
        parent, pair = record.get("parent"), record.get("pair")
        if not eid or not kind:
            self.fail("'id' and 'kind' must not be empty")
        if parent is not None and not isinstance(parent, str):
            self.fail(f"parent {_shown(parent)} is not an earlier entry of this file")
        if pair is not None and not isinstance(pair, str):
            self.fail("'pair' must be a string when present")
        for key, text in (("id", eid), ("kind", kind), ("parent", parent), ("pair", pair)):
            problem = _header.text_problem(text) if isinstance(text, str) else ""
            if problem:
                self.fail(f"'{key}' holds {problem}")
        if "content" not in record:
            self.fail("the entry has no 'content'")
        assert isinstance(ts, int) and (parent is None or isinstance(parent, str))
        pair = pair if isinstance(pair, str) else None
        try:
            self.arena.append(_codec.entry_frame_raw(eid, parent, ts, kind, pair, b"", 0))
        except ArenaError:
            if self.arena.index(eid) >= 0:
                self.fail(f"entry id '{eid}' appears twice")
            if parent is not None and self.arena.index(parent) < 0:
                self.fail(f"parent {_shown(parent)} is not an earlier entry of this file")
            self.fail(
                "the entry does not fit a session (ts must be 0 to 2**63-1 and ids "
                "shorter than 65,535 bytes)"
            )
        try:
            frame = _codec.entry_frame(eid, parent, ts, kind, pair, _from_json(record["content"]))
        except ValueError as exc:
            self.fail(f"content cannot be stored: {exc}")
        self.last = eid
        return frame


def _shown(value: object) -> str:
    """A JSON value as an error quotes it: short, and never by a conversion that fails."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return _header.describe(value)
    return json.dumps(value)[:60]


def _open_dump(path: str) -> BinaryIO:
    """The JSONL file at `path` for reading, if it is a regular file: opened without
    blocking (a FIFO has no writer to wait for), then checked."""
    import stat

    from smith._readfile import file_kind

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NOT_A_DUMP.error(source=Source("file", path), kind=file_kind(mode))
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb", buffering=1 << 16)


class _Partial:
    """A session file being written beside its final name, published (linked into place,
    never over an existing file) only when complete, removed otherwise."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.tmp = f"{target}.{os.getpid()}.{new_id()}.tmp"
        self.fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        self.pending = bytearray()

    def write(self, data: bytes) -> None:
        self.pending += data
        if len(self.pending) >= 1 << 20:
            self._flush()

    def _flush(self) -> None:
        view = memoryview(self.pending)
        while view:
            view = view[os.write(self.fd, view) :]
        view.release()
        self.pending.clear()

    def publish(self, sid: str, source: Source) -> None:
        from smith.session._problems import EXISTS

        self._flush()
        os.fsync(self.fd)
        try:
            os.link(self.tmp, self.target)  # atomic, and fails if the target exists
        except FileExistsError:
            raise EXISTS.error(value=sid, source=source, id=sid) from None
        directory = os.open(os.path.dirname(self.target), os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

    def close(self) -> None:
        os.close(self.fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.tmp)


def import_jsonl(
    path: str, store: SessionStore, *, name: str | None = None, keep_id: bool = True
) -> Session:
    """Create a session from a JSONL file, line by line: every line is checked as it is
    written, and the session is published atomically once all of them passed."""
    from smith.session._problems import EXISTS
    from smith.session._session import new_session_id

    with _open_dump(path) as f:
        reader = _Reader(path, f)
        header = reader.header()
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
        target = store.path_for(sid, str(info["cwd"]))
        store.directory(str(info["cwd"]))
        out = _Partial(target)
        try:
            out.write(_frames.file_header() + _codec.session_frame(info))
            for frame in reader.frames():
                out.write(frame)
            leaf = header.get("leaf")
            if leaf is not None and (not isinstance(leaf, str) or reader.arena.index(leaf) < 0):
                reader.lineno = 1
                reader.fail(f"the header's leaf {_shown(leaf)} is not an entry of this file")
            if isinstance(leaf, str) and leaf != reader.last:
                out.write(_codec.leaf_frame(leaf))
            out.publish(sid, Source("file", f"{path}:1"))
        finally:
            out.close()
    return Session.load(target)
