"""File history's work on the files runs where it cannot hold up the process: libgit2 may
take long (a huge tree, a filesystem that stalls) or, on a file `_rules.py` did not
foresee, never return, and a thread inside a C call cannot take a signal.

    job = Job()
    snap = run(job, lambda: take(job), stopping=lambda: runtime.aborting)
    # inside take(): ... scan ...; if not job.commit(): return  (abandoned: record nothing)

`run` does the work in a daemon thread of its own and waits for it; the waiting thread
stays free to take signals (Ctrl+C in the main thread interrupts the wait), and when
`stopping()` turns true (the runtime is aborting its work, or closing) the wait ends
`GRACE` seconds later, the work is abandoned and `run` returns None. Abandoned work
goes on in its thread, holding the repository's locks until it ends, but commits
nothing: before it records anything it calls `job.commit()`, which says whether it still
may. `off_main` runs a call in another thread only when the caller is the main thread,
so that a signal still reaches the main thread's Python code.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

GRACE = 3.0  # seconds work may go on once it is being stopped (a snapshot takes ~40 ms)
POLL = 0.1  # seconds between looks at `stopping()` while work runs


class Job:
    """One piece of work: whether it ended, was abandoned, or is committing its result."""

    def __init__(self) -> None:
        self.done = False
        self.abandoned = False
        self._committing = False
        self._lock = threading.Lock()

    def commit(self) -> bool:
        """Called by the work before it records its result: False if it was abandoned
        (record nothing), else True, and it can no longer be abandoned."""
        with self._lock:
            self._committing = not self.abandoned
            return self._committing

    def abandon(self) -> bool:
        """Give up on the work unless it is committing; whether it was given up."""
        with self._lock:
            self.abandoned = not self._committing
            return self.abandoned


def run(
    job: Job,
    work: Callable[[], T],
    *,
    stopping: Callable[[], bool] | None = None,
    grace: float = GRACE,
) -> T | None:
    """`work()` in a daemon thread, waited for; None if abandoned (see the module doc).
    Its exception is raised here."""
    ended = threading.Condition()
    box: list[T] = []
    failed: list[BaseException] = []

    def target() -> None:
        try:
            box.append(work())
        except BaseException as exc:  # raised in the caller's thread
            failed.append(exc)
        finally:
            with ended:
                job.done = True
                ended.notify_all()

    # In the caller's context, as asyncio.to_thread runs a call: its memory scope (smith.memory)
    # and any other context variable go with the work.
    context = contextvars.copy_context()
    threading.Thread(target=context.run, args=(target,), name="smith-history", daemon=True).start()
    stop_seen: float | None = None
    with ended:
        while not job.done:
            if stopping is not None and stopping():
                now = time.monotonic()
                stop_seen = now if stop_seen is None else stop_seen
                if now - stop_seen >= grace and job.abandon():
                    return None
            ended.wait(POLL if stopping is not None else None)
    if failed:
        raise failed[0]
    return box[0]


def off_main(work: Callable[[], T]) -> T:
    """`work()`, in another thread if the caller is the main thread (which then waits,
    able to take a signal: Ctrl+C ends the wait with KeyboardInterrupt)."""
    if threading.current_thread() is not threading.main_thread():
        return work()
    result = run(Job(), lambda: (work(),))
    assert result is not None  # never abandoned: nothing stops it
    return result[0]
