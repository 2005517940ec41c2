"""What a plugin's grants allow, apart from doing it (smith.wasm._hostfns does that):
the grants configuration narrows them to (`narrowed`), whether a path lies under a
granted one (`under`), and the git options a git grant does not stretch to
(`git_runs_another`)."""

from __future__ import annotations

import fnmatch
import logging
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from smith.packages import Grants

log = logging.getLogger("smith.plugins")

# git options that run a program of the caller's choosing (an alias `!prog`, a config
# that names one, a transport's remote helper): a git grant is git, not any program.
GIT_RUNS = ("-c", "--config-env", "--upload-pack", "--receive-pack", "--exec", "--template")
GIT_FETCHING = frozenset({"clone", "fetch", "pull", "ls-remote", "archive", "push", "submodule"})


def narrowed(installed: Grants, configured: object) -> Grants:
    """The grants a plugin keeps: `installed`, or, where configuration lists some
    (`plugins.NAME.grants "path docs/api" "host api.github.com"`), those of them that lie
    within an installed grant; configuration never widens them."""
    from smith.packages import Grants

    if not isinstance(configured, list | tuple):
        return installed
    kept: dict[str, list[str]] = {"path": [], "command": [], "host": [], "secret": []}
    for item in configured:
        kind, _, value = str(item).strip().partition(" ")
        value = value.strip()
        if kind not in kept or not value:
            log.warning("plugins grants: %r is not KIND VALUE (path, command, host, secret)", item)
        elif _within(installed, kind, value):
            kept[kind].append(value)
        else:
            log.warning("plugins grants: %r is not within the installed grants: ignored", item)
    return Grants(
        paths=tuple(kept["path"]),
        commands=tuple(kept["command"]),
        hosts=tuple(kept["host"]),
        secrets=tuple(kept["secret"]),
    )


def _within(installed: Grants, kind: str, value: str) -> bool:
    if kind == "command":
        return value in installed.commands
    if kind == "secret":
        return value in installed.secrets
    if kind == "host":
        return any(fnmatch.fnmatchcase(value.lower(), h.lower()) for h in installed.hosts)
    norm = os.path.normpath(value)
    return any(under(norm, os.path.normpath(top)) for top in installed.paths)


def under(path: str, top: str) -> bool:
    """Whether `path` is `top` or lies below it (both normalised the same way)."""
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


def git_runs_another(args: list[str]) -> str | None:
    """The first of git's `args` that makes git run a program of the caller's choosing
    (GIT_RUNS, `-u` of a fetching command, an `ext::` remote), or None."""
    fetching = bool(GIT_FETCHING.intersection(args))
    for arg in args:
        if arg.startswith(GIT_RUNS) or (fetching and arg == "-u") or arg.startswith("ext::"):
            return arg.split("=", 1)[0]
    return None
