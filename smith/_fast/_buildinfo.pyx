# cython: language_level=3
"""How this copy of smith's compiled core was built.

The values are fixed by the C compiler when the extension is built (setup.py reads
SMITH_CYTHON_TRACE and SMITH_DEBUG), so they tell the truth about the binary that is
actually loaded, not about today's environment.
"""

cdef extern from *:
    """
    #ifndef SMITH_BUILD_TRACE
    #define SMITH_BUILD_TRACE 0
    #endif
    #ifndef SMITH_BUILD_DEBUG
    #define SMITH_BUILD_DEBUG 0
    #endif
    #ifndef SMITH_CYTHON_VERSION
    #define SMITH_CYTHON_VERSION "unknown"
    #endif
    #ifdef NDEBUG
    #define SMITH_C_ASSERTS 0
    #else
    #define SMITH_C_ASSERTS 1
    #endif
    #if defined(__clang__)
    #define SMITH_COMPILER "clang " __clang_version__
    #elif defined(__GNUC__)
    #define SMITH_COMPILER "gcc " __VERSION__
    #elif defined(_MSC_VER)
    #define SMITH_COMPILER "msvc"
    #else
    #define SMITH_COMPILER "unknown"
    #endif
    """
    int SMITH_BUILD_TRACE
    int SMITH_BUILD_DEBUG
    int SMITH_C_ASSERTS
    const char *SMITH_COMPILER
    const char *SMITH_CYTHON_VERSION

line_trace: bool = SMITH_BUILD_TRACE != 0
debug: bool = SMITH_BUILD_DEBUG != 0
c_assertions: bool = SMITH_C_ASSERTS != 0
compiler: str = SMITH_COMPILER.decode("utf-8", "replace")
cython_version: str = SMITH_CYTHON_VERSION.decode("ascii")


def variant() -> str:
    """'release', 'debug', 'trace' or 'debug+trace'."""
    parts = [name for name, on in (("debug", debug), ("trace", line_trace)) if on]
    return "+".join(parts) or "release"
