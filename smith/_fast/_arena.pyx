# cython: language_level=3
"""The in-memory session: one contiguous byte arena and fixed-size entry records.

The arena holds the session file's bytes exactly as they are on disk (frames included),
read in chunks straight into one buffer; loading parses only each entry's small header
(id, parent, timestamp, kind, pairing id, and where its content bytes are) and never
decodes content. Every record is a C struct in one array; the parent link is a record
index resolved through an open-addressing id table. Traversal, path-to-root and forking
read records only. Loading and forking allocate a fixed number of blocks whatever the
entry count.

Entry frame body (canonical CBOR): [id: text, parent: text | null, ts: uint (ms),
kind: text, pair: text | null, content: bytes]. `content` is the canonical CBOR of the
entry's content, zstd-compressed when the frame's COMPRESSED flag is set.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.mem cimport PyMem_RawCalloc, PyMem_RawFree, PyMem_RawMalloc, PyMem_RawRealloc
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy

from smith._fast._frames cimport (
    FILE_HEADER_SIZE,
    FRAME_CORRUPT,
    FRAME_HEADER_SIZE,
    FRAME_MORE,
    FRAME_OK,
    FRAME_TRUNCATED,
    FrameInfo,
    Search,
    find_frame,
    next_frame,
)
from smith._fast._frames import STATUS_NAMES, data_extents, read_into, readable_length
from smith._fast._record cimport (
    MISSING_PARENT,
    NO_PARENT,
    NONE,
    SHADOWED,
    Meta,
    Record,
    parse_entry,
)

cdef extern from *:
    """
    #include <stdint.h>
    #if defined(__linux__)
    #include <sys/mman.h>
    #endif
    /* Ask for transparent huge pages over the 2 MiB-aligned interior of a large block:
       a session file read into it then takes ~500x fewer page faults. Advice only. */
    static void smith_huge_pages(void *p, uint64_t n) {
    #if defined(__linux__) && defined(MADV_HUGEPAGE)
        const uintptr_t huge = (uintptr_t)2 << 20;
        uintptr_t start = ((uintptr_t)p + huge - 1) & ~(huge - 1);
        uintptr_t end = ((uintptr_t)p + n) & ~(huge - 1);
        if (n >= 4 * huge && end > start)
            madvise((void *)start, end - start, MADV_HUGEPAGE);
    #else
        (void)p; (void)n;
    #endif
    }
    """
    void smith_huge_pages(void *p, uint64_t n) nogil


cdef extern from "Python.h":
    object PyMemoryView_FromMemory(char *mem, Py_ssize_t size, int flags)
    int PyBUF_WRITE

TYPE_SESSION = 1
TYPE_ENTRY = 2
TYPE_LEAF = 3

cdef uint64_t HASH_SEED = 1469598103934665603ULL ^ int.from_bytes(__import__("os").urandom(8),
                                                                     "little")


cdef inline uint64_t hash_bytes(const uint8_t *p, uint32_t n) noexcept nogil:
    # Seeded per process, so ids chosen to collide in one run do not in another.
    cdef uint64_t h = HASH_SEED
    cdef uint32_t i
    for i in range(n):
        h = (h ^ p[i]) * 1099511628211ULL
    return h ^ (h >> 29)


cdef enum:
    MIN_FRAME = 24  # header + the smallest possible entry body
    MAX_RATIO = 32768  # zstd: at most a 128 KiB block from each 4 stored bytes


cdef int64_t _content_size(const uint8_t *p, uint32_t n, bint compressed,
                           uint32_t max_body) noexcept nogil:
    """RFC 8878 3.1.1.1: magic, frame header descriptor, window descriptor unless single
    segment, dictionary id, then the frame content size in 0, 1, 2, 4 or 8 bytes.

    A declared size is only a claim: one over the bound content is decoded to, or more
    than `n` stored bytes can expand to (a zstd block of at least 4 bytes gives at most
    128 KiB), is none (-1), never a figure a crafted header chose."""
    cdef uint8_t fhd, fcs_flag, did_flag, width
    cdef uint32_t pos = 5
    cdef int64_t size = 0
    cdef int k
    if not compressed:
        return n
    if n < 5 or p[0] != 0x28 or p[1] != 0xB5 or p[2] != 0x2F or p[3] != 0xFD:
        return -1
    fhd = p[4]
    fcs_flag = fhd >> 6
    did_flag = fhd & 3
    if not (fhd & 0x20):
        pos += 1  # window descriptor
    pos += 4 if did_flag == 3 else did_flag
    if fcs_flag == 0:
        width = 1 if fhd & 0x20 else 0
    else:
        width = <uint8_t>(1 << fcs_flag)
    if width == 0 or pos + width > n:
        return -1
    for k in range(width - 1, -1, -1):
        size = (size << 8) | p[pos + k]
    if width == 2:
        size += 256
    if size < 0 or size > max_body or size > <int64_t>n * MAX_RATIO:
        return -1
    return size


cdef class _Ingest:
    """Where a chunked load has got to."""
    cdef uint64_t pos
    cdef uint64_t end            # just past the last intact frame
    cdef Py_ssize_t orphans, duplicates, max_skips
    cdef list skipped, pending
    cdef object error
    cdef bint done

    def __cinit__(self, Py_ssize_t max_skips):
        self.pos = 0
        self.orphans = 0
        self.duplicates = 0
        self.max_skips = max_skips
        self.end = 0
        self.skipped = []
        self.pending = []
        self.error = None
        self.done = False


cdef class _Blocks:
    """Memory that arenas share after a fork, freed when the last of them goes. A shared
    arena never writes to it: its first mutation copies (see Arena._own)."""
    cdef uint8_t *buf
    cdef Record *records
    cdef Meta *meta
    cdef uint64_t *table

    def __dealloc__(self):
        PyMem_RawFree(self.buf)
        PyMem_RawFree(self.records)
        PyMem_RawFree(self.meta)
        PyMem_RawFree(self.table)


class ArenaError(ValueError):
    """The arena cannot take a frame (malformed entry, duplicate id)."""


cdef class Arena:
    """A session in memory. Create with `Arena.load(file)` or `Arena.empty()`."""

    cdef uint8_t *buf
    cdef uint64_t size, cap
    cdef Record *records
    cdef Py_ssize_t count, rcap
    cdef Meta *meta
    cdef Py_ssize_t nmeta, mcap
    cdef uint64_t *table         # id -> record index, open addressing (see _rebuild_table)
    cdef uint64_t tmask
    cdef uint32_t max_body
    cdef Py_ssize_t chain        # records [0, chain) form one line: each the next's parent
    cdef _Blocks shared          # set while the blocks above are shared with a fork
    # The same as a C flag: the garbage collector may clear `shared` (tp_clear) before
    # __dealloc__ runs when the arena dies in a reference cycle, and memory that is
    # shared must still not be freed here then.
    cdef bint is_shared
    cdef public object report    # what loading found: dict

    def __cinit__(self):
        self.buf = NULL
        self.records = NULL
        self.meta = NULL
        self.table = NULL
        self.shared = None
        self.is_shared = False
        self.report = {}

    def __dealloc__(self):
        if not self.is_shared:
            PyMem_RawFree(self.buf)
            PyMem_RawFree(self.records)
            PyMem_RawFree(self.meta)
            PyMem_RawFree(self.table)

    # -- sharing ------------------------------------------------------------------

    def fork(self, Py_ssize_t i):
        """An arena holding entries 0..i, sharing this one's memory (copy-on-write).

        Only when those entries are exactly the path to entry i (a linear history, the
        usual case): then forking copies nothing and allocates one object, whatever the
        entry count. Returns None otherwise (fork through `fork_bytes` instead).
        """
        cdef Arena child
        self._rec(i)
        if i >= self.chain:
            return None
        if not self.is_shared:
            self.shared = _Blocks.__new__(_Blocks)
            self.shared.buf = self.buf
            self.shared.records = self.records
            self.shared.meta = self.meta
            self.shared.table = self.table
            self.is_shared = True
        child = Arena.__new__(Arena)
        child.shared = self.shared
        child.is_shared = True
        child.buf, child.size, child.cap = self.buf, self.size, self.size
        child.records, child.count, child.rcap = self.records, i + 1, i + 1
        child.chain = i + 1
        child.meta, child.nmeta, child.mcap = self.meta, self.nmeta, self.nmeta
        child.table, child.tmask = self.table, self.tmask
        child.max_body = self.max_body
        child.report = {"frames": i + 1 + self.nmeta, "skipped": [], "truncated": 0,
                        "end": self.size, "error": None, "orphans": 0, "duplicates": 0}
        return child

    cdef _own(self):
        """Before any mutation: take private copies of shared blocks."""
        cdef uint8_t *buf
        cdef Record *records
        cdef Meta *meta
        if not self.is_shared:
            return
        buf = <uint8_t *>PyMem_RawMalloc(self.size + 4096)
        records = <Record *>PyMem_RawMalloc((self.count + 16) * sizeof(Record))
        meta = <Meta *>PyMem_RawMalloc((self.nmeta + 16) * sizeof(Meta))
        if buf == NULL or records == NULL or meta == NULL:
            PyMem_RawFree(buf)
            PyMem_RawFree(records)
            PyMem_RawFree(meta)
            raise MemoryError("cannot copy a shared session arena")
        memcpy(buf, self.buf, self.size)
        memcpy(records, self.records, self.count * sizeof(Record))
        memcpy(meta, self.meta, self.nmeta * sizeof(Meta))
        self.buf, self.cap = buf, self.size + 4096
        self.records, self.rcap = records, self.count + 16
        self.meta, self.mcap = meta, self.nmeta + 16
        self.table = NULL
        self.shared = None
        self.is_shared = False
        self._rebuild_table(self.count, self.count + 16)

    # -- construction -------------------------------------------------------------

    @staticmethod
    def empty(header, uint32_t max_body=64 * 1024 * 1024):
        """An arena holding just a file header (bytes) and no frames."""
        cdef Arena a = Arena.__new__(Arena)
        a.max_body = max_body
        a._reserve_bytes(len(header) + 4096)
        memcpy(a.buf, <const char *>header, len(header))
        a.size = len(header)
        a._reserve_records(16, 16)
        a._rebuild_table(0, 16)
        a.report = {"frames": 0, "skipped": [], "truncated": 0, "end": a.size, "error": None,
                    "orphans": 0, "duplicates": 0}
        return a

    @staticmethod
    def load(f, Py_ssize_t size, uint32_t max_body=64 * 1024 * 1024,
             Py_ssize_t max_skips=16, Py_ssize_t chunk=1 << 20):
        """Read `size` bytes of the open binary file `f` into a new arena, indexing each
        chunk's frames while it is still in cache. (A session file on disk: `read`.)"""
        cdef Arena a = Arena.__new__(Arena)
        cdef Py_ssize_t got = 0, n
        cdef _Ingest state = _Ingest(max_skips)
        a.max_body = max_body
        a._reserve_bytes(size + (size >> 4) + 4096)
        # Virtual address space is cheap and only touched pages become resident, so the
        # index is sized for the smallest possible entries once, never grown while loading.
        a._reserve_records(size // MIN_FRAME + 16, 16)
        while got < size:
            n = f.readinto(PyMemoryView_FromMemory(<char *>a.buf + got,
                                                   min(chunk, size - got), PyBUF_WRITE))
            if not n:
                break
            if n < 0 or n > min(chunk, size - got):
                raise ArenaError(f"readinto returned {n} bytes for a smaller request")
            got += n
            if got < size:
                a._ingest(state, got, False)
        a._ingest(state, got, True)
        a._finish(state, got, got)
        return a

    @staticmethod
    def read(int fd, uint64_t size, uint32_t max_body=64 * 1024 * 1024,
             Py_ssize_t max_skips=16, uint64_t chunk=1 << 20):
        """A new arena holding the session file open as `fd` (of `size` bytes), read from
        its start with pread in chunks, each indexed while it is still in cache.

        Only what holds data is read: a sparse file's holes stay untouched zeroed memory,
        and past its last data nothing is held but what a frame starting there could
        need, so memory follows the file's data, never the size it claims (a 600 MB file
        of 2 KB of frames would otherwise cost 600 MB)."""
        cdef Arena a = Arena.__new__(Arena)
        a.max_body = max_body
        return a._read(fd, size, chunk, _Ingest(max_skips))

    cdef Arena _read(self, int fd, uint64_t size, uint64_t chunk, _Ingest state):
        cdef uint64_t got = 0, hold, step, n
        hold, data = readable_length(fd, size, self.max_body)
        if data is None:
            extents = ((0, size),)
            self._reserve_bytes(size + (size >> 4) + 4096)
            self._reserve_records(size // MIN_FRAME + 16, 16)
        else:
            extents = data_extents(fd, 0, hold)
            # Zeroed by calloc, which takes fresh pages from the system: holes never read
            # stay unbacked (reading them maps the shared zero page).
            self.buf = <uint8_t *>PyMem_RawCalloc(hold + 4096, 1)
            if self.buf == NULL:
                raise MemoryError(f"cannot hold a session of {hold} bytes in memory")
            self.cap = hold + 4096
            # A frame has a nonzero length, so data: no more frames than data bytes.
            self._reserve_records(min(hold, data) // MIN_FRAME + 16, 16)
        view = PyMemoryView_FromMemory(<char *>self.buf, self.cap, PyBUF_WRITE)
        shrunk = False
        for start, stop in extents:
            got = start  # a hole before it reads as the zeros already there
            while got < stop:
                step = min(chunk, stop - got)
                n = read_into(fd, view, got, got + step, got)
                got += n
                if n < step:  # the file shrank while read: what is there is all there is
                    shrunk = True
                    break
                self._ingest(state, got, False)
            if shrunk:
                break
        if shrunk or data is None:
            self._ingest(state, got, True)
            self._finish(state, got, got)
        else:
            # Past `hold` a sparse file is zeros, which hold no frame: part of its tail.
            self._ingest(state, hold, True)
            self._finish(state, hold, size)
        if self.cap > self.size + (self.size >> 4) + (1 << 20):
            self._shrink_bytes()
        return self

    cdef _reserve_bytes(self, uint64_t need):
        cdef uint64_t cap
        cdef uint8_t *p
        if need <= self.cap:
            return
        cap = max(need, self.cap * 2)
        p = <uint8_t *>PyMem_RawRealloc(self.buf, cap)
        if p == NULL:
            raise MemoryError(f"cannot hold a session of {need} bytes in memory")
        self.buf = p
        self.cap = cap
        smith_huge_pages(p, cap)

    cdef _shrink_bytes(self):
        """Give back what was held past the frames (a sparse file's zeros)."""
        cdef uint64_t keep = self.size + (self.size >> 4) + 4096
        cdef uint8_t *p = <uint8_t *>PyMem_RawRealloc(self.buf, keep)
        if p != NULL:
            self.buf = p
            self.cap = keep

    cdef _reserve_records(self, Py_ssize_t entries, Py_ssize_t metas):
        cdef Record *r
        cdef Meta *m
        if entries > self.rcap:
            entries = max(entries, self.rcap * 2)
            r = <Record *>PyMem_RawRealloc(self.records, entries * sizeof(Record))
            if r == NULL:
                raise MemoryError("cannot grow the session index")
            self.records = r
            self.rcap = entries
        if metas > self.mcap:
            metas = max(metas, self.mcap * 2)
            m = <Meta *>PyMem_RawRealloc(self.meta, metas * sizeof(Meta))
            if m == NULL:
                raise MemoryError("cannot grow the session index")
            self.meta = m
            self.mcap = metas

    cdef _shrink_records(self):
        """Give back the address space reserved for the smallest possible entries."""
        cdef Py_ssize_t keep = self.count + 16
        cdef Record *r
        if keep < self.rcap:
            r = <Record *>PyMem_RawRealloc(self.records, keep * sizeof(Record))
            if r != NULL:
                self.records = r
                self.rcap = keep

    cdef _rebuild_table(self, Py_ssize_t keep, Py_ssize_t capacity_for):
        """A fresh id table for `capacity_for` ids holding records [0, keep).

        A slot holds (32 bits of the id's hash << 32) | (record index + 1); 0 is empty, so
        the table comes zeroed from calloc, and most mismatches are rejected on the tag
        without touching the record or the id bytes (each a likely cache miss).
        """
        cdef uint64_t size = 16
        cdef Py_ssize_t i
        while size < <uint64_t>(capacity_for * 2):
            size <<= 1
        PyMem_RawFree(self.table)
        self.table = <uint64_t *>PyMem_RawCalloc(size, sizeof(uint64_t))
        if self.table == NULL:
            raise MemoryError("cannot build the session id table")
        self.tmask = size - 1
        for i in range(keep):
            self._table_put(i)

    cdef inline const uint8_t *_id_ptr(self, Py_ssize_t i) noexcept nogil:
        return self.buf + self.records[i].frame + FRAME_HEADER_SIZE + self.records[i].id_off

    cdef inline bint _is(self, uint64_t slot_value, uint64_t tag, const uint8_t *p,
                         uint32_t n) noexcept nogil:
        cdef int64_t at = <int64_t>(slot_value & 0xFFFFFFFFu) - 1
        return ((slot_value >> 32) == tag and self.records[at].id_len == n
                and memcmp(self._id_ptr(at), p, n) == 0)

    cdef int64_t _find(self, const uint8_t *p, uint32_t n) noexcept nogil:
        if self.table == NULL:
            return -1
        cdef uint64_t h = hash_bytes(p, n)
        cdef uint64_t tag = h >> 32, slot = h & self.tmask, value
        while True:
            value = self.table[slot]
            if value == 0:
                return -1
            if self._is(value, tag, p, n):
                return <int64_t>(value & 0xFFFFFFFFu) - 1
            slot = (slot + 1) & self.tmask

    cdef int _table_put(self, Py_ssize_t i) noexcept nogil:
        """Insert record i; -1 if its id is already present."""
        cdef const uint8_t *p = self._id_ptr(i)
        cdef uint32_t n = self.records[i].id_len
        cdef uint64_t h = hash_bytes(p, n)
        cdef uint64_t tag = h >> 32, slot = h & self.tmask, value
        while True:
            value = self.table[slot]
            if value == 0:
                self.table[slot] = (tag << 32) | <uint64_t>(i + 1)
                return 0
            if self._is(value, tag, p, n):
                return -1
            slot = (slot + 1) & self.tmask

    cdef int _add_frame(self, FrameInfo *info, bint link) except -2:
        """Index one intact frame already in the buffer: 0 ok, -1 malformed entry.

        With `link` (appending), the parent must already be here and the id must be new;
        loading links everything at the end instead (see `_link`).
        """
        cdef Record *r
        cdef const uint8_t *body = self.buf + info.offset + FRAME_HEADER_SIZE
        cdef int64_t parent
        if info.type != TYPE_ENTRY:
            self.meta[self.nmeta].frame = info.offset
            self.meta[self.nmeta].frame_len = FRAME_HEADER_SIZE + info.body_len
            self.meta[self.nmeta].type = info.type
            self.nmeta += 1
            return 0
        r = &self.records[self.count]
        r.frame = info.offset
        r.frame_len = FRAME_HEADER_SIZE + info.body_len
        r.flags = info.flags
        if parse_entry(body, info.body_len, r, &r.parent_off, &r.parent_len) < 0:
            return -1
        r.content += info.offset + FRAME_HEADER_SIZE
        r.parent = NONE
        if link:
            if r.parent_len != NO_PARENT:
                parent = self._find(body + r.parent_off, r.parent_len)
                if parent < 0:
                    return -1
                r.parent = parent
            if self._table_put(self.count) < 0:
                return -1
        self.count += 1
        return 0

    cdef _link(self, _Ingest state):
        """Build the id table (sized exactly, one allocation) and resolve every parent.

        A parent must come earlier in the file, so links can never form a cycle; a missing
        one (lost to damage) leaves the entry an orphan. A repeated id is not indexed.
        """
        cdef Py_ssize_t i
        cdef Record *r
        cdef int64_t parent
        cdef const uint8_t *pid
        self._rebuild_table(0, self.count)
        for i in range(self.count):
            if self._table_put(i) < 0:
                state.duplicates += 1
                self.records[i].flags |= SHADOWED
        for i in range(self.count):
            r = &self.records[i]
            if r.parent_len == NO_PARENT:
                r.parent = NONE
                continue
            pid = self.buf + r.frame + FRAME_HEADER_SIZE + r.parent_off
            # Most entries continue the entry just before them: check that first, while
            # its record and id are still in cache.
            if (i > 0 and not self.records[i - 1].flags & SHADOWED
                    and self.records[i - 1].id_len == r.parent_len
                    and memcmp(self._id_ptr(i - 1), pid, r.parent_len) == 0):
                r.parent = i - 1
                continue
            parent = self._find(pid, r.parent_len)
            if 0 <= parent < i:
                r.parent = parent
            else:
                r.parent = MISSING_PARENT
                state.orphans += 1

    cdef _ingest(self, _Ingest state, uint64_t n, bint final):
        """Index the frames that lie wholly within the first `n` bytes of the buffer.

        Same policy as _frames.scan: corrupt frames count as skipped only once an intact
        frame follows them; trailing ones are a torn tail.
        """
        cdef Search search
        search.prefix = NULL
        try:
            self._ingest_frames(state, n, final, &search)
        finally:
            PyMem_RawFree(search.prefix)

    cdef _ingest_frames(self, _Ingest state, uint64_t n, bint final, Search *search):
        cdef FrameInfo info
        cdef int status
        cdef uint64_t pos = state.pos
        # Deciding what follows damage (only once the whole file is here) checks
        # candidate bodies through a checksum index: exact, and linear however crafted.
        search.budget = 64 * n + (1 << 20)
        search.buf = self.buf
        search.n = n
        search.indexed = final
        search.found = -1
        if pos == 0:
            if n < FILE_HEADER_SIZE:
                if final:
                    raise ArenaError("the file is shorter than a session file header")
                return
            pos = FILE_HEADER_SIZE
            state.end = pos
        while pos < n and not state.done:
            status = next_frame(self.buf, n, pos, self.max_body, True, &info, final, search)
            if status == FRAME_MORE:
                break
            if status == FRAME_OK:
                if self.count == self.rcap or self.nmeta == self.mcap:
                    self._reserve_records(self.count + 1, self.nmeta + 1)
                if self._add_frame(&info, False) < 0:
                    status = FRAME_CORRUPT
            if status == FRAME_OK:
                state.skipped.extend(state.pending)
                state.pending.clear()
                pos += FRAME_HEADER_SIZE + info.body_len
                state.end = pos
            elif status == FRAME_CORRUPT:
                if len(state.skipped) + len(state.pending) >= state.max_skips:
                    state.skipped.extend(state.pending)
                    state.pending.clear()
                    state.error = ("too-many-corrupt", pos)
                    state.done = True
                    break
                state.pending.append((pos, info.body_len))
                pos += FRAME_HEADER_SIZE + info.body_len
            elif status == FRAME_TRUNCATED:
                state.done = True
            else:
                state.skipped.extend(state.pending)
                state.pending.clear()
                state.error = (STATUS_NAMES[status], pos)
                state.done = True
        state.pos = pos
        if final and state.error is None and state.pending:
            # Corrupt frames end the file, their lengths trusted: a tail only if no intact
            # frame starts inside them (one this arena cannot index counts too), since
            # opening for writing cuts a tail.
            if find_frame(self.buf, n, state.end, pos, self.max_body, search) != -1:
                state.skipped.extend(state.pending)
                state.pending.clear()
                state.error = ("damaged", state.end)
                state.done = True

    cdef _finish(self, _Ingest state, uint64_t n, uint64_t total):
        """`n` bytes were indexed of a file of `total` (past `n`: zeros)."""
        self._link(state)
        self.chain = 0
        while self.chain < self.count and self.records[self.chain].parent == self.chain - 1:
            self.chain += 1
        self._shrink_records()
        # Appends go right after the last intact frame; a torn tail is not kept.
        self.size = max(state.end, FILE_HEADER_SIZE) if n >= FILE_HEADER_SIZE else n
        truncated = 0 if state.error is not None else total - self.size
        self.report = {"frames": self.count + self.nmeta, "skipped": state.skipped,
                       "truncated": truncated, "end": self.size,
                       "error": state.error, "orphans": state.orphans,
                       "duplicates": state.duplicates}

    # -- appending --------------------------------------------------------------

    def append(self, frame):
        """Add one encoded frame (as written to the file); return the entry index or -1."""
        cdef Py_buffer view
        cdef FrameInfo info
        cdef uint64_t at
        cdef int status
        self._own()
        at = self.size
        PyObject_GetBuffer(frame, &view, PyBUF_SIMPLE)
        try:
            self._reserve_bytes(self.size + <uint64_t>view.len)
            memcpy(self.buf + at, view.buf, view.len)
            status = next_frame(self.buf, at + <uint64_t>view.len, at, self.max_body, True, &info)
            if status != FRAME_OK or FRAME_HEADER_SIZE + info.body_len != <uint64_t>view.len:
                raise ArenaError("not exactly one intact frame")
            self._reserve_records(self.count + 1, self.nmeta + 1)
            if self.count * 2 >= <Py_ssize_t>self.tmask:
                self._rebuild_table(self.count, self.count * 2 + 16)
            if info.type == TYPE_ENTRY:
                if self._add_frame(&info, True) < 0:
                    raise ArenaError("malformed entry frame, an id already present, or a "
                                     "parent that is not in this session")
                self.size = at + <uint64_t>view.len
                if self.chain == self.count - 1 and \
                        self.records[self.count - 1].parent == self.count - 2:
                    self.chain += 1
                return self.count - 1
            self._add_frame(&info, False)
            self.size = at + <uint64_t>view.len
            return -1
        finally:
            PyBuffer_Release(&view)

    # -- reading ----------------------------------------------------------------

    def __len__(self):
        return self.count

    cdef inline Record *_rec(self, Py_ssize_t i) except NULL:
        if i < 0 or i >= self.count:
            raise IndexError(f"entry index {i} out of range (0..{self.count - 1})")
        return &self.records[i]

    cdef inline str _text(self, Record *r, uint32_t off, uint16_t n):
        return PyUnicode_DecodeUTF8(<const char *>self.buf + r.frame + FRAME_HEADER_SIZE + off,
                                    n, "surrogateescape")

    cdef inline Py_ssize_t _up(self, Py_ssize_t at) except -3:
        """The parent of record `at`, for walks towards the root. A parent always comes
        earlier (loading and appending resolve only those), so a walk takes at most
        `at` steps; a link that does not is refused rather than followed for ever."""
        cdef int64_t parent = self.records[at].parent
        if parent >= at:
            raise ArenaError(f"entry {at} links to a parent ({parent}) that is not earlier")
        return parent

    def shadowed(self, Py_ssize_t i) -> bool:
        """Whether entry i repeats the id of an earlier entry: it is not reachable by id,
        so a walk of the tree by ids leaves it out (it would loop back)."""
        return (self._rec(i).flags & SHADOWED) != 0

    def id(self, Py_ssize_t i) -> str:
        cdef Record *r = self._rec(i)
        return self._text(r, r.id_off, r.id_len)

    def kind(self, Py_ssize_t i) -> str:
        cdef Record *r = self._rec(i)
        return self._text(r, r.kind_off, r.kind_len)

    def pair(self, Py_ssize_t i):
        cdef Record *r = self._rec(i)
        return self._text(r, r.pair_off, r.pair_len) if r.pair_off else None

    def ts(self, Py_ssize_t i) -> int:
        return self._rec(i).ts

    def parent(self, Py_ssize_t i) -> int:
        """The parent's index; -1 for a root, -2 when the parent is not in this session."""
        return self._rec(i).parent

    def compressed(self, Py_ssize_t i) -> bool:
        return (self._rec(i).flags & 1) != 0

    def content(self, Py_ssize_t i) -> bytes:
        """The stored content bytes (zstd-compressed when `compressed(i)`)."""
        cdef Record *r = self._rec(i)
        return PyBytes_FromStringAndSize(<const char *>self.buf + r.content, r.content_len)

    def frame(self, Py_ssize_t i) -> bytes:
        cdef Record *r = self._rec(i)
        return PyBytes_FromStringAndSize(<const char *>self.buf + r.frame, r.frame_len)

    def index(self, id) -> int:
        """The index of the entry with this id, or -1."""
        cdef bytes raw = id.encode("utf-8", "surrogateescape")
        cdef int64_t found = self._find(<const uint8_t *>PyBytes_AS_STRING(raw), len(raw))
        return found if found < self.count else -1  # a fork shares a longer table

    def path(self, Py_ssize_t i):
        """Indices from the root to entry i (inclusive), reading records only."""
        cdef Py_ssize_t depth = 0, at = i
        self._rec(i)
        while at >= 0:
            depth += 1
            at = self._up(at)
        out = bytearray(depth * 8)
        cdef int64_t[::1] view = memoryview(out).cast("q")
        at = i
        while at >= 0:
            depth -= 1
            view[depth] = at
            at = self.records[at].parent
        return memoryview(out).cast("q")

    def of_kind(self, kind, among=None):
        """Indices of the entries whose kind is `kind`, in order: of every entry, or of
        the indices in `among` (a path). Reads records only; no entry object is made."""
        cdef bytes want = kind.encode("utf-8", "surrogateescape")
        cdef const uint8_t *w = <const uint8_t *>PyBytes_AS_STRING(want)
        cdef uint16_t n = <uint16_t>len(want)
        cdef const int64_t[::1] order
        cdef Py_ssize_t total = self.count, k, at, found = 0
        cdef Record *r
        if among is not None:
            order = among
            total = order.shape[0]
        out = bytearray(total * 8)
        cdef int64_t[::1] view = memoryview(out).cast("q")
        for k in range(total):
            at = order[k] if among is not None else k
            if at < 0 or at >= self.count:
                raise IndexError(f"entry index {at} out of range (0..{self.count - 1})")
            r = &self.records[at]
            if r.kind_len == n and memcmp(self.buf + r.frame + FRAME_HEADER_SIZE + r.kind_off,
                                          w, n) == 0:
                view[found] = at
                found += 1
        return memoryview(out).cast("q")[:found]

    def pairs(self, among):
        """`pair` of each index in `among`, in one call (None where there is none)."""
        cdef const int64_t[::1] order = among
        cdef Py_ssize_t k, at, total = order.shape[0]
        cdef Record *r
        out = [None] * total
        for k in range(total):
            at = order[k]
            if at < 0 or at >= self.count:
                raise IndexError(f"entry index {at} out of range (0..{self.count - 1})")
            r = &self.records[at]
            if r.pair_off:
                out[k] = self._text(r, r.pair_off, r.pair_len)
        return out

    def content_size(self, Py_ssize_t i) -> int:
        """The size of entry i's content as canonical CBOR: its stored length, or for
        compressed content the size its zstd frame header declares (-1 if it declares
        none). Reads the record and at most 18 header bytes; decompresses nothing."""
        cdef Record *r = self._rec(i)
        return _content_size(self.buf + r.content, r.content_len, r.flags & 1, self.max_body)

    def content_sizes(self, among):
        """`content_size` of each index in `among`, as int64 values."""
        cdef const int64_t[::1] order = among
        cdef Py_ssize_t k, at, total = order.shape[0]
        cdef Record *r
        out = bytearray(total * 8)
        cdef int64_t[::1] view = memoryview(out).cast("q")
        for k in range(total):
            at = order[k]
            if at < 0 or at >= self.count:
                raise IndexError(f"entry index {at} out of range (0..{self.count - 1})")
            r = &self.records[at]
            view[k] = _content_size(self.buf + r.content, r.content_len, r.flags & 1,
                                   self.max_body)
        return memoryview(out).cast("q")

    def meta_frames(self):
        """[(type, frame bytes)] of every frame that is not an entry, in file order."""
        cdef Py_ssize_t k
        return [(self.meta[k].type,
                 PyBytes_FromStringAndSize(<const char *>self.buf + self.meta[k].frame,
                                           self.meta[k].frame_len))
                for k in range(self.nmeta)]

    def meta_body(self, Py_ssize_t k) -> bytes:
        if k < 0 or k >= self.nmeta:
            raise IndexError(k)
        return PyBytes_FromStringAndSize(
            <const char *>self.buf + self.meta[k].frame + FRAME_HEADER_SIZE,
            self.meta[k].frame_len - FRAME_HEADER_SIZE)

    def offset(self, Py_ssize_t i) -> int:
        """Where entry i's frame starts in the file."""
        return self._rec(i).frame

    def meta_offset(self, Py_ssize_t k) -> int:
        if k < 0 or k >= self.nmeta:
            raise IndexError(k)
        return self.meta[k].frame

    def meta_types(self):
        cdef Py_ssize_t k
        return [self.meta[k].type for k in range(self.nmeta)]

    @property
    def nbytes(self) -> int:
        """Bytes held: the arena, the records, the id table."""
        return self.cap + self.rcap * sizeof(Record) + self.mcap * sizeof(Meta) \
            + (self.tmask + 1) * sizeof(uint64_t)

    def fork_bytes(self, Py_ssize_t i, header, session_frame, keep_types=()):
        """A new session file: `header`, `session_frame`, then the frames of the path to
        entry i, then the non-entry frames whose type is in `keep_types`, in one buffer."""
        cdef Py_ssize_t at, k, depth = 0
        cdef uint64_t total = len(header) + len(session_frame), pos
        cdef bytes out
        cdef uint8_t *p
        keep = set(keep_types)
        at = i
        self._rec(i)
        while at >= 0:
            total += self.records[at].frame_len
            depth += 1
            at = self._up(at)
        for k in range(self.nmeta):
            if self.meta[k].type in keep:
                total += self.meta[k].frame_len
        out = PyBytes_FromStringAndSize(NULL, total)
        p = <uint8_t *>PyBytes_AS_STRING(out)
        memcpy(p, <const char *>header, len(header))
        pos = len(header)
        memcpy(p + pos, <const char *>session_frame, len(session_frame))
        pos += len(session_frame)
        # Root first: walk to find each depth's record (records only, no allocation).
        end = total
        for k in range(self.nmeta):
            if self.meta[k].type in keep:
                end -= self.meta[k].frame_len
        at = i
        cdef uint64_t back = end
        while at >= 0:
            back -= self.records[at].frame_len
            memcpy(p + back, self.buf + self.records[at].frame, self.records[at].frame_len)
            at = self.records[at].parent
        pos = end
        for k in range(self.nmeta):
            if self.meta[k].type in keep:
                memcpy(p + pos, self.buf + self.meta[k].frame, self.meta[k].frame_len)
                pos += self.meta[k].frame_len
        return out
