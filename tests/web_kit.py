"""`smith web` for tests: a server run as a real process (`Served`), and a page of Debian's
chromium driven by playwright (`browser_page`, no browser download) whose terminal's text
can be read (`TAP`: the terminal paints on a canvas)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tests.conftest import SmithEnv, smith_executable

if TYPE_CHECKING:
    from playwright.sync_api import Page

CHROMIUM = "/usr/bin/chromium"
DEADLINE = 30.0
TIMEOUT = DEADLINE * 1000  # playwright's unit


def wait(predicate: Callable[[], bool], seconds: float = DEADLINE) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)  # polling other processes: there is no event to wait on
    return predicate()


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def gone(pids: list[int], seconds: float = 10) -> bool:
    return wait(lambda: not any(alive(p) for p in pids), seconds)


class Served:
    """A server process whose first line on stdout is its URL."""

    def __init__(self, command: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.out = cwd.parent / f"web-{id(self)}.out"
        self.err = cwd.parent / f"web-{id(self)}.err"
        with self.out.open("w") as out, self.err.open("w") as err:
            self.proc = subprocess.Popen(
                command, cwd=cwd, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL
            )
        assert wait(lambda: self.out.read_text().endswith("\n") or self.proc.poll() is not None)
        assert self.proc.poll() is None, self.err.read_text()
        self.url = self.out.read_text().splitlines()[0]
        parts = urlsplit(self.url)
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.token = parts.path.strip("/")
        self.ws_url = f"ws://{parts.netloc}/{self.token}/ws?width=100&height=30"

    def apps(self) -> list[int]:
        """The app processes: the server's children."""
        out = subprocess.run(
            ["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True
        ).stdout
        return [int(pid) for pid in out.split()]

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=DEADLINE)


@contextlib.contextmanager
def serving(senv: SmithEnv, project: Path | None = None) -> Iterator[Callable[..., Served]]:
    """Start `smith web --no-open --port 0 ARGS...` in a project (or `command` instead);
    whatever a test left running is killed afterwards."""
    project = project or senv.make_project()
    (project / "hello-from-the-browser.txt").write_text("hi\n")
    started: list[Served] = []

    def start(*args: str, command: list[str] | None = None) -> Served:
        command = command or [smith_executable(), "web", "--no-open", "--port", "0", *args]
        started.append(Served(command, project, senv.env))
        return started[-1]

    try:
        yield start
    finally:
        for served in started:
            pids = served.apps()
            if served.proc.poll() is None:
                served.proc.kill()
                served.proc.wait()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)


# Taps the page's websocket: the bytes the terminal draws, as text without escapes
# (smithScreen()), and what the page sends (smithSent: textual-serve's JSON messages).
TAP = r"""(() => {
  const Native = window.WebSocket, decoder = new TextDecoder();
  let drawn = "";
  window.smithSent = [];
  window.smithScreen = () =>
    drawn.replace(/\x1b\[[0-?]*[ -\/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[@-_]/g, "");
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (event) => {
        if (typeof event.data !== "string")
          drawn += decoder.decode(new Uint8Array(event.data), { stream: true });
      });
    }
    send(data) {
      window.smithSent.push(data);
      return super.send(data);
    }
  };
})();"""


@contextlib.contextmanager
def browser_page(served: Served, **options: Any) -> Iterator[tuple[Page, int]]:
    """A page of chromium on the served app, once the app's editor is drawn and the
    terminal has the keyboard; (the page, the app's pid). The page is closed afterwards,
    and its app must then end. `options` go to the browser context (permissions...)."""
    assert shutil.which(CHROMIUM), "chromium is needed for the browser test (.ci/run installs it)"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 720}, **options)
            page = context.new_page()
            # Only the server: the page's web font would be fetched from the internet.
            page.route(re.compile(rf"^(?!{re.escape(served.origin)}/)"), lambda r: r.abort())
            page.add_init_script(TAP)
            page.goto(served.url)
            page.wait_for_function("smithScreen().includes('Ask smith')", timeout=TIMEOUT)
            (pid,) = served.apps()
            page.focus(".xterm-helper-textarea")  # where xterm.js takes keys
            yield page, pid
            page.close()
        finally:
            browser.close()
    assert gone([pid]), "the app outlived its page"


def screen_shows(page: Page, text: str) -> None:
    """Wait until the terminal has drawn `text`."""
    from playwright.sync_api import TimeoutError as Timeout

    try:
        page.wait_for_function("(t) => smithScreen().includes(t)", arg=text, timeout=TIMEOUT)
    except Timeout:
        drawn = page.evaluate("smithScreen()")[-2000:]
        raise AssertionError(f"{text!r} was never drawn; the last drawn: {drawn!r}") from None


def sent_prompts(senv: SmithEnv) -> list[str]:
    """The prompts sent in the project (its prompt history), once there are any."""
    import json

    history = Path(senv.env["SMITH_HOME"]) / "history"
    wait(lambda: bool(list(history.glob("*.jsonl"))))
    return [
        json.loads(line)["text"]
        for sent in history.glob("*.jsonl")
        for line in sent.read_text().splitlines()
    ]
