"""UTF-8 from a str's internal storage (1, 2 or 4 bytes a code point), for the CBOR
encoder: sizes, and transcoding straight into its buffer, with ASCII runs copied 16 code
points at a time (SSE2, part of x86-64) or a word at a time elsewhere."""

from libc.stdint cimport uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

cdef extern from "Python.h":
    uint32_t PyUnicode_READ(int, const void*, Py_ssize_t) nogil

cdef extern from *:
    """
    /* 16 code points at s copied to out when all are ASCII: 1 if copied, else 0. SSE2 is
       part of x86-64; elsewhere these always answer 0 and the word-at-a-time path runs. */
    #if defined(__SSE2__)
    #include <emmintrin.h>
    static inline int smith_ascii16_1(const unsigned char* s, unsigned char* out) {
        __m128i a = _mm_loadu_si128((const __m128i*)s);
        if (_mm_movemask_epi8(a)) return 0;
        _mm_storeu_si128((__m128i*)out, a);
        return 1;
    }
    static inline int smith_ascii16_2(const uint16_t* s, unsigned char* out) {
        __m128i a = _mm_loadu_si128((const __m128i*)s);
        __m128i b = _mm_loadu_si128((const __m128i*)(s + 8));
        __m128i high = _mm_and_si128(_mm_or_si128(a, b), _mm_set1_epi16((short)0xff80));
        if (_mm_movemask_epi8(_mm_cmpeq_epi16(high, _mm_setzero_si128())) != 0xffff) return 0;
        _mm_storeu_si128((__m128i*)out, _mm_packus_epi16(a, b));
        return 1;
    }
    static inline int smith_ascii16_4(const uint32_t* s, unsigned char* out) {
        __m128i a = _mm_loadu_si128((const __m128i*)s);
        __m128i b = _mm_loadu_si128((const __m128i*)(s + 4));
        __m128i c = _mm_loadu_si128((const __m128i*)(s + 8));
        __m128i d = _mm_loadu_si128((const __m128i*)(s + 12));
        __m128i any = _mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d));
        __m128i high = _mm_and_si128(any, _mm_set1_epi32((int)0xffffff80));
        if (_mm_movemask_epi8(_mm_cmpeq_epi32(high, _mm_setzero_si128())) != 0xffff) return 0;
        _mm_storeu_si128((__m128i*)out,
                         _mm_packus_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, d)));
        return 1;
    }
    #else
    #define smith_ascii16_1(s, out) 0
    #define smith_ascii16_2(s, out) 0
    #define smith_ascii16_4(s, out) 0
    #endif
    """
    int smith_ascii16_1(const unsigned char*, unsigned char*) noexcept nogil
    int smith_ascii16_2(const uint16_t*, unsigned char*) noexcept nogil
    int smith_ascii16_4(const uint32_t*, unsigned char*) noexcept nogil


cdef inline Py_ssize_t utf8_size(int kind, const void* data, Py_ssize_t n, Py_ssize_t* bad) noexcept:
    """UTF-8 length of a str's code points; -1 (and bad = index) at a lone surrogate."""
    cdef Py_ssize_t i, size = n
    cdef uint32_t c
    if kind == 1:
        for i in range(n):
            size += (<const unsigned char*>data)[i] >> 7
        return size
    for i in range(n):
        c = PyUnicode_READ(kind, data, i)
        if c >= 0x80:
            if c < 0x800:
                size += 1
            elif c < 0xd800 or 0xdfff < c < 0x10000:
                size += 2
            elif c >= 0x10000:
                size += 3
            else:
                bad[0] = i
                return -1
    return size


cdef inline unsigned char* put_code_point(unsigned char* out, uint32_t c) noexcept nogil:
    """c (not ASCII, not a surrogate) as UTF-8 at out; the end of what was written."""
    if c < 0x800:
        out[0] = <unsigned char>(0xc0 | (c >> 6))
        out[1] = <unsigned char>(0x80 | (c & 0x3f))
        return out + 2
    if c < 0x10000:
        out[0] = <unsigned char>(0xe0 | (c >> 12))
        out[1] = <unsigned char>(0x80 | ((c >> 6) & 0x3f))
        out[2] = <unsigned char>(0x80 | (c & 0x3f))
        return out + 3
    out[0] = <unsigned char>(0xf0 | (c >> 18))
    out[1] = <unsigned char>(0x80 | ((c >> 12) & 0x3f))
    out[2] = <unsigned char>(0x80 | ((c >> 6) & 0x3f))
    out[3] = <unsigned char>(0x80 | (c & 0x3f))
    return out + 4


cdef inline unsigned char* put_wide(unsigned char* out, uint32_t c) noexcept nogil:
    """One code point of a 2- or 4-byte str as UTF-8; NULL at a lone surrogate."""
    if c < 0x80:
        out[0] = <unsigned char>c
        return out + 1
    if 0xd800 <= c <= 0xdfff:
        return NULL
    return put_code_point(out, c)


cdef inline Py_ssize_t utf8_write(int kind, const void* data, Py_ssize_t n, unsigned char* out,
                           Py_ssize_t* bad) noexcept nogil:
    """Write n code points of a str's data as UTF-8 (out has room for the worst case); the
    bytes written, or -1 (and bad = index) at a lone surrogate. ASCII runs go 16 code points
    at a time with SSE2, else a word at a time: a word holds 8, 4 or 2 code points, and its
    lanes line up on either endianness."""
    cdef const unsigned char* s1 = <const unsigned char*>data
    cdef const uint16_t* s2 = <const uint16_t*>data
    cdef const uint32_t* s4 = <const uint32_t*>data
    cdef unsigned char* start = out
    cdef Py_ssize_t i = 0
    cdef uint64_t w, x
    cdef uint32_t c, lo, hi
    if kind == 1:
        while i < n:
            if i + 16 <= n and smith_ascii16_1(s1 + i, out):
                out += 16
                i += 16
                continue
            if i + 8 <= n:
                memcpy(&w, s1 + i, 8)
                if (w & 0x8080808080808080ULL) == 0:
                    memcpy(out, &w, 8)
                    out += 8
                    i += 8
                    continue
            c = s1[i]
            i += 1
            if c < 0x80:
                out[0] = <unsigned char>c
                out += 1
            else:
                out = put_code_point(out, c)
    elif kind == 2:
        while i < n:
            if i + 16 <= n and smith_ascii16_2(s2 + i, out):
                out += 16
                i += 16
                continue
            if i + 8 <= n:
                memcpy(&w, s2 + i, 8)
                memcpy(&x, s2 + i + 4, 8)
                if ((w | x) & 0xff80ff80ff80ff80ULL) == 0:
                    lo = <uint32_t>((w & 0xff) | ((w >> 8) & 0xff00) | ((w >> 16) & 0xff0000)
                                    | ((w >> 24) & 0xff000000U))
                    hi = <uint32_t>((x & 0xff) | ((x >> 8) & 0xff00) | ((x >> 16) & 0xff0000)
                                    | ((x >> 24) & 0xff000000U))
                    memcpy(out, &lo, 4)
                    memcpy(out + 4, &hi, 4)
                    out += 8
                    i += 8
                    continue
            out = put_wide(out, s2[i])
            if out == NULL:
                bad[0] = i
                return -1
            i += 1
    else:
        while i < n:
            if i + 16 <= n and smith_ascii16_4(s4 + i, out):
                out += 16
                i += 16
                continue
            if i + 4 <= n:
                memcpy(&w, s4 + i, 8)
                memcpy(&x, s4 + i + 2, 8)
                if ((w | x) & 0xffffff80ffffff80ULL) == 0:
                    out[0] = <unsigned char>s4[i]
                    out[1] = <unsigned char>s4[i + 1]
                    out[2] = <unsigned char>s4[i + 2]
                    out[3] = <unsigned char>s4[i + 3]
                    out += 4
                    i += 4
                    continue
            out = put_wide(out, s4[i])
            if out == NULL:
                bad[0] = i
                return -1
            i += 1
    return out - start
