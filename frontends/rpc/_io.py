"""The two byte streams of `smith rpc`: LF-delimited lines in from fd 0, protocol records
out through one writer, and nothing else on the protocol's output.

Reading happens in a daemon thread with `os.read`, so the event loop never blocks on
stdin and no buffered reader's lock is held when the process exits (a thread blocked in
`sys.stdin.buffer.readline()` can make interpreter shutdown abort). Writing happens in
one thread too, fed in order from the loop: a client that stops reading cannot stall the
agent, and records never interleave.
"""

from __future__ import annotations

import contextlib
import os
import queue
import sys
import threading
from collections.abc import Callable
from typing import TextIO

CHUNK = 64 * 1024


def protocol_output(stdout: TextIO) -> Callable[[bytes], None]:
    """A function writing protocol records to `stdout`, after making sure nothing else can
    reach it. When `stdout` is the process's fd 1, the records get a private duplicate of
    it and fd 1 itself (with sys.stdout) becomes stderr: prints, warnings, C extensions
    and child processes then write to stderr whatever they do. Any other stream (a test's
    StringIO) is written as text."""
    try:
        fd = stdout.fileno()
    except (AttributeError, OSError, ValueError):
        fd = -1
    if fd != 1:

        def write_text(data: bytes) -> None:
            stdout.write(data.decode("utf-8"))
            stdout.flush()

        return write_text
    stdout.flush()
    private = os.dup(1)  # not inherited by child processes (PEP 446)
    os.dup2(sys.stderr.fileno(), 1)
    sys.stdout = sys.stderr

    def write_fd(data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(private, view) :]

    return write_fd


class LineWriter:
    """Protocol records out, in the order `send` was called, from one thread.

    `on_closed` is called (from the writer thread) once the output is gone, e.g. the
    client closed its end of the pipe: nobody is left to read answers."""

    def __init__(self, write: Callable[[bytes], None], on_closed: Callable[[], None]) -> None:
        self._write = write
        self._on_closed = on_closed
        self._queue: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self.closed = False
        self._thread = threading.Thread(target=self._run, name="rpc writer", daemon=True)
        self._thread.start()

    def send(self, data: bytes) -> None:
        if not self.closed:
            self._queue.put(data)

    def _run(self) -> None:
        while (data := self._queue.get()) is not None:
            if self.closed:
                continue
            try:
                self._write(data)
            except (OSError, ValueError):  # EPIPE, a closed stream
                self.closed = True
                self._on_closed()

    def finish(self, timeout: float = 5.0) -> None:
        """Write what was sent, then stop (waiting at most `timeout` for a reader that
        does not read)."""
        self._queue.put(None)
        self._thread.join(timeout)


class LineReader:
    """Lines of `fd` (LF only; a CR before it stays part of the line) handed one by one to
    `on_line` on the loop, then None at end of input."""

    def __init__(self, fd: int, deliver: Callable[[bytes | None], None]) -> None:
        self._fd = fd
        self._deliver = deliver
        self._thread = threading.Thread(target=self._run, name="rpc reader", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        buffer = bytearray()
        searched = 0  # bytes of `buffer` known to hold no LF
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody to tell
            while True:
                try:
                    chunk = os.read(self._fd, CHUNK)
                except InterruptedError:
                    continue
                except OSError:
                    chunk = b""
                if not chunk:
                    if buffer:
                        self._deliver(bytes(buffer))
                    self._deliver(None)
                    return
                buffer += chunk
                while (end := buffer.find(b"\n", searched)) >= 0:
                    self._deliver(bytes(buffer[:end]))
                    del buffer[: end + 1]
                    searched = 0
                searched = len(buffer)
