from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t

cdef enum:
    FILE_HEADER_SIZE = 16
    FRAME_HEADER_SIZE = 16
    TYPE_ENTRY = 2        # the frame type of an entry (its body: _record.parse_entry)

# One frame as found by the scanner: where its body starts and what it is.
cdef struct FrameInfo:
    uint64_t offset      # offset of the frame header in the buffer
    uint32_t body_len
    uint16_t type
    uint16_t flags

cdef uint32_t crc32c_update(uint32_t crc, const uint8_t *data, size_t n) noexcept nogil

# What searches for intact frames may spend (see find_frame): one per scan, so that its
# many searches together stay linear in the buffer.
cdef struct Search:
    uint64_t budget           # bytes of checksum work left
    const uint8_t *buf        # the buffer `prefix` indexes
    uint64_t n
    uint32_t *prefix          # CRC registers every PREFIX_STRIDE bytes, built on first need
    bint indexed              # build `prefix` (a scan over the whole buffer) when worth it
    int64_t found             # what next_frame's search found (>= 0), for the caller

cdef enum FrameStatus:
    FRAME_OK = 0          # a whole, intact frame
    FRAME_CORRUPT = 1     # intact header, body checksum fails: skippable (length trusted)
    FRAME_TRUNCATED = 2   # a torn or zero-filled tail: nothing after this is a frame
    FRAME_DAMAGED = 3     # a damaged header, or a length past the end, with intact frames
                          # after it: ambiguous, never cut
    FRAME_TOO_LARGE = 4   # an intact header declaring a body above the bound
    FRAME_MORE = 5        # undecided until more of the file is read (final=False only)

cdef int next_frame(const uint8_t *buf, uint64_t n, uint64_t pos, uint32_t max_body,
                    bint verify_body, FrameInfo *info, bint final=*,
                    Search *search=*) noexcept nogil
cdef int64_t find_frame(const uint8_t *buf, uint64_t n, uint64_t pos, uint64_t stop,
                        uint32_t max_body, Search *search,
                        bint check_entries=*) noexcept nogil
