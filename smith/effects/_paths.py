"""Keeping file effects inside the roots they may touch.

A path is resolved against the invocation's working directory (never the process's), made
real (symlinks followed, as far as the path exists), and must then lie inside the project
root or a configured extra root. `..`, absolute paths elsewhere and symlinks that lead out
are all refused the same way.

Paths a tool may read but never change (`tools.protected`, `.git` and `.smith` by
default) are checked on the real path too, so no spelling reaches them: an entry without
a slash is a name protected at any depth (every `.git`, a nested repository's included),
one with a slash is a path from the root it lies under. The `.git` entry also protects
every git directory whatever its name (git's own test: `HEAD`, `objects/` and `refs/`), so
the layout of a bare repository with worktrees (`.git` a file saying `gitdir: ./.bare`)
does not leave its hooks and config open.
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
PROTECTED = DiagnosticKind(
    "effect.protected",
    what="'{path}' is protected: it is inside {entry}, which tools never change",
    why="{entry} is listed in tools.protected ({reason}); writing there could run code or "
    "change settings behind the user's back, and file history could not undo it",
    fix="leave files under {entry} to the user; to allow it, remove {entry} from "
    "tools.protected (smith config set tools.protected ...)",
)
GIT_DIRECTORY = DiagnosticKind(
    "effect.protected-git-directory",
    what="'{path}' is protected: it is inside {gitdir}, a git directory, which tools never change",
    why="tools.protected lists .git, which covers every git directory whatever its name; a "
    "repository's hooks and config run and steer git commands, and file history could not "
    "undo a change there",
    fix="leave files under {gitdir} to the user; to allow it, remove .git from "
    "tools.protected (smith config set tools.protected ...)",
)
REASONS = {
    ".git": "a repository's hooks and config run and steer git commands",
    ".smith": "the project's smith configuration and data",
}


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


def protect(real: str, *, path: str, roots: list[str], protected: tuple[str, ...]) -> None:
    """Raise PROTECTED if the real path `real` (from `confine`) is, or is under, one of
    the `protected` entries. `path` is the argument as given, for the message."""
    for root in roots:
        base = os.path.realpath(root)
        rel = os.path.relpath(real, base)
        if rel == os.pardir or rel.startswith(os.pardir + os.sep):
            continue
        parts = [] if rel == os.curdir else rel.split(os.sep)
        for entry in protected:
            name = entry.strip("/")
            if not name:
                continue
            if "/" not in name:
                hit = name in parts
            else:
                anchored = os.path.normpath(name).split(os.sep)
                hit = parts[: len(anchored)] == anchored
            if hit:
                reason = REASONS.get(name, "configured")
                raise PROTECTED.error(
                    value=path, source=Source("argument", path), path=path, entry=name,
                    reason=reason,
                )  # fmt: skip
        if any(entry.strip("/") == ".git" for entry in protected):
            gitdir = _git_directory(base, parts)
            if gitdir is not None:
                raise GIT_DIRECTORY.error(
                    value=path, source=Source("argument", path), path=path, gitdir=gitdir
                )


def _git_directory(base: str, parts: list[str]) -> str | None:
    """The first of `base`'s subdirectories along `parts` that is a git directory by
    git's own test (a `HEAD` file, `objects/` and `refs/` directories), relative to
    `base`; None if there is none."""
    here = base
    for depth, part in enumerate(parts):
        here = os.path.join(here, part)
        if (
            os.path.isfile(os.path.join(here, "HEAD"))
            and os.path.isdir(os.path.join(here, "objects"))
            and os.path.isdir(os.path.join(here, "refs"))
        ):
            return "/".join(parts[: depth + 1])
    return None


def _inside(path: str, roots: list[str]) -> bool:
    return any(
        path == r or path.startswith(r.rstrip(os.sep) + os.sep)
        for r in (os.path.abspath(root) for root in roots)
    )


def relative(path: str, root: str) -> str:
    """`path` relative to the project root, for messages and records."""
    rel = os.path.relpath(path, os.path.realpath(root))
    return "." if rel == os.curdir else rel
