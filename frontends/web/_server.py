"""textual-serve's Server and AppService, made safe to leave running on a workstation.

textual-serve spawns one app process per websocket. On its own it answers anyone who can
reach its port, lets any web page open that websocket through the user's browser, and
trusts each app to exit when asked (an app that does not, or a server that dies, leaves
processes behind). The subclasses here change exactly that:

- every route lives under a per-launch secret path, `/<token>/...`; any other request is
  refused with 403 before routing, so a guess learns nothing;
- the websocket accepts only the served origin: websockets are not bound by the browser's
  same-origin policy, so without this any site the user visits could drive the app;
- each app runs in its own session (process group) with a mark in its environment that its
  descendants inherit. When its websocket closes or the server stops, the app is asked to
  quit, then the group gets SIGTERM, then SIGKILL; then whatever still carries the mark
  (a tool's command in a session of its own) is killed too. On Linux PR_SET_PDEATHSIG
  kills the app if the server itself is killed (-9), when nobody is left to sweep.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shlex
import signal
import sys
from asyncio.subprocess import Process
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import aiohttp_jinja2
from aiohttp import WSCloseCode, web
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from ._page import PageLoader

GRACE = 3.0  # seconds an app gets to quit when asked, and again after SIGTERM
INPUT_LIMIT = 1 << 20  # bytes of input an app may leave unread before more is dropped
HEARTBEAT = 15.0  # a browser gone without a close frame is noticed within about two of these
# What textual-serve adds to an app's environment to make it talk to the server; the rest
# of the environment is smith's own (the caller's, not necessarily os.environ).
TEXTUAL_KEYS = (
    "TEXTUAL_DRIVER",
    "TEXTUAL_FPS",
    "TEXTUAL_COLOR_SYSTEM",
    "TERM_PROGRAM",
    "TERM_PROGRAM_VERSION",
    "COLUMNS",
    "ROWS",
    "TEXTUAL",
    "TEXTUAL_LOG",
)
# In each app's environment, with a value of its own (configuration knows it is no setting).
MARK = "SMITH_WEB_APP"


# Runs first in each app's process on Linux: arms PR_SET_PDEATHSIG, so that the app gets
# SIGKILL when the server (the thread that started it) goes, even by kill -9, then becomes
# the app; exec keeps the setting. A launcher rather than a preexec_fn, which is not safe
# in a process with threads.
ARM = """
import ctypes, os, signal, sys
ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
if os.getppid() != int(sys.argv[1]):  # the server died before prctl: no signal will come
    sys.exit(1)
os.execvp(sys.argv[2], sys.argv[2:])
"""


def _armed(argv: Sequence[str]) -> list[str]:
    if not sys.platform.startswith("linux"):
        return list(argv)
    return [sys.executable, "-I", "-S", "-c", ARM, str(os.getpid()), *argv]


def _marked(token: str) -> list[int]:
    """Processes whose environment carries this app's mark (Linux /proc; elsewhere none):
    found even after they left the app's group and were re-parented."""
    needle = f"{MARK}={token}".encode()
    found = []
    for name in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if name.isdigit():
            try:
                with open(f"/proc/{name}/environ", "rb") as f:
                    if needle in f.read().split(b"\0"):
                        found.append(int(name))
            except OSError:  # gone meanwhile, or not ours to read
                continue
    return found


async def _within(awaitable: Awaitable[Any], seconds: float) -> bool:
    try:
        await asyncio.wait_for(awaitable, seconds)
    except TimeoutError:
        return False
    return True


async def _exits(process: Process, seconds: float) -> bool:
    """Whether `process` exits within `seconds`. Not `process.wait()`: that also waits for
    its output pipes to close, which a process it started may hold open for ever."""
    deadline = asyncio.get_running_loop().time() + seconds
    while process.returncode is None and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.02)  # set by asyncio's child watcher, which has no event
    return process.returncode is not None


class AppProcess(AppService):
    """One app process for one websocket, in its own process group, always ended."""

    def __init__(
        self, argv: Sequence[str], *, env: Mapping[str, str], cwd: str, **kwargs: Any
    ) -> None:
        super().__init__(shlex.join(argv), **kwargs)
        self.argv = list(argv)
        self.env = dict(env)
        self.cwd = cwd
        self.mark = secrets.token_hex(16)
        self._ending: asyncio.Future[None] | None = None

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        textual = super()._build_environment(width, height)
        own = {k: v for k, v in textual.items() if k in TEXTUAL_KEYS}
        return {**self.env, **own, MARK: self.mark}

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Process:
        # exec, not a shell: the process we track is the app itself, and no argument is
        # ever re-parsed. A new session makes the app the leader of a group that also
        # holds whatever its tools start, so one killpg ends them all.
        self._process = process = await asyncio.create_subprocess_exec(
            *_armed(self.argv),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self._build_environment(width, height),
            cwd=self.cwd,
            start_new_session=True,
        )
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    # Input is written without waiting for the app to read it (textual-serve awaits
    # drain): a handler stuck on a wedged app's full pipe would never see its browser
    # leave, and so never end the app. Input beyond INPUT_LIMIT unread bytes is dropped.
    async def send_bytes(self, data: bytes) -> bool:
        return self._write(self.encode_packet(b"D", data))

    async def send_meta(self, data: dict[str, str | int | bool | None]) -> bool:
        return self._write(self.encode_packet(b"M", json.dumps(data).encode()))

    def _write(self, packet: bytes) -> bool:
        stdin = self.stdin
        if stdin.is_closing() or stdin.transport.get_write_buffer_size() > INPUT_LIMIT:
            return False
        stdin.write(packet)
        return True

    async def run(self) -> None:
        await super().run()
        # The app is gone (it quit, crashed or was ended): end the page's session too,
        # rather than leave the browser looking at a terminal nobody drives.
        with contextlib.suppress(Exception):
            await self.remote_close()

    async def stop(self) -> None:
        """End the app and its group. Called by the websocket handler and by the server's
        shutdown, possibly at once; the one ending is shielded so that a cancelled caller
        (a handler cut short at shutdown) cannot leave it half done."""
        if self._ending is None:
            self._ending = asyncio.ensure_future(self._end())
        await asyncio.shield(self._ending)

    async def _end(self) -> None:
        process = self._process
        if process is None:
            return
        if process.returncode is None:
            await self.send_meta({"type": "quit"})  # the app's own clean exit comes first
        escalation = [signal.SIGTERM, signal.SIGKILL]
        while not await _exits(process, GRACE) and escalation:
            self.signal_group(escalation.pop(0))
        # Sweep even after a clean exit: whatever the app left running would otherwise
        # outlive it (smith's bash tool runs commands in sessions of their own).
        self.kill_all(await asyncio.to_thread(_marked, self.mark))
        task = self._task
        if task is not None and not await _within(asyncio.shield(task), GRACE):
            task.cancel()  # something that escaped both still holds the output pipe

    def signal_group(self, sig: int) -> None:
        if self._process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._process.pid, sig)

    def kill_all(self, marked: list[int]) -> None:
        """SIGKILL the app's group and the `marked` processes (see `_marked`)."""
        self.signal_group(signal.SIGKILL)
        for pid in marked:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


class SmithServer(Server):
    """Serves `argv` (the smith app) under a secret path, to its own origin only, in a
    page called `title`."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        host: str,
        port: int,
        env: Mapping[str, str],
        cwd: str,
        title: str = "smith",
    ) -> None:
        super().__init__(shlex.join(argv), host=host, port=port, title=title)
        self.argv = list(argv)
        self.env = dict(env)
        self.cwd = cwd
        self.token = secrets.token_urlsafe(32)
        self.origins: frozenset[str] = frozenset()
        self.apps: dict[AppProcess, web.WebSocketResponse] = {}
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        """The page, secret included: the one address that opens the app."""
        return f"{self.public_url}/{self.token}/"

    async def _make_app(self) -> web.Application:
        # textual-serve's own application (page, websocket, static files), mounted under
        # the secret; the root only holds the guard.
        root = web.Application(middlewares=[self._guard])
        page = await super()._make_app()
        templates = aiohttp_jinja2.get_env(page)
        templates.loader = PageLoader(templates.loader)  # a title, Ctrl+C copies
        root.add_subapp(f"/{self.token}/", page)
        root.on_response_prepare.append(_no_referrer)
        return root

    @web.middleware
    async def _guard(
        self,
        request: web.Request,
        handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
    ) -> web.StreamResponse:
        first = request.path.split("/", 2)[1]
        # compare_digest: the time a refusal takes says nothing about the secret.
        if not secrets.compare_digest(first.encode(), self.token.encode()):
            raise web.HTTPForbidden(text="403: this address needs the URL smith web printed\n")
        if request.path == f"/{first}":
            raise web.HTTPFound(f"/{first}/")
        return await handler(request)

    async def on_startup(self, app: web.Application) -> None:
        """textual-serve prints a banner here; smith prints the URL itself."""

    async def on_shutdown(self, app: web.Application) -> None:
        apps = list(self.apps.items())
        await asyncio.gather(
            *(ws.close(code=WSCloseCode.GOING_AWAY) for _, ws in apps),
            *(a.stop() for a, _ in apps),
            return_exceptions=True,
        )

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        # Browsers always send Origin with a websocket; anything but our page's is another
        # site (or a client that does not say), and must not get a terminal here.
        if request.headers.get("Origin") not in self.origins:
            raise web.HTTPForbidden(text="403: this websocket serves only smith's own page\n")
        websocket = web.WebSocketResponse(heartbeat=HEARTBEAT)
        await websocket.prepare(request)
        app = AppProcess(
            self.argv,
            env=self.env,
            cwd=self.cwd,
            write_bytes=websocket.send_bytes,
            write_str=websocket.send_str,
            close=websocket.close,
            download_manager=self.download_manager,
            debug=self.debug,
        )
        self.apps[app] = websocket
        try:
            width = to_int(request.query.get("width", "80"), 80)
            height = to_int(request.query.get("height", "24"), 24)
            await app.start(width, height)
            await self._process_messages(websocket, app)
        finally:
            await app.stop()
            del self.apps[app]
            await websocket.close()
        return websocket

    async def start(self) -> None:
        """Listen (OSError if the address is refused); `url` is valid afterwards."""
        runner = web.AppRunner(
            await self._make_app(), handle_signals=False, access_log=None, shutdown_timeout=GRACE
        )
        await runner.setup()
        self._runner = runner
        await web.TCPSite(runner, self.host, self.port).start()
        self.port = int(runner.addresses[0][1])  # the port the system chose for --port 0
        host = _url_host(self.host)
        self.public_url = f"http://{host}:{self.port}"
        names = {host, "127.0.0.1", "localhost", "[::1]"} if is_loopback(self.host) else {host}
        self.origins = frozenset(f"http://{name}:{self.port}" for name in names)

    async def close(self) -> None:
        """Stop listening, end every app (on_shutdown), then kill what is left, if any."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        for app in list(self.apps):
            app.kill_all(_marked(app.mark))


async def _no_referrer(request: web.Request, response: web.StreamResponse) -> None:
    # The page loads a web font from another site: its address, secret included, must not
    # travel along as the Referer.
    response.headers["Referrer-Policy"] = "no-referrer"


def is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _url_host(host: str) -> str:
    """`host` as it appears in a URL; a wildcard address becomes this machine's name."""
    if host in ("", "0.0.0.0", "::"):
        import socket

        return socket.gethostname()
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
