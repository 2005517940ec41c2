# cython: language_level=3
"""Memory accounting by lifetime scope: the compiled half (the hooks and scope table are
C, in _memory_hooks.h; smith.memory is the Python API and says how to use it).

A `Scope` owns one slot of the table. Entering it (a `with` block on one thread, every
step of a coroutine with `run`, every step of an async iterator with `iterate`) makes it
the innermost scope of the running thread, which every allocation there is charged to.
"""

from libc.stdint cimport int64_t, uint16_t, uint32_t, uint64_t

cdef extern from "_memory_hooks.h":
    enum:
        SM_SLOTS
        SM_KINDS
        SM_FREE
        SM_OPEN
        SM_CLOSED
    ctypedef struct sm_slot:
        uint32_t state
        uint32_t kind
    ctypedef struct sm_thread:
        int depth
        uint64_t count
        uint64_t bytes
    sm_slot sm_slots[]
    char sm_names[][48]
    uint32_t sm_gens[]
    uint64_t sm_ceiling[]
    uint64_t sm_foreign_frees
    uint64_t sm_adopted
    int sm_installed
    sm_thread sm_tls
    int sm_install(uint64_t key)
    void sm_enter(uint16_t slot) nogil
    void sm_leave(uint16_t slot) nogil
    uint16_t sm_open(uint32_t kind, const char *name, size_t length)
    void sm_close(uint16_t slot)
    void sm_read(uint16_t slot, uint64_t *out)

KINDS = ("process", "session", "turn", "kernel", "frame", "io")
SLOTS = SM_SLOTS
STATES = {SM_OPEN: "open", SM_CLOSED: "closed"}

# Called with a closing scope's record when its ceiling was crossed (smith.memory sets it).
on_ceiling = None


cdef void scope_enter(uint16_t slot) noexcept nogil:
    sm_enter(slot)


cdef void scope_leave(uint16_t slot) noexcept nogil:
    sm_leave(slot)


def install(key: int) -> bool:
    """Hook every allocator domain; False if they already were (once per process)."""
    return sm_install(key & 0xFFFFFFFFFFFFFFFF) == 1


def installed() -> bool:
    return sm_installed != 0


def set_ceiling(kind: int, limit: int) -> None:
    """Live bytes one scope of `kind` may hold before crossings are counted (0: none)."""
    if not 0 <= kind < SM_KINDS:
        raise ValueError(f"no scope kind {kind}")
    sm_ceiling[kind] = limit


def ceiling(kind: int) -> int:
    return sm_ceiling[kind] if 0 <= kind < SM_KINDS else 0


def thread_totals() -> tuple[int, int]:
    """(allocations, bytes) made on this thread so far, whatever the scope."""
    cdef uint64_t count = sm_tls.count, size = sm_tls.bytes
    return count, size


def depth() -> int:
    """How many scopes this thread is inside."""
    return sm_tls.depth


def stats() -> dict[str, int]:
    """Blocks from before the hooks freed (`foreign_frees`) or resized into accounted
    blocks (`adopted`)."""
    return {"foreign_frees": sm_foreign_frees, "adopted": sm_adopted}


def record(int slot) -> tuple:
    """(slot, kind, name, state, count, frees, allocated, live, peak, ceiling hits)."""
    cdef uint64_t v[6]
    if not 0 <= slot < SM_SLOTS:
        raise ValueError(f"no scope slot {slot}")
    sm_read(<uint16_t>slot, v)
    kind = sm_slots[slot].kind
    name = KINDS[kind] if slot < SM_KINDS else sm_names[slot].decode("utf-8", "replace")
    state = STATES.get(sm_slots[slot].state, "free")
    return (slot, KINDS[kind], name, state, v[0], v[1], v[2], <int64_t>v[3], v[4], v[5])


def records() -> list:
    """Every slot in use, in slot order (the kinds' own slots first)."""
    cdef int i
    return [record(i) for i in range(SM_SLOTS) if sm_slots[i].state != SM_FREE]


cdef enum:
    FINISH_NEVER = 0
    FINISH_ALWAYS = 1  # the wrapped awaitable is the scope's whole life
    FINISH_AT_END = 2  # an async iterator's step: the scope ends with the iterator


cdef class Scope:
    """One accounting scope. `once`: it ends (closes) when its `with` block or its
    coroutine ends; otherwise it stays open until `close()` or until it is collected.
    `shared`: the kind's own slot, which is never closed."""

    cdef readonly int slot
    cdef readonly bint once
    cdef readonly bint closed
    cdef bint shared
    cdef uint32_t gen
    cdef tuple final  # the record when it closed, for when its slot serves another

    def __cinit__(self, int kind, str name="", bint once=False, bint shared=False):
        if not 0 <= kind < SM_KINDS:
            raise ValueError(f"no scope kind {kind}")
        self.once = once
        self.shared = shared or kind == 0
        if self.shared:
            self.slot = kind
        else:
            data = name.encode("utf-8", "replace")
            self.slot = sm_open(kind, data, len(data))
            self.shared = self.slot < SM_KINDS  # the table was full: the kind's row
            self.gen = sm_gens[self.slot]

    def __dealloc__(self):
        if not self.shared and not self.closed:
            sm_close(<uint16_t>self.slot)

    @property
    def kind(self) -> str:
        return KINDS[sm_slots[self.slot].kind]

    def record(self) -> tuple:
        """Its figures now; once its slot serves another scope, as they were when it
        closed."""
        if self.final is not None and sm_gens[self.slot] != self.gen:
            return self.final
        return record(self.slot)

    def __enter__(self):
        if self.closed:
            raise RuntimeError("this memory scope has ended")
        sm_enter(<uint16_t>self.slot)
        return self

    def __exit__(self, *exc):
        sm_leave(<uint16_t>self.slot)
        if self.once:
            self.close()
        return False

    def close(self) -> None:
        """End the scope: its row stays in the report until the slot is needed again
        and no block of it is live (then its figures join its kind's row)."""
        if self.closed or self.shared:
            return
        self.closed = True
        sm_close(<uint16_t>self.slot)
        self.final = record(self.slot)
        if on_ceiling is not None and self.final[9]:
            on_ceiling(self.final)

    def run(self, awaitable):
        """`awaitable` with this scope entered around each of its steps."""
        return Scoped(self, awaitable, FINISH_ALWAYS if self.once else FINISH_NEVER)

    def iterate(self, iterator):
        """An async iterator with this scope entered around each of its steps."""
        return ScopedIterator(self, iterator)


cdef class Scoped:
    """An awaitable run with a scope entered during each step (send/throw/close), so
    other tasks interleaved on the same thread are not charged to it."""

    cdef Scope scope
    cdef object it
    cdef object _send
    cdef int finish

    def __cinit__(self, Scope scope, awaitable, int finish):
        self.scope = scope
        self.it = awaitable if hasattr(awaitable, "send") else awaitable.__await__()
        self._send = self.it.send
        self.finish = finish

    cdef void _end(self, bint exhausted):
        if self.finish == FINISH_ALWAYS or (self.finish == FINISH_AT_END and exhausted):
            self.scope.close()

    def __await__(self):
        return self

    def __iter__(self):
        return self

    def __next__(self):
        return self.send(None)

    def send(self, value):
        cdef uint16_t slot = self.scope.slot
        sm_enter(slot)
        try:
            return self._send(value)
        except StopIteration:
            self._end(False)
            raise
        except BaseException:
            self._end(True)
            raise
        finally:
            sm_leave(slot)

    def throw(self, typ, val=None, tb=None):
        cdef uint16_t slot = self.scope.slot
        sm_enter(slot)
        try:
            if val is None and tb is None:
                return self.it.throw(typ)
            return self.it.throw(typ, val, tb)
        except StopIteration:
            self._end(False)
            raise
        except BaseException:
            self._end(True)
            raise
        finally:
            sm_leave(slot)

    def close(self):
        cdef uint16_t slot = self.scope.slot
        sm_enter(slot)
        try:
            self.it.close()
        finally:
            sm_leave(slot)
            self._end(True)


cdef class ScopedIterator:
    """An async iterator whose steps run in a scope; a `once` scope ends with it."""

    cdef Scope scope
    cdef object iterator

    def __cinit__(self, Scope scope, iterator):
        self.scope = scope
        self.iterator = iterator

    cdef int _finish(self):
        return FINISH_AT_END if self.scope.once else FINISH_NEVER

    def __aiter__(self):
        return self

    def __anext__(self):
        return Scoped(self.scope, self.iterator.__anext__(), self._finish())

    def asend(self, value):
        return Scoped(self.scope, self.iterator.asend(value), self._finish())

    def athrow(self, *args):
        return Scoped(self.scope, self.iterator.athrow(*args), self._finish())

    def aclose(self):
        return Scoped(
            self.scope, self.iterator.aclose(), FINISH_ALWAYS if self.scope.once else FINISH_NEVER
        )


# -- for tests: blocks of exact sizes through each domain's public API, the call alone
# made inside scope `slot` (so the Python objects around it are not) ---------------------

from cpython.mem cimport (
    PyMem_Free,
    PyMem_Malloc,
    PyMem_RawFree,
    PyMem_RawMalloc,
    PyMem_RawRealloc,
    PyMem_Realloc,
)
from cpython.object cimport PyObject_Free, PyObject_Malloc, PyObject_Realloc
from libc.stdint cimport uintptr_t


def _block(int slot, int domain, size_t size) -> int:
    """A new block of `size` bytes from domain 0 (raw), 1 (mem) or 2 (object); its
    address, for `_resize` and `_release` only."""
    cdef void *p
    sm_enter(<uint16_t>slot)
    p = (PyMem_RawMalloc(size) if domain == 0 else
         PyMem_Malloc(size) if domain == 1 else PyObject_Malloc(size))
    sm_leave(<uint16_t>slot)
    if p == NULL:
        raise MemoryError()
    return <uintptr_t>p


def _resize(int slot, int domain, address: int, size_t size) -> int:
    cdef void *p = <void *><uintptr_t>address
    cdef void *q
    sm_enter(<uint16_t>slot)
    q = (PyMem_RawRealloc(p, size) if domain == 0 else
         PyMem_Realloc(p, size) if domain == 1 else PyObject_Realloc(p, size))
    sm_leave(<uint16_t>slot)
    if q == NULL:
        raise MemoryError()
    return <uintptr_t>q


def _release(int slot, int domain, address: int) -> None:
    cdef void *p = <void *><uintptr_t>address
    sm_enter(<uint16_t>slot)
    if domain == 0:
        PyMem_RawFree(p)
    elif domain == 1:
        PyMem_Free(p)
    else:
        PyObject_Free(p)
    sm_leave(<uint16_t>slot)
