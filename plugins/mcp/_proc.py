"""A stdio server's process: started by the SDK's stdio client, through smith's own
spawn, so that it

- inherits the descriptors its sandbox reads at its start (bubblewrap's socket filter,
  the one the bash tool's commands get: `bwrap --seccomp FD`) and nothing else;
- runs in a process group of its own, which is killed (SIGKILL) when the server is
  stopped and the SDK's own shutdown (stdin closed, SIGTERM) did not end it in time, so
  a server that ignores both never outlives smith;
- has its stderr read into a bounded tail (the last TAIL bytes), never a file that grows
  with what it writes.

The SDK's stdio client starts its process through one function of its module
(`_create_platform_compatible_process`); `install` puts smith's spawn there once. A
process the SDK starts outside a Spawn (none set in the task) is started as the SDK
would. The SDK's tracebacks for a line a server wrote that is no JSON-RPC are kept off
stderr (the connection says what went wrong in smith's own words).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import logging
import os
import signal
import subprocess
import sys
from typing import Any

TAIL = 8 * 1024

_LIVE: set[Spawn] = set()  # started and not yet killed: killed when smith exits

_SPAWN: contextvars.ContextVar[Spawn | None] = contextvars.ContextVar("mcp_spawn", default=None)


class Spawn:
    """One start of a stdio server: `fds` it alone inherits; once started, its process
    group (`pgid`) and the tail of what it wrote on stderr."""

    def __init__(self, fds: tuple[int, ...] = ()) -> None:
        self.fds = fds
        self.pgid: int | None = None
        self.process: Any = None
        self.tail = bytearray()
        self._reader: asyncio.Task[None] | None = None

    def close_fds(self) -> None:
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds = ()

    def said(self) -> str:
        """The last line it wrote on stderr (300 characters at most)."""
        text = bytes(self.tail).decode("utf-8", "replace")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return lines[-1][:300] if lines else ""

    def kill(self) -> None:
        """Its whole process group killed (what is left of it), while its leader is not
        reaped: until then no other process can have its number."""
        pgid, self.pgid = self.pgid, None
        _LIVE.discard(self)
        process, self.process = self.process, None
        if pgid is not None and process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)

    async def _read(self, stream: Any) -> None:
        with contextlib.suppress(Exception):
            while True:
                chunk = await stream.receive(4096)
                self.tail += chunk
                if len(self.tail) > TAIL:
                    del self.tail[: len(self.tail) - TAIL]


def spawning(spawn: Spawn) -> contextvars.Token[Spawn | None]:
    """`spawn` is how the stdio server the current task starts next is started."""
    return _SPAWN.set(spawn)


def reset(token: contextvars.Token[Spawn | None]) -> None:
    _SPAWN.reset(token)


def install() -> bool:
    """smith's spawn in the SDK's stdio client (once); False when this SDK starts its
    processes some other way (then a sandboxed server cannot be given its filter)."""
    from mcp.client import stdio

    original = getattr(stdio, "_create_platform_compatible_process", None)
    if original is None or sys.platform == "win32":
        return False
    if getattr(original, "smith_spawn", False):
        return True

    async def create(
        command: str,
        args: list[str],
        env: dict[str, str] | None = None,
        errlog: Any = sys.stderr,
        cwd: Any = None,
    ) -> Any:
        spawn = _SPAWN.get()
        if spawn is None:
            return await original(command, args, env, errlog, cwd)
        import anyio

        process = await anyio.open_process(
            [command, *args],
            env=env,
            stderr=subprocess.PIPE,
            cwd=cwd,
            start_new_session=True,
            pass_fds=spawn.fds,
        )
        spawn.pgid, spawn.process = process.pid, process  # its own session: its group
        _LIVE.add(spawn)
        spawn.close_fds()  # it has its own copies
        if process.stderr is not None:
            spawn._reader = asyncio.ensure_future(spawn._read(process.stderr))
        return process

    create.smith_spawn = True  # type: ignore[attr-defined]
    stdio._create_platform_compatible_process = create
    return True


@atexit.register
def _kill_all() -> None:
    """A server still running when smith exits (its stop never came) dies with it."""
    for spawn in list(_LIVE):
        spawn.kill()


def _quiet(record: logging.LogRecord) -> bool:
    """Not the SDK's traceback for a line that is no JSON-RPC (nor its stdout's end)."""
    return record.levelno < logging.ERROR


# The SDK logs a server's malformed line with a traceback (logger.exception); with no
# handler of its own Python's last resort prints it on stderr, under smith's output. A
# handler smith's --debug log adds still gets its warnings.
logging.getLogger("mcp.client.stdio").addFilter(_quiet)
logging.getLogger("mcp.client.stdio").addHandler(logging.NullHandler())


def readable(
    wrapped: list[str], argv: list[str], hidden: tuple[str, ...], shown: tuple[str, ...] = ()
) -> list[str]:
    """`wrapped` (a bwrap command line) with the files the server's own command line
    names mounted read-only, where the sandbox's private /tmp would hide them: each
    regular file alone (its folder, /tmp itself maybe, holds other programs' sockets),
    never a folder, a socket, nor one of smith's own files (sessions, credentials,
    configuration); and the folders `shown` names (a skill's, within one), read-only."""
    import stat

    own = [os.path.realpath(p) for p in hidden]

    def under(path: str, directory: str) -> bool:
        return path == directory or path.startswith(directory.rstrip("/") + "/")

    binds: list[str] = []
    for word in dict.fromkeys(argv):
        if not os.path.isabs(word):
            continue
        real = os.path.realpath(word)
        try:
            regular = stat.S_ISREG(os.stat(real).st_mode)
        except OSError:
            continue
        if not regular or not under(real, "/tmp") or any(under(real, o) for o in own):
            continue
        for place in dict.fromkeys((real, os.path.abspath(word))):
            binds += ["--ro-bind", real, place]
    for folder in shown:
        real = os.path.realpath(folder)
        if os.path.isdir(real) and not any(under(o, real) for o in own):
            binds += ["--ro-bind", real, real]
    if not binds:
        return wrapped
    at = wrapped.index("--chdir")
    return [*wrapped[:at], *binds, *wrapped[at:]]
