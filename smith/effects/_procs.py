"""Processes a command starts end with it, however they try to leave.

A mark in the environment is not enough: a process that forks, calls setsid, forks
again and execs with an empty environment leaves the process group, the process tree
and the mark behind. So a command runs in a PID namespace where one can be made:

    unshare --pid --fork --kill-child --mount-proc [--user --map-root-user] --
        python -c INIT bash -c COMMAND

The namespace's init is a small reaper (INIT) that runs the shell as its child and
reports the shell's exit status on a pipe. When the init ends, the kernel kills every
process left in the namespace, whatever its session, parentage or environment; the init
ends when the shell does, when `unshare` is killed (`--kill-child`), and `unshare` is
killed when smith's process dies (PR_SET_PDEATHSIG), kill -9 included. Inside, the shell
is pid 2 and /proc shows only the namespace, so `kill $$`, `ps` and `pkill` behave.

Where no namespace can be made, processes that escape by a double fork are re-parented
to smith (a subreaper: smith._spawn) instead of init and are found there; the shell gets
PR_SET_PDEATHSIG, and the environment mark and process tree are searched as before.
Either way, once the command's own process has ended, what is left of its process group
is ended and waited for (smith._spawn.settle): bubblewrap's init, which can outlive the
bwrap that reported the command's status, too.

Either way `Job.identity()` says what identifies the command's processes (pid and start
time from /proc, so a reused pid is never mistaken for it); the effect journal records
it, and `end_leftovers` ends what is still running of an effect found unfinished on the
next start. smith's own helpers (rg, the git status reader, probes) are smith._spawn's
`Child`; every process gets its environment from smith._spawn.process_env.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

from smith._spawn import (
    HELPERS,
    dies_with_smith,
    pids,
    process_env,
    run_child,
    settle,
    stat_fields,
    subreaper,
)

MARK = "SMITH_TOOL_RUN"  # set in the command's environment; descendants inherit it
KILL_WAIT = 2.0  # seconds between SIGTERM and SIGKILL
GONE_WAIT = 5.0  # most seconds to wait for a killed namespace to be gone

# The namespace's init: run the command as a child, reap every orphan, report the
# command's wait status on the pipe (argv[1]), and end when the command does.
INIT = """\
import os, sys
report = int(sys.argv[1])
child = os.fork()
if child == 0:
    os.close(report)
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
while True:
    try:
        pid, status = os.wait()
    except ChildProcessError:
        break
    if pid == child:
        os.write(report, b"\\n%d\\n" % status)
        code = os.waitstatus_to_exitcode(status)
        os._exit(code if code >= 0 else 128 - code)
"""


@functools.cache
def namespace_prefix() -> tuple[str, ...] | None:
    """The `unshare` command line that runs a command in its own PID namespace, or None
    when one cannot be made here (no unshare, no permission)."""
    import shutil

    unshare = shutil.which("unshare")
    if unshare is None or not sys.platform.startswith("linux"):
        return None
    flags = ["--pid", "--fork", "--kill-child", "--mount-proc"]
    if os.geteuid() != 0:
        flags = ["--user", "--map-root-user", *flags]
    try:
        probe = run_child([unshare, *flags, "true"], cwd="/", env=process_env(secrets=True),
                          timeout=10)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return (unshare, *flags, "--") if probe.returncode == 0 else None


def start_time(pid: int) -> int | None:
    """The start time of `pid` (clock ticks after boot, /proc/PID/stat field 22), or None
    if there is no such process."""
    fields = stat_fields(pid)
    return None if fields is None else int(fields[19])


def _state(pid: int) -> tuple[int, int, bytes] | None:
    """(parent pid, session id, state letter) of `pid`, or None."""
    fields = stat_fields(pid)
    return None if fields is None else (int(fields[1]), int(fields[3]), fields[0])


def _alive(pid: int) -> bool:
    state = _state(pid)
    return state is not None and state[2] != b"Z"


class Job:
    """A running command: its process (the `unshare` or the shell itself), how its
    processes are confined, and how to end all of them."""

    def __init__(
        self,
        argv: list[str],
        *,
        cwd: str,
        env: dict[str, str],
        confine: Callable[[list[str]], list[str]] | None = None,
        sandbox: str = "off",
        sandbox_fds: tuple[int, ...] = (),
    ) -> None:
        """`confine`: what runs the reaper and the command in a sandbox (it makes the PID
        namespace: smith.effects._sandbox); `sandbox` names its mode for the record;
        `sandbox_fds`: descriptors the sandbox reads at its start (its seccomp filter), the
        caller's to close."""
        self.token = os.urandom(8).hex()
        self.sandbox = sandbox
        env = {**env, MARK: self.token}
        prefix: tuple[str, ...] | None = () if confine is not None else namespace_prefix()
        self.how = "pid-namespace" if prefix is not None else "subreaper"
        # A subreaper either way: escapees come back to smith, and so does bubblewrap's
        # own init when the bwrap that reports for it has gone first (waited for there).
        subreaper()
        in_child = dies_with_smith()  # after fork, before exec: end with smith
        self.report: int | None = None
        pass_fds: tuple[int, ...] = ()
        if prefix is not None:
            self.report, write = os.pipe()
            argv = [*prefix, sys.executable, "-S", "-E", "-c", INIT, str(write), *argv]
            if confine is not None:
                argv = confine(argv)
            pass_fds = (write, *sandbox_fds)
        try:
            self.proc = subprocess.Popen(
                argv,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
                pass_fds=pass_fds,
                preexec_fn=in_child,  # noqa: PLW1509 (only prctl, getppid and kill: no locks)
            )
        except BaseException:
            if self.report is not None:
                os.close(self.report)
            raise
        finally:
            if pass_fds:
                os.close(pass_fds[0])
        self.pid = self.proc.pid
        self.start = start_time(self.pid)
        _LEADERS.add(self.pid)  # not another command's orphan, for a search of the tree

    def identity(self) -> dict[str, object]:
        """What identifies this command's processes, for a record: its own process (pid
        and start time) and how the rest are confined."""
        return {"pid": self.pid, "start": self.start, "how": self.how, "mark": self.token,
                "sandbox": self.sandbox}  # fmt: skip

    def wait(self) -> int:
        """The command's exit status (negative: the signal that ended it), once it and
        everything left of its process group have ended (`settle`)."""
        code = self.proc.wait()
        settle(self.pid)
        _LEADERS.discard(self.pid)
        if self.report is None:
            return code
        try:
            data, read = b"", 0  # the init wrote the shell's status, or not; the command
            while read < 65536 and (chunk := os.read(self.report, 4096)):  # may have, too
                data, read = (data + chunk)[-128:], read + len(chunk)
        finally:
            os.close(self.report)
            self.report = None
        # The init was killed (the namespace ended with it), or the command wrote to the
        # pipe itself (it can reach it as /proc/$PPID/fd/N): what it says is not trusted
        # beyond being a wait status, and anything else gives the process's own status.
        last = data.split()[-1] if data.split() else b""
        if not last.isdigit():
            return code  # the init's own exit: the command's, 128+N for signal N
        status = int(last)
        return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)

    def end(self) -> None:
        """End the command and everything it started: SIGTERM to its process group,
        then, if anything is left after KILL_WAIT, SIGKILL to all of it."""
        if self.how == "pid-namespace":
            self._end_namespace()
        else:
            self._end_tree()
        settle(self.pid)
        _LEADERS.discard(self.pid)

    def _init(self) -> int | None:
        try:
            with open(f"/proc/{self.pid}/task/{self.pid}/children") as f:
                children = f.read().split()
        except OSError:
            return None
        return int(children[0]) if children else None

    def _end_namespace(self) -> None:
        init = self._init()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGTERM)  # the shell and its group; not the init
        try:
            self.proc.wait(timeout=KILL_WAIT)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)  # unshare; --kill-child ends the init
            self.proc.wait()
        # The init's end ends every process in the namespace; wait until it has.
        deadline = time.monotonic() + GONE_WAIT
        while init is not None and _alive(init) and time.monotonic() < deadline:
            time.sleep(0.01)

    def _end_tree(self) -> None:
        first = self._targets()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, sig)
            targets = first | self._targets() if sig == signal.SIGKILL else first
            for pid in targets:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            try:
                self.proc.wait(timeout=KILL_WAIT if sig == signal.SIGTERM else None)
            except subprocess.TimeoutExpired:
                continue
            if sig == signal.SIGTERM and not any(_alive(p) for p in self._targets()):
                break
        _reap(first | self._targets())

    def _targets(self) -> set[int]:
        """Without a namespace: the process tree, the marked processes, and orphans
        re-parented to smith (its subreaper) that left its session since this started."""
        me, session = os.getpid(), os.getsid(0)
        tree: dict[int, list[int]] = {}
        found: set[int] = set()
        for pid in pids():
            state = _state(pid)
            if state is None:
                continue
            parent, sid, _ = state
            tree.setdefault(parent, []).append(pid)
            ours = pid == self.pid or pid in _LEADERS or pid in HELPERS
            if parent == me and sid != session and not ours:
                started = start_time(pid)
                if started is not None and self.start is not None and started >= self.start:
                    found.add(pid)
        found |= _marked(self.token)
        todo = [self.pid]
        while todo:
            for child in tree.get(todo.pop(), []):
                if child not in found:
                    found.add(child)
                    todo.append(child)
        return found - {me}


_LEADERS: set[int] = set()  # the processes of commands running now (Job.pid)


def _reap(pids: set[int]) -> None:
    """Collect orphans re-parented to smith (its subreaper) once they have ended."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def _marked(token: str) -> set[int]:
    """Processes carrying this run's environment mark."""
    needle = f"{MARK}={token}".encode()
    found = set()
    for pid in pids():
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.add(pid)
        except OSError:
            continue
    return found


def end_leftovers(identities: list[dict[str, object]]) -> list[int]:
    """End what is still running of commands whose effects were left unfinished (smith
    was killed and, somehow, its processes were not): each identity is a `Job.identity`
    from the records. A pid whose start time differs is another process now and is left
    alone. Returns the pids that were ended."""
    ended = []
    for identity in identities:
        pid, start = identity.get("pid"), identity.get("start")
        if not isinstance(pid, int) or pid <= 1 or start is None or start_time(pid) != start:
            continue
        targets = {pid}
        mark = identity.get("mark")
        if identity.get("how") != "pid-namespace" and isinstance(mark, str):
            targets |= _marked(mark)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)  # its own group (a new session)
        for target in targets:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(target, signal.SIGKILL)  # unshare: --kill-child ends the namespace
        ended.append(pid)
    return ended
