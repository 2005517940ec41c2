"""Declares smith's Cython extensions; all metadata lives in pyproject.toml.

Build variants come from the environment:
  SMITH_CYTHON_TRACE=1  line tracing for coverage and profilers (slower)
  SMITH_DEBUG=1         no optimisation, C assertions on, Cython bounds checks on
"""

import os

from Cython import __version__ as cython_version
from Cython.Build import cythonize
from setuptools import Extension, find_packages, setup


def _flag(name: str) -> bool:
    """The same words smith's own boolean settings accept (SMITH_DEBUG is one)."""
    word = os.environ.get(name, "").strip().lower()
    if word in ("", "0", "false", "no", "off"):
        return False
    if word in ("1", "true", "yes", "on"):
        return True
    raise SystemExit(f"{name}={word!r}: expected 1 or 0 (also true/false, yes/no, on/off)")


TRACE = _flag("SMITH_CYTHON_TRACE")
DEBUG = _flag("SMITH_DEBUG")

macros = [
    ("SMITH_BUILD_TRACE", str(int(TRACE))),
    ("SMITH_BUILD_DEBUG", str(int(DEBUG))),
    ("SMITH_CYTHON_VERSION", f'"{cython_version}"'),
]
if TRACE:
    macros += [("CYTHON_TRACE", "1"), ("CYTHON_TRACE_NOGIL", "1")]
if not DEBUG:
    macros.append(("NDEBUG", None))
compile_args = ["-O0", "-g3", "-UNDEBUG"] if DEBUG else []

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": not DEBUG,
    "linetrace": TRACE,
    "embedsignature": True,
}


def fast(name: str, *headers: str) -> Extension:
    return Extension(
        f"smith._fast.{name}",
        [f"smith/_fast/{name}.pyx"],
        define_macros=macros,
        extra_compile_args=compile_args,
        include_dirs=["smith/_fast"],
        depends=[f"smith/_fast/{h}" for h in headers],
    )


setup(
    package_dir={
        "smith": "smith",
        "smith.frontends": "frontends",
        "smith.plugins": "plugins",
    },
    packages=[
        *find_packages(include=["smith", "smith.*"]),
        *(f"smith.{top}.{p}" for top in ("frontends", "plugins") for p in find_packages(top)),
        "smith.frontends",
        "smith.plugins",
    ],
    package_data={
        "smith": ["py.typed"],
        "smith._fast": ["*.pyi", "*.pxd"],
        "smith.providers": ["catalog.json"],  # the reviewed model catalog
    },
    ext_modules=cythonize(
        [
            fast("_buildinfo"),
            fast("_frames"),
            fast("_arena"),
            fast("_cbor_encode"),
            fast("_cbor_decode"),
            fast("_memory", "_memory_hooks.h"),
        ],
        compiler_directives=directives,
        build_dir="build/cython",
    ),
    zip_safe=False,
)
