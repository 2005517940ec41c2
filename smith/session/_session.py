"""A durable, append-only, branching session over one file and one in-memory arena.

    session = Session.create(path, name="fix tests", cwd="/repo")
    e = session.append("message", {"role": "user", "text": "hi"})
    session.branch()            # entries from the root to the selected leaf
    session.select(e.id)        # navigate; recorded as a leaf frame
    other = session.fork(at=e.id, path=elsewhere)

Writes: every append is one `write` of one whole frame to a file opened with O_APPEND and
held under an exclusive lock (a second writer waits up to `lock_timeout`, then gets a
diagnostic). `append(..., durable=True)` also fsyncs before returning: callers use it for
anything that must be on disk before a mutating effect runs; other appends are flushed by
the OS and fsynced at `sync()` and `close()`. New, forked and repaired files are published
atomically (temp file, fsync, rename, directory fsync).
"""

from __future__ import annotations

import os
import threading
import time

from smith import memory
from smith._fast import _frames
from smith._fast._arena import Arena, ArenaError
from smith.diagnostics import Diagnostic, Source
from smith.session import _blobs, _codec
from smith.session._files import keep_tail, lock, open_regular, publish, publish_new
from smith.session._problems import (
    CONTENT_UNREADABLE,
    DAMAGED,
    EXISTS,
    FUTURE_VERSION,
    NOT_A_SESSION,
    SESSION_UNREADABLE,
    SKIPPED,
    TAIL_NOT_KEPT,
    UNKNOWN_ENTRY,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

FORMAT_VERSION = _frames.FORMAT_VERSION


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def new_id(nbytes: int = 4) -> str:
    return os.urandom(nbytes).hex()


def new_session_id() -> str:
    """Sortable by creation time, unique in practice: 20261130-031500-a1b2c3."""
    return f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{new_id(3)}"


class Entry:
    """One entry: identity and links from the record; content decoded on each access and
    never kept, so an entry held in a list holds no decoded content (keep what you read
    for as long as you need it)."""

    __slots__ = ("_arena", "index")

    def __init__(self, arena: Arena, index: int) -> None:
        self._arena = arena
        self.index = index

    @property
    def id(self) -> str:
        return self._arena.id(self.index)

    @property
    def parent(self) -> str | None:
        parent = self._arena.parent(self.index)
        return None if parent < 0 else self._arena.id(parent)

    @property
    def ts(self) -> int:
        return self._arena.ts(self.index)

    @property
    def kind(self) -> str:
        return self._arena.kind(self.index)

    @property
    def pair(self) -> str | None:
        return self._arena.pair(self.index)

    @property
    def content(self) -> object:
        """The decoded content; a diagnostic (CONTENT_UNREADABLE) if it cannot be."""
        try:
            return _codec.decode_content(
                self._arena.content(self.index), self._arena.compressed(self.index)
            )
        except _codec.ContentError as exc:
            raise CONTENT_UNREADABLE.error(value=self.id, entry=self.id, reason=str(exc)) from None

    def __repr__(self) -> str:
        return f"<Entry {self.id} {self.kind} parent={self.parent}>"


_MISSING = object()


class Session:
    """An open session. Use `create`, `open` or `load`; close it (or use `with`)."""

    def __init__(
        self, path: str, arena: Arena, info: dict[str, object], leaf: str | None, fd: int | None
    ) -> None:
        self.path = path
        self._arena = arena
        self.info = info
        self._leaf = leaf  # the last explicit selection, while no selecting entry follows it
        # The last entry that selected itself (-1: none; None: not looked for yet).
        self._last: int | None = None
        self._fd = fd
        self._dirty = False
        # Appends come from the event loop and from tool threads (effect records): one
        # at a time, so ids, parents and the file stay in step.
        self._write_lock = threading.RLock()
        self._blobs: _blobs.Blobs | None = None
        self.tail_backup: str | None = None  # where `open` kept a torn tail it cut
        # (offset, reason) of session info and leaf frames that do not decode
        self.unread_meta: list[tuple[int, str]] = []
        self._observers: list[Callable[[Entry], object]] = []

    # -- opening ------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: str,
        *,
        name: str = "",
        cwd: str = "",
        id: str | None = None,
        created: int | None = None,
        extra: dict[str, object] | None = None,
        lock_timeout: float = 2.0,
    ) -> Session:
        info: dict[str, object] = {
            "version": FORMAT_VERSION,
            "id": id or new_session_id(),
            "name": name,
            "created": now_ms() if created is None else created,
            "cwd": cwd,
            **(extra or {}),
        }
        try:
            publish(path, _frames.file_header() + _codec.session_frame(info), replace=False)
        except FileExistsError:
            raise EXISTS.error(source=Source("file", path), id=str(info["id"])) from None
        return cls.open(path, lock_timeout=lock_timeout)

    @classmethod
    def from_entries(
        cls, entries: Iterable[dict[str, object]], *, info: dict[str, object] | None = None
    ) -> Session:
        """An in-memory session (no file) initialised from externally managed entries,
        keeping their order and ids. Each entry is a dict with id, parent, ts, kind,
        content and optionally pair, as `dump` writes them; parents must come first."""
        arena = Arena.empty(_frames.file_header())
        for e in entries:
            frame = _codec.entry_frame(
                str(e["id"]),
                _opt_str(e.get("parent")),
                int(e["ts"]),  # type: ignore[call-overload]
                str(e["kind"]),
                _opt_str(e.get("pair")),
                e["content"],
            )
            try:
                arena.append(frame)
            except ArenaError as exc:
                raise ValueError(f"entry {e.get('id')!r}: {exc}") from None
        return cls("", arena, dict(info or {}), None, None)

    @classmethod
    def load(cls, path: str, *, max_skips: int = 16) -> Session:
        """Read-only: recover what can be read and report it in `recovery`."""
        with memory.scope("session", "load " + os.path.basename(path)):
            try:
                return cls._load(path, max_skips)
            except (OSError, MemoryError, ArenaError) as exc:
                # One unreadable file is a diagnostic about it, never a failure of the
                # command that met it (listing every session of a project, say).
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
                if isinstance(exc, MemoryError):
                    reason = f"there is not enough memory to hold it ({exc or 'MemoryError'})"
                raise SESSION_UNREADABLE.error(
                    source=Source("file", path), reason=str(reason)
                ) from None

    @classmethod
    def _load(cls, path: str, max_skips: int) -> Session:
        fd = open_regular(path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            try:
                version = _frames.read_file_header(os.pread(fd, _frames.HEADER_SIZE, 0))
            except ValueError as exc:
                raise NOT_A_SESSION.error(source=Source("file", path), reason=str(exc)) from None
            if version > FORMAT_VERSION:
                raise FUTURE_VERSION.error(
                    source=Source("file", path), version=version, supported=FORMAT_VERSION
                )
            arena = Arena.read(fd, size, max_skips=max_skips)
        finally:
            os.close(fd)
        info, leaf, unread = _codec.read_meta(arena)
        # A session frame lost to damage must not lose the session's name in the store.
        info.setdefault("id", os.path.basename(path).rsplit(".", 1)[0])
        session = cls(path, arena, info, leaf, None)
        session.unread_meta = unread
        return session

    @classmethod
    def open(cls, path: str, *, lock_timeout: float = 2.0) -> Session:
        """Open for appending: lock, load, and cut a torn tail so appends stay reachable."""
        fd = lock(path, lock_timeout)
        try:
            session = cls.load(path)
            report = session._arena.report
            if report["error"] is not None:
                problem, offset = report["error"]
                raise DAMAGED.error(
                    source=Source("file", path),
                    offset=offset,
                    problem=problem,
                    count=len(session._arena),
                    id=session.id,
                )
            if report["truncated"]:
                # A torn tail holds no frame (the scan made sure), but its bytes are kept
                # beside the file before they are cut, unless they are only zeros.
                try:
                    session.tail_backup = keep_tail(fd, path, report["end"])
                except OSError as exc:
                    raise TAIL_NOT_KEPT.error(
                        source=Source("file", path), reason=str(exc), id=session.id
                    ) from None
                os.ftruncate(fd, report["end"])
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        session._fd = fd
        return session

    def close(self) -> None:
        if self._fd is not None:
            if self._dirty:
                os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what it is -----------------------------------------------------------------

    @property
    def id(self) -> str:
        # Text only: a header made elsewhere can hold anything (an integer of thousands of
        # digits has no str()); smith.session._header says what is wrong with it.
        value = self.info.get("id")
        return value if isinstance(value, str) else os.path.basename(self.path).rsplit(".", 1)[0]

    @property
    def name(self) -> str:
        value = self.info.get("name")
        return value if isinstance(value, str) else ""

    @property
    def damage(self) -> str | None:
        """What reading this session had to leave out, in words; None when nothing."""
        r = self._arena.report
        parts = []
        if r["skipped"]:
            parts.append(f"{len(r['skipped'])} damaged frame(s) skipped")
        if r["truncated"]:
            kept = f" (kept in {self.tail_backup})" if self.tail_backup else ""
            parts.append(f"{r['truncated']} bytes of an unfinished frame at the end ignored{kept}")
        if r["duplicates"]:
            parts.append(
                f"{r['duplicates']} entr{'y' if r['duplicates'] == 1 else 'ies'} repeating "
                "an earlier entry's id left out of the tree"
            )
        for offset, reason in self.unread_meta[:1]:
            more = len(self.unread_meta) - 1
            parts.append(
                f"the session info or leaf frame at byte {offset} left out ({reason})"
                + (f" and {more} more" if more else "")
            )
        if r["error"] is not None:
            parts.append(f"unreadable from byte {r['error'][1]} ({r['error'][0]})")
        return "; ".join(parts) or None

    def damage_warning(self) -> Diagnostic | None:
        """The warning every surface shows when this session was read with damage."""
        damage = self.damage
        return None if damage is None else SKIPPED(name=self.name, id=self.id, damage=damage)

    @property
    def recovery(self) -> dict[str, object]:
        r = self._arena.report
        return {
            "frames_recovered": r["frames"],
            "frames_skipped": len(r["skipped"]),
            "skipped_offsets": [offset for offset, _ in r["skipped"]],
            "truncated_bytes": r["truncated"],
            "orphans": r["orphans"],
            "duplicate_ids": r["duplicates"],
            "error": None
            if r["error"] is None
            else {"problem": r["error"][0], "offset": r["error"][1]},
        }

    @property
    def leaf(self) -> str | None:
        """The selected entry: the last `select`, else the last entry appended at the
        selection (not one appended through a Branch of its own)."""
        if self._leaf is not None:
            return self._leaf
        if self._last is None:
            self._last = _codec.last_selecting(self._arena)
        return self._arena.id(self._last) if self._last >= 0 else None

    def __len__(self) -> int:
        return len(self._arena)

    def entries(self, kind: str | None = None) -> Iterator[Entry]:
        """Every entry (of `kind`, if given) in the order it was appended. Filtering by
        kind reads records only: entries of other kinds cost nothing."""
        if kind is not None:
            return (Entry(self._arena, int(i)) for i in self._arena.of_kind(kind))
        return (Entry(self._arena, i) for i in range(len(self._arena)))

    def latest(self) -> Iterator[Entry]:
        """Every entry, newest first (for "what did we last see" lookups)."""
        return (Entry(self._arena, i) for i in range(len(self._arena) - 1, -1, -1))

    def at(self, index: int) -> Entry:
        """The entry at record index `index` (as `branch_indices` and `records` give)."""
        if not 0 <= index < len(self._arena):
            raise IndexError(f"entry index {index} out of range (0..{len(self._arena) - 1})")
        return Entry(self._arena, index)

    def entry(self, id: str) -> Entry:
        index = self._arena.index(id)
        if index < 0:
            raise UNKNOWN_ENTRY.error(value=id, source=Source("argument", id), entry=id, id=self.id)
        return Entry(self._arena, index)

    def branch(self, leaf: str | None = None, *, kind: str | None = None) -> list[Entry]:
        """Entries from the root to `leaf` (default: the selected leaf); only those of
        `kind` if given (found from the records, without making the others)."""
        path = self.branch_indices(leaf)
        if kind is not None:
            path = self._arena.of_kind(kind, path)
        return [Entry(self._arena, int(i)) for i in path]

    def branch_indices(self, leaf: str | None = None) -> memoryview:
        """Record indices (int64) from the root to `leaf` (default: the selected leaf),
        for walks that read `records` rather than entries."""
        target = leaf or self.leaf
        if target is None:
            return memoryview(b"").cast("q")
        return self._arena.path(self.entry(target).index)

    def entries_between(self, ancestor: str, leaf: str | None = None) -> list[Entry] | None:
        """The entries after `ancestor` on the path to `leaf` (default: the selected
        one), oldest first; None if `ancestor` is not on that path. Costs the number of
        entries between, not the length of the branch."""
        target = leaf or self.leaf
        if target is None:
            return None
        found: list[Entry] = []
        at = self.entry(target).index
        while self._arena.id(at) != ancestor:
            found.append(Entry(self._arena, at))
            at = self._arena.parent(at)  # always an earlier record: the walk ends
            if at < 0:
                return None
        found.reverse()
        return found

    def compaction_boundary(self, leaf: str | None = None) -> str | None:
        """The latest compaction entry on the branch to `leaf` (default: the selected one):
        provider context starts there. Read from the records alone, decoding nothing."""
        found = self._arena.of_kind("compaction", self.branch_indices(leaf))
        return self._arena.id(int(found[-1])) if len(found) else None

    @property
    def records(self) -> Arena:
        """The entry records by index (id, parent index, kind, pairing) for views that
        walk a whole session without decoding content, such as a branch tree. Read it;
        never change it (appends go through `append`)."""
        return self._arena

    def children(self) -> dict[str | None, list[str]]:
        """Parent id -> child ids, in append order (for tree views). An entry repeating
        an earlier entry's id is left out: its id names the earlier one, so listing it
        would link that one under itself (a, b under a, a again under b: a loop)."""
        out: dict[str | None, list[str]] = {}
        arena = self._arena
        for i in range(len(arena)):
            if not arena.shadowed(i):
                parent = arena.parent(i)
                out.setdefault(None if parent < 0 else arena.id(parent), []).append(arena.id(i))
        return out

    # -- writing --------------------------------------------------------------------

    def _write(self, frame: bytes, durable: bool) -> None:
        """Write one whole frame at the end of the file, or leave the file as it was."""
        if not self.path:
            return  # an in-memory session (from_entries): the arena is all there is
        if self._fd is None:
            raise ValueError("this session was loaded read-only; open it to append")
        end = os.lseek(self._fd, 0, os.SEEK_END)
        try:
            written = os.write(self._fd, frame)
            while written < len(frame):  # a short write: finish it
                written += os.write(self._fd, memoryview(frame)[written:])
            self._dirty = True
            if durable:
                self.sync()
        except OSError:
            # Not durable means not written: no torn or unsynced frame for the next
            # append to land after, and no record of something that did not happen.
            os.ftruncate(self._fd, end)
            raise

    def exclusive(self) -> threading.RLock:
        """Hold while reading many entries off the event loop: appends wait meanwhile, so
        the arena is not grown under the reader."""
        return self._write_lock

    def sync(self) -> None:
        if self._fd is not None and self._dirty:
            os.fsync(self._fd)
            self._dirty = False

    def append(
        self,
        kind: str,
        content: object,
        *,
        parent: str | object | None = _MISSING,
        pair: str | None = None,
        id: str | None = None,
        ts: int | None = None,
        durable: bool = False,
    ) -> Entry:
        """Append an entry under `parent` (default: the selected leaf) and select it.

        The frame is written first and indexed after, so an entry that could not be
        written is never seen in memory either. Safe to call from several threads.
        """
        with self._write_lock:
            return self._append(kind, content, parent, pair, id, ts, durable, True)

    def _append(
        self,
        kind: str,
        content: object,
        parent: str | object | None,
        pair: str | None,
        id: str | None,
        ts: int | None,
        durable: bool,
        selects: bool,
    ) -> Entry:
        """Append (holding the write lock); `selects`: the entry becomes the selection,
        else it is written ASIDE (smith.session.Branch)."""
        parent_id = self.leaf if parent is _MISSING else parent
        if parent_id is not None and (
            not isinstance(parent_id, str) or self._arena.index(parent_id) < 0
        ):
            raise UNKNOWN_ENTRY.error(
                value=parent_id,
                source=Source("argument", str(parent_id)),
                entry=str(parent_id),
                id=self.id,
            )
        ts = now_ms() if ts is None else ts
        _check_fields(kind, pair, ts)
        if id is None:
            id = new_id()
            while self._arena.index(id) >= 0:
                id = new_id()
        elif self._arena.index(id) >= 0:
            raise ValueError(f"entry id {id!r} is already in this session")
        _check_fields(id, None, 0)
        frame = _codec.entry_frame(id, parent_id, ts, kind, pair, content, not selects)
        self._write(frame, durable)
        index = self._arena.append(frame)
        if selects:  # the new entry is the selection (see _meta)
            self._leaf, self._last = None, index
        entry = Entry(self._arena, index)
        for observer in self._observers:
            observer(entry)
        return entry

    def observe(self, callback: Callable[[Entry], object]) -> Callable[[], None]:
        """Call `callback(entry)` after each entry is appended (written and indexed; from
        the appending thread, under the write lock: keep it short). Returns a function
        that stops it. The runtime's `entry` event is this (docs/events.md)."""
        self._observers.append(callback)
        return lambda: self._observers.remove(callback)

    @property
    def blobs(self) -> _blobs.Blobs:
        """Content-addressed bytes (an attached image's), stored once: smith.session._blobs."""
        if self._blobs is None:
            with self._write_lock:
                if self._blobs is None:
                    self._blobs = _blobs.Blobs(self)
        return self._blobs

    def append_frame(self, frame: bytes, *, durable: bool = False) -> None:
        """Append one non-entry frame (a blob: `self.blobs`), written first, indexed after."""
        with self._write_lock:
            self._write(frame, durable)
            self._arena.append(frame)

    def _select(self, leaf: str, durable: bool) -> None:
        frame = _codec.leaf_frame(leaf)
        self._write(frame, durable)
        self._arena.append(frame)
        self._leaf = leaf

    def select(self, leaf: str, *, durable: bool = False) -> None:
        """Make `leaf` the selected entry (branch navigation); recorded in the file."""
        self.entry(leaf)
        with self._write_lock:
            if leaf != self.leaf:
                self._select(leaf, durable)

    def clone(self, path: str, *, name: str | None = None, id: str | None = None) -> Session:
        """A new session file with every branch of this one and the same selected leaf."""
        info = {
            **self.info,
            "id": id or new_session_id(),
            "created": now_ms(),
            "name": self.name if name is None else name,
            "cloned_from": self.id,
        }
        publish_new(path, _codec.clone_bytes(self._arena, info, self._leaf), str(info["id"]))
        return Session.open(path)

    def fork(
        self, path: str, *, at: str | None = None, name: str | None = None, id: str | None = None
    ) -> Session:
        """A new session file holding the path to `at` (default: the selected leaf)."""
        with memory.scope("session", "fork " + self.id):
            return self._fork(path, at, name, id)

    def _fork(self, path: str, at: str | None, name: str | None, id: str | None) -> Session:
        target = at or self.leaf
        info = {
            **self.info,
            "id": id or new_session_id(),
            "name": self.name if name is None else name,
            "created": now_ms(),
            "forked_from": self.id,
        }
        # (the selection followed appends when nothing was selected: that selects)
        followed = at is None and self._leaf is None
        index = -1 if target is None else self.entry(target).index
        data, aside = _codec.fork_bytes(self._arena, index, info, select_aside=not followed)
        publish_new(path, data, str(info["id"]))
        # A linear history is shared in memory (copy-on-write) instead of read back.
        shared = None if target is None else self._arena.fork(self.entry(target).index)
        if shared is None:
            return Session.open(path)
        return Session(path, shared, info, target if aside else None, lock(path, 2.0))


def _check_fields(name: str, pair: str | None, ts: int) -> None:
    """What the arena's fixed-size records can hold, checked before anything is written."""
    for text in (name, pair):
        if text is not None and not 0 < len(text.encode("utf-8", "surrogateescape")) < 0xFFFF:
            raise ValueError(f"{text[:40]!r}: ids, kinds and pairing ids are 1 to 65,534 bytes")
    if not 0 <= ts < 1 << 63:
        raise ValueError(f"timestamp {ts} is outside 0 .. 2**63-1 ms")


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)
