"""Writing the project's files: the one place file history changes them (ShadowRepo.apply
calls it), so that the rules below hold for every undo, redo and restore.

- A file is replaced whole, through a temporary file renamed over it, so a crash leaves
  either version, never half of one; an existing file keeps its permission bits but for
  the executable ones, which follow git's mode.
- Nothing is written or deleted through a symbolic link or below a file: a directory above
  a path that is a link (possibly to outside the project) stops the write.
- Nothing is written or deleted in a `.git` (the project's, a nested repository's, in any
  case): git's data is never in history (`in_git_dir`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading

# git's modes of tree entries
FILE, EXECUTABLE, LINK, GITLINK, TREE = 0o100644, 0o100755, 0o120000, 0o160000, 0o040000


def in_git_dir(path: str) -> bool:
    """Whether `path` is a `.git` or inside one (any case, as git and libgit2 see it)."""
    return any(part.lower() == ".git" for part in path.split("/"))


def real_parents(root: str, path: str) -> bool:
    """Whether every directory above `path` that exists is a directory, not a link to one
    (which could lead out of the project) nor a file."""
    parent = root
    for part in path.split("/")[:-1]:
        parent = os.path.join(parent, part)
        try:
            st = os.lstat(parent)
        except FileNotFoundError:
            return True  # made afresh below here
        if not stat.S_ISDIR(st.st_mode):
            return False
    return True


def remove(root: str, path: str) -> bool:
    """Delete the file or link at `path` (not a directory: git has none). False, deleting
    nothing, when a directory above it is a link or a file: nothing of the project is
    there."""
    if not real_parents(root, path):
        return False
    full = os.path.join(root, path)
    if os.path.islink(full) or (os.path.lexists(full) and not os.path.isdir(full)):
        os.unlink(full)
    return True


def write(root: str, path: str, data: bytes, mode: int) -> None:
    """Replace the file at `path` with `data` (or a link to it), keeping an existing
    file's permission bits apart from the executable ones, which follow `mode`."""
    full = os.path.join(root, path)
    if not real_parents(root, path):
        raise NotADirectoryError(
            errno.ENOTDIR, "a link or a file stands where a directory must be", full
        )
    directory = os.path.dirname(full)
    if os.path.isdir(full) and not os.path.islink(full):
        # Emptied by the deletions before but for empty directories (git does not see
        # them); one that still holds a file raises.
        for emptied, _, _ in os.walk(full, topdown=False):
            os.rmdir(emptied)
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, f".smith-{os.getpid()}-{threading.get_ident()}.tmp")
    if mode == LINK:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        os.symlink(os.fsdecode(data), tmp)
        os.replace(tmp, full)
        return
    try:
        old = os.lstat(full)
        bits = old.st_mode & 0o7777 if not os.path.islink(full) else None
    except FileNotFoundError:
        bits = None
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if bits is None:
            bits = os.fstat(fd).st_mode & 0o7777  # 0o666 less the umask
        if mode == EXECUTABLE:
            bits |= (bits & 0o444) >> 2
        else:
            bits &= ~0o111
        os.fchmod(fd, bits)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    os.replace(tmp, full)
