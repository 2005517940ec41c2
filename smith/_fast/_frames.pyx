# cython: language_level=3
"""Session file framing: CRC32C, file header, frame headers, and the recovering scanner.

File layout (all integers little-endian):

    file header (16 bytes)   magic b"\\x89SMITHS\\n", u32 format version, u32 CRC32C of the
                             previous 12 bytes
    frame header (16 bytes)  u32 body length (> 0), u16 type, u16 flags (bit 0:
                             zstd-compressed content; bit 15 reserved for the index),
                             u32 CRC32C of the body, u32 CRC32C of the previous 12 bytes
    frame body               `body length` bytes

A body length of zero is invalid, so a zero-filled tail never parses as frames; a header
whose checksum fails cannot be trusted for its length, so the scanner stops there. A frame
whose header is intact but whose body checksum fails is skipped (its length is trusted),
counted and reported, up to a bound.

CRC32C (Castagnoli) uses the SSE4.2 instruction where the CPU has it and a slicing-by-8
table elsewhere; both give identical results (a test checks).
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from libc.errno cimport EINTR, errno
from posix.unistd cimport pread
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.mem cimport PyMem_RawFree, PyMem_RawMalloc
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

from smith._fast._record cimport Record, parse_entry

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>

    static uint32_t smith_crc_table[8][256];

    static void smith_crc_init_table(void) {
        for (uint32_t n = 0; n < 256; n++) {
            uint32_t c = n;
            for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
            smith_crc_table[0][n] = c;
        }
        for (uint32_t n = 0; n < 256; n++) {
            uint32_t c = smith_crc_table[0][n];
            for (int k = 1; k < 8; k++) {
                c = smith_crc_table[0][c & 0xff] ^ (c >> 8);
                smith_crc_table[k][n] = c;
            }
        }
    }

    static uint32_t smith_crc32c_sw(uint32_t crc, const uint8_t *p, size_t n) {
        while (n && ((uintptr_t)p & 7)) {
            crc = smith_crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
            n--;
        }
        while (n >= 8) {
            uint64_t v;
            memcpy(&v, p, 8);
            v ^= crc;
            crc = smith_crc_table[7][v & 0xff] ^ smith_crc_table[6][(v >> 8) & 0xff]
                ^ smith_crc_table[5][(v >> 16) & 0xff] ^ smith_crc_table[4][(v >> 24) & 0xff]
                ^ smith_crc_table[3][(v >> 32) & 0xff] ^ smith_crc_table[2][(v >> 40) & 0xff]
                ^ smith_crc_table[1][(v >> 48) & 0xff] ^ smith_crc_table[0][v >> 56];
            p += 8;
            n -= 8;
        }
        while (n--) crc = smith_crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
        return crc;
    }

    #if (defined(__x86_64__)) && (defined(__GNUC__) || defined(__clang__))
    #include <nmmintrin.h>
    __attribute__((target("sse4.2")))
    static uint32_t smith_crc32c_hw(uint32_t crc, const uint8_t *p, size_t n) {
        uint64_t c = crc;
        while (n && ((uintptr_t)p & 7)) { c = _mm_crc32_u8((uint32_t)c, *p++); n--; }
        while (n >= 32) {
            uint64_t v0, v1, v2, v3;
            memcpy(&v0, p, 8); memcpy(&v1, p + 8, 8); memcpy(&v2, p + 16, 8); memcpy(&v3, p + 24, 8);
            c = _mm_crc32_u64(c, v0); c = _mm_crc32_u64(c, v1);
            c = _mm_crc32_u64(c, v2); c = _mm_crc32_u64(c, v3);
            p += 32; n -= 32;
        }
        while (n >= 8) { uint64_t v; memcpy(&v, p, 8); c = _mm_crc32_u64(c, v); p += 8; n -= 8; }
        while (n--) c = _mm_crc32_u8((uint32_t)c, *p++);
        return (uint32_t)c;
    }
    static int smith_cpu_has_crc(void) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("sse4.2");
    }
    #else
    static uint32_t smith_crc32c_hw(uint32_t crc, const uint8_t *p, size_t n) {
        return smith_crc32c_sw(crc, p, n);
    }
    static int smith_cpu_has_crc(void) { return 0; }
    #endif

    static int smith_use_hw = 0;

    /* Raw register update: callers pass ~crc in and take ~crc out. */
    static uint32_t smith_crc32c_update(uint32_t crc, const uint8_t *p, size_t n) {
        return smith_use_hw ? smith_crc32c_hw(crc, p, n) : smith_crc32c_sw(crc, p, n);
    }

    /* Shifting a CRC register through n zero bytes is multiplying it by x^(8n) modulo
       the polynomial (zlib's crc32_combine, with the Castagnoli polynomial). */
    static uint32_t smith_x2n[32];

    static uint32_t smith_multmodp(uint32_t a, uint32_t b) {
        uint32_t m = (uint32_t)1 << 31, p = 0;
        for (;;) {
            if (a & m) {
                p ^= b;
                if ((a & (m - 1)) == 0) break;
            }
            m >>= 1;
            b = b & 1 ? (b >> 1) ^ 0x82F63B78u : b >> 1;
        }
        return p;
    }

    static uint32_t smith_crc_shift(uint32_t reg, uint64_t n) {
        uint32_t p = (uint32_t)1 << 31;  /* x^0 */
        unsigned k = 3;                  /* x^(8n): n counts bytes */
        while (n) {
            if (n & 1) p = smith_multmodp(smith_x2n[k & 31], p);
            n >>= 1;
            k++;
        }
        return smith_multmodp(p, reg);
    }

    static void smith_crc_setup(void) {
        smith_crc_init_table();
        smith_use_hw = smith_cpu_has_crc();
        uint32_t p = (uint32_t)1 << 30;  /* x^1 */
        smith_x2n[0] = p;
        for (int n = 1; n < 32; n++) smith_x2n[n] = p = smith_multmodp(p, p);
    }

    static const uint8_t smith_magic[8] = {0x89, 'S', 'M', 'I', 'T', 'H', 'S', 0x0a};

    static uint32_t smith_le32(const uint8_t *p) {
        return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
    }
    static uint16_t smith_le16(const uint8_t *p) {
        return (uint16_t)(p[0] | (p[1] << 8));
    }
    static void smith_put32(uint8_t *p, uint32_t v) {
        p[0] = v & 0xff; p[1] = (v >> 8) & 0xff; p[2] = (v >> 16) & 0xff; p[3] = v >> 24;
    }
    static void smith_put16(uint8_t *p, uint16_t v) {
        p[0] = v & 0xff; p[1] = v >> 8;
    }
    """
    void smith_crc_setup()
    uint32_t smith_crc32c_update(uint32_t crc, const uint8_t *p, size_t n) nogil
    uint32_t smith_crc32c_sw(uint32_t crc, const uint8_t *p, size_t n) nogil
    uint32_t smith_crc32c_hw(uint32_t crc, const uint8_t *p, size_t n) nogil
    uint32_t smith_crc_shift(uint32_t reg, uint64_t n) nogil
    int smith_use_hw
    uint32_t smith_le32(const uint8_t *p) nogil
    uint16_t smith_le16(const uint8_t *p) nogil
    void smith_put32(uint8_t *p, uint32_t v) nogil
    void smith_put16(uint8_t *p, uint16_t v) nogil
    const uint8_t smith_magic[8]

smith_crc_setup()

MAGIC = b"\x89SMITHS\n"
FORMAT_VERSION = 1
HEADER_SIZE = FILE_HEADER_SIZE
FRAME_OVERHEAD = FRAME_HEADER_SIZE
FLAG_COMPRESSED = 1
MAX_BODY = 64 * 1024 * 1024
hardware_crc: bool = smith_use_hw != 0


cdef uint32_t crc32c_update(uint32_t crc, const uint8_t *data, size_t n) noexcept nogil:
    return smith_crc32c_update(crc, data, n)


def crc32c(data, uint32_t crc=0, *, bint software=False) -> int:
    """CRC32C of `data` (any buffer), continuing from `crc`."""
    cdef Py_buffer view
    cdef uint32_t reg
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        reg = ~crc
        if software:
            reg = smith_crc32c_sw(reg, <const uint8_t *>view.buf, <size_t>view.len)
        else:
            reg = smith_crc32c_update(reg, <const uint8_t *>view.buf, <size_t>view.len)
        return ~reg
    finally:
        PyBuffer_Release(&view)


def file_header(uint32_t version=FORMAT_VERSION) -> bytes:
    cdef bytes out = PyBytes_FromStringAndSize(NULL, FILE_HEADER_SIZE)
    cdef uint8_t *p = <uint8_t *>PyBytes_AS_STRING(out)
    memcpy(p, smith_magic, 8)
    smith_put32(p + 8, version)
    smith_put32(p + 12, ~smith_crc32c_update(0xFFFFFFFFu, p, 12))
    return out


def read_file_header(data) -> int:
    """The format version of a file starting with `data`; ValueError if not a session file."""
    cdef Py_buffer view
    cdef const uint8_t *p
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        p = <const uint8_t *>view.buf
        if view.len < FILE_HEADER_SIZE or memcmp_magic(p) != 0:
            raise ValueError("not a smith session file (no session file header)")
        if smith_le32(p + 12) != ~smith_crc32c_update(0xFFFFFFFFu, p, 12):
            raise ValueError("the session file header is damaged (checksum mismatch)")
        return smith_le32(p + 8)
    finally:
        PyBuffer_Release(&view)


cdef inline int errno_value() noexcept:
    return errno


cdef int memcmp_magic(const uint8_t *p) noexcept:
    cdef int i
    for i in range(8):
        if p[i] != smith_magic[i]:
            return 1
    return 0


def encode_frame(unsigned int type, unsigned int flags, body) -> bytes:
    """One frame: header and body. The body must not be empty."""
    cdef Py_buffer view
    cdef bytes out
    cdef uint8_t *p
    if type > 0xFFFF or flags > 0xFFFF:
        raise ValueError("frame type and flags are 16-bit")
    PyObject_GetBuffer(body, &view, PyBUF_SIMPLE)
    try:
        if view.len == 0:
            raise ValueError("a frame body cannot be empty")
        if <uint64_t>view.len > MAX_BODY:
            raise ValueError(f"a frame body of {view.len} bytes exceeds the {MAX_BODY}-byte bound")
        out = PyBytes_FromStringAndSize(NULL, FRAME_HEADER_SIZE + view.len)
        p = <uint8_t *>PyBytes_AS_STRING(out)
        smith_put32(p, <uint32_t>view.len)
        smith_put16(p + 4, <uint16_t>type)
        smith_put16(p + 6, <uint16_t>flags)
        smith_put32(p + 8, ~smith_crc32c_update(0xFFFFFFFFu, <const uint8_t *>view.buf,
                                                 <size_t>view.len))
        smith_put32(p + 12, ~smith_crc32c_update(0xFFFFFFFFu, p, 12))
        memcpy(p + FRAME_HEADER_SIZE, view.buf, view.len)
        return out
    finally:
        PyBuffer_Release(&view)


cdef inline bint header_ok(const uint8_t *p) noexcept nogil:
    return smith_le32(p + 12) == ~smith_crc32c_update(0xFFFFFFFFu, p, 12)


cdef inline uint64_t load64(const uint8_t *p) noexcept nogil:
    cdef uint64_t v
    memcpy(&v, p, 8)
    return v


cdef enum:
    PREFIX_STRIDE = 128       # bytes between the CRC registers a scan's index keeps
    COMBINE_COST = 256        # checksum work a combine counts as (it is a few hundred ops)


cdef uint32_t *build_prefix(const uint8_t *buf, uint64_t n) noexcept nogil:
    """The CRC register after each multiple of PREFIX_STRIDE bytes of buf (n/32 bytes)."""
    cdef uint64_t j, count = n // PREFIX_STRIDE + 1
    cdef uint32_t *prefix = <uint32_t *>PyMem_RawMalloc(count * sizeof(uint32_t))
    if prefix == NULL:
        return NULL
    prefix[0] = 0xFFFFFFFFu
    for j in range(1, count):
        prefix[j] = smith_crc32c_update(prefix[j - 1], buf + (j - 1) * PREFIX_STRIDE,
                                        PREFIX_STRIDE)
    return prefix


cdef inline uint32_t register_at(Search *s, uint64_t x) noexcept nogil:
    cdef uint64_t j = x // PREFIX_STRIDE
    return smith_crc32c_update(s.prefix[j], s.buf + j * PREFIX_STRIDE, x - j * PREFIX_STRIDE)


cdef int body_matches(const uint8_t *buf, uint64_t start, uint32_t length, uint32_t want,
                      Search *s) noexcept nogil:
    """1 if the CRC32C of buf[start:start+length] is `want`, 0 if not, -1 when checking
    would spend more than the budget left. With the scan's index a body of any length
    costs two partial strides and a combine: the CRC of a stretch is the register at its
    end xor the register at its start shifted through its length (zlib's crc32_combine),
    so bait headers that each claim the rest of a file cost a constant each."""
    cdef uint64_t cost = length
    cdef uint32_t reg
    if s.indexed and s.prefix == NULL and length > 2 * PREFIX_STRIDE and s.buf == buf:
        s.prefix = build_prefix(s.buf, s.n)
        s.indexed = s.prefix != NULL
    if s.prefix != NULL and length > 2 * PREFIX_STRIDE and s.buf == buf:
        cost = 2 * PREFIX_STRIDE + COMBINE_COST
    if cost > s.budget:
        return -1
    s.budget -= cost
    if cost == length:
        reg = smith_crc32c_update(0xFFFFFFFFu, buf + start, length)
    else:
        reg = register_at(s, start + length) ^ smith_crc_shift(
            register_at(s, start) ^ 0xFFFFFFFFu, length)
    return ~reg == want


cdef int64_t find_frame(const uint8_t *buf, uint64_t n, uint64_t pos, uint64_t stop,
                        uint32_t max_body, Search *search,
                        bint check_entries=False) noexcept nogil:
    """The offset of the first whole, intact frame starting in [pos, stop) (it may end
    anywhere up to `n`); -1 if there is none; -2 if checking candidate bodies would spend
    more than the search's budget (NULL: a few passes over the rest of the buffer), so
    crafted input cannot make a search, or a scan's many searches, quadratic: undecided.
    With `check_entries`, an entry frame counts only if its header parses.

    Zero runs (a zero-filled or sparse tail) are skipped a word at a time: a header whose
    length field is zero is never a frame."""
    cdef Search local
    cdef uint64_t at = pos, z
    cdef uint32_t body_len
    cdef int matches
    cdef Record rec
    cdef uint32_t parent_off
    cdef uint16_t parent_len
    if search == NULL:
        local.budget = 4 * (n - pos if n > pos else 0) + (1 << 20)
        local.prefix = NULL
        local.indexed = False
        local.buf = buf
        local.n = n
        search = &local
    if stop > n:
        stop = n
    while at < stop and at + FRAME_HEADER_SIZE <= n:
        body_len = smith_le32(buf + at)
        if body_len == 0:
            z = at
            while z + 8 <= n and load64(buf + z) == 0:
                z += 8
            at = z - 3 if z - at >= 8 else at + 1
            continue
        if body_len > max_body or body_len > n - at - FRAME_HEADER_SIZE or not header_ok(buf + at):
            at += 1
            continue
        matches = body_matches(buf, at + FRAME_HEADER_SIZE, body_len, smith_le32(buf + at + 8),
                               search)
        if matches < 0:
            return -2
        if matches and (not check_entries or smith_le16(buf + at + 4) != TYPE_ENTRY or
                        parse_entry(buf + at + FRAME_HEADER_SIZE, body_len, &rec, &parent_off,
                                    &parent_len) == 0):
            return <int64_t>at
        at += 1
    return -1


cdef inline int torn_or_damaged(const uint8_t *buf, uint64_t n, uint64_t pos,
                                uint32_t max_body, Search *search) noexcept nogil:
    """What the bad frame at `pos` is: a torn tail (FRAME_TRUNCATED) when no intact frame
    starts after it, else damage (FRAME_DAMAGED) that a cut would make worse."""
    cdef int64_t found = find_frame(buf, n, pos + 1, n, max_body, search)
    if search != NULL:
        search.found = found
    return FRAME_TRUNCATED if found == -1 else FRAME_DAMAGED


cdef int next_frame(const uint8_t *buf, uint64_t n, uint64_t pos, uint32_t max_body,
                    bint verify_body, FrameInfo *info, bint final=True,
                    Search *search=NULL) noexcept nogil:
    """Classify the bytes at `pos`, filling `info` when the header is intact.

    `n` is how much of the file is in `buf`; unless `final` (all of it is), anything that
    could change with more bytes answers FRAME_MORE. A header that cannot be trusted, or
    an intact one whose body runs past the end, is a torn tail (FRAME_TRUNCATED) only
    when no intact frame starts after it: otherwise cutting there would lose frames
    (FRAME_DAMAGED). `search` bounds that search (see find_frame) and keeps what it found.
    """
    cdef const uint8_t *p = buf + pos
    cdef uint32_t body_len
    if n - pos < FRAME_HEADER_SIZE:
        return FRAME_TRUNCATED if final else FRAME_MORE
    if not header_ok(p) or smith_le32(p) == 0:
        if not final:
            return FRAME_MORE
        # Torn writes and zero-filled extensions leave no intact frame behind them;
        # anything else means frames we cannot reach safely.
        return torn_or_damaged(buf, n, pos, max_body, search)
    body_len = smith_le32(p)
    info.offset = pos
    info.body_len = body_len
    info.type = smith_le16(p + 4)
    info.flags = smith_le16(p + 6)
    if body_len > max_body:
        return FRAME_TOO_LARGE
    if body_len > n - pos - FRAME_HEADER_SIZE:
        if not final:
            return FRAME_MORE
        # A torn append, or a length that is wrong (its header intact by chance or by
        # craft) with whole frames after it, which a cut would delete.
        return torn_or_damaged(buf, n, pos, max_body, search)
    if verify_body and smith_le32(p + 8) != ~smith_crc32c_update(
            0xFFFFFFFFu, p + FRAME_HEADER_SIZE, body_len):
        return FRAME_CORRUPT
    return FRAME_OK


STATUS_NAMES = {
    FRAME_CORRUPT: "corrupt",
    FRAME_TRUNCATED: "truncated",
    FRAME_DAMAGED: "damaged",
    FRAME_TOO_LARGE: "too-large",
}


class Scan:
    """What a scan found: the intact frames and how the rest was handled.

    `frames`      [(offset, type, flags, body_length)] of intact frames, in file order
    `skipped`     [(offset, body_length)] of frames skipped for a corrupt body
    `resynced`    [(from_offset, to_offset)] damaged stretches jumped over (resync only)
    `end`         offset just past the last intact or skipped frame
    `truncated`   bytes after `end` ignored as a torn or zero-filled tail
    `error`       None, or (status name, offset) where reading had to stop
    `work`        bytes checksummed while searching for intact frames after damage
    """

    __slots__ = ("end", "error", "frames", "resynced", "skipped", "truncated", "work")

    def __init__(self):
        self.frames = []
        self.skipped = []
        self.resynced = []
        self.end = FILE_HEADER_SIZE
        self.truncated = 0
        self.error = None
        self.work = 0


def scan(data, *, uint64_t start=FILE_HEADER_SIZE, uint32_t max_body=MAX_BODY,
         Py_ssize_t max_skips=16, bint resync=False, bint check_entries=False) -> Scan:
    """Walk the frames of `data` (a whole session file as a buffer).

    Corrupt bodies behind intact headers are skipped up to `max_skips` (then the scan
    stops with an error); corrupt frames with nothing intact after them, or inside them,
    are a torn tail, not skips. With `resync`, a damaged header is jumped over to the
    next intact frame (frames found that way may come from inside a damaged frame's
    content: repair offers it only on request); without it the scan stops there with a
    "damaged" error. With `check_entries`, an entry frame whose header does not parse
    (as the arena reads it) counts as corrupt. The searches of one scan share one work
    budget of a few passes over the buffer, so crafted input keeps it linear.
    """
    cdef Py_buffer view
    cdef FrameInfo info
    cdef int status
    cdef uint64_t pos, n
    cdef int64_t found
    cdef Search search
    cdef Record rec
    cdef uint32_t parent_off
    cdef uint16_t parent_len
    cdef list pending = []  # corrupt frames since the last intact one
    result = Scan()
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    search.prefix = NULL
    try:
        n = <uint64_t>view.len
        # With the index a candidate body costs a constant, so this is a generous bound
        # that only a buffer packed with crafted headers reaches (then: undecided).
        search.budget = 64 * n + (1 << 20)
        search.buf = <const uint8_t *>view.buf
        search.n = n
        search.indexed = True
        search.found = -1
        pos = start
        result.end = min(start, n)
        while True:
            status = FRAME_TRUNCATED
            while pos < n:
                search.found = -1
                status = next_frame(<const uint8_t *>view.buf, n, pos, max_body, True, &info,
                                    True, &search)
                if status == FRAME_OK and check_entries and info.type == TYPE_ENTRY and \
                        parse_entry(<const uint8_t *>view.buf + pos + FRAME_HEADER_SIZE,
                                    info.body_len, &rec, &parent_off, &parent_len) != 0:
                    status = FRAME_CORRUPT
                if status == FRAME_OK:
                    result.skipped.extend(pending)
                    pending.clear()
                    result.frames.append((info.offset, info.type, info.flags, info.body_len))
                    pos += FRAME_HEADER_SIZE + info.body_len
                    result.end = pos
                elif status == FRAME_CORRUPT:
                    if len(result.skipped) + len(pending) >= max_skips:
                        result.skipped.extend(pending)
                        pending.clear()
                        result.error = ("too-many-corrupt", pos)
                        break
                    pending.append((pos, info.body_len))
                    pos += FRAME_HEADER_SIZE + info.body_len
                elif status == FRAME_DAMAGED and resync:
                    found = search.found  # the first intact frame after pos, found already
                    if check_entries and found >= 0:
                        found = find_frame(<const uint8_t *>view.buf, n, <uint64_t>found, n,
                                           max_body, &search, True)
                    if found < 0:
                        result.error = ("damaged", pos)
                        break
                    result.skipped.extend(pending)
                    pending.clear()
                    result.resynced.append((pos, found))
                    pos = <uint64_t>found
                    result.end = pos
                elif status == FRAME_TRUNCATED:
                    break
                else:
                    result.skipped.extend(pending)
                    pending.clear()
                    result.error = (STATUS_NAMES[status], pos)
                    break
            if result.error is not None or not pending:
                break
            # Corrupt frames end the file: their lengths were trusted, so an intact frame
            # could start inside one of them. Only if none does are they a torn tail.
            found = find_frame(<const uint8_t *>view.buf, n, result.end, pos, max_body,
                               &search, check_entries)
            if found == -1:
                break
            if found >= 0 and resync:
                pending.clear()
                result.resynced.append((result.end, found))
                pos = <uint64_t>found
                result.end = pos
                continue
            result.skipped.extend(pending)
            pending.clear()
            result.error = ("damaged", result.end)
            break
        if result.error is None:
            # Whatever follows the last intact frame (torn or corrupt) is the tail.
            result.truncated = n - result.end
        result.work = 64 * n + (1 << 20) - search.budget
        return result
    finally:
        PyMem_RawFree(search.prefix)
        PyBuffer_Release(&view)


def data_extents(int fd, uint64_t start, uint64_t end):
    """The stretches [from, to) of [start, end) of the open file `fd` that hold data, in
    order, leaving out holes (a sparse file's unwritten stretches, which read as zeros);
    the whole range where the system cannot tell. Work follows the stretches, never the
    size the file claims. Moves fd's offset: read with pread."""
    import errno
    import os

    seek_data = getattr(os, "SEEK_DATA", None)
    at = start
    while at < end:
        if seek_data is None:
            yield (at, end)
            return
        try:
            data = os.lseek(fd, at, seek_data)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # nothing but a hole from here on
                return
            yield (at, end)  # a file system without hole reporting
            return
        if data >= end:
            return
        hole = min(os.lseek(fd, data, os.SEEK_HOLE), end)
        yield (data, hole)
        at = hole


def layout(int fd, uint64_t size):
    """(where the last data ends, bytes of data) of a file with holes, or None when it
    has none: what to read of a sparse file instead of its claimed size."""
    cdef uint64_t last = 0, total = 0
    for start, stop in data_extents(fd, 0, size):
        if start == 0 and stop == size:
            return None
        last = stop
        total += stop - start
    return (last, total)


def readable_length(int fd, uint64_t size, uint32_t max_body=MAX_BODY):
    """(how much of a file of `size` bytes to hold to read every frame it can have, the
    bytes of data in it or None when it has no holes). Past its last data a sparse file
    is zeros, where no frame starts; a frame that starts before can still run into them."""
    found = layout(fd, size)
    if found is None:
        return size, None
    return min(size, found[0] + FRAME_HEADER_SIZE + max_body), found[1]


def read_into(int fd, buf, uint64_t start, uint64_t end, uint64_t dest=0):
    """Read [start, end) of `fd` into the writable buffer `buf` at `dest` (pread, so the
    file offset does not matter); fewer bytes only at the end of the file. Returns the
    bytes read. Holes are read as data: callers skip them with data_extents."""
    cdef Py_buffer view
    cdef Py_ssize_t got
    cdef uint64_t at = start
    import os
    PyObject_GetBuffer(buf, &view, PyBUF_WRITABLE)
    try:
        if dest + (end - start) > <uint64_t>view.len:
            raise ValueError("read_into: the buffer is too small")
        while at < end:
            with nogil:
                got = pread(fd, <char *>view.buf + dest + (at - start), end - at, at)
            if got < 0:
                err = errno_value()
                if err == EINTR:
                    continue
                raise OSError(err, os.strerror(err))
            if got == 0:
                break
            at += <uint64_t>got
        return at - start
    finally:
        PyBuffer_Release(&view)
