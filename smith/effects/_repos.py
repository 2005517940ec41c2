"""Git repositories inside the writable project: found before a sandboxed command so the
sandbox mounts them read-only, and after it so one the command made is moved out.

A repository's configuration and hooks are programs: `core.fsmonitor` runs at every `git
status` (git-aware shell prompts run one by themselves), a hook at a checkout. A nested
repository (a vendored clone, a folder of several repositories) or one a command makes
(`git init`, an unpacked archive) is run by the user's own git later, outside any
sandbox. So:

- every entry named `.git` (a directory, a gitlink file, a symlink) and every directory
  shaped like a git directory (HEAD with objects and refs, or with commondir: a bare
  repository) under a writable root is mounted read-only for the command, as is every
  entry named in tools.protected without a slash (.smith), at any depth;
- a repository that appeared while the command ran is moved into smith's data directory
  (quarantine), and the command's result says where it went.

Finding them walks the tree, but not again and again: a directory's listing is kept with
its identity and times (device, inode, mtime, ctime), and read again only when they
changed, since adding, removing or renaming an entry changes its directory's ctime, which
no program can set back. A directory changed in the last RACY seconds is not kept (a
change in the same clock tick would not show), as git treats racily clean files. A walk
then costs one lstat per directory (bench_sandbox measures it).
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

RACY = 2.0  # seconds: a directory changed this recently is listed again next time
GIT = ".git"
GITDIR_SHAPE = frozenset({"HEAD", "objects", "refs"})


@dataclass(frozen=True)
class Mark:
    """An entry to protect: its path, its identity (device, inode) and whether it is a
    git repository (a `.git` or a git directory) rather than another protected name."""

    path: str
    ident: tuple[int, int]
    repo: bool
    link: bool  # a symbolic link: its target is what a bind would protect


# directory -> ((dev, ino, mtime, ctime), its subdirectories, its marks)
_Listing = tuple[tuple[int, int, int, int], tuple[str, ...], tuple[Mark, ...]]
_CACHE: dict[str, _Listing] = {}
_CACHED_NAMES: list[frozenset[str]] = [frozenset()]
_LOCK = threading.Lock()


def scan(roots: Iterable[str], names: Iterable[str], skip: Iterable[str] = ()) -> dict[str, Mark]:
    """Every repository and protected entry under `roots` (real paths), by path; `names`:
    the protected names (`.git` always is one). Nothing under a mark is walked, nor the
    directories in `skip` (smith's own, hidden from commands: its quarantine is there)."""
    wanted = frozenset({GIT, *names})
    skipped = frozenset(skip)
    found: dict[str, Mark] = {}
    fresh = time.time_ns() - int(RACY * 1e9)
    with _LOCK:
        if _CACHED_NAMES[0] != wanted:
            _CACHE.clear()
            _CACHED_NAMES[0] = wanted
        for root in roots:
            stack = [root]
            while stack:
                directory = stack.pop()
                if directory in skipped:
                    continue
                try:
                    st = os.lstat(directory)
                except OSError:
                    continue
                if not stat.S_ISDIR(st.st_mode):
                    continue
                key = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
                listing = _CACHE.get(directory)
                if listing is None or listing[0] != key:
                    listing = (key, *_list(directory, st.st_dev, wanted))
                    if max(st.st_mtime_ns, st.st_ctime_ns) < fresh:
                        _CACHE[directory] = listing
                    else:
                        _CACHE.pop(directory, None)
                _, subdirectories, marks = listing
                found.update((m.path, m) for m in marks)
                stack.extend(subdirectories)
    return found


def _mark(path: str, *, repo: bool) -> Mark | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return Mark(path, (st.st_dev, st.st_ino), repo, stat.S_ISLNK(st.st_mode))


def _list(directory: str, device: int,
          wanted: frozenset[str]) -> tuple[tuple[str, ...], tuple[Mark, ...]]:  # fmt: skip
    """A directory's subdirectories to walk and its marks (itself, when it is shaped
    like a git directory: then nothing under it is walked)."""
    try:
        with os.scandir(directory) as listing:
            entries = list(listing)
    except OSError:
        # Not listable (mode 0300, say) but maybe searchable: look the names up.
        names = [n for n in (*wanted, *GITDIR_SHAPE) if os.path.lexists(os.path.join(directory, n))]
        entries = []
    else:
        names = [e.name for e in entries]
    present = set(names)
    if "HEAD" in present and (present >= GITDIR_SHAPE or "commondir" in present):
        itself = Mark(directory, (device, os.lstat(directory).st_ino), True, False)
        return (), (itself,)
    marks = [m for n in present & wanted
             if (m := _mark(os.path.join(directory, n), repo=n == GIT)) is not None]  # fmt: skip
    subdirectories = tuple(e.path for e in entries
                           if e.name not in wanted and e.is_dir(follow_symlinks=False))  # fmt: skip
    return subdirectories, tuple(marks)


def appeared(before: dict[str, Mark], after: dict[str, Mark]) -> list[Mark]:
    """The repositories in `after` that were not in `before`: at a new path, or a new
    entry at an old path. One moved (renamed with its directory) keeps its identity: a
    mounted entry cannot be removed while the command runs, so no new one takes its
    inode."""
    mounted = {m.ident for m in before.values() if not m.link}
    return [m for path, m in sorted(after.items())
            if m.repo and (path not in before or before[path].ident != m.ident)
            and m.ident not in mounted]  # fmt: skip


def quarantine(marks: Sequence[Mark], into: str) -> list[tuple[str, str, str]]:
    """Move each mark under `into` (a new owner-only directory named by the time, then
    the mark's whole path): (from, to, "") for each moved, (from, "", why) for each that
    could not be."""
    import secrets
    import shutil

    if not marks:
        return []
    batch = os.path.join(into, time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3))
    done = []
    for mark in marks:
        target = os.path.join(batch, mark.path.lstrip("/"))
        try:
            _private_dirs(into, os.path.dirname(target))
            if not mark.link and os.path.isdir(mark.path):
                os.chmod(mark.path, os.lstat(mark.path).st_mode | stat.S_IRWXU)  # to move it
            try:
                os.rename(mark.path, target)
            except OSError:  # another filesystem: copied, then removed
                shutil.move(mark.path, target)
            _owner_only(target)
            done.append((mark.path, target, ""))
        except OSError as exc:
            done.append((mark.path, "", exc.strerror or str(exc)))
    return done


def _private_dirs(top: str, path: str) -> None:
    """`path` made, each directory from `top` down to it owner-only."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    here = os.path.dirname(top)
    for part in os.path.relpath(path, here).split(os.sep):
        here = os.path.join(here, part)
        os.chmod(here, 0o700)


def _owner_only(path: str) -> None:
    """No group or other bits on what smith keeps (everything under its data directory)."""
    for top, dirs, files in os.walk(path):
        for name in (top, *(os.path.join(top, n) for n in (*dirs, *files))):
            st = os.lstat(name)
            if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o077:
                os.chmod(name, stat.S_IMODE(st.st_mode) & 0o700)
    st = os.lstat(path)
    if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o077:
        os.chmod(path, stat.S_IMODE(st.st_mode) & 0o700)
