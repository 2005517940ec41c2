"""`smith web`'s server: drivable only by its own page, leaving no process behind. Servers
run as real processes (`smith web`, or a bare server around a stand-in app); what a
browser shows is in test_web_browser.py."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
import pytest

from smith.frontends.web import _server, app_command
from tests.conftest import Result, SmithEnv
from tests.web_kit import DEADLINE, Served, alive, gone, serving, wait


@pytest.fixture
def serve(senv: SmithEnv) -> Iterator[Callable[..., Served]]:
    with serving(senv) as start:
        yield start


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
        assert alive(pid)
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
    assert wait(lambda: served.apps() == [])
    assert served.stop() == 0


def test_closing_the_websocket_ends_the_app(serve: Callable[..., Served]) -> None:
    served = serve("--model", "demo")
    pid, _ = asyncio.run(_open_app(served, lambda: None))
    assert gone([pid]), "the app outlived its websocket"
    assert served.proc.poll() is None  # the server goes on serving
    assert served.stop() == 0


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "SIGKILL"])
def test_stopping_the_server_ends_its_apps(serve: Callable[..., Served], how: str) -> None:
    served = serve("--model", "demo")
    sig = getattr(signal, how)
    pid, code = asyncio.run(_open_app(served, lambda: served.stop(sig)))
    assert code == (-signal.SIGKILL if how == "SIGKILL" else 0)  # a clean stop exits 0
    assert gone([pid]), f"the app outlived the server ({how})"


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
            assert len(found) == 2 and all(alive(p) for p in found)
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
                assert server.apps == {} and not alive(found[0])  # reaped before close returns
            # The browser has gone (or the server stopped): nothing of the app may remain.
            assert await asyncio.to_thread(gone, found), "the app or its child was left behind"
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
        assert gone([app]), "the app outlived a server killed with SIGKILL"
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
            assert await asyncio.to_thread(wait, lambda: bool(escaped())), "no command ran"
            served.stop(signal.SIGKILL)
            reader.cancel()
            return app

    app = asyncio.run(ask())
    left = escaped()
    try:
        assert gone([app]), "the app outlived `smith web` killed with SIGKILL"
        assert gone(left), "the command's escaped process outlived `smith web`"
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


def test_the_apps_mark_is_not_taken_for_a_misspelt_setting(
    smith: Callable[..., Result], senv: SmithEnv
) -> None:
    """Each app smith web starts carries its mark (SMITH_WEB_APP); its configuration
    said it was no smith setting, a warning the server printed for every tab."""
    project = senv.make_project()
    quiet = smith("config", "show", cwd=project, env={_server.MARK: "a1b2"})
    assert quiet.code == 0 and "warning" not in quiet.err
    noisy = smith("config", "show", cwd=project, env={"SMITH_WEB_APPS": "a1b2"})
    assert "warning: env SMITH_WEB_APPS: environment variable SMITH_WEB_APPS" in noisy.err


def test_a_taken_port_is_a_diagnostic(smith: Callable[..., Result], senv: SmithEnv) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = smith("web", "--no-open", "--port", str(port), cwd=senv.make_project())
    assert r.code == 1 and r.out == ""
    assert f"error: --host/--port: cannot serve on 127.0.0.1:{port}" in r.err
    assert "fix:" in r.err and "Traceback" not in r.err
