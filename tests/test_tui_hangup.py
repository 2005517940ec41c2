"""The app never outlives its terminal (issue 26, Reliability): SIGHUP, SIGTERM or a
terminal gone end it in every state, idle, streaming, a tool running, an overlay open,
and output blocked by a frozen terminal, and its session opens again afterwards.

The frozen terminal is the deterministic form of the hang seen on a loaded machine: the
tmux server is stopped (SIGSTOP) while an answer streams, so Textual's writer thread
blocks writing to the terminal, its queue fills and the app's main thread waits in
`Queue.put`, where no signal handler of asyncio's or Python's ever runs again."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import SmithEnv, smith_executable
from tests.process_kit import kill_tagged, new_tag, tagged, wait_for
from tests.test_tui_terminal import Tmux, terminal, terminal_env

GONE_WITHIN = 10.0  # seconds: a bound for a loaded machine (the app takes about 2 at most)
WORDS = " ".join(f"word{i}" for i in range(40_000))  # streams for about a minute
STATES = ["idle", "streaming", "tool", "overlay", "frozen"]
# What the screen shows once the app is in each state.
SHOWN = {"idle": "an answer on screen", "streaming": "word300 ", "frozen": "word300 ",
         "tool": "bash", "overlay": "smith wants to write the file x.txt"}  # fmt: skip
# (futex, write, tgkill): the system call numbers /proc/PID/task/TID/syscall shows
SYSCALLS = {"x86_64": ("202", "1", 234), "aarch64": ("98", "64", 131)}


@dataclass
class Running:
    """An app in a terminal of its own, brought to a state."""

    tmux: Tmux
    senv: SmithEnv
    name: str  # its session's
    pid: int = 0
    server: int = 0  # the tmux server's pid
    tag: str = field(default_factory=new_tag)  # the tool's command, when one runs

    def responses(self, state: str) -> list[dict[str, object]]:
        if state == "idle":
            return [{"text": "an answer on screen"}]
        if state in ("streaming", "frozen"):
            return [{"text": WORDS, "delay_ms": 2}]
        command = f"exec -a {self.tag} sleep 300"
        if state == "tool":
            return [{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}]
        return [{"tool_calls": [{"name": "write", "arguments": {"path": "x.txt", "content": "x"}}]}]

    def start(self, state: str, *, leader: bool = False, prefix: str = "") -> None:
        """`smith` in the pane's shell (as its child, or exec'd: the session leader, to
        which the kernel itself sends SIGHUP and SIGCONT, or after `prefix`), then
        `state`."""
        script = self.senv.root / f"{self.name}.json"
        script.write_text(json.dumps({"responses": self.responses(state)}))
        approval = " --approval untrusted" if state == "overlay" else ""
        command = f"smith --session {self.name} --model scripted:{script}{approval}"
        self.server = int(self.tmux.flag("pid"))
        command = f"exec {command}" if leader else prefix + command
        self.tmux("send-keys", "-t", "s", "-l", command)
        self.tmux("send-keys", "-t", "s", "Enter")
        assert self.tmux.wait(lambda: "Ask smith" in self.tmux.screen()), self.tmux.screen()
        pane = int(self.tmux.flag("pane_pid"))
        self.pid = pane if leader else _smith_below(pane)
        self.tmux("send-keys", "-t", "s", "-l", "go")
        self.tmux("send-keys", "-t", "s", "Enter")
        shown = SHOWN[state]
        assert self.tmux.wait(lambda: shown in self.tmux.screen()), self.tmux.screen()
        if state == "tool":
            wait_for(lambda: bool(tagged(self.tag)), "the tool's command to run")
        if state == "frozen":
            self.freeze()

    def freeze(self) -> None:
        """Stop the terminal (its tmux server) and wait until the app is blocked on it:
        a thread of it in write(2) to the terminal and its main thread waiting on a lock
        (the full queue)."""
        os.kill(self.server, signal.SIGSTOP)
        wait_for(self.blocked, "the app's output to block on the stopped terminal")

    def calls(self) -> dict[int, list[str]]:
        """The system call each thread of the app waits in (/proc/PID/task/TID/syscall)."""
        found = {}
        for tid in os.listdir(f"/proc/{self.pid}/task"):
            with contextlib.suppress(OSError):
                found[int(tid)] = Path(f"/proc/{self.pid}/task/{tid}/syscall").read_text().split()
        return found

    def blocked(self) -> bool:
        calls = self.calls()
        if not calls:
            pytest.skip("this test needs /proc/PID/task/TID/syscall (ptrace access)")
        futex = _syscalls()[0]
        return self.writer() is not None and calls.get(self.pid, [""])[0] == futex

    def writer(self) -> int | None:
        """The thread (not the main one) blocked writing to the terminal (fd 2), if any."""
        write = _syscalls()[1]
        calls = self.calls()
        return next((t for t, c in calls.items() if c[:2] == [write, "0x2"] and t != self.pid),
                    None)  # fmt: skip

    def gone(self) -> None:
        wait_for(lambda: not _alive(self.pid), f"the app to end ({self.calls()})", GONE_WITHIN)
        wait_for(lambda: not tagged(self.tag), "the tool's command to end with the app")

    def resumes(self) -> None:
        """Its session's lock is free (the last of the process's threads may take a
        moment more than its main one to let go), and `smith eval --session` goes on
        with the session."""
        wait_for(self.unlocked, "the session's lock to be free", GONE_WITHIN)
        script = self.senv.root / "resume.json"
        script.write_text(json.dumps({"responses": [{"text": "resumed"}]}))
        r = subprocess.run(
            [smith_executable(), "eval", "--session", self.name, "--model", f"scripted:{script}",
             "and now?"],
            cwd=self.tmux.root, env=self.senv.env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert r.returncode == 0 and "resumed" in r.stdout, r.stderr

    def unlocked(self) -> bool:
        from smith.session import SessionStore

        path = SessionStore(str(self.senv.data_home)).lookup(self.name, str(self.tmux.root))
        fd = os.open(path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        finally:
            os.close(fd)
        return True

    def end(self) -> None:
        """After the test: nothing of it left, whatever happened."""
        for pid in (self.pid, self.server):
            with contextlib.suppress(ProcessLookupError, ValueError):
                if pid:
                    os.kill(pid, signal.SIGKILL)
        kill_tagged(self.tag)


@pytest.fixture
def app(senv: SmithEnv) -> Iterator[Running]:
    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc")
    project = senv.make_project()
    with terminal(project, terminal_env(senv), size=(100, 30)) as tmux:
        running = Running(tmux, senv, f"hangup-{uuid.uuid4().hex[:8]}")
        try:
            yield running
        finally:
            running.end()  # a stopped server never answers tmux's kill-server


@pytest.mark.parametrize("again", [1, 2])
@pytest.mark.parametrize("state", STATES)
def test_the_app_ends_when_its_terminal_is_killed(app: Running, state: str, again: int) -> None:
    app.start(state)
    os.kill(app.server, signal.SIGKILL)  # the frozen one too: stopped, then killed
    app.gone()
    app.resumes()


@pytest.mark.parametrize("sig", ["SIGHUP", "SIGTERM"])
@pytest.mark.parametrize("state", STATES)
def test_sighup_and_sigterm_end_the_app_in_every_state(app: Running, state: str, sig: str) -> None:
    """Sent to the app itself, the terminal still there (frozen, in the last state)."""
    app.start(state)
    os.kill(app.pid, getattr(signal, sig))
    app.gone()
    app.resumes()
    if state != "frozen":  # ended the ordinary way or forced, the terminal is restored
        assert app.tmux.wait(lambda: app.tmux.flag("alternate_on") == "0", 5)
        assert app.tmux.flag("cursor_flag") == "1"


@pytest.mark.parametrize("state", ["streaming", "frozen"])
def test_a_session_leader_ends_with_its_terminal(app: Running, state: str) -> None:
    """`exec smith`: the kernel sends the app SIGHUP and SIGCONT itself (Textual's SIGCONT
    handler would start the terminal again, a new writer thread on a dead terminal)."""
    app.start(state, leader=True)
    os.kill(app.server, signal.SIGKILL)
    app.gone()
    app.resumes()


def test_sigterm_taken_by_another_thread_ends_a_blocked_app(app: Running) -> None:
    """The signal interrupts a thread other than the main one (a process-directed signal
    may land on any thread that does not block it): the main thread, blocked on the full
    queue, is never interrupted, so only a handler outside it can act."""
    app.start("frozen")
    writer = app.writer()
    assert writer is not None
    _tgkill(app.pid, writer, signal.SIGTERM)
    app.gone()
    app.resumes()


def test_the_app_ends_when_its_terminal_goes_and_no_hangup_comes(app: Running) -> None:
    """The app in a session of its own (`setsid`): its terminal is not its controlling
    terminal, so no SIGHUP comes when the terminal goes, and the lost terminal is all
    there is to see (Textual's input thread then reads end-of-file in a loop, for ever)."""
    app.start("streaming", prefix="setsid -w ")
    os.kill(app.server, signal.SIGKILL)
    app.gone()
    app.resumes()


def _smith_below(pid: int) -> int:
    """The smith process among `pid`'s descendants (its console script's interpreter)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    for child in map(int, children):
        argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        if len(argv) > 1 and argv[1].endswith(b"/smith"):
            return child
        with contextlib.suppress(LookupError):
            return _smith_below(child)
    raise LookupError(f"no smith process below {pid}")


def _waits_on_a_lock(pid: int) -> bool:
    try:
        call = Path(f"/proc/{pid}/task/{pid}/syscall").read_text().split()
    except PermissionError:
        pytest.skip("this test needs /proc/PID/task/TID/syscall (ptrace access)")
    return call[:1] == [_syscalls()[0]]


def _syscalls() -> tuple[str, str, int]:
    import platform

    numbers = SYSCALLS.get(platform.machine())
    if numbers is None:
        pytest.skip(f"the system call numbers of {platform.machine()} are not known here")
    return numbers


def _tgkill(pid: int, tid: int, sig: int) -> None:
    """A signal to one thread of another process (os.kill lets the kernel choose)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.syscall(_syscalls()[2], pid, tid, sig) == 0, os.strerror(ctypes.get_errno())


# -- Leaving and TerminalOutput on their own ------------------------------------------

# A process whose main thread is stuck as Textual's was: in Queue.put on a full queue
# that nobody drains. argv: the session file it holds, then what ends it.
STUCK = r"""
import os, queue, signal, sys, threading
from smith.frontends.tui._hangup import Leaving
from smith.session import Session

session = Session.create(sys.argv[1], name="held", cwd=".")
asked = []
Leaving(asked.append, session=lambda: session, fds=(0,), grace=0.2).start()

def send_from_a_thread():
    sys.stdin.readline()
    signal.pthread_kill(threading.get_ident(), signal.SIGTERM)  # this thread, not main

if sys.argv[2] == "thread":
    threading.Thread(target=send_from_a_thread, daemon=True).start()
full = queue.Queue(1)
full.put("a frame")
print("stuck", flush=True)
full.put("the next frame")  # for ever
"""


@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP", "thread", "stdin closed"])
def test_leaving_ends_a_process_whose_main_thread_is_stuck(tmp_path: Path, how: str) -> None:
    """Whoever gets the signal (the main thread, interrupted in its wait, or another
    thread while the main one never wakes) or when its input hangs up, the process ends
    with 128 + the signal (SIGHUP for a lost input), and its session's lock is free."""
    from smith.session import Session

    path = str(tmp_path / "held.smith")
    with subprocess.Popen([sys.executable, "-c", STUCK, path, how], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as proc:  # fmt: skip
        assert proc.stdout is not None and proc.stdin is not None
        try:
            assert proc.stdout.readline() == "stuck\n"
            wait_for(lambda: _waits_on_a_lock(proc.pid), "its main thread to block")
            if how in ("SIGTERM", "SIGHUP"):
                proc.send_signal(getattr(signal, how))
            elif how == "thread":
                proc.stdin.write("now\n")
                proc.stdin.flush()
            else:
                proc.stdin.close()
            code = proc.wait(timeout=GONE_WITHIN)
        finally:
            proc.kill()
    assert code == 128 + (signal.SIGTERM if how in ("SIGTERM", "thread") else signal.SIGHUP)
    Session.open(path, lock_timeout=0).close()  # raises session.locked if still held


RELAY = r"""
import os, signal, socket, sys
from smith.frontends.tui._hangup import Leaving

theirs, ours = socket.socketpair()  # a wakeup fd that was there before (asyncio's)
theirs.setblocking(False)
signal.set_wakeup_fd(theirs.fileno())
signal.signal(signal.SIGUSR1, lambda *a: None)
Leaving(lambda code: None, fds=()).start()
os.kill(os.getpid(), signal.SIGUSR1)
ours.settimeout(10)
print(ours.recv(1)[0] == signal.SIGUSR1)
"""


def test_leaving_passes_other_signals_on_to_the_wakeup_fd_before_it() -> None:
    r = subprocess.run([sys.executable, "-c", RELAY], capture_output=True, text=True, timeout=30)
    assert r.stdout.strip() == "True", r.stderr


class _Broken:
    def __init__(self, error: int) -> None:
        self.error = error
        self.tries = 0

    def write(self, text: str) -> int:
        self.tries += 1
        raise OSError(self.error, os.strerror(self.error))

    def flush(self) -> None:
        self.write("")


def test_terminal_output_drops_what_a_gone_terminal_cannot_take() -> None:
    import errno

    from smith.frontends.tui._hangup import TerminalOutput

    terminal = _Broken(errno.EIO)
    output = TerminalOutput(terminal)  # type: ignore[arg-type]
    assert output.write("a frame") == len("a frame")  # no exception: the writer lives on
    output.write("the next")
    output.flush()
    assert output.gone and terminal.tries == 1  # never tried again
    other = TerminalOutput(_Broken(errno.EAGAIN))  # type: ignore[arg-type]
    with pytest.raises(BlockingIOError):
        other.write("x")  # not a terminal gone: Textual sees it as before
    assert not other.gone


def test_only_the_terminals_driver_is_changed() -> None:
    from textual.drivers.headless_driver import HeadlessDriver
    from textual.drivers.linux_driver import LinuxDriver

    from smith.frontends.tui._hangup import terminal_driver

    assert terminal_driver(HeadlessDriver) is HeadlessDriver  # smith web's stays too
    assert issubclass(terminal_driver(LinuxDriver), LinuxDriver)


# -- smith web -------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["killed", "frozen"])
def test_smith_web_and_its_apps_end_with_its_terminal(senv: SmithEnv, how: str) -> None:
    """`smith web` in a terminal, a browser's app running a tool: when the terminal is
    killed (or stopped, then killed) the server, the app and the tool's command all end,
    and the app's session opens again."""
    import asyncio

    project = senv.make_project()
    tag = new_tag()
    script = senv.root / "web.json"
    command = f"exec -a {tag} sleep 300"
    script.write_text(json.dumps({"responses": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
    ]}))  # fmt: skip
    url = senv.root / "url.txt"
    started: list[int] = []  # smith web, then its app
    with terminal(project, terminal_env(senv), size=(100, 30)) as tmux:
        server = int(tmux.flag("pid"))
        tmux("send-keys", "-t", "s", "-l",
             f"smith web --no-open --port 0 --model scripted:{script} > {url}")  # fmt: skip
        tmux("send-keys", "-t", "s", "Enter")
        try:
            wait_for(lambda: url.exists() and url.read_text().endswith("\n"), "the URL")
            started.append(_smith_below(int(tmux.flag("pane_pid"))))

            def kill_the_terminal() -> None:
                if how == "frozen":
                    os.kill(server, signal.SIGSTOP)
                os.kill(server, signal.SIGKILL)
                for pid, what in zip(started, ("smith web", "its app"), strict=True):
                    wait_for(lambda: not _alive(pid), f"{what} to end", GONE_WITHIN)  # noqa: B023

            asyncio.run(_browse(url.read_text().split()[0], tag, started, kill_the_terminal))
            wait_for(lambda: not tagged(tag), "the tool's command to end")
        finally:
            for pid in (server, *started):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            kill_tagged(tag)
    (path,) = (senv.data_home / "sessions").rglob("*.smith")
    wait_for(lambda: _opens(str(path)), "the app's session to open again", GONE_WITHIN)


@pytest.mark.parametrize("closed", ["stdin", "stdout"])
def test_an_app_over_pipes_ends_when_its_server_lets_go(senv: SmithEnv, closed: str) -> None:
    """The app as textual-serve runs it (its web driver over pipes) outlived a server
    that closed the pipes and went on, or died where PR_SET_PDEATHSIG could not reach
    it: it ends when either pipe closes."""
    project = senv.make_project()
    env = {**senv.env, "TEXTUAL_DRIVER": "textual.drivers.web_driver:WebDriver",
           "COLUMNS": "100", "ROWS": "30"}  # fmt: skip
    with subprocess.Popen([sys.executable, "-m", "smith", "--model", "demo"], cwd=project,
                          env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL) as app:  # fmt: skip
        assert app.stdin is not None and app.stdout is not None
        try:
            drawn = b""
            while b"Ask smith" not in drawn:
                chunk = os.read(app.stdout.fileno(), 1 << 16)
                assert chunk, "the app ended before it drew"
                drawn += chunk
            (app.stdin if closed == "stdin" else app.stdout).close()
            wait_for(lambda: app.poll() is not None, "the app to end", GONE_WITHIN)
        finally:
            app.kill()


async def _browse(page: str, tag: str, started: list[int], then: Callable[[], None]) -> None:
    """Open `page`'s app as a browser does, ask it to run the tool tagged `tag`, note the
    app's pid in `started`, then call `then` (in a thread), the socket open and read."""
    import asyncio
    from urllib.parse import urlsplit

    import aiohttp

    parts = urlsplit(page)
    ws_url = f"ws://{parts.netloc}{parts.path}ws?width=100&height=30"
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(ws_url, origin=f"http://{parts.netloc}") as ws,
    ):
        drawn = bytearray()

        async def drain() -> None:  # an unread socket would stall the app
            async for message in ws:
                if message.type == aiohttp.WSMsgType.BINARY:
                    drawn.extend(message.data)

        reader = asyncio.create_task(drain())
        await asyncio.to_thread(wait_for, lambda: b"Ask smith" in drawn, "the page")
        await ws.send_str(json.dumps(["stdin", "go\r"]))
        await asyncio.to_thread(wait_for, lambda: bool(tagged(tag)), "the tool")
        web = started[0]
        started.append(int(Path(f"/proc/{web}/task/{web}/children").read_text().split()[0]))
        await asyncio.to_thread(then)
        reader.cancel()


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as gone)."""
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def _opens(path: str) -> bool:
    from smith.diagnostics import SmithError
    from smith.session import Session

    try:
        Session.open(path, lock_timeout=0).close()
    except SmithError:
        return False
    return True
