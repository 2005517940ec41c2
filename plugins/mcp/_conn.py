"""Connections to MCP servers through the official SDK (`mcp.Client`), on an event loop
thread of their own (Hub), so a slow or stuck server never holds the runtime's loop.

A Connection holds one server's client in a task of its own (the SDK's context managers
are entered and left in one task): connecting is bounded by the server's startup-timeout,
each request by its timeout (the SDK then sends `notifications/cancelled` and raises;
here that is `mcp.timeout`). A request whose task is cancelled is cancelled by the SDK,
which sends `notifications/cancelled` for it. The transport's streams are watched: its
end marks the server lost, and what each operation wrote is noted, so a dead server is
restarted once for an operation that had sent nothing, and a call that may have reached
it is reported as lost, never sent again.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from smith.diagnostics import DiagnosticKind, SmithError, Source

from . import _proc, _vet
from ._wire import WRITTEN, Broken, Sent, Watched, marked, with_client

if TYPE_CHECKING:
    import concurrent.futures
    from collections.abc import Awaitable, Callable, Coroutine

    from mcp import Client
    from mcp_types import Prompt, Resource, Tool

    from smith.effects import ToolContext

    from ._config import Server

MCP_TIMEOUT = DiagnosticKind(
    "mcp.timeout",
    what="MCP server '{server}' did not answer {operation} within {seconds} s",
    why="smith waits {seconds} s for each answer (mcp.server.{server}.timeout, or "
    "startup-timeout while connecting) so a server that never answers cannot hold a turn",
    fix="check the server (its log, its own dependencies), or give it longer: "
    'mcp {{ server "{server}" timeout=120; }}',
)
MCP_CONNECT_FAILED = DiagnosticKind(
    "mcp.connect-failed",
    what="MCP server '{server}' could not be connected: {reason}",
    why="smith starts or reaches each configured server when a runtime starts; its tools "
    "are offered only once it answers",
    fix="{remedy}; its tools are offered once it answers",
)
MCP_LOST = DiagnosticKind(
    "mcp.lost",
    what="MCP server '{server}' ended while {operation} was in flight",
    why="the request may have reached the server, so smith does not send it again (it "
    "could do twice what it does); the server is restarted for the next request",
    fix="check what the call did, then ask again if it is still needed",
)


def _oauth() -> Any:
    import importlib

    try:
        return importlib.import_module("smith.plugins._mcp_oauth")
    except ImportError:
        return None


def oauth_hook() -> Callable[..., Any] | None:
    """The OAuth client auth for servers configured with oauth=true (the OAuth half,
    smith.plugins._mcp_oauth: `oauth_auth(alias, url, *, home, say, interactive)` ->
    httpx2.Auth), if it is there."""
    hook = getattr(_oauth(), "oauth_auth", None)
    return hook if callable(hook) else None


def oauth_said(exc: BaseException) -> SmithError | None:
    """The OAuth half's diagnostic (mcp.login-needed, a login that failed) `exc` holds."""
    find = getattr(_oauth(), "login_error", None)
    found = find(exc) if callable(find) else None
    return found if isinstance(found, SmithError) else None


class Hub:
    """An event loop on a thread of its own for the MCP connections of one runtime."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="smith-mcp", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        loop = self.loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:  # what is left is cancelled and given a moment, then the loop closed
            left = asyncio.all_tasks(loop)
            for task in left:
                task.cancel()
            with contextlib.suppress(Exception):
                loop.run_until_complete(asyncio.wait(left, timeout=2) if left else asyncio.sleep(0))
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    def submit(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def close(self, connections: list[Connection], timeout: float = 4.0) -> None:
        """Close `connections` (each server stopped), then the loop; bounded."""
        if self.loop.is_closed() or not self.thread.is_alive():
            return

        async def closing() -> None:
            await asyncio.wait(
                [asyncio.ensure_future(c.close(grace=timeout)) for c in connections]
                or [asyncio.ensure_future(asyncio.sleep(0))],
                timeout=timeout + 1,
            )

        with contextlib.suppress(Exception):  # best effort, bounded
            self.submit(closing()).result(timeout + 2)
        for conn in connections:  # a server that outlived its grace dies with its group
            conn.kill()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(2)


@dataclass
class Listing:
    tools: list[Tool] = field(default_factory=list)
    resources: list[Resource] = field(default_factory=list)
    templates: int = 0
    prompts: list[Prompt] = field(default_factory=list)
    has_resources: bool = False
    problems: list[str] = field(default_factory=list)  # tools left out, and why


class Lost(Exception):
    """The server ended while a request that may have reached it was in flight."""


class Connection:
    """One server: connect, list, call, read; restarted once per failed operation."""

    def __init__(self, server: Server, context: ToolContext | None = None,
                 home: str | None = None) -> None:  # fmt: skip
        self.server = server
        self.context = context
        self.home = home  # SMITH_HOME: where the OAuth half keeps its tokens
        self.state = "idle"  # idle, connecting, ready, failed, lost, closed
        self.error: SmithError | None = None
        self.listing = Listing()
        self.client: Client | None = None
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._lock: asyncio.Lock | None = None
        self.spawn: _proc.Spawn | None = None  # the stdio server's process
        self.broken = Broken()  # the HTTP exchanges with it that broke
        self.restarts = 0
        self.image_bytes = 5 * 1024 * 1024  # images.max-bytes, for the images it answers
        self._relisting: asyncio.Task[None] | None = None
        self._relist_wanted = False
        self.on_ready: Callable[[Connection], None] | None = None
        # Read-only in the sandbox: a skill's folder, an installed package's (its servers).
        self.readable: tuple[str, ...] = server.readable

    @property
    def source(self) -> Source:
        return self.server.source

    def failure(self, kind: DiagnosticKind, **fields: Any) -> SmithError:
        return SmithError(
            kind(value=self.server.name, source=self.source, server=self.server.name, **fields)
        )

    # -- connecting ---------------------------------------------------------------------

    async def connect(self) -> None:
        """Start (or restart) the server and list what it offers; SmithError when it
        cannot be had within its startup-timeout."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self.state == "ready":
                return
            await self._drop()
            self.state = "connecting"
            started: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._wake = asyncio.Event()
            self._task = asyncio.ensure_future(self._hold(started, self._wake))
            try:
                await asyncio.wait_for(asyncio.shield(started), self.server.startup_timeout)
            except TimeoutError:
                self._task.cancel()
                self.state = "failed"
                self.error = self.failure(
                    MCP_TIMEOUT,
                    operation="the connection",
                    seconds=f"{self.server.startup_timeout:g}",
                )
                raise self.error from None
            except SmithError as exc:
                if self.state == "closed":  # stopped while it started: nothing failed
                    raise asyncio.CancelledError from None
                self.state, self.error = "failed", exc
                raise
            self.state, self.error = "ready", None
        if self.on_ready is not None:
            self.on_ready(self)

    async def _drop(self) -> None:
        if self._wake is not None:
            self._wake.set()
        if self._task is not None and not self._task.done():
            try:
                await asyncio.wait_for(asyncio.shield(self._task), 5)
            except (TimeoutError, asyncio.CancelledError, Exception):
                self._task.cancel()
        self._task = None
        self.client = None

    async def close(self, grace: float = 5.0) -> None:
        """Stop the server: the SDK's shutdown (stdin closed, then SIGTERM) within
        `grace` seconds, then its process group killed; one still connecting is killed
        at once (a quit never waits on a start)."""
        connecting = self.state in ("idle", "connecting")
        self.state = "closed"
        if self._wake is not None:
            self._wake.set()
        task = self._task
        if connecting:
            self.kill()
        if task is not None and not task.done():
            with contextlib.suppress(TimeoutError, asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(task), 0.5 if connecting else grace)
        self.kill()
        await self._drop()
        self.state = "closed"

    def kill(self) -> None:
        """What is left of a stdio server's process group killed (no wait)."""
        if self.spawn is not None:
            self.spawn.kill()

    async def _hold(self, started: asyncio.Future[None], wake: asyncio.Event) -> None:
        from contextlib import AsyncExitStack

        from mcp import Client

        token = None
        try:
            transport = self._transport(wake)
            if self.spawn is not None:
                token = _proc.spawning(self.spawn)
            async with AsyncExitStack() as stack:
                client = Client(transport, cache=None, message_handler=self._message)
                await stack.enter_async_context(client)
                if token is not None:
                    _proc.reset(token)
                    token = None
                self.listing = await _list(client)
                self.client = client
                started.set_result(None)
                await wake.wait()
        except asyncio.CancelledError:
            if not started.done():
                started.cancel()
            raise
        except BaseException as exc:
            if not started.done():
                started.set_exception(self._why(exc))
        finally:
            if token is not None:
                _proc.reset(token)
            if self.spawn is not None:
                self.spawn.close_fds()
            self.client = None
            if self.state == "ready":
                self.state = "lost"
            if not started.done():
                started.set_exception(
                    self.failure(
                        MCP_CONNECT_FAILED, reason="it ended at once", remedy=self._remedy()
                    )
                )

    async def _message(self, message: Any) -> None:
        """A server's notification: its tools changed (tools/list_changed), so they are
        listed again (once at a time; a change during a listing lists once more)."""
        if getattr(message, "method", None) != "notifications/tools/list_changed":
            return
        self._relist_wanted = True
        if self._relisting is None or self._relisting.done():
            self._relisting = asyncio.ensure_future(self._relist())

    async def _relist(self) -> None:
        while self._relist_wanted and self.state == "ready" and self.client is not None:
            self._relist_wanted = False
            try:
                problems: list[str] = []
                listing = _vet.tools(self.client, problems)
                tools = await asyncio.wait_for(listing, self.server.timeout)
            except Exception:
                return
            self.listing.tools = tools
            self.listing.problems = problems
            if self.on_ready is not None:
                self.on_ready(self)

    def _why(self, exc: BaseException) -> SmithError:
        if isinstance(exc, SmithError):
            return exc
        if self.server.oauth:  # a login needed (or failed): the OAuth half says so
            login = oauth_said(exc)
            if login is not None:
                return login
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        if reason == "MCPError: Connection closed":
            reason = "it ended before it answered"
        said = self._stderr_tail()
        if said:
            reason += f" (it said: {said})"
        return self.failure(MCP_CONNECT_FAILED, reason=reason, remedy=self._remedy())

    def _remedy(self) -> str:
        if self.server.command is not None:
            return (
                f"run `{self.server.describe()}` by hand to see why; a server that needs more "
                "than the sandbox allows (the network, files outside the project) needs "
                "sandbox=false in its block"
            )
        return f"check that {self.server.url} is up and speaks MCP's Streamable HTTP"

    def _stderr_tail(self) -> str:
        return self.spawn.said() if self.spawn is not None else ""

    def _transport(self, wake: asyncio.Event) -> Any:
        s = self.server
        if s.command is not None:
            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client

            if not _proc.install():
                raise self.failure(
                    MCP_CONNECT_FAILED,
                    reason="this mcp SDK's stdio client starts its processes in a way smith "
                    "does not know (it cannot confine them)",
                    remedy="install the mcp version smith names (pip install 'mcp>=2.3,<3')",
                )
            if self.spawn is not None:
                self.spawn.kill()  # a previous start's leftovers
            argv, env, cwd, fds = self._command()
            self.spawn = _proc.Spawn(fds)
            params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=cwd)
            return Watched(stdio_client(params), wake)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        headers = dict(s.headers)
        if s.token_env:
            token = os.environ.get(s.token_env)
            if not token:
                raise self.failure(
                    MCP_CONNECT_FAILED,
                    reason=f"token-env names {s.token_env}, which is not set",
                    remedy=f"set {s.token_env} to the server's token",
                )
            from smith.diagnostics import register_secret

            register_secret(token)  # never shown in any diagnostic or log
            headers["Authorization"] = f"Bearer {token}"
        auth = None
        if s.oauth:  # the OAuth client auth, with the tokens `smith mcp login` keeps
            hook = oauth_hook()
            if hook is None or self.home is None:
                raise self.failure(
                    MCP_CONNECT_FAILED,
                    reason="oauth=true, but this smith has no OAuth client",
                    remedy="remove oauth=true and give a token-env",
                )
            name, url = s.name, s.url
            auth = hook(name, url, home=self.home, say=lambda _text: None, interactive=False)
        http = httpx2.AsyncClient(
            headers=headers,
            auth=auth,
            timeout=httpx2.Timeout(30.0, read=300.0),
            transport=marked(self.broken),
        )
        assert s.url is not None
        return Watched(with_client(http, streamable_http_client(s.url, http_client=http)), wake)

    def _command(self) -> tuple[list[str], dict[str, str], str, tuple[int, ...]]:
        """The server's command line (under bubblewrap, with the socket filter the bash
        tool's commands get, unless sandbox=false), its environment, working directory
        and the descriptors it alone inherits (the filter's)."""
        s = self.server
        assert s.command is not None
        ctx = self.context
        root = ctx.root if ctx is not None else os.getcwd()
        cwd = os.path.join(root, s.cwd) if s.cwd else root
        env = ctx.process_env(**s.env) if ctx is not None else {**os.environ, **s.env}
        command = shutil.which(s.command, path=env.get("PATH")) or s.command
        argv = [command, *s.args]
        if not s.sandbox or ctx is None:
            return argv, env, cwd, ()
        sandbox = ctx.sandbox
        mode = sandbox.effective
        if mode == "off":
            return argv, env, cwd, ()
        if mode == "refused":
            problem = sandbox.problem()
            raise self.failure(
                MCP_CONNECT_FAILED,
                reason=f"the sandbox cannot run here ({problem[0] if problem else '?'})",
                remedy="install bubblewrap, or give this server sandbox=false",
            )
        try:
            confined = sandbox.confinement(roots=list(ctx.roots), cwd=cwd, protected=ctx.protected)
        except Exception as exc:  # the socket filter cannot be had (FilterUnavailable)
            cause = getattr(exc, "cause", None) or str(exc)
            remedy = getattr(exc, "remedy", None) or "give this server sandbox=false"
            raise self.failure(
                MCP_CONNECT_FAILED, reason=f"the sandbox cannot run here ({cause})", remedy=remedy
            ) from None
        wrapped = confined.argv(argv)
        binds = _proc.readable(wrapped, argv, sandbox.hidden, self.readable)
        return binds, sandbox.environment(env), cwd, confined.fds

    # -- operations ---------------------------------------------------------------------

    async def operation(
        self, what: str, run: Callable[[Client], Awaitable[Any]], *, replayable: bool
    ) -> Any:
        """`run(client)`, connecting first if the server is not up (a dead one is
        restarted once for this operation). A request that may have been sent when the
        server ended is sent again only when `replayable` (a list or a read)."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        restarted = False
        while True:
            if self.state != "ready" or self.client is None:
                if restarted:
                    raise self.error or self.failure(
                        MCP_CONNECT_FAILED, reason="it is not up", remedy=self._remedy()
                    )
                if self.state in ("lost", "failed"):
                    self.restarts += 1
                await self.connect()
                restarted = True
            client, wake, broke = self.client, self._wake, self.broken.count
            assert client is not None
            sent = Sent()
            token = WRITTEN.set(sent)
            try:
                return await run(client)
            except MCPError as exc:
                if exc.code == REQUEST_TIMEOUT:
                    raise self.failure(
                        MCP_TIMEOUT, operation=what, seconds=f"{self.server.timeout:g}"
                    ) from None
                # The connection is lost when its transport ended (its stream closed,
                # the process exited) or an HTTP exchange with it broke meanwhile, not
                # by the code: a server may answer -32000 (CONNECTION_CLOSED's number)
                # itself, and that answer is its error.
                ended = wake is not None and wake.is_set()
                if exc.code != CONNECTION_CLOSED or not (ended or self.broken.count > broke):
                    raise
                self.state = "lost"
                if self._wake is not None:
                    self._wake.set()
                if sent.written and not replayable:
                    raise Lost(
                        MCP_LOST(
                            value=self.server.name,
                            source=self.source,
                            server=self.server.name,
                            operation=what,
                        ).render()
                    ) from None
                if restarted:
                    raise self.failure(
                        MCP_CONNECT_FAILED, reason="it ended again at once", remedy=self._remedy()
                    ) from None
            finally:
                WRITTEN.reset(token)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        return await self.operation(
            f"the call of {name}",
            lambda c: c.call_tool(name, arguments, read_timeout_seconds=self.server.timeout),
            replayable=False,
        )

    async def read_resource(self, uri: str) -> Any:
        async def read(c: Client) -> Any:
            return await asyncio.wait_for(c.read_resource(uri), self.server.timeout)

        try:
            return await self.operation(f"the read of {uri}", read, replayable=True)
        except TimeoutError:
            raise self.failure(
                MCP_TIMEOUT, operation=f"the read of {uri}", seconds=f"{self.server.timeout:g}"
            ) from None

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> Any:
        return await self.operation(
            f"the prompt {name}", lambda c: c.get_prompt(name, arguments), replayable=True
        )


async def _list(client: Client) -> Listing:
    """What the server offers: tools, resources (and templates), prompts (each page)."""
    caps = client.server_capabilities
    out = Listing()
    if caps.tools is not None:
        out.tools = await _vet.tools(client, out.problems)
    if caps.resources is not None:
        out.has_resources = True
        try:
            out.resources = list((await client.list_resources()).resources)
            out.templates = len((await client.list_resource_templates()).resource_templates)
        except Exception:
            pass
    if caps.prompts is not None:
        with contextlib.suppress(Exception):  # a server whose list fails keeps its tools
            out.prompts = list((await client.list_prompts()).prompts)
    return out
