"""Finding a command's processes from outside: a command runs in its own PID namespace,
so the pids it could print (`$$`) are not the host's. A process is tagged instead: it
runs as `exec -a TAG ...`, and the host's /proc is searched for that name."""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Callable

import pytest


def new_tag() -> str:
    return f"smith-test-{uuid.uuid4().hex[:12]}"


def tagged(tag: str) -> list[int]:
    """Live (not zombie) processes whose argv[0] is `tag`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv0 = f.read().split(b"\0")[0]
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        if argv0 == tag.encode() and stat[stat.rfind(b")") + 2 :][:1] != b"Z":
            found.append(int(name))
    return found


def escapee(tag: str, ready: str) -> str:
    """Shell text that starts a process which leaves everything a mark or a process
    group could find (fork, setsid, fork again, exec with an empty environment), waits
    until it runs, then goes on (it runs when `tagged(tag)` finds it)."""
    import shutil

    bash = shutil.which("bash")
    inner = f"touch {ready}; exec -a {tag} sleep 300"  # exec -a: bash's, not sh's
    return (
        f"setsid sh -c '(env -i {bash} -c \"{inner}\" &)' </dev/null >/dev/null 2>&1; "
        f"while [ ! -e {ready} ]; do sleep 0.01; done; "
    )


def wait_for(predicate: Callable[[], bool], what: str, seconds: float = 20.0) -> None:
    """Poll `predicate` until it holds (processes end asynchronously), else fail."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def wait_gone(tag: str) -> None:
    wait_for(lambda: not tagged(tag), f"every process tagged {tag} to end")


def kill_tagged(tag: str) -> None:
    """Clean up after a failed test: end what the fix should have ended."""
    import signal

    for pid in tagged(tag):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
