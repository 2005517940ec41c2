"""Reading a file that smith itself reads on someone's behalf: an instruction file, a
prompt template, a prompt file, an ignore file, an image, what the read tool reads
(exported by smith.effects; here, at the bottom of the layers, so that anything may use
it without importing the effect machinery).

    reach = Reach.project(root, private=(data_home, config_home))
    data = read_file(os.path.join(root, "AGENTS.md"), limit=32768, reach=reach)

Every such file follows the read tool's rules:

- where: once symbolic links are resolved, inside the reach's roots (a project's file
  stays in the project; `Reach.anywhere` for the user's own files and choices), and never
  inside smith's own directories (`private`: its data and configuration, which hold its
  credentials, sessions and trust), unless the project itself lies in one (the user's
  choice, as for the read tool);
- what: a regular file only: no FIFO, socket, device or directory, and nothing of /proc or
  /sys, whose files call themselves regular and hold the process's environment and the
  kernel's state;
- how: checked before it is opened (opening a device can do things), opened without
  blocking (a FIFO put in its place since the check cannot hang smith), checked again on
  what was opened (the descriptor's own path, so a link swapped in meanwhile is caught),
  and read up to a bound.

A file refused is `FileRefused`, whose `reason` says what it is or where its link leads and
`fix` what to do; one over the bound `FileTooBig` (a `FileRefused`); one that cannot be read at
all (missing, no permission) an OSError.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

PSEUDO = ("/proc", "/sys")  # the kernel's filesystems: their "regular" files are not files
_CHUNK = 1 << 16


class FileRefused(Exception):
    """A file smith will not read: `reason` (what it is, where its link leads) and `fix`
    (what the user can do), for the caller's diagnostic."""

    def __init__(self, path: str, reason: str, fix: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
        self.fix = fix


class FileTooBig(FileRefused):
    """A file over the bound it is read with: `size` bytes (at least), `limit`."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(
            path,
            f"it is {size:,} bytes, over the {limit:,} it may be",
            f"shorten {path}",
        )
        self.size = size
        self.limit = limit


@dataclass(frozen=True)
class Reach:
    """Where a file smith reads on someone's behalf may lie. `roots`: the directories it
    must be inside once symbolic links are resolved (None: anywhere, for the user's own
    choices); `private`: smith's own directories, never read from (unless a root lies
    in one); `links`: whether the file itself may be a symbolic link."""

    roots: tuple[str, ...] | None = None
    private: tuple[str, ...] = ()
    links: bool = True

    @classmethod
    def project(cls, root: str, *, private: Sequence[str], links: bool = True) -> Reach:
        """A project's file: inside `root`, never in `private`."""
        return cls((root,), tuple(private), links)

    @classmethod
    def anywhere(cls, *, private: Sequence[str] = ()) -> Reach:
        """The user's own file or choice: anywhere but `private`."""
        return cls(None, tuple(private))

    def check(self, path: str, real: str) -> None:
        """Raise FileRefused when `real` (the real path of `path`) lies outside the roots,
        inside a private directory, or in /proc or /sys."""
        linked = real != os.path.abspath(path)
        leads = f"it leads to {real} through a symbolic link" if linked else ""
        for pseudo in PSEUDO:
            if _under(real, pseudo):
                raise _kernel(path, leads, pseudo)
        roots = [os.path.realpath(r) for r in self.roots or ()]
        for own in (os.path.realpath(p) for p in self.private):
            if _under(real, own) and not any(_under(r, own) for r in roots):
                raise FileRefused(
                    path,
                    f"{leads or 'it is'}{',' if leads else ''} inside smith's own directory "
                    f"{own} (credentials, sessions, configuration), which smith never reads "
                    "on anyone's behalf",
                    f"remove {path}, or replace it with a regular file of its own",
                )
        if self.roots is not None and not any(_under(real, r) for r in roots):
            raise FileRefused(
                path,
                f"{leads or 'it is'}{',' if leads else ''} outside the project {roots[0]}",
                f"replace {path} with a regular file inside {roots[0]}, or remove it",
            )


def read_file(path: str, *, limit: int | None, reach: Reach) -> bytes:
    """The bytes of the regular file `path` (absolute), at most `limit` (None: no bound,
    for the read tool, which bounds what it returns), if `reach` allows where it lies.
    Raises FileRefused, FileTooBig or OSError (see the module doc)."""
    if not reach.links and os.path.islink(path):
        raise FileRefused(
            path,
            f"it is a symlink (to {os.path.realpath(path)}), which this file may not be",
            f"replace {path} with a regular file (a copy of what it links to)",
        )
    real = os.path.realpath(path)
    reach.check(path, real)
    _regular(path, os.stat(real))  # before opening: opening a device can do things
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(real, flags)
    try:
        info = os.fstat(fd)
        _regular(path, info)
        if info.st_dev in _pseudo_devices():  # /proc or /sys mounted elsewhere too
            raise _kernel(path, f"it leads to {real}", "/proc or /sys")
        opened = _opened(fd, real)
        if opened != real:  # a link was swapped in along the way since the check
            reach.check(path, opened)
        size = info.st_size
        if limit is not None and size > limit:
            raise FileTooBig(path, size, limit)
        os.set_blocking(fd, True)
        parts: list[bytes] = []
        got = 0
        while limit is None or got <= limit:
            chunk = os.read(fd, _CHUNK if limit is None else min(_CHUNK, limit + 1 - got))
            if not chunk:
                break
            parts.append(chunk)
            got += len(chunk)
    finally:
        os.close(fd)
    if limit is not None and got > limit:
        raise FileTooBig(path, max(got, size), limit)
    return b"".join(parts)


def file_kind(mode: int) -> str:
    """What a file of `mode` is, as a diagnostic names it: "a FIFO (named pipe)"."""
    for test, name in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _regular(path: str, info: os.stat_result) -> None:
    if stat.S_ISREG(info.st_mode):
        return
    raise FileRefused(
        path,
        f"it is {file_kind(info.st_mode)}, not a regular file (reading one could block or "
        "never end)",
        f"replace {path} with a regular file, or remove it",
    )


def _kernel(path: str, leads: str, pseudo: str) -> FileRefused:
    return FileRefused(
        path,
        f"{leads or 'it is'}{',' if leads else ''} a file of the kernel's {pseudo} (the state "
        "of a process or of the system), not a regular file",
        f"replace {path} with a regular file, or remove it",
    )


def _pseudo_devices() -> frozenset[int]:
    if not _PSEUDO_DEVICES:
        found = set()
        for directory in PSEUDO:
            with contextlib.suppress(OSError):
                found.add(os.stat(directory).st_dev)
        _PSEUDO_DEVICES.append(frozenset(found))
    return _PSEUDO_DEVICES[0]


_PSEUDO_DEVICES: list[frozenset[int]] = []


def _opened(fd: int, real: str) -> str:
    """The path of what `fd` is open on, as the kernel has it (Linux); `real` where it
    cannot say."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return real


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)
