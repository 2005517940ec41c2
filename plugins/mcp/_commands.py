"""The mcp plugin's commands: `/mcp` (the servers, their state and prompts) and one
`/mcp__<alias>__<prompt> [ARG ...]` per prompt of a ready server, which sends the prompt
the server gives as the user's. `Commands` is a live sequence: frontends read a plugin's
commands when they list them, so a server's prompts appear once it is ready."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, overload

from smith.sdk import Command

if TYPE_CHECKING:
    from smith.sdk import CommandHost

    from ._conn import Connection
    from ._manager import Manager


async def _send(host: CommandHost, manager: Manager, conn: Connection, prompt: str,
                arguments: dict[str, str]) -> None:  # fmt: skip
    """Get `prompt` from the server and submit it as a prompt."""
    import asyncio

    from smith.protocol import ops

    from ._adapt import joined

    hub = manager.hub
    if hub is None:
        host.tell("the MCP servers are closed", error=True)
        return
    try:
        got = await asyncio.wrap_future(hub.submit(conn.get_prompt(prompt, arguments)))
    except Exception as exc:
        host.tell(f"prompt {prompt} of MCP server {conn.server.name}: {exc}", error=True)
        return
    text = "\n\n".join(joined([m.content])[0] for m in got.messages)
    host.runtime.submit(ops.Prompt(text))


def _arguments(names: list[str], text: str) -> dict[str, str]:
    """`NAME=VALUE` words by name, other words to the prompt's arguments in order."""
    import shlex

    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    out: dict[str, str] = {}
    free = iter(names)
    for word in words:
        key, sep, value = word.partition("=")
        if sep and key in names:
            out[key] = value
        else:
            name = next((n for n in free if n not in out), None)
            if name is not None:
                out[name] = word
    return out


def command_name(alias: str, prompt: str) -> str:
    """The command a server's prompt is: `mcp__<alias>__<prompt>`."""
    from ._adapt import safe

    return f"mcp__{safe(alias)}__{safe(prompt)}"


class Commands(Sequence[Command]):
    """`/mcp`, then a command per prompt of each ready server (made once, kept, so a
    command listed is the same object when it is run)."""

    def __init__(self, managers: list[Manager]) -> None:
        self.managers = managers
        self.made: dict[tuple[int, str, str], Command] = {}
        self.main = Command("mcp", "MCP servers, their state and prompts", self._list)

    def _all(self) -> list[Command]:
        out = [self.main]
        for manager in self.managers:
            for alias, conn in list(manager.connections.items()):
                for prompt in list(conn.listing.prompts):
                    key = (id(manager), alias, prompt.name)
                    if key not in self.made:
                        names = [a.name for a in prompt.arguments or []]
                        usage = " ".join(f"[{n}]" for n in names)
                        about = prompt.description or f"the prompt {prompt.name} of {alias}"

                        async def run(host: CommandHost, text: str, manager: Manager = manager,
                                      conn: Connection = conn, name: str = prompt.name,
                                      names: list[str] = names) -> None:  # fmt: skip
                            await _send(host, manager, conn, name, _arguments(names, text))

                        name = command_name(alias, prompt.name)
                        self.made[key] = Command(name, f"{about} (MCP {alias})", run, usage)
                    out.append(self.made[key])
        return out

    async def _list(self, host: CommandHost, text: str) -> None:
        lines = []
        for manager in self.managers:
            for alias, conn in manager.connections.items():
                tools = len(conn.listing.tools)
                lines.append(f"{alias}  {conn.server.transport}  {conn.state}  {tools} tools")
        lines += [f"    /{c.name} {c.usage}".rstrip() for c in self._all()[1:]]
        host.show("MCP servers", lines or ["no MCP server is configured (docs/mcp.md)"])

    @overload
    def __getitem__(self, index: int) -> Command: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Command]: ...
    def __getitem__(self, index: Any) -> Any:
        return self._all()[index]

    def __len__(self) -> int:
        return len(self._all())

    def __iter__(self) -> Any:
        return iter(self._all())
