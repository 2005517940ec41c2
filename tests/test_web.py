"""`smith web`: the app in a browser, drivable only by its own page, leaving no process
behind. Servers run as real processes (`smith web`, or a bare server around a stand-in
app); the browser is Debian's chromium driven by playwright (no browser download)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
import pytest

from smith.frontends.web import _server, app_command
from tests.conftest import Result, SmithEnv, smith_executable

CHROMIUM = "/usr/bin/chromium"
DEADLINE = 30.0


def _wait(predicate: Callable[[], bool], seconds: float = DEADLINE) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)  # polling other processes: there is no event to wait on
    return predicate()


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _gone(pids: list[int], seconds: float = 10) -> bool:
    return _wait(lambda: not any(_alive(p) for p in pids), seconds)


class Served:
    """A server process whose first line on stdout is its URL."""

    def __init__(self, command: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.out = cwd.parent / f"web-{id(self)}.out"
        self.err = cwd.parent / f"web-{id(self)}.err"
        with self.out.open("w") as out, self.err.open("w") as err:
            self.proc = subprocess.Popen(
                command, cwd=cwd, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL
            )
        assert _wait(lambda: self.out.read_text().endswith("\n") or self.proc.poll() is not None)
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


@pytest.fixture
def serve(senv: SmithEnv) -> Iterator[Callable[..., Served]]:
    """Start `smith web --no-open --port 0 ARGS...` in a project (or `command` instead)."""
    project = senv.make_project()
    (project / "hello-from-the-browser.txt").write_text("hi\n")
    started: list[Served] = []

    def start(*args: str, command: list[str] | None = None) -> Served:
        command = command or [smith_executable(), "web", "--no-open", "--port", "0", *args]
        started.append(Served(command, project, senv.env))
        return started[-1]

    yield start
    for served in started:  # whatever a failed test left running
        pids = served.apps()
        if served.proc.poll() is None:
            served.proc.kill()
            served.proc.wait()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)


async def _status(url: str) -> int:
    async with aiohttp.ClientSession() as http, http.get(url, allow_redirects=False) as r:
        return r.status


async def _ws_status(url: str, origin: str | None) -> int:
    """The handshake's status: 101 when the websocket opened (and is closed again)."""
    async with aiohttp.ClientSession() as http:
        try:
            async with http.ws_connect(url, origin=origin):
                return 101
        except aiohttp.WSServerHandshakeError as refused:
            return refused.status


async def _open_app(served: Served, then: Callable[[], object]) -> tuple[int, object]:
    """Connect as the page does, wait for the app's first output, note the app's pid, then
    call `then` (in a thread, the websocket still open) and close the socket."""
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(served.ws_url, origin=served.origin) as ws,
    ):
        message = await ws.receive(timeout=DEADLINE)
        assert message.type == aiohttp.WSMsgType.BINARY, message  # the app's screen
        (pid,) = served.apps()
        assert _alive(pid)
        return pid, await asyncio.to_thread(then)


def test_every_request_needs_the_secret(serve: Callable[..., Served]) -> None:
    served = serve("--model", "demo")
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/[\w-]{40,}/", served.url)
    base = served.origin
    forged = served.token[:-1] + ("A" if served.token[-1] != "A" else "B")
    assert asyncio.run(_status(served.url)) == 200
    assert asyncio.run(_status(served.url.rstrip("/"))) == 302  # to the page
    assert asyncio.run(_status(f"{served.url}static/js/textual.js")) == 200
    for url in (
        f"{base}/",
        f"{base}/static/js/textual.js",
        f"{base}/{forged}/",
        f"{base}/{served.token}x/",
        f"{base}/ws",
        f"{base}/{forged}/ws",
    ):
        assert asyncio.run(_status(url)) == 403, url
    ws = served.ws_url
    assert asyncio.run(_ws_status(ws.replace(served.token, forged), served.origin)) == 403
    assert asyncio.run(_ws_status(f"ws://{urlsplit(base).netloc}/ws", served.origin)) == 403
    assert served.apps() == []  # a refused request starts nothing
    assert served.stop() == 0


def test_the_websocket_serves_only_its_own_page(serve: Callable[..., Served]) -> None:
    served = serve("--model", "demo")
    port = urlsplit(served.origin).port
    assert port is not None
    for foreign in (
        "http://evil.example",
        f"http://evil.example:{port}",
        f"http://127.0.0.1:{port + 1}",
        f"https://127.0.0.1:{port}",
        "null",
        None,
    ):
        assert asyncio.run(_ws_status(served.ws_url, foreign)) == 403, foreign
    assert served.apps() == []
    # Loopback has several names; the page's own origin under each is accepted.
    assert asyncio.run(_ws_status(served.ws_url, f"http://localhost:{port}")) == 101
    assert _wait(lambda: served.apps() == [])
    assert served.stop() == 0


def test_closing_the_websocket_ends_the_app(serve: Callable[..., Served]) -> None:
    served = serve("--model", "demo")
    pid, _ = asyncio.run(_open_app(served, lambda: None))
    assert _gone([pid]), "the app outlived its websocket"
    assert served.proc.poll() is None  # the server goes on serving
    assert served.stop() == 0


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "SIGKILL"])
def test_stopping_the_server_ends_its_apps(serve: Callable[..., Served], how: str) -> None:
    served = serve("--model", "demo")
    sig = getattr(signal, how)
    pid, code = asyncio.run(_open_app(served, lambda: served.stop(sig)))
    assert code == (-signal.SIGKILL if how == "SIGKILL" else 0)  # a clean stop exits 0
    assert _gone([pid]), f"the app outlived the server ({how})"


# An app as wedged as those textual-serve can leave behind: deaf to "quit" and to SIGTERM,
# spinning, with a child that left its process group (as smith's bash tool's commands do).
STUBBORN = r"""
import os, signal, subprocess, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen(["sleep", "600"], start_new_session=True)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(f"{os.getpid()} {child.pid}")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
sys.stdout.buffer.write(b"__GANGLION__\n" + b"D" + (5).to_bytes(4, "big") + b"ready")
sys.stdout.flush()
while True:
    pass
"""
# A bare server around any app command (the first line it prints is the URL).
SERVER = r"""
import asyncio, os, sys
from smith.frontends.web._server import SmithServer
async def main():
    server = SmithServer(sys.argv[1:], host="127.0.0.1", port=0, env=os.environ, cwd=".")
    await server.start()
    print(server.url, flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
"""


async def _wedged(
    url: str, port: int, pids: Path, then: Callable[[aiohttp.ClientWebSocketResponse], object]
) -> list[int]:
    """Open the stand-in app, check it and its child run, `then(websocket)`; their pids."""
    async with aiohttp.ClientSession() as http:
        ws_url = f"{url.replace('http', 'ws', 1)}ws"
        async with http.ws_connect(ws_url, origin=f"http://127.0.0.1:{port}") as ws:
            assert (await ws.receive(timeout=DEADLINE)).data == b"ready"
            found = [int(p) for p in pids.read_text().split()]
            assert len(found) == 2 and all(_alive(p) for p in found)
            result = then(ws)
            if asyncio.iscoroutine(result):
                await result
    return found


async def _type_a_lot(ws: aiohttp.ClientWebSocketResponse) -> None:
    """More input than the app's pipe holds: the app never reads it."""
    for _ in range(100):
        await ws.send_str(json.dumps(["stdin", "x" * 4096]))


@pytest.mark.parametrize("end", ["browser", "server"])
def test_a_wedged_app_and_what_it_started_are_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, end: str
) -> None:
    monkeypatch.setattr(_server, "GRACE", 0.5)  # per step: quit, then TERM, then KILL
    pids = tmp_path / "pids"
    server = _server.SmithServer(
        [sys.executable, "-c", STUBBORN, str(pids)],
        host="127.0.0.1",
        port=0,
        env=dict(os.environ),
        cwd=str(tmp_path),
    )

    async def scenario() -> None:
        await server.start()
        try:
            found = await _wedged(
                server.url,
                server.port,
                pids,
                (lambda ws: server.close()) if end == "server" else _type_a_lot,
            )
            if end == "server":
                assert server.apps == {} and not _alive(found[0])  # reaped before close returns
            # The browser has gone (or the server stopped): nothing of the app may remain.
            assert await asyncio.to_thread(_gone, found), "the app or its child was left behind"
        finally:
            await server.close()

    asyncio.run(scenario())


def test_a_killed_server_takes_its_app_along(serve: Callable[..., Served], tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    served = serve(
        command=[sys.executable, "-c", SERVER, sys.executable, "-c", STUBBORN, str(pids)]
    )
    port = urlsplit(served.origin).port
    assert port is not None
    app, child = asyncio.run(
        _wedged(served.url, port, pids, lambda ws: served.stop(signal.SIGKILL))
    )
    try:
        assert _gone([app]), "the app outlived a server killed with SIGKILL"
    finally:
        # With the server gone nobody sweeps, so what left the app's group stays: a known
        # limit (PR_SET_PDEATHSIG reaches only the app itself).
        for pid in (app, child):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_kill_9_of_smith_web_ends_the_apps_running_command(
    serve: Callable[..., Served], tmp_path: Path
) -> None:
    """The real app, asked through the websocket, runs a bash command that double-forks
    out of its session and empties its environment; kill -9 of `smith web` ends the app
    (PR_SET_PDEATHSIG), whose command's PID namespace then takes every process along."""
    token = f"{os.getpid() % 1000 + 7000}.25"  # a sleep no other process runs
    escape = f"setsid sh -c 'env -i sh -c \"/bin/sleep {token} & wait\"' & wait"
    script = tmp_path / "escape.json"
    script.write_text(json.dumps({"responses": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": escape}}], "stop": "tool_use"},
        {"text": "done", "stop": "end"},
    ]}))  # fmt: skip
    served = serve("--model", f"scripted:{script}")

    def escaped() -> list[int]:
        found = subprocess.run(
            ["pgrep", "-f", f"^/bin/sleep {token}$"], capture_output=True, text=True
        )
        return [int(pid) for pid in found.stdout.split()]

    async def ask() -> int:
        async with (
            aiohttp.ClientSession() as http,
            http.ws_connect(served.ws_url, origin=served.origin) as ws,
        ):
            drawn = bytearray()
            ready = asyncio.Event()

            async def drain() -> None:  # read all the while: an unread socket stalls the app
                async for message in ws:
                    if message.type == aiohttp.WSMsgType.BINARY:
                        drawn.extend(message.data)
                        if b"Ask smith" in drawn:
                            ready.set()

            reader = asyncio.create_task(drain())
            await asyncio.wait_for(ready.wait(), DEADLINE)  # the input is on the screen
            (app,) = served.apps()
            await ws.send_str(json.dumps(["stdin", "go\r"]))
            assert await asyncio.to_thread(_wait, lambda: bool(escaped())), "no command ran"
            served.stop(signal.SIGKILL)
            reader.cancel()
            return app

    app = asyncio.run(ask())
    left = escaped()
    try:
        assert _gone([app]), "the app outlived `smith web` killed with SIGKILL"
        assert _gone(left), "the command's escaped process outlived `smith web`"
    finally:
        for pid in (app, *left):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_the_app_runs_with_the_commands_settings() -> None:
    argv, env = app_command(
        {"model": "-odd", "vcs.enabled": False, "debug": True}, {"PATH": "/bin"}
    )
    assert argv == [sys.executable, "-m", "smith", "--debug", "--model=-odd", "--no-vcs-enabled"]
    assert env == {"PATH": "/bin"}


def test_another_host_is_served_with_a_warning(serve: Callable[..., Served]) -> None:
    served = serve("--host", "0.0.0.0")
    err = served.err.read_text()
    assert "warning: --host: the app is served on 0.0.0.0" in err and "fix:" in err
    assert served.stop() == 0
    quiet = serve()
    assert "warning" not in quiet.err.read_text()
    assert quiet.stop() == 0


def test_a_taken_port_is_a_diagnostic(smith: Callable[..., Result], senv: SmithEnv) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = smith("web", "--no-open", "--port", str(port), cwd=senv.make_project())
    assert r.code == 1 and r.out == ""
    assert f"error: --host/--port: cannot serve on 127.0.0.1:{port}" in r.err
    assert "fix:" in r.err and "Traceback" not in r.err


# Taps the page's websocket: the bytes the terminal draws, as text without escapes. The
# terminal paints on a canvas, so this is where its text can be read.
TAP = r"""(() => {
  const Native = window.WebSocket, decoder = new TextDecoder();
  let drawn = "";
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
  };
})();"""


def test_a_browser_asks_the_demo_model(serve: Callable[..., Served], tmp_path: Path) -> None:
    assert shutil.which(CHROMIUM), "chromium is needed for the browser test (.ci/run installs it)"
    from playwright.sync_api import sync_playwright

    served = serve("--model", "demo")
    timeout = DEADLINE * 1000
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            # Only the server: the page's web font would be fetched from the internet.
            page.route(re.compile(rf"^(?!{re.escape(served.origin)}/)"), lambda r: r.abort())
            page.add_init_script(TAP)
            page.goto(served.url)
            page.wait_for_function("smithScreen().includes('Ask smith')", timeout=timeout)
            (pid,) = served.apps()
            page.focus(".xterm-helper-textarea")  # where xterm.js takes keys
            page.keyboard.type("list the files")
            page.keyboard.press("Enter")
            page.wait_for_function(
                "/has \\d+ entr/.test(smithScreen()) && smithScreen().includes('✓ ls')",
                timeout=timeout,
            )
            assert "hello-from-the-browser.txt" in page.evaluate("smithScreen()")
            shot = page.screenshot(path=tmp_path / "smith-web.png")
            assert len(shot) > 10_000  # a drawn terminal, not a blank page
            page.close()
        finally:
            browser.close()
    assert _gone([pid]), "the app outlived its page"
    assert served.stop() == 0


def test_a_two_line_prompt_typed_in_the_browser_is_sent_whole(
    serve: Callable[..., Served], senv: SmithEnv
) -> None:
    """Ctrl+J in the browser's terminal is a new line in the editor, Enter sends both
    lines (what was sent is the project's prompt history)."""
    assert shutil.which(CHROMIUM), "chromium is needed for the browser test (.ci/run installs it)"
    from playwright.sync_api import sync_playwright

    served = serve("--model", "demo")
    timeout = DEADLINE * 1000
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.route(re.compile(rf"^(?!{re.escape(served.origin)}/)"), lambda r: r.abort())
            page.add_init_script(TAP)
            page.goto(served.url)
            page.wait_for_function("smithScreen().includes('Ask smith')", timeout=timeout)
            (pid,) = served.apps()
            page.focus(".xterm-helper-textarea")
            page.keyboard.type("list the files")
            page.keyboard.press("Control+j")
            page.keyboard.type("and say hi")
            page.keyboard.press("Enter")
            history = Path(senv.env["SMITH_HOME"]) / "history"
            deadline = time.monotonic() + DEADLINE
            while not list(history.glob("*.jsonl")) and time.monotonic() < deadline:
                time.sleep(0.05)
            page.close()
        finally:
            browser.close()
    assert _gone([pid]), "the app outlived its page"
    assert served.stop() == 0
    (sent,) = history.glob("*.jsonl")
    assert [json.loads(line)["text"] for line in sent.read_text().splitlines()] == [
        "list the files\nand say hi"
    ]


def test_a_question_in_the_browser_is_the_apps_overlay(
    serve: Callable[..., Served], senv: SmithEnv
) -> None:
    """A plugin's question in the browser is the app's overlay (docs/ui.md: `smith web`
    serves the same app, so its policy for UI intents is the app's); the app process
    loads the test plugin (tests/ui_plugin.py)."""
    from tests.ui_plugin import with_plugin

    assert shutil.which(CHROMIUM), "chromium is needed for the browser test (.ci/run installs it)"
    from playwright.sync_api import sync_playwright

    senv.env.update(with_plugin(senv.env))  # what the server, and so each app, runs with
    served = serve("--model", "demo")
    timeout = DEADLINE * 1000
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.route(re.compile(rf"^(?!{re.escape(served.origin)}/)"), lambda r: r.abort())
            page.add_init_script(TAP)
            page.goto(served.url)
            page.wait_for_function("smithScreen().includes('Ask smith')", timeout=timeout)
            (pid,) = served.apps()
            page.focus(".xterm-helper-textarea")
            page.keyboard.type("/ask Pick a fruit")
            page.keyboard.press("Enter")
            page.wait_for_function(
                "smithScreen().includes('asker asks: Pick a fruit') && "
                "smithScreen().includes('Banana')",
                timeout=timeout,
            )
            page.keyboard.press("ArrowDown")
            page.keyboard.press("Enter")
            page.wait_for_function("smithScreen().includes('/ask: b')", timeout=timeout)
            page.close()
        finally:
            browser.close()
    assert _gone([pid]), "the app outlived its page"
    assert served.stop() == 0


def test_at_completes_a_path_in_the_browser(serve: Callable[..., Served], senv: SmithEnv) -> None:
    """The completion list is the app's own, so the browser's terminal shows it too: `@`
    and part of a name list the file, Tab takes it, Enter sends it as completed (what was
    sent is the project's prompt history)."""
    assert shutil.which(CHROMIUM), "chromium is needed for the browser test (.ci/run installs it)"
    from playwright.sync_api import sync_playwright

    served = serve("--model", "demo")
    timeout = DEADLINE * 1000
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.route(re.compile(rf"^(?!{re.escape(served.origin)}/)"), lambda r: r.abort())
            page.add_init_script(TAP)
            page.goto(served.url)
            page.wait_for_function("smithScreen().includes('Ask smith')", timeout=timeout)
            (pid,) = served.apps()
            page.focus(".xterm-helper-textarea")
            page.keyboard.type("read @hello-fr")
            # The rest of the name, unmatched, is drawn only by the list.
            page.wait_for_function("smithScreen().includes('om-the-browser.txt')", timeout=timeout)
            page.keyboard.press("Tab")
            page.keyboard.press("Enter")
            history = Path(senv.env["SMITH_HOME"]) / "history"
            deadline = time.monotonic() + DEADLINE
            while not list(history.glob("*.jsonl")) and time.monotonic() < deadline:
                time.sleep(0.05)
            page.close()
        finally:
            browser.close()
    assert _gone([pid]), "the app outlived its page"
    assert served.stop() == 0
    (sent,) = history.glob("*.jsonl")
    assert [json.loads(line)["text"] for line in sent.read_text().splitlines()] == [
        "read @hello-from-the-browser.txt"
    ]
