# cython: language_level=3
"""CBOR decoder for smith's value model (RFC 8949); see smith._fast._cbor.

`decode` reads any well-formed item of the model and, with `strict=True`, only the
canonical encoding of one, raising DecodeError, naming the offset, for malformed or
non-canonical input or input over a bound.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF, PyObject, Py_XDECREF
from libc.math cimport INFINITY, NAN, ldexp
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy

from smith._fast._cbor_common cimport MAX_DEPTH, float_form

cdef extern from "Python.h":
    void* PyUnicode_DATA(PyObject*) nogil
    Py_ssize_t PyUnicode_GET_LENGTH(PyObject*) nogil


class DecodeError(ValueError):
    """Input that is not (canonical, when strict) CBOR of the value model, or over a bound."""

    __module__ = "smith._fast._cbor"  # where it is public

    def __init__(self, offset, reason):
        ValueError.__init__(self, f"offset {offset}: {reason}")
        self.offset = offset
        self.reason = reason


cdef enum:
    DEPTH_CEILING = 1000     # decode recurses in C (~0.5 KB a level): max_depth stops here
    KEYS = 1024              # decoded short keys kept for reuse (a power of two)
    MAX_ITEMS = 1 << 20      # decode's default item bound: ~70 MB of Python objects at most


cdef inline double half_value(uint32_t h) noexcept nogil:
    cdef int exp = (h >> 10) & 0x1f
    cdef double v
    if exp == 0:
        v = ldexp(<double>(h & 0x3ff), -24)
    elif exp != 31:
        v = ldexp(<double>((h & 0x3ff) | 0x400), exp - 25)
    else:
        v = INFINITY if (h & 0x3ff) == 0 else NAN
    return -v if h & 0x8000 else v


cdef struct Dec:
    const unsigned char* data
    Py_ssize_t pos
    Py_ssize_t end
    Py_ssize_t max_length
    Py_ssize_t max_depth
    Py_ssize_t text_at      # where the text being decoded starts (for UTF-8 errors)
    Py_ssize_t items_left   # of max_items: every value, array member, map key and value
    Py_ssize_t max_items
    bint strict


cdef int items_error(Dec* d, Py_ssize_t start) except -1:
    raise DecodeError(start, f"over max_items: more than {d.max_items} items to decode "
                             "(each value counts: array members, map keys and values)")


cdef inline int take_items(Dec* d, Py_ssize_t start, uint64_t n) except -1:
    """Spend `n` of the item budget: one byte of CBOR can decode to a 56-byte object, so
    bytes alone do not bound what decoding holds (zstd makes it worse)."""
    if n > <uint64_t>d.items_left:
        return items_error(d, start)
    d.items_left -= <Py_ssize_t>n
    return 0


cdef uint64_t[4] SHORTEST = [24, 0x100, 0x10000, 0x100000000]
# Map keys repeat across entries: short ASCII ones are made once and reused (with their
# hash already computed), a slot per hash of their bytes.
cdef PyObject* _keys[KEYS]


cdef object short_key(const unsigned char* p, Py_ssize_t n):
    """The str of a short key's bytes, or None when they are not all ASCII."""
    cdef size_t h = <size_t>n
    cdef unsigned char seen = 0
    cdef Py_ssize_t i
    for i in range(n):
        h = (h ^ p[i]) * 0x100000001b3ULL
        seen |= p[i]
    if seen & 0x80:
        return None
    cdef PyObject** slot = &_keys[(h ^ (h >> 32)) & (KEYS - 1)]
    if slot[0] != NULL and PyUnicode_GET_LENGTH(slot[0]) == n and (
            memcmp(PyUnicode_DATA(slot[0]), p, n) == 0):
        return <object>slot[0]
    key = (<const char*>p)[:n].decode("ascii")
    Py_XDECREF(slot[0])
    Py_INCREF(key)
    slot[0] = <PyObject*>key
    return key


cdef int read_head(Dec* d, int* major, int* info, uint64_t* arg) except -1:
    cdef Py_ssize_t start = d.pos, n, i
    cdef uint64_t v
    if d.pos >= d.end:
        raise DecodeError(start, "unexpected end of input")
    cdef unsigned char b = d.data[d.pos]
    d.pos += 1
    major[0] = b >> 5
    info[0] = b & 31
    if info[0] < 24:
        arg[0] = info[0]
    elif info[0] <= 27:
        n = 1 << (info[0] - 24)
        if d.end - d.pos < n:
            raise DecodeError(start, f"unexpected end of input inside a {n + 1}-byte head")
        v = 0
        for i in range(n):
            v = (v << 8) | d.data[d.pos + i]
        d.pos += n
        if d.strict and major[0] != 7 and v < SHORTEST[info[0] - 24]:
            raise DecodeError(start, f"non-canonical: {v} written with a {n + 1}-byte head")
        arg[0] = v
    elif info[0] == 31:
        if major[0] in (0, 1, 6):
            raise DecodeError(start, f"malformed: indefinite length on major type {major[0]}")
        if d.strict and major[0] != 7:
            raise DecodeError(start, "non-canonical: indefinite-length item")
        arg[0] = 0
    else:
        raise DecodeError(start, f"malformed: reserved additional information {info[0]}")
    return 0


cdef inline int check_length(Dec* d, Py_ssize_t start, uint64_t n, int shift) except -1:
    """A declared length (bytes, or items of 1 << shift bytes at least) fits the input left
    and the bound."""
    if n > <uint64_t>d.max_length or n > (<uint64_t>(d.end - d.pos) >> shift):
        return length_error(d, start, n)
    return 0


cdef int length_error(Dec* d, Py_ssize_t start, uint64_t n) except -1:
    if n > <uint64_t>d.max_length:
        raise DecodeError(start, f"declared length {n} is over max_length {d.max_length}")
    raise DecodeError(start, f"declared length {n} is more than the input has left "
                             f"({d.end - d.pos} bytes)")


cdef object dec_string(Dec* d, Py_ssize_t start, int major, int info, uint64_t n):
    cdef const char* p
    if info == 31:
        return dec_chunks(d, start, major)
    check_length(d, start, n, 0)
    p = <const char*>(d.data + d.pos)
    d.pos += <Py_ssize_t>n
    if major == 2:
        return PyBytes_FromStringAndSize(p, <Py_ssize_t>n)
    d.text_at = d.pos - <Py_ssize_t>n
    return p[:<Py_ssize_t>n].decode("utf-8")


cdef object dec_chunks(Dec* d, Py_ssize_t start, int major):
    cdef int cmajor, cinfo
    cdef uint64_t n
    cdef Py_ssize_t cstart, total = 0
    chunks = []
    while True:
        if d.pos < d.end and d.data[d.pos] == 0xff:
            d.pos += 1
            break
        cstart = d.pos
        read_head(d, &cmajor, &cinfo, &n)
        if cmajor != major or cinfo == 31:
            raise DecodeError(cstart, "malformed: an indefinite-length string chunk must be a "
                                      "definite-length string of the same type")
        if n > <uint64_t>(d.max_length - total):
            raise DecodeError(cstart, f"indefinite-length string is over max_length "
                                      f"{d.max_length}")
        chunks.append(dec_string(d, cstart, major, cinfo, n))
        total += <Py_ssize_t>n
    return (b"" if major == 2 else "").join(chunks)


cdef object dec_array(Dec* d, Py_ssize_t start, int info, uint64_t n, Py_ssize_t depth):
    cdef Py_ssize_t i
    if info == 31:
        result = []
        while not (d.pos < d.end and d.data[d.pos] == 0xff):
            if len(result) >= d.max_length:
                raise DecodeError(start, f"indefinite-length array is over max_length "
                                         f"{d.max_length}")
            result.append(dec_item(d, depth + 1))
        d.pos += 1
        return result
    check_length(d, start, n, 0)
    if n > <uint64_t>d.items_left:  # each member is an item: refuse before allocating
        items_error(d, start)
    result = PyList_New(<Py_ssize_t>n)
    for i in range(<Py_ssize_t>n):
        item = dec_item(d, depth + 1)
        Py_INCREF(item)
        PyList_SET_ITEM(result, i, item)
    return result


cdef object dec_map(Dec* d, Py_ssize_t start, int info, uint64_t n, Py_ssize_t depth):
    cdef Py_ssize_t i = 0, key_at, prev_at = -1, prev_len = 0, key_len, size, n_key = 0
    cdef bint indefinite = info == 31
    cdef int order
    if not indefinite:
        check_length(d, start, n, 1)
        if n > <uint64_t>d.items_left // 2:  # a key and a value each
            items_error(d, start)
    result = {}
    while (i < <Py_ssize_t>n) if not indefinite else not (
            d.pos < d.end and d.data[d.pos] == 0xff):
        if indefinite and i >= d.max_length:
            raise DecodeError(start, f"indefinite-length map is over max_length {d.max_length}")
        key_at = d.pos
        if key_at < d.end and d.data[key_at] >> 5 != 3:
            raise DecodeError(key_at, "map key is not a text string (smith's maps have text "
                                      "keys)")
        key = None
        if key_at < d.end and d.data[key_at] < 0x78:          # text shorter than 24 bytes
            n_key = d.data[key_at] & 31
            if n_key < d.end - key_at:
                key = short_key(d.data + key_at + 1, n_key)
        if key is None:
            key = dec_item(d, depth + 1)
        else:
            take_items(d, key_at, 1)
            d.pos = key_at + 1 + n_key
        key_len = d.pos - key_at
        if d.strict and prev_at >= 0:
            order = memcmp(d.data + prev_at, d.data + key_at, min(prev_len, key_len))
            if order > 0 or (order == 0 and prev_len > key_len):
                raise DecodeError(key_at, f"non-canonical: map key {key!r} is out of order")
        prev_at, prev_len = key_at, key_len
        size = len(result)
        result[key] = dec_item(d, depth + 1)
        if len(result) == size:
            raise DecodeError(key_at, f"duplicate map key {key!r}")
        i += 1
    if indefinite:
        d.pos += 1
    return result


cdef object dec_bignum(Dec* d, Py_ssize_t start, uint64_t tag, Py_ssize_t depth):
    cdef Py_ssize_t at = d.pos
    if at < d.end and d.data[at] >> 5 != 2:
        raise DecodeError(at, f"malformed: tag {tag} (bignum) must enclose a byte string")
    content = dec_item(d, depth)
    if d.strict and (len(content) <= 8 or content[0] == 0):
        raise DecodeError(start, "non-canonical: bignum " + (
            "with leading zero bytes" if len(content) > 8 else "that fits in 64 bits"))
    value = int.from_bytes(content, "big")
    return value if tag == 2 else -1 - value


cdef object dec_simple(Dec* d, Py_ssize_t start, int info, uint64_t arg):
    cdef uint64_t bits
    cdef uint32_t single
    cdef float f
    cdef double x
    cdef int width
    if info == 20:
        return False
    if info == 21:
        return True
    if info == 22:
        return None
    if info == 25:
        x = half_value(<uint32_t>arg)
        if d.strict and x != x and arg != 0x7e00:
            raise DecodeError(start, "non-canonical: NaN must be written f97e00")
        return x
    if info == 26:
        single = <uint32_t>arg
        memcpy(&f, &single, 4)
        x = f
    elif info == 27:
        memcpy(&x, &arg, 8)
    elif info == 31:
        raise DecodeError(start, "malformed: break (0xff) outside an indefinite-length item")
    elif info == 23:
        raise DecodeError(start, "undefined is outside smith's value model")
    else:
        raise DecodeError(start, f"simple value {arg if info == 24 else info} is outside "
                                 "smith's value model")
    if d.strict:
        width = float_form(x, &bits)
        if width != (4 if info == 26 else 8):
            raise DecodeError(start, f"non-canonical: float {x!r} has a {width}-byte form")
    return x


cdef object dec_item(Dec* d, Py_ssize_t depth):
    cdef Py_ssize_t start = d.pos
    cdef int major, info
    cdef uint64_t arg
    take_items(d, start, 1)
    read_head(d, &major, &info, &arg)
    if major == 0:
        return arg
    if major == 1:
        return -1 - <int64_t>arg if arg < 0x8000000000000000 else -1 - <object>arg
    if major == 2 or major == 3:
        return dec_string(d, start, major, info, arg)
    if major == 7:
        return dec_simple(d, start, info, arg)
    if major == 6:
        if arg != 2 and arg != 3:
            raise DecodeError(start, f"tag {arg} is outside smith's value model (only bignum "
                                     "tags 2 and 3)")
        return dec_bignum(d, start, arg, depth)
    if depth >= d.max_depth:
        raise DecodeError(start, f"nested deeper than {d.max_depth} arrays and maps")
    if major == 4:
        return dec_array(d, start, info, arg, depth)
    return dec_map(d, start, info, arg, depth)


def decode(data, *, bint strict=False, Py_ssize_t max_length=64 * 1024 * 1024,
           Py_ssize_t max_depth=MAX_DEPTH, Py_ssize_t max_items=MAX_ITEMS):
    """The value of one CBOR item filling `data` (any contiguous buffer).

    Declared lengths (bytes, or items) are checked against the input left and max_length
    before anything is allocated; arrays and maps nest at most max_depth deep; at most
    max_items items are decoded (every value counts, array members and map keys and
    values too), since an item of one byte becomes an object of 50 or more. strict=True
    accepts only the canonical encoding, exactly what `encode` writes.
    """
    if max_length < 0:
        raise ValueError("max_length must not be negative")
    if max_items < 0:
        raise ValueError("max_items must not be negative")
    if not 0 <= max_depth <= DEPTH_CEILING:
        raise ValueError(f"max_depth must be between 0 and {DEPTH_CEILING}")
    cdef Py_buffer view
    cdef Dec d
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        d.data = <const unsigned char*>view.buf
        d.pos, d.end, d.text_at = 0, view.len, 0
        d.max_length, d.max_depth, d.strict = max_length, max_depth, strict
        d.items_left = d.max_items = max_items
        try:
            result = dec_item(&d, 0)
        except UnicodeDecodeError as exc:
            raise DecodeError(d.text_at + exc.start, f"invalid UTF-8 ({exc.reason})") from None
        if d.pos != d.end:
            raise DecodeError(d.pos, f"{d.end - d.pos} more byte(s) after the top-level item")
        return result
    finally:
        PyBuffer_Release(&view)
