"""The processes smith starts for itself, and the environment every process it starts gets
(exported by smith.effects; here, at the bottom of the layers, so that smith.vcs and the
frontends may use it too).

    env = process_env(withhold, secrets=True)      # no provider key, no secret read
    with Child([rg, ...], cwd=cwd, env=env) as child:
        out = child.proc.stdout.read()             # ended and waited for on leaving
    done = run_child(argv, cwd=cwd, env=env, timeout=2.0)

Every process smith starts gets `process_env`: smith's own environment without the
variables that hold provider keys (named: ToolContext.withhold, what
smith.providers.credential_variables lists) and, for smith's own helpers, without any
variable whose value holds a secret smith has registered. A repository's git filter, a
project's script, a helper that misbehaves sees no key to print.

smith's own helpers (rg for grep and find, the reader of the environment block's git
status, probes) run as a `Child`: a process group of its own, PR_SET_PDEATHSIG so it dies
with smith (kill -9 included), and, when its call ends however it ends (finished, cut
short, cancelled, interrupted), SIGKILL to what is left of its group and a wait for all
of it (`settle`). smith is a subreaper from its first child on (PR_SET_CHILD_SUBREAPER),
so a process whose parent leaves before it (bubblewrap's own init outlives the bwrap that
reports its status) comes back to smith and is waited for, not left to init after smith
has exited. Commands (bash) run as a smith.effects._procs Job, which follows the same
rules.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
GONE_WAIT = 5.0  # most seconds to wait for what is left of a process group to be gone


@functools.cache
def _prctl() -> object:
    import ctypes

    return ctypes.CDLL(None, use_errno=True).prctl


def prctl_set(option: int, value: int) -> bool:
    """prctl(option, value); False where it cannot be called or fails."""
    try:
        prctl = _prctl()
        return bool(prctl(option, value, 0, 0, 0) == 0)  # type: ignore[operator]
    except (OSError, AttributeError):
        return False


@functools.cache
def subreaper() -> bool:
    """Make smith a subreaper (once): orphans of its children come back to it, to be
    waited for (`settle`), instead of going to init, maybe after smith has exited."""
    return prctl_set(PR_SET_CHILD_SUBREAPER, 1)


def dies_with_smith() -> Callable[[], None]:
    """What a child runs after fork, before exec: it gets SIGKILL when smith (the thread
    that started it) goes, kill -9 included. Only prctl, getppid and kill: no locks."""
    parent = os.getpid()
    _prctl()  # loaded here: the child only calls it

    def in_child() -> None:
        prctl_set(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # smith died before that took effect
            os.kill(os.getpid(), signal.SIGKILL)

    return in_child


def process_env(
    withhold: Iterable[str] = (),
    extra: Mapping[str, str] | None = None,
    *,
    secrets: bool = False,
) -> dict[str, str]:
    """The environment of a process smith starts, its own helpers included: smith's own
    without the variables `withhold` names (the provider keys) and, with `secrets`,
    without any variable whose value holds a secret smith has registered (every
    credential it read, whatever its variable's name); then `extra`."""
    from smith.diagnostics import scrub

    dropped = set(withhold)
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in dropped and not (secrets and len(value) >= 4 and scrub(value) != value)
    }
    return {**env, **(extra or {})}


HELPERS: set[int] = set()  # the Child processes running now


class Child:
    """One of smith's own helper processes, as a context manager: in a process group of
    its own, stdin closed, killed with smith, and on leaving the block ended (SIGKILL to
    its group) and waited for with everything of its group."""

    def __init__(
        self,
        argv: list[str],
        *,
        cwd: str,
        env: Mapping[str, str],
        stdout: int = subprocess.PIPE,
        stderr: int = subprocess.PIPE,
    ) -> None:
        subreaper()
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            process_group=0,
            preexec_fn=dies_with_smith(),  # noqa: PLW1509 (only prctl, getppid and kill)
        )
        self.pid = self.proc.pid
        HELPERS.add(self.pid)

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the process if it still runs, then wait for it and for whatever its group
        still holds (`settle`)."""
        try:
            if self.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.pid, signal.SIGKILL)
            self.proc.wait()
            settle(self.pid)
        finally:
            HELPERS.discard(self.pid)
            for pipe in (self.proc.stdout, self.proc.stderr):
                if pipe is not None:
                    pipe.close()


def run_child(
    argv: list[str], *, cwd: str, env: Mapping[str, str], timeout: float
) -> subprocess.CompletedProcess[bytes]:
    """`subprocess.run` for a helper: a `Child` with its output captured, ended and
    waited for at `timeout` (then subprocess.TimeoutExpired) or when interrupted."""
    with Child(argv, cwd=cwd, env=env) as child:
        out, err = child.proc.communicate(timeout=timeout)
        return subprocess.CompletedProcess(argv, child.proc.returncode, out, err)


def settle(group: int) -> None:
    """Once the leader of process group `group` was waited for: SIGKILL to what is left
    of the group, and those of its processes that came back to smith (a subreaper)
    reaped, until none is left; at most GONE_WAIT seconds."""
    me = os.getpid()
    deadline = time.monotonic() + GONE_WAIT
    while True:
        try:
            os.killpg(group, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return  # nothing of the group is left, zombies included
        for pid in pids():
            fields = stat_fields(pid)
            if fields is not None and int(fields[1]) == me and int(fields[2]) == group:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)
        if time.monotonic() >= deadline:
            return
        time.sleep(0.005)


def stat_fields(pid: int) -> list[bytes] | None:
    """The fields of /proc/PID/stat after the command name (state, parent, process
    group, session, ...), or None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 :].split()


def pids() -> list[int]:
    """Every process id in /proc."""
    try:
        return [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return []
