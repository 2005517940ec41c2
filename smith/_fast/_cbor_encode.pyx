# cython: language_level=3
"""Canonical CBOR encoder for smith's value model (RFC 8949 §4.2.1); see smith._fast._cbor.

`encode` is byte-identical to `cbor2.dumps(x, canonical=True)` for the model, and raises
EncodeError, naming the path ("$.content.args[3]"), for a value outside it.

The encoder creates no Python objects while it walks: borrowed references, exact-type
checks first, ASCII text copied straight from the str, and map keys sorted only when a
scan finds them out of order. Output collects in a scratch buffer reused across calls;
long strings are not copied into it but straight into the result at the end.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from cpython.ref cimport PyObject, Py_XDECREF, Py_XINCREF
from libc.stdint cimport uint16_t, uint32_t, uint64_t
from libc.stdlib cimport qsort
from libc.string cimport memcpy, memmove

from smith._fast._cbor_common cimport MAX_DEPTH, float_form
from smith._fast._utf8 cimport utf8_size, utf8_write

cdef extern from "Python.h":
    ctypedef struct PyTypeObject:
        pass
    PyTypeObject PyUnicode_Type, PyLong_Type, PyFloat_Type, PyBool_Type, PyBytes_Type
    PyTypeObject PyByteArray_Type, PyList_Type, PyTuple_Type, PyDict_Type, PyMemoryView_Type
    PyTypeObject* Py_TYPE(PyObject*)
    int PyType_IsSubtype(PyTypeObject*, PyTypeObject*)
    int PyUnicode_IS_COMPACT_ASCII(PyObject*) nogil
    int PyUnicode_KIND(PyObject*) nogil
    void* PyUnicode_DATA(PyObject*) nogil
    Py_ssize_t PyUnicode_GET_LENGTH(PyObject*) nogil
    uint32_t PyUnicode_READ(int, const void*, Py_ssize_t) nogil
    PyObject** PySequence_Fast_ITEMS(PyObject*)
    Py_ssize_t PySequence_Fast_GET_SIZE(PyObject*)
    Py_ssize_t PyDict_GET_SIZE(PyObject*)
    int PyDict_Next(PyObject*, Py_ssize_t*, PyObject**, PyObject**)
    long long PyLong_AsLongLongAndOverflow(PyObject*, int*)
    unsigned long long PyLong_AsUnsignedLongLong(PyObject*)
    size_t _PyLong_NumBits(PyObject*)
    double PyFloat_AS_DOUBLE(PyObject*)
    char* PyBytes_AS_STRING(PyObject*)
    Py_ssize_t PyBytes_GET_SIZE(PyObject*)
    char* PyByteArray_AS_STRING(PyObject*)
    Py_ssize_t PyByteArray_GET_SIZE(PyObject*)
    PyObject* Py_True

cdef extern from *:
    """
    #if PY_VERSION_HEX < 0x030C0000
    #define smith_unicode_ready(o) PyUnicode_READY(o)
    #else
    #define smith_unicode_ready(o) 0
    #endif
    #if PY_VERSION_HEX >= 0x030D0000
    #define smith_long_bytes(v, b, n, s) \\
        _PyLong_AsByteArray((PyLongObject *)(v), (b), (n), 0, (s), 1)
    #else
    #define smith_long_bytes(v, b, n, s) _PyLong_AsByteArray((PyLongObject *)(v), (b), (n), 0, (s))
    #endif
    """
    int smith_unicode_ready(PyObject*)
    int smith_long_bytes(PyObject*, unsigned char*, size_t, int)

class EncodeError(ValueError):
    """A value outside smith's value model; `path` locates it, e.g. `$.content.args[3]`."""

    __module__ = "smith._fast._cbor"  # where it is public

    def __init__(self, path, reason):
        ValueError.__init__(self, f"{path}: {reason}")
        self.path = path
        self.reason = reason


cdef enum:
    DEFER_MIN = 256          # strings this long skip the scratch buffer
    SMALL_MAP = 16           # maps this small sort their keys on the C stack
    SCRATCH_KEEP = 1 << 20   # largest scratch buffer kept between calls

cdef enum Failure:
    E_TYPE = 1, E_KEY, E_KEY_SURROGATE, E_SURROGATE, E_DUPLICATE, E_DEPTH, E_BUFFER
    E_NOMEM, E_PYERR         # E_PYERR: a Python exception is already set

cdef struct Seg:             # one step of the path to a failing value
    PyObject* key            # owned; NULL for an array index
    Py_ssize_t index

cdef struct Defer:           # a long string copied into the result only at the end
    Py_ssize_t at
    const char* src
    Py_ssize_t size

cdef struct Item:            # a map entry while its keys are checked and sorted
    PyObject* key
    PyObject* value
    Py_ssize_t size          # UTF-8 bytes of the key
    const char* ascii        # the key's characters when it is compact ASCII, else NULL

cdef struct Enc:
    unsigned char* buf
    Py_ssize_t len
    Py_ssize_t cap
    Defer* defers
    Py_ssize_t ndefers
    Py_ssize_t defers_cap
    Py_ssize_t deferred      # bytes held in defers
    int err
    PyObject* bad            # owned
    Py_ssize_t bad_index     # code point index of a lone surrogate
    Py_ssize_t path_len      # -1 until the failing value's depth is known
    Seg path[MAX_DEPTH]

cdef unsigned char* _scratch = NULL
cdef Py_ssize_t _scratch_cap = 0
cdef Defer* _scratch_defers = NULL
cdef Py_ssize_t _scratch_defers_cap = 0
cdef bint _scratch_busy = False

# ---------------------------------------------------------------------------- output

cdef inline int fail(Enc* e, int err, PyObject* bad) noexcept:
    e.err = err
    Py_XINCREF(bad)
    e.bad = bad
    return -1


cdef inline int step(Enc* e, Py_ssize_t depth, PyObject* key, Py_ssize_t index) noexcept:
    """Record, while unwinding, where the failing value sits in the container at depth."""
    if e.path_len < 0:
        e.path_len = depth + 1
    Py_XINCREF(key)
    e.path[depth].key = key
    e.path[depth].index = index
    return -1


cdef int grow(Enc* e, Py_ssize_t n) noexcept:
    cdef Py_ssize_t cap = e.cap * 2
    if cap < e.len + n:
        cap = e.len + n
    if cap < 4096:
        cap = 4096
    cdef unsigned char* buf = <unsigned char*>PyMem_Realloc(e.buf, cap)
    if buf == NULL:
        e.err = E_NOMEM
        return -1
    e.buf = buf
    e.cap = cap
    return 0


cdef inline int reserve(Enc* e, Py_ssize_t n) noexcept:
    if e.len + n <= e.cap:
        return 0
    return grow(e, n)


cdef inline int head_size(uint64_t v) noexcept nogil:
    return 1 if v < 24 else 2 if v <= 0xff else 3 if v <= 0xffff else 5 if v <= 0xffffffffU else 9


cdef inline int write_head(unsigned char* p, unsigned int major, uint64_t v) noexcept nogil:
    """Write the shortest head for (major, v) at p; the bytes written."""
    cdef int n = head_size(v) - 1, i
    major <<= 5
    if n == 0:
        p[0] = <unsigned char>(major | v)
        return 1
    p[0] = <unsigned char>(major | (24 if n == 1 else 25 if n == 2 else 26 if n == 4 else 27))
    for i in range(n):
        p[n - i] = <unsigned char>(v >> (8 * i))
    return n + 1


cdef inline int head(Enc* e, unsigned int major, uint64_t v) noexcept:
    if reserve(e, 9) < 0:
        return -1
    e.len += write_head(e.buf + e.len, major, v)
    return 0


cdef inline int put_byte(Enc* e, unsigned char b) noexcept:
    if reserve(e, 1) < 0:
        return -1
    e.buf[e.len] = b
    e.len += 1
    return 0


cdef int defer(Enc* e, const char* src, Py_ssize_t n) noexcept:
    cdef Py_ssize_t cap
    cdef Defer* defers
    if e.ndefers == e.defers_cap:
        cap = e.defers_cap * 2 if e.defers_cap else 64
        defers = <Defer*>PyMem_Realloc(e.defers, cap * sizeof(Defer))
        if defers == NULL:
            e.err = E_NOMEM
            return -1
        e.defers = defers
        e.defers_cap = cap
    e.defers[e.ndefers].at = e.len
    e.defers[e.ndefers].src = src
    e.defers[e.ndefers].size = n
    e.ndefers += 1
    e.deferred += n
    return 0


cdef inline int put_raw(Enc* e, unsigned int major, const char* src, Py_ssize_t n,
                        bint may_defer) noexcept:
    """Head and content of a string whose bytes are src[:n]; may_defer if src is immutable."""
    if head(e, major, <uint64_t>n) < 0:
        return -1
    if n >= DEFER_MIN and may_defer:
        return defer(e, src, n)
    if reserve(e, n) < 0:
        return -1
    memcpy(e.buf + e.len, src, n)
    e.len += n
    return 0


cdef int put_unicode(Enc* e, PyObject* s) noexcept:
    """A str that is not compact ASCII, transcoded straight into the buffer after room for
    the longest head it could need (moved down if the head turns out shorter)."""
    if smith_unicode_ready(s) < 0:
        e.err = E_PYERR
        return -1
    cdef int kind = PyUnicode_KIND(s)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(s)
    cdef Py_ssize_t most = n * (kind + 1 if kind < 4 else 4)
    cdef int room = head_size(<uint64_t>most), used
    if reserve(e, room + most) < 0:
        return -1
    cdef Py_ssize_t size = utf8_write(kind, PyUnicode_DATA(s), n, e.buf + e.len + room,
                                      &e.bad_index)
    if size < 0:
        return fail(e, E_SURROGATE, s)
    used = head_size(<uint64_t>size)
    if used != room:
        memmove(e.buf + e.len + used, e.buf + e.len + room, size)
    write_head(e.buf + e.len, 3, <uint64_t>size)
    e.len += used + size
    return 0


cdef inline int enc_str(Enc* e, PyObject* s) noexcept:
    if PyUnicode_IS_COMPACT_ASCII(s):
        return put_raw(e, 3, <const char*>PyUnicode_DATA(s), PyUnicode_GET_LENGTH(s), True)
    return put_unicode(e, s)


cdef inline int enc_int(Enc* e, PyObject* o) noexcept:
    cdef int overflow = 0
    cdef long long v = PyLong_AsLongLongAndOverflow(o, &overflow)
    if overflow == 0:
        if v >= 0:
            return head(e, 0, <uint64_t>v)
        return head(e, 1, <uint64_t>(-1 - v))
    return enc_bigint(e, o, overflow > 0)


cdef int enc_bigint(Enc* e, PyObject* o, bint positive) noexcept:
    """Beyond 63 bits: a 64-bit head if it fits, else tag 2/3 and minimal big-endian bytes."""
    cdef size_t bits = _PyLong_NumBits(o)
    cdef Py_ssize_t n, at, lead, i
    cdef uint64_t v
    cdef unsigned char* p
    if bits == <size_t>-1:
        e.err = E_PYERR
        return -1
    if positive:
        if bits <= 64:
            return head(e, 0, PyLong_AsUnsignedLongLong(o))
        n = <Py_ssize_t>((bits + 7) // 8)
        if put_byte(e, 0xc2) < 0 or head(e, 2, <uint64_t>n) < 0 or reserve(e, n) < 0:
            return -1
        if smith_long_bytes(o, e.buf + e.len, n, 0) < 0:
            e.err = E_PYERR
            return -1
        e.len += n
        return 0
    # A negative n encodes -1 - n, which is ~n: invert its two's complement bytes. They
    # are staged past room for the tag and head, then moved down behind them.
    n = <Py_ssize_t>(bits // 8 + 1)
    if reserve(e, 10 + n) < 0:
        return -1
    at = e.len + 10
    p = e.buf + at
    if smith_long_bytes(o, p, n, 1) < 0:
        e.err = E_PYERR
        return -1
    lead = n
    for i in range(n):
        p[i] = ~p[i]
        if lead == n and p[i]:
            lead = i
    if n - lead <= 8:
        v = 0
        for i in range(lead, n):
            v = (v << 8) | p[i]
        return head(e, 1, v)
    e.buf[e.len] = 0xc3
    e.len += 1
    head(e, 2, <uint64_t>(n - lead))        # fits: reserved above, staging starts after it
    memmove(e.buf + e.len, e.buf + at + lead, n - lead)
    e.len += n - lead
    return 0


cdef int enc_float(Enc* e, double x) noexcept:
    cdef uint64_t bits
    cdef int width = float_form(x, &bits)
    cdef int i
    if reserve(e, 9) < 0:
        return -1
    cdef unsigned char* p = e.buf + e.len
    p[0] = 0xf9 if width == 2 else (0xfa if width == 4 else 0xfb)
    for i in range(width):
        p[width - i] = <unsigned char>(bits >> (8 * i))
    e.len += width + 1
    return 0


cdef int enc_items(Enc* e, PyObject* seq, Py_ssize_t depth) noexcept:
    """A list or tuple (or a subclass) as an array."""
    if depth >= MAX_DEPTH:
        e.path_len = depth
        return fail(e, E_DEPTH, seq)
    cdef Py_ssize_t i, n = PySequence_Fast_GET_SIZE(seq)
    cdef PyObject** items = PySequence_Fast_ITEMS(seq)
    if head(e, 4, <uint64_t>n) < 0:
        return -1
    for i in range(n):
        if enc_value(e, items[i], depth + 1) < 0:
            return step(e, depth, NULL, i)
    return 0


cdef int key_cmp_text(const Item* a, const Item* b) noexcept nogil:
    """Order of two keys of equal UTF-8 size, not both ASCII, by code points (UTF-8
    preserves code point order)."""
    cdef int ka = PyUnicode_KIND(a.key), kb = PyUnicode_KIND(b.key)
    cdef Py_ssize_t i, na = PyUnicode_GET_LENGTH(a.key), nb = PyUnicode_GET_LENGTH(b.key)
    cdef uint32_t ca, cb
    for i in range(min(na, nb)):
        ca = PyUnicode_READ(ka, PyUnicode_DATA(a.key), i)
        cb = PyUnicode_READ(kb, PyUnicode_DATA(b.key), i)
        if ca != cb:
            return -1 if ca < cb else 1
    return (na > nb) - (na < nb)


cdef inline int key_order(const Item* a, const Item* b) noexcept nogil:
    """Bytewise order of two text keys' encodings: by UTF-8 size, then by content."""
    cdef Py_ssize_t i
    if a.size != b.size:
        return -1 if a.size < b.size else 1
    if a.ascii == NULL or b.ascii == NULL:
        return key_cmp_text(a, b)
    for i in range(a.size):                  # keys are short: no memcmp call
        if a.ascii[i] != b.ascii[i]:
            return -1 if <unsigned char>a.ascii[i] < <unsigned char>b.ascii[i] else 1
    return 0


cdef int key_cmp(const void* a, const void* b) noexcept nogil:
    return key_order(<const Item*>a, <const Item*>b)


cdef void sort_items(Item* items, Py_ssize_t n) noexcept:
    cdef Py_ssize_t i, j
    cdef Item it
    if n > SMALL_MAP:
        qsort(items, n, sizeof(Item), key_cmp)
        return
    for i in range(1, n):
        it = items[i]
        j = i
        while j > 0 and key_order(&items[j - 1], &it) > 0:
            items[j] = items[j - 1]
            j -= 1
        items[j] = it


cdef int enc_dict(Enc* e, PyObject* d, Py_ssize_t depth) noexcept:
    if depth >= MAX_DEPTH:
        e.path_len = depth
        return fail(e, E_DEPTH, d)
    cdef Py_ssize_t n = PyDict_GET_SIZE(d)
    if head(e, 5, <uint64_t>n) < 0:
        return -1
    if n == 0:
        return 0
    cdef Item small[SMALL_MAP]
    cdef Item* items = small
    if n > SMALL_MAP:
        items = <Item*>PyMem_Realloc(NULL, n * sizeof(Item))
        if items == NULL:
            e.err = E_NOMEM
            return -1
    cdef int rc = enc_entries(e, d, depth, items, n)
    if items != small:
        PyMem_Free(items)
    return rc


cdef int enc_entries(Enc* e, PyObject* d, Py_ssize_t depth, Item* items, Py_ssize_t n) noexcept:
    cdef Py_ssize_t pos = 0, i = 0
    cdef PyObject* key
    cdef PyObject* value
    cdef PyTypeObject* t
    cdef bint ordered = True
    cdef int rc
    while i < n and PyDict_Next(d, &pos, &key, &value):
        t = Py_TYPE(key)
        if t != &PyUnicode_Type and not PyType_IsSubtype(t, &PyUnicode_Type):
            e.path_len = depth
            return fail(e, E_KEY, key)
        items[i].key = key
        items[i].value = value
        if PyUnicode_IS_COMPACT_ASCII(key):
            items[i].ascii = <const char*>PyUnicode_DATA(key)
            items[i].size = PyUnicode_GET_LENGTH(key)
        else:
            items[i].ascii = NULL
            if smith_unicode_ready(key) < 0:
                e.err = E_PYERR
                return -1
            items[i].size = utf8_size(PyUnicode_KIND(key), PyUnicode_DATA(key),
                                      PyUnicode_GET_LENGTH(key), &e.bad_index)
            if items[i].size < 0:
                e.path_len = depth
                return fail(e, E_KEY_SURROGATE, key)
        if ordered and i and key_order(&items[i - 1], &items[i]) >= 0:
            ordered = False
        i += 1
    if not ordered:
        sort_items(items, n)
        for i in range(1, n):
            if key_order(&items[i - 1], &items[i]) == 0:
                e.path_len = depth
                return fail(e, E_DUPLICATE, items[i].key)
    for i in range(n):
        if items[i].ascii != NULL:
            rc = put_raw(e, 3, items[i].ascii, items[i].size, True)
        else:
            rc = put_unicode(e, items[i].key)
        if rc < 0:
            return -1
        if enc_value(e, items[i].value, depth + 1) < 0:
            return step(e, depth, items[i].key, 0)
    return 0


cdef inline int enc_value(Enc* e, PyObject* o, Py_ssize_t depth) noexcept:
    """A member of a list or map: the commonest types (str, int) without a call."""
    cdef PyTypeObject* t = Py_TYPE(o)
    if t == &PyUnicode_Type:
        return enc_str(e, o)
    if t == &PyLong_Type:
        return enc_int(e, o)
    return enc_obj(e, o, depth)


cdef int enc_obj(Enc* e, PyObject* o, Py_ssize_t depth) noexcept:
    cdef PyTypeObject* t = Py_TYPE(o)
    if t == &PyUnicode_Type:
        return enc_str(e, o)
    if t == &PyLong_Type:
        return enc_int(e, o)
    if t == &PyDict_Type:
        return enc_dict(e, o, depth)
    if t == &PyList_Type or t == &PyTuple_Type:
        return enc_items(e, o, depth)
    if o == <PyObject*>None:
        return put_byte(e, 0xf6)
    if t == &PyBool_Type:
        return put_byte(e, 0xf5 if o == Py_True else 0xf4)
    if t == &PyFloat_Type:
        return enc_float(e, PyFloat_AS_DOUBLE(o))
    if t == &PyBytes_Type:
        return put_raw(e, 2, PyBytes_AS_STRING(o), PyBytes_GET_SIZE(o), True)
    return enc_other(e, o, t, depth)


cdef int enc_other(Enc* e, PyObject* o, PyTypeObject* t, Py_ssize_t depth) noexcept:
    """Subclasses of the model's types, bytearray and memoryview; anything else fails."""
    cdef Py_buffer view
    cdef int rc
    if PyType_IsSubtype(t, &PyUnicode_Type):
        return enc_str(e, o)
    if PyType_IsSubtype(t, &PyLong_Type):
        return enc_int(e, o)
    if PyType_IsSubtype(t, &PyDict_Type):
        return enc_dict(e, o, depth)
    if PyType_IsSubtype(t, &PyList_Type) or PyType_IsSubtype(t, &PyTuple_Type):
        return enc_items(e, o, depth)
    if PyType_IsSubtype(t, &PyFloat_Type):
        return enc_float(e, PyFloat_AS_DOUBLE(o))
    if PyType_IsSubtype(t, &PyBytes_Type):
        return put_raw(e, 2, PyBytes_AS_STRING(o), PyBytes_GET_SIZE(o), True)
    if PyType_IsSubtype(t, &PyByteArray_Type):
        return put_raw(e, 2, PyByteArray_AS_STRING(o), PyByteArray_GET_SIZE(o), False)
    if t == &PyMemoryView_Type:
        try:
            PyObject_GetBuffer(<object>o, &view, PyBUF_SIMPLE)
        except Exception:  # released, or not contiguous
            return fail(e, E_BUFFER, o)
        rc = put_raw(e, 2, <const char*>view.buf, view.len, False)
        PyBuffer_Release(&view)
        return rc
    return fail(e, E_TYPE, o)

# ---------------------------------------------------------------------------- encode

cdef bytes finish(Enc* e):
    cdef bytes out = PyBytes_FromStringAndSize(NULL, e.len + e.deferred)
    cdef char* dst = PyBytes_AS_STRING(<PyObject*>out)
    cdef Py_ssize_t i, done = 0
    for i in range(e.ndefers):
        memcpy(dst, e.buf + done, e.defers[i].at - done)
        dst += e.defers[i].at - done
        memcpy(dst, e.defers[i].src, e.defers[i].size)
        dst += e.defers[i].size
        done = e.defers[i].at
    memcpy(dst, e.buf + done, e.len - done)
    return out


cdef int propagate() except -1:
    return -1            # the exception is already set


def _type_name(obj):
    t = type(obj)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _short_repr(value):
    text = repr(str.__str__(value))
    return text if len(text) <= 60 else text[:56] + "...'"


cdef tuple failure(Enc* e):
    """(path, reason) of the failure recorded in e."""
    cdef Py_ssize_t i
    parts = ["$"]
    for i in range(max(e.path_len, 0)):
        if e.path[i].key == NULL:
            parts.append(f"[{e.path[i].index}]")
        else:
            key = str.__str__(<object>e.path[i].key)
            parts.append(f".{key}" if key.isidentifier() else f"[{key!r}]")
    bad = <object>e.bad
    if e.err == E_TYPE:
        reason = (f"cannot encode {_type_name(bad)} (smith's session values are None, bool, "
                  "int, float, str, bytes, list and dict with text keys)")
    elif e.err == E_KEY:
        reason = f"cannot encode a map key of type {_type_name(bad)}: {bad!r} (keys must be text)"
    elif e.err == E_KEY_SURROGATE:
        reason = f"map key {_short_repr(bad)} contains a lone surrogate (text must be valid Unicode)"
    elif e.err == E_SURROGATE:
        reason = (f"cannot encode text with a lone surrogate U+{ord(str.__str__(bad)[e.bad_index]):04X} at "
                  f"index {e.bad_index} (text must be valid Unicode)")
    elif e.err == E_DUPLICATE:
        reason = f"two map keys encode the same: {_short_repr(bad)}"
    elif e.err == E_DEPTH:
        reason = f"nested deeper than {MAX_DEPTH} arrays and maps (does a value contain itself?)"
    elif e.err == E_BUFFER:
        reason = "cannot encode a memoryview that is released or not contiguous"
    else:
        reason = f"cannot encode {_type_name(bad)}"
    return "".join(parts), reason


def encode(obj, /):
    """obj as canonical CBOR; raises EncodeError (naming the path) for values outside the model."""
    global _scratch, _scratch_cap, _scratch_defers, _scratch_defers_cap, _scratch_busy
    cdef Enc e
    cdef bint own = _scratch_busy
    cdef Py_ssize_t i
    e.buf, e.cap, e.defers, e.defers_cap = NULL, 0, NULL, 0
    if not own:
        _scratch_busy = True
        e.buf, e.cap = _scratch, _scratch_cap
        e.defers, e.defers_cap = _scratch_defers, _scratch_defers_cap
    e.len = e.ndefers = e.deferred = e.bad_index = 0
    e.err = 0
    e.bad = NULL
    e.path_len = -1
    try:
        if enc_obj(&e, <PyObject*>obj, 0) == 0:
            return finish(&e)
        if e.err == E_PYERR:
            propagate()
        if e.err == E_NOMEM:
            raise MemoryError
        raise EncodeError(*failure(&e))
    finally:
        for i in range(max(e.path_len, 0)):
            Py_XDECREF(e.path[i].key)
        Py_XDECREF(e.bad)
        if own or e.cap > SCRATCH_KEEP:
            PyMem_Free(e.buf)
            e.buf, e.cap = NULL, 0
        if own:
            PyMem_Free(e.defers)
        else:
            _scratch, _scratch_cap = e.buf, e.cap
            _scratch_defers, _scratch_defers_cap = e.defers, e.defers_cap
            _scratch_busy = False
