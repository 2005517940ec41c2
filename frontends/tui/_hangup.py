"""The app ends when its terminal does: on SIGHUP, on SIGTERM, or when the terminal (or
smith web's pipe) is gone, within GRACE seconds, whatever its threads are doing.

Why it takes a thread of its own. Textual draws through a writer thread fed by a queue of
30 writes. When the terminal stops draining (a frozen terminal, or one gone: the writer
thread then dies on EIO, and after a hangup Textual's SIGCONT handler even starts a new
writer on the dead terminal), the app's next writes wait for room in that queue for ever,
and so does Textual's shutdown (`App._shutdown` -> `LinuxDriver.close` ->
`WriterThread.stop` -> `Queue.put`). The main thread never runs again: neither asyncio's
signal handlers (they run on the event loop) nor Python's (they run in the main thread)
get their turn, so SIGTERM did nothing and the process held its session's lock until
SIGKILL. So:

- `Leaving` learns of SIGHUP and SIGTERM in its own thread, through the signal wakeup fd
  (CPython's C-level handler writes the signal's number there from whichever thread the
  signal interrupted; bytes of other signals are passed on to the wakeup fd there was
  before), and of a lost terminal by POLLHUP or POLLERR on stdin, stdout or stderr;
- it asks the app to exit, the ordinary way: the runtime aborts the turn and records how
  it ended, and the session is closed;
- if the process is still there GRACE seconds later it ends it: it waits (briefly) for a
  write to the session to finish, syncs the session, puts the terminal back and
  calls os._exit (the kernel then drops the session's lock with the file), after at
  most BACKSTOP seconds more whatever those steps do.

`TerminalDriver` keeps the ordinary way open once the terminal is gone: its writer drops
what it can no longer write instead of dying, and a SIGCONT while leaving does not start
the terminal again.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.app import App
    from textual.driver import Driver

    from smith.session import Session

log = logging.getLogger("smith.tui")

GRACE = 2.0  # seconds the ordinary ending gets before the process is ended anyway
SESSION_WAIT = 0.5  # of which a forced exit waits at most this long for a session write
BACKSTOP = 1.0  # seconds after which a forced exit happens even if its own steps hang
SIGNALS = (signal.SIGHUP, signal.SIGTERM)
# errno values of a write that says the terminal (or the pipe) is gone for good.
GONE = frozenset((errno.EIO, errno.EPIPE, errno.ENXIO, errno.EBADF, errno.ENODEV))
WOKEN = 0  # the byte Leaving's own signal handler writes: "look at .signum"


class Leaving:
    """Watches for SIGHUP, SIGTERM and a lost terminal, and makes sure the process ends
    within `grace` seconds of the first: `leave(code)` asks for the ordinary ending
    (called from this class's thread: it must be thread-safe), and if the process is
    still there at the deadline, `force` ends it (see `_force`)."""

    def __init__(
        self,
        leave: Callable[[int], None],
        *,
        session: Callable[[], Session | None] = lambda: None,
        restore: Callable[[], None] = lambda: None,
        fds: Sequence[int] = (0, 1, 2),
        grace: float = GRACE,
    ) -> None:
        self.leave = leave
        self.session = session
        self.restore = restore
        self.fds = [fd for fd in dict.fromkeys(fds) if _watchable(fd)]
        self.grace = grace
        self.signum = 0  # the signal that began the ending (SIGHUP for a lost terminal)
        self.why = ""
        self._r, self._w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._relay = -1  # the wakeup fd there was before ours (asyncio's, in smith web)

    def start(self) -> Leaving:
        """Install the handlers and start watching. Only the main thread can take
        signals: from another (an app run in a thread), only the terminal is watched."""
        if threading.current_thread() is threading.main_thread():
            for sig in SIGNALS:
                signal.signal(sig, self._signalled)
            self._relay = signal.set_wakeup_fd(self._w, warn_on_full_buffer=False)
        threading.Thread(target=self._watch, name="smith-leaving", daemon=True).start()
        return self

    @property
    def leaving(self) -> bool:
        return self.signum != 0

    def _signalled(self, signum: int, frame: object) -> None:
        """Python's handler, in the main thread whenever it gets to run (it may never, see
        the module's docstring): no locks here, a flag and a byte."""
        if not self.signum:
            self.signum, self.why = signum, signal.Signals(signum).name
        with contextlib.suppress(OSError):
            os.write(self._w, bytes((WOKEN,)))

    def _watch(self) -> None:
        poller = select.poll()
        poller.register(self._r, select.POLLIN)
        for fd in self.fds:
            poller.register(fd, 0)  # only POLLHUP, POLLERR and POLLNVAL are reported
        deadline: float | None = None
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic()) * 1000
            for fd, events in poller.poll(wait):
                if fd == self._r:
                    self._read()
                    continue
                poller.unregister(fd)  # level-triggered: once is enough
                if events & (select.POLLHUP | select.POLLERR) and not self.signum:
                    self.signum, self.why = signal.SIGHUP, "the terminal went away"
            if self.signum and deadline is None:
                deadline = time.monotonic() + self.grace
                log.warning("%s: ending the app (at most %g s)", self.why, self.grace)
                try:
                    self.leave(128 + self.signum)
                except Exception:  # the loop is closed: the deadline still holds
                    log.debug("could not ask the app to exit", exc_info=True)
            elif deadline is not None and time.monotonic() >= deadline:
                self._force()

    def _read(self) -> None:
        try:
            data = os.read(self._r, 512)
        except BlockingIOError:
            return
        for sig in data:
            if sig in SIGNALS and not self.signum:
                self.signum, self.why = sig, signal.Signals(sig).name
        passed = bytes(b for b in data if b != WOKEN)
        if self._relay >= 0 and passed:
            with contextlib.suppress(OSError):
                os.write(self._relay, passed)

    def _force(self) -> None:
        """The ordinary ending did not finish in time: leave now, with the session's
        last write finished and synced, and the terminal's modes back if it is there."""
        code = 128 + self.signum
        backstop = threading.Timer(BACKSTOP, os._exit, (code,))  # if a step below hangs
        backstop.daemon = True
        backstop.start()
        log.error("%s: the app did not end within %g s; ending it now", self.why, self.grace)
        session = self.session()
        if session is not None:
            lock = session.exclusive()
            if lock.acquire(timeout=SESSION_WAIT):  # held until exit: no append after
                with contextlib.suppress(OSError):
                    session.sync()
        with contextlib.suppress(Exception):
            self.restore()
        os._exit(code)


def _watchable(fd: int) -> bool:
    """A terminal, pipe or socket: what can hang up (a file or /dev/null cannot)."""
    import stat

    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return (stat.S_ISCHR(mode) and os.isatty(fd)) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class TerminalOutput:
    """The terminal as Textual's writer thread writes to it. A write that fails because
    the terminal is gone (EIO after a hangup, EPIPE) is dropped, and so is everything
    after it: the thread goes on draining its queue, so the app's writes never wait for
    a dead terminal and its shutdown finishes. (Textual's thread would die instead.)"""

    def __init__(self, file: IO[str]) -> None:
        self._file = file
        self.gone = False
        self.writing = False  # a write is under way (for long: the terminal is frozen)

    def write(self, text: str) -> int:
        if not self.gone:
            self.writing = True
            try:
                self._file.write(text)
            except OSError as exc:
                self._failed(exc)
            finally:
                self.writing = False
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            self.writing = True
            try:
                self._file.flush()
            except OSError as exc:
                self._failed(exc)
            finally:
                self.writing = False

    def fileno(self) -> int:
        return self._file.fileno()

    def isatty(self) -> bool:
        return self._file.isatty()

    def _failed(self, exc: OSError) -> None:
        if exc.errno not in GONE:
            raise exc
        self.gone = True


def terminal_driver(found: type[Driver]) -> type[Driver]:
    """`found` if it is not Textual's Linux driver (smith web's, Windows'), else that
    driver with `TerminalOutput`, no restart after a hangup, and input read by
    `_keys.KeyParser`."""
    if found.__module__ != "textual.drivers.linux_driver":
        return found
    from textual.drivers.linux_driver import LinuxDriver

    from ._keys import install

    install()  # Shift+Enter as xterm's modifyOtherKeys sends it, too (_keys)

    class TerminalDriver(LinuxDriver):
        def __init__(self, app: App[Any], **kw: Any) -> None:
            super().__init__(app, **kw)
            assert self._file is not None  # sys.__stderr__, a terminal (smith checks)
            self.output = TerminalOutput(self._file)
            self._file = self.output  # type: ignore[assignment]
            self.smith_app = app

        def _sigcont_application(self, *args: Any) -> None:
            # With a hangup the kernel sends SIGCONT too: starting the terminal again
            # then would only start a new writer on a dead terminal, and leak the old.
            leaving = getattr(self.smith_app, "leaving", None)
            if self.output.gone or (leaving is not None and leaving.leaving):
                return
            super()._sigcont_application(*args)

    return TerminalDriver


# What Textual writes when it leaves the terminal (LinuxDriver.stop_application_mode):
# keyboard protocol, alternate screen, cursor, focus events, bracketed paste, mouse, wrap.
LEAVE = (
    "\x1b[<u\x1b[?1049l\x1b[?25h\x1b[?1004l\x1b[?2004l"
    "\x1b[?1000l\x1b[?1003l\x1b[?1015l\x1b[?1006l\x1b[?7h"
)


def restore_terminal(driver: Driver | None) -> None:
    """For a forced exit: put back the modes the app found (that never blocks), then
    leave the alternate screen if the terminal takes output (not while the writer is
    stuck in a write; should this one block anyway, Leaving's backstop ends it)."""
    import termios

    attrs = getattr(driver, "attrs_before", None)
    fd = getattr(driver, "fileno", None)
    if attrs is not None and isinstance(fd, int):
        with contextlib.suppress(termios.error):
            termios.tcsetattr(fd, termios.TCSANOW, attrs)
    output = getattr(driver, "output", None)
    if isinstance(output, TerminalOutput) and not (output.gone or output.writing):
        with contextlib.suppress(OSError):
            os.write(output.fileno(), LEAVE.encode())


__all__ = ["GRACE", "Leaving", "TerminalOutput", "restore_terminal", "terminal_driver"]
