"""The fixed-size records of the session index and the parser that fills one from an
entry frame's body, without decoding the entry's content (see _arena.pyx)."""

from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t

cdef enum:
    NONE = -1
    MISSING_PARENT = -2
    NO_PARENT = 0xFFFF
    SHADOWED = 0x8000  # record flag: a repeated id, not reachable by id

cdef struct Record:
    uint64_t frame        # offset of the frame header in the arena
    uint64_t content      # offset of the content bytes
    int64_t ts
    int64_t parent        # record index, NONE for a root, MISSING_PARENT if unresolved
    uint32_t frame_len    # header + body
    uint32_t content_len
    uint32_t id_off       # relative to the frame's body
    uint32_t kind_off
    uint32_t pair_off     # 0 when the entry has no pairing id
    uint32_t parent_off   # where the parent id is, until links are resolved
    uint16_t parent_len   # NO_PARENT for a root
    uint16_t id_len
    uint16_t kind_len
    uint16_t pair_len
    uint16_t flags

cdef struct Meta:         # any frame that is not an entry: session info, leaf, unknown
    uint64_t frame
    uint32_t frame_len
    uint16_t type


cdef inline int read_head(const uint8_t *p, uint32_t n, uint32_t *pos, uint8_t *major,
                          uint64_t *value) noexcept nogil:
    """Read one definite CBOR head at *pos; 0 on success, -1 if malformed or truncated."""
    cdef uint8_t b, info
    cdef uint32_t need, i
    if pos[0] >= n:
        return -1
    b = p[pos[0]]
    major[0] = b >> 5
    info = b & 0x1f
    pos[0] += 1
    if info < 24:
        value[0] = info
        return 0
    if info > 27:
        return -1
    need = 1u << (info - 24)
    if n - pos[0] < need:
        return -1
    value[0] = 0
    for i in range(need):
        value[0] = (value[0] << 8) | p[pos[0] + i]
    pos[0] += need
    return 0


cdef inline int read_text(const uint8_t *p, uint32_t n, uint32_t *pos, bint nullable,
                          uint32_t *off, uint16_t *length) noexcept nogil:
    """A text string (or null when `nullable`): its offset and length within the body."""
    cdef uint8_t major
    cdef uint64_t value
    if nullable and pos[0] < n and p[pos[0]] == 0xf6:
        pos[0] += 1
        off[0] = 0
        length[0] = 0
        return 1
    if read_head(p, n, pos, &major, &value) < 0 or major != 3 or value >= 0xFFFF \
            or value > n - pos[0]:
        return -1
    off[0] = pos[0]
    length[0] = <uint16_t>value
    pos[0] += <uint32_t>value
    return 0


cdef inline int parse_entry(const uint8_t *body, uint32_t n, Record *r,
                     uint32_t *parent_off, uint16_t *parent_len) noexcept nogil:
    """Fill `r` from an entry body; -1 if the body is not a well-formed entry header."""
    cdef uint32_t pos = 0
    cdef uint8_t major
    cdef uint64_t value
    cdef int rc
    if n < 1 or body[0] != 0x86:
        return -1
    pos = 1
    if read_text(body, n, &pos, False, &r.id_off, &r.id_len) != 0 or r.id_len == 0:
        return -1
    rc = read_text(body, n, &pos, True, parent_off, parent_len)
    if rc < 0:
        return -1
    if rc == 1:
        parent_len[0] = NO_PARENT
    if read_head(body, n, &pos, &major, &value) < 0 or major != 0 or (value >> 63) != 0:
        return -1
    r.ts = <int64_t>value
    if read_text(body, n, &pos, False, &r.kind_off, &r.kind_len) != 0:
        return -1
    if read_text(body, n, &pos, True, &r.pair_off, &r.pair_len) < 0:
        return -1
    if read_head(body, n, &pos, &major, &value) < 0 or major != 2 or value != n - pos:
        return -1
    r.content = pos  # relative for now; made absolute by the caller
    r.content_len = <uint32_t>value
    return 0


