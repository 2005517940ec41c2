"""The sandbox's socket filter: a seccomp program bubblewrap installs in front of every
command when `sandbox.network` is off, so a command reaches no socket of the host.

A read-only bind does not stop `connect()`: a unix socket anywhere the command can see
(an ssh ControlMaster socket in ~/.ssh, ~/.docker/run/docker.sock, a password manager's
agent, a git credential cache) answers it. Seccomp cannot see the path a `connect()`
names, only the numbers a system call is given, so the filter stops what every such
connection needs first, a unix socket of its own:

    socket(AF_UNIX, ...)                       refused (EAFNOSUPPORT)
    socketpair(AF_UNIX, SOCK_DGRAM|SOCK_RAW)   refused: such a pair can still send to,
                                               or connect to, any datagram socket by path
    socketpair(AF_UNIX, SOCK_STREAM|SEQPACKET) allowed: connected to each other and to
                                               nothing else (connect() says EISCONN)
    socket(AF_VSOCK, ...)                      refused: the hypervisor's host, which no
                                               network namespace separates
    io_uring_*                                 refused (ENOSYS): its requests make
                                               sockets and connections seccomp never sees

The abstract namespace needs no rule: it belongs to the network namespace, and the
command has its own. Sockets of the other families (AF_INET, AF_INET6, AF_NETLINK) work
in that namespace, which has only loopback. 32-bit calls (`int 0x80`, x32; AArch32 on
arm64) are filtered alike, and `socketcall`, which hides its arguments in memory, may
not make a socket at all; other architectures' calls end the process.

The program is built once per process with libseccomp (`pyseccomp`) and handed to each
bwrap as a pipe it reads (`bwrap --seccomp FD`): `descriptor()`.
"""

from __future__ import annotations

import errno
import functools
import os

AF_UNIX, AF_VSOCK = 1, 40
SOCK_DGRAM, SOCK_RAW, SOCK_TYPE_MASK = 2, 3, 0xF
SYS_SOCKET, SYS_SOCKETPAIR = 1, 8  # socketcall's call numbers (32-bit x86)
LOW32 = 0xFFFFFFFF  # an int argument is the register's low half, whatever the high one holds
LIBRARY = "libseccomp.so.2"


class FilterUnavailable(Exception):
    """The filter cannot be built here: `cause` and `remedy`, for a diagnostic."""

    def __init__(self, cause: str, remedy: str) -> None:
        super().__init__(cause)
        self.cause, self.remedy = cause, remedy


MISSING = FilterUnavailable(
    f"libseccomp ({LIBRARY}), which the sandbox's socket filter needs, is not installed",
    "install it: `apt-get install libseccomp2` (Debian, Ubuntu), `dnf install libseccomp` "
    "(Fedora); or set sandbox.network true, which opens the network and the host's "
    "sockets to commands",
)


@functools.cache
def problem() -> FilterUnavailable | None:
    """Why the filter cannot be had here, or None (checked without building it: loading
    libseccomp is cheap, importing its bindings is not)."""
    import ctypes
    import importlib.util

    try:
        ctypes.CDLL(LIBRARY)
    except OSError:
        return MISSING
    if importlib.util.find_spec("pyseccomp") is None:
        return FilterUnavailable(
            "the pyseccomp package (libseccomp's bindings) is missing",
            "reinstall smith: `pip install --force-reinstall smith`",
        )
    return None


@functools.cache
def program() -> bytes:
    """The filter as BPF, for bwrap --seccomp (built once). Raises FilterUnavailable."""
    found = problem()
    if found is not None:
        raise found
    try:
        import pyseccomp as sc  # type: ignore[import-untyped]
    except (ImportError, RuntimeError) as exc:  # RuntimeError: it found no libseccomp
        raise FilterUnavailable(f"libseccomp's bindings could not load ({exc})",
                                MISSING.remedy) from None  # fmt: skip
    import tempfile

    refused = sc.ERRNO(errno.EAFNOSUPPORT)
    box = sc.SyscallFilter(sc.ALLOW)
    box.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
    for arch in _compatible(sc):
        box.add_arch(arch)
    for family in (AF_UNIX, AF_VSOCK):
        box.add_rule(refused, "socket", sc.Arg(0, sc.MASKED_EQ, LOW32, family))
    for kind in (SOCK_DGRAM, SOCK_RAW):  # SOCK_RAW makes a datagram socket for AF_UNIX
        box.add_rule(refused, "socketpair", sc.Arg(0, sc.MASKED_EQ, LOW32, AF_UNIX),
                     sc.Arg(1, sc.MASKED_EQ, SOCK_TYPE_MASK, kind))  # fmt: skip
    for name in ("io_uring_setup", "io_uring_enter", "io_uring_register"):
        box.add_rule(sc.ERRNO(errno.ENOSYS), name)
    if sc.Arch.X86 in _compatible(sc):
        for call in (SYS_SOCKET, SYS_SOCKETPAIR):  # its arguments are out of the filter's sight
            box.add_rule(refused, "socketcall", sc.Arg(0, sc.EQ, call))
    with tempfile.TemporaryFile() as out:
        box.export_bpf(out)
        out.seek(0)
        return out.read()


def _compatible(sc: object) -> tuple[int, ...]:
    """The other ABIs this machine's kernel runs (a 64-bit process may call them too)."""
    arch = sc.Arch  # type: ignore[attr-defined]
    machine = os.uname().machine  # platform.machine(), without importing platform
    if machine == "x86_64":
        return (arch.X86, arch.X32)
    if machine in ("aarch64", "arm64"):
        return (arch.ARM,)
    return ()


def descriptor() -> int:
    """A pipe's read end holding the filter, for one bwrap (--seccomp FD): the caller
    passes it to that process only (pass_fds) and closes it once it started."""
    data = program()
    read, write = os.pipe()
    try:
        os.write(write, data)  # a few hundred bytes: far below a pipe's buffer
    finally:
        os.close(write)
    return read
