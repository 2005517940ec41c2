"""The MCP servers of one runtime: connected in the background when the plugin starts,
their tools published through RuntimeView.set_tools as each becomes ready, what went
wrong kept as notices for the next safe point, closed when the plugin stops."""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections import deque
from typing import TYPE_CHECKING, Any

from smith.diagnostics import Diagnostic, SmithError, Source, masked

from ._adapt import MCP_NAME_COLLISION, chosen, resource_spec, tool_name, tool_spec
from ._config import servers
from ._conn import Connection, Hub
from ._vet import MCP_TOOL_LEFT_OUT

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
        self.image_bytes = config.integer("images.max-bytes")
        self.context = context
        self.set_tools = set_tools
        self.notices: deque[Diagnostic] = deque()
        self.lock = threading.Lock()
        self.hub: Hub | None = None
        self.connections: dict[str, Connection] = {}
        self._reported: set[tuple[str, str]] = set()
        self._origin: dict[str, tuple[str, str]] = {}  # tool name -> (server, its tool)
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
            conn.image_bytes = self.image_bytes
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
            for problem in conn.listing.problems:
                if (s.name, problem) not in self._reported:
                    self._reported.add((s.name, problem))
                    left = MCP_TOOL_LEFT_OUT(value=s.name, source=s.source, server=s.name,
                                             what=problem)  # fmt: skip
                    self.notice(left)
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
                self._origin[name] = (s.name, tool.name)
                specs.append(tool_spec(hub, conn, tool, name))
            # The resource reader: for a server that lists resources (or templates), and
            # chosen by allow and deny as a tool named read_resource is.
            listing = conn.listing
            readable = listing.resources or listing.templates
            if readable and chosen("read_resource", s.allow, s.deny):
                name = tool_name(s.name, "read_resource")
                if name in taken:
                    self._collision(s.name, "read_resource", name, taken[name])
                else:
                    taken[name] = f"the resource reader of server {s.name!r}"
                    self._origin[name] = (s.name, "read_resource")
                    specs.append(resource_spec(hub, conn, name))
        return specs

    def _collision(self, server: str, tool: str, name: str, other: str) -> None:
        if (server, tool) in self._reported:
            return
        self._reported.add((server, tool))
        conn = self.connections.get(server)
        where = conn.source if conn is not None else Source("plugin", "mcp")
        self.notice(
            MCP_NAME_COLLISION(
                value=name, source=where, tool=tool, server=server, name=name, other=other
            )
        )

    def publish(self) -> None:
        """The ready servers' tools offered; one whose name another plugin's tool (or
        smith's own) has is left out with a notice, the others offered all the same."""
        with self.lock:
            specs = self.tools()
            for _ in range(len(specs) + 1):
                try:
                    self.set_tools(specs)
                    return
                except OSError as exc:  # a view that cannot change tools
                    log.warning("the MCP tools cannot be offered: %s", masked(str(exc)))
                    return
                except ValueError as exc:
                    said = str(exc)
                    words = set(re.findall(r"[A-Za-z0-9_-]+", said))
                    clashing = [t.name for t in specs if t.name in words]
                    if not clashing:
                        log.warning("the MCP tools cannot be offered: %s", masked(said))
                        return
                    plugin, offers, _rest = said.partition(" offers ")
                    other = plugin if offers else "smith's own"
                    for name in clashing:
                        server, tool = self._origin.get(name, ("?", name))
                        self._collision(server, tool, name, f"a tool of {other}")
                    specs = [t for t in specs if t.name not in clashing]

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
                **({"origin": s.origin} if s.origin else {}),  # an installed package's
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
