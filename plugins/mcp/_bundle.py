"""MCP servers another plugin brings (a skill's front matter `mcp`), connected when it
asks and offered under its own prefix: `<prefix>__<tool>`. The servers are read and
checked as configured ones are (_config.server_of), connected with the same code
(_conn: in the sandbox unless sandbox=false, each within its startup-timeout) on an event
loop thread of their own, and their tools are the same ToolSpecs (_adapt), so every call
goes through the one tool runner. `close` stops them."""

from __future__ import annotations

import asyncio
import hashlib
from typing import TYPE_CHECKING, Any

from smith.diagnostics import SmithError

from ._adapt import MAX_NAME, chosen, safe, tool_spec
from ._config import server_of
from ._conn import Connection, Hub

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from smith.diagnostics import Source
    from smith.effects import ToolContext, ToolSpec


def prefixed(prefix: str, tool: str) -> str:
    """`<prefix>__<tool>`, valid for every provider (a long one keeps its start and a
    hash of the whole)."""
    name = f"{prefix}__{safe(tool)}"
    if len(name) <= MAX_NAME:
        return name
    return f"{name[: MAX_NAME - 9]}_{hashlib.sha1(name.encode()).hexdigest()[:8]}"


class Servers:
    """The MCP servers one owner brings: `problems` says what could not be had (a bad
    value, a server that did not connect, a tool name taken twice), `tools()` what is
    offered, `close()` stops them. Built by smith.plugins.mcp.connect."""

    def __init__(self, prefix: str, connections: list[Connection], problems: list[str]) -> None:
        self.prefix = prefix
        self.connections = connections
        self.problems = problems
        self.hub: Hub | None = Hub() if connections else None
        self._tools: list[ToolSpec] = []

    def _connect(self) -> None:
        hub = self.hub
        if hub is None:
            return
        wait = max(c.server.startup_timeout for c in self.connections)

        async def connect_all() -> list[Any]:
            return await asyncio.gather(
                *(c.connect() for c in self.connections), return_exceptions=True
            )

        try:
            ended = hub.submit(connect_all()).result(wait + 5)
        except Exception as exc:  # the gather itself never raises; bounded all the same
            ended = [exc] * len(self.connections)
        taken: dict[str, str] = {}
        for conn, outcome in zip(self.connections, ended, strict=True):
            s = conn.server
            if isinstance(outcome, BaseException):
                said = outcome.diagnostic.what if isinstance(outcome, SmithError) else outcome
                self.problems.append(f"the MCP server {s.name} is not connected: {said}")
                continue
            for tool in conn.listing.tools:
                if not chosen(tool.name, s.allow, s.deny):
                    continue
                name = prefixed(self.prefix, tool.name)
                if name in taken:
                    self.problems.append(
                        f"the tool {tool.name} of MCP server {s.name} is not offered: "
                        f"{name} is {taken[name]}'s"
                    )
                    continue
                taken[name] = f"server {s.name}"
                self._tools.append(tool_spec(hub, conn, tool, name))

    def tools(self) -> list[ToolSpec]:
        return list(self._tools)

    def drop(self, names: Sequence[str]) -> None:
        """Offer no tool of `names` (the owner has tools of those names)."""
        self._tools = [t for t in self._tools if t.name not in names]

    def close(self) -> None:
        hub, self.hub = self.hub, None
        if hub is not None:
            hub.close(self.connections, timeout=3.0)


def connect(
    prefix: str,
    servers: Mapping[str, Mapping[str, object]],
    *,
    context: ToolContext | None,
    home: str | None,
    source: Source,
    readable: tuple[str, ...] = (),
) -> Servers:
    """Connect `servers` (name -> the keys a configured server takes) and list their
    tools; returns once each is connected or has failed (its startup-timeout). In the
    sandbox they may read the `readable` folders, even within smith's own."""
    problems: list[str] = []
    connections = []
    for name, fields in servers.items():
        server, wrong = server_of(str(name), fields, source)
        problems += [d.what for d in wrong]
        if server is not None:
            conn = Connection(server, context, home)
            conn.readable = readable
            connections.append(conn)
    bundle = Servers(prefix, connections, problems)
    bundle._connect()
    return bundle
