"""Keeping file effects inside the roots they may touch.

A path is resolved against the invocation's working directory (never the process's), made
real (symlinks followed, as far as the path exists), and must then lie inside the project
root or a configured extra root. `..`, absolute paths elsewhere and symlinks that lead out
are all refused the same way.
"""

from __future__ import annotations

import os

from smith.diagnostics import DiagnosticKind, Source

BAD_PATH = DiagnosticKind(
    "effect.bad-path",
    what="{path} is not a usable path: it contains a NUL character",
    why="no file name can contain NUL, so this cannot name a file",
    fix="pass the path without the NUL character",
)
OUTSIDE = DiagnosticKind(
    "effect.outside-roots",
    what="'{path}' is outside the project ({root})",
    why="file tools only touch the project and the extra roots configured for it; this path {how}",
    fix="use a path inside {root}; to work elsewhere, run smith from that project",
)


def confine(path: str, *, cwd: str, roots: list[str]) -> str:
    """The real absolute path of `path`, or OUTSIDE. `roots[0]` is the project root."""
    if "\0" in path:
        raise BAD_PATH.error(value=path, source=Source("argument", path), path=path)
    candidate = os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))
    real = os.path.realpath(candidate)
    for root in roots:
        base = os.path.realpath(root)
        if real == base or real.startswith(base.rstrip(os.sep) + os.sep):
            return real
    how = (
        "leads out of it through a symbolic link"
        if candidate != real and _inside(candidate, roots)
        else "is not below it"
    )
    raise OUTSIDE.error(
        value=path, source=Source("argument", path), path=path, root=roots[0], how=how
    )


def _inside(path: str, roots: list[str]) -> bool:
    return any(
        path == r or path.startswith(r.rstrip(os.sep) + os.sep)
        for r in (os.path.abspath(root) for root in roots)
    )


def relative(path: str, root: str) -> str:
    """`path` relative to the project root, for messages and records."""
    rel = os.path.relpath(path, os.path.realpath(root))
    return "." if rel == os.curdir else rel
