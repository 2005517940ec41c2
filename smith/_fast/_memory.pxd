# The cheap enter/leave pair for Cython code: charge this thread's allocations to `slot`
# (a Scope's `slot`) between the two. Callable without the GIL; they never allocate.
from libc.stdint cimport uint16_t

cdef void scope_enter(uint16_t slot) noexcept nogil
cdef void scope_leave(uint16_t slot) noexcept nogil
