"""The MCP servers of one runtime: connected in the background when the plugin starts,
their tools published through RuntimeView.set_tools as each becomes ready, what went
wrong kept as notices for the next safe point, closed when the plugin stops."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import deque
from typing import TYPE_CHECKING, Any

from smith.diagnostics import Diagnostic, SmithError, Source, masked

from ._adapt import MCP_NAME_COLLISION, chosen, resource_spec, tool_name, tool_spec
from ._config import servers
from ._conn import Connection, Hub

if TYPE_CHECKING:
    import concurrent.futures
    from collections.abc import Callable, Sequence

    from smith.config import Config
    from smith.effects import ToolContext, ToolSpec


log = logging.getLogger("smith.plugins.mcp")


class Manager:
    def __init__(
        self,
        config: Config,
        context: ToolContext | None,
        set_tools: Callable[[Sequence[ToolSpec]], None],
    ) -> None:
        self.servers, problems = servers(config)
        self.home = config.home
        self.context = context
        self.set_tools = set_tools
        self.notices: deque[Diagnostic] = deque()
        self.lock = threading.Lock()
        self.hub: Hub | None = None
        self.connections: dict[str, Connection] = {}
        self._reported: set[tuple[str, str]] = set()
        self._status = ""
        self.session = ""  # the session of the runtime that started it
        for problem in problems:
            self.notice(problem)

    def notice(self, diagnostic: Diagnostic) -> None:
        log.warning("%s", masked(diagnostic.render()))
        self.notices.append(diagnostic)

    def begin(self) -> None:
        """Connect every server in the background; returns at once."""
        if not self.servers:
            return
        self.hub = Hub()
        for server in self.servers:
            conn = Connection(server, self.context, self.home)
            conn.on_ready = lambda _conn: self.publish()
            self.connections[server.name] = conn
            future = self.hub.submit(conn.connect())
            future.add_done_callback(self._connected)

    def _connected(self, future: concurrent.futures.Future[Any]) -> None:
        if future.cancelled():
            return
        exc = future.exception()
        if isinstance(exc, SmithError):
            self.notice(exc.diagnostic)
        elif exc is not None:
            log.warning("an MCP server failed: %s", masked(f"{type(exc).__name__}: {exc}"))

    def tools(self) -> list[ToolSpec]:
        """The tools of every ready server, in configuration order; a name taken twice
        is offered once (the first), with a notice."""
        specs: list[ToolSpec] = []
        taken: dict[str, str] = {}
        hub = self.hub
        if hub is None:
            return specs
        for conn in self.connections.values():
            if conn.state not in ("ready", "lost"):
                continue
            s = conn.server
            wanted = [
                (tool_name(s.name, t.name), t)
                for t in conn.listing.tools
                if chosen(t.name, s.allow, s.deny)
            ]
            for name, tool in wanted:
                if name in taken:
                    self._collision(s.name, tool.name, name, taken[name])
                    continue
                taken[name] = f"tool {tool.name!r} of server {s.name!r}"
                specs.append(tool_spec(hub, conn, tool, name))
            if conn.listing.has_resources:
                name = tool_name(s.name, "read_resource")
                if name in taken:
                    self._collision(s.name, "read_resource", name, taken[name])
                else:
                    taken[name] = f"the resource reader of server {s.name!r}"
                    specs.append(resource_spec(hub, conn, name))
        return specs

    def _collision(self, server: str, tool: str, name: str, other: str) -> None:
        if (server, tool) in self._reported:
            return
        self._reported.add((server, tool))
        where = self.connections[server].source
        self.notice(
            MCP_NAME_COLLISION(
                value=name, source=where, tool=tool, server=server, name=name, other=other
            )
        )

    def publish(self) -> None:
        with self.lock:
            try:
                self.set_tools(self.tools())
            except (ValueError, OSError) as exc:
                self.notice(
                    MCP_NAME_COLLISION(
                        value="",
                        source=Source("plugin", "mcp"),
                        tool="*",
                        server="*",
                        name="?",
                        other=str(exc),
                    )
                )

    def status(self) -> str:
        """One line: each server and its state (ready ones with their tool count)."""
        parts = []
        for name, conn in self.connections.items():
            if conn.state == "ready":
                parts.append(f"{name} ({len(conn.listing.tools)} tools)")
            else:
                parts.append(f"{name} {conn.state}")
        return "mcp: " + ", ".join(parts) if parts else ""

    @property
    def shown_status(self) -> str:
        return self._status

    def changed_status(self) -> str | None:
        now = self.status()
        if now == self._status:
            return None
        self._status = now
        return now

    def close(self) -> None:
        if self.hub is not None:
            self.hub.close(list(self.connections.values()), timeout=3.0)
            self.hub = None


def probe(
    config: Config,
    context: ToolContext | None,
    names: Sequence[str] | None = None,
    timeout: float = 10.0,
) -> tuple[list[dict[str, Any]], list[Diagnostic]]:
    """Connect each configured server (those in `names`) briefly, each within `timeout`
    seconds at most: what `smith mcp list` and `tools` show of it."""
    import asyncio

    found, problems = servers(config)
    picked = [s for s in found if names is None or s.name in names]
    if not picked:
        return [], problems
    hub = Hub()
    conns = []
    for server in picked:
        server.startup_timeout = min(server.startup_timeout, timeout)
        conns.append(Connection(server, context, config.home))

    async def connect_all() -> list[Any]:
        return await asyncio.gather(*(c.connect() for c in conns), return_exceptions=True)

    with contextlib.suppress(Exception):  # each connection says how it ended
        hub.submit(connect_all()).result(timeout + 5)
    shown = []
    for conn in conns:
        s = conn.server
        shown.append(
            {
                "name": s.name,
                "transport": s.transport,
                "target": s.describe(),
                "source": str(s.source),
                "state": conn.state,
                "error": conn.error.diagnostic.what if conn.error is not None else None,
                "sandbox": s.sandbox if s.transport == "stdio" else None,
                "tools": [
                    {
                        "name": t.name,
                        "offered_as": tool_name(s.name, t.name),
                        "chosen": chosen(t.name, s.allow, s.deny),
                        "description": (t.description or "").strip().split("\n")[0],
                    }
                    for t in conn.listing.tools
                ],
                "resources": len(conn.listing.resources),
                "prompts": [p.name for p in conn.listing.prompts],
            }
        )
    hub.close(conns, timeout=3.0)
    return shown, problems
