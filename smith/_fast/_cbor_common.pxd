"""What the CBOR encoder and decoder share: the depth bound and the shortest float form."""

from libc.float cimport FLT_MAX
from libc.math cimport INFINITY, fabs
from libc.stdint cimport uint32_t, uint64_t
from libc.string cimport memcpy

cdef enum:
    MAX_DEPTH = 256          # nested arrays/maps the encoder accepts; decode's default too


cdef inline int half_bits(uint32_t fb) noexcept nogil:
    """The binary16 bits equal to this binary32 value, or -1 when none is exact."""
    cdef int sign = (fb >> 16) & 0x8000
    cdef int exp = <int>((fb >> 23) & 0xff) - 127
    cdef uint32_t mant = fb & 0x7fffff
    cdef int shift
    if (fb & 0x7fffffff) == 0:
        return sign
    if exp == -127:                      # binary32 subnormal: far below binary16's range
        return -1
    if -14 <= exp <= 15:
        if mant & 0x1fff:
            return -1
        return sign | ((exp + 15) << 10) | <int>(mant >> 13)
    if -24 <= exp < -14:                 # a binary16 subnormal: m * 2**-24
        mant |= 0x800000
        shift = -(exp + 1)
        if mant & ((1u << shift) - 1):
            return -1
        return sign | <int>(mant >> shift)
    return -1


cdef inline int float_form(double x, uint64_t* bits) noexcept nogil:
    """Width (2, 4 or 8) and bits of the shortest float preserving x, as cbor2 writes it."""
    cdef float f
    cdef uint32_t fb
    cdef int h
    if x != x:
        bits[0] = 0x7e00
        return 2
    if x == INFINITY or x == -INFINITY:
        bits[0] = 0x7c00 if x > 0 else 0xfc00
        return 2
    if fabs(x) <= FLT_MAX:
        f = <float>x
        if <double>f == x:
            memcpy(&fb, &f, 4)
            h = half_bits(fb)
            if h >= 0:
                bits[0] = <uint64_t>h
                return 2
            bits[0] = fb
            return 4
    memcpy(bits, &x, 8)
    return 8
