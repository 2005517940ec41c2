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
                arguments: dict[str, str], required: list[str]) -> None:  # fmt: skip
    """Get `prompt` from the server (within the server's timeout) and submit it as a
    prompt; a required argument not given is said before the server is asked."""
    import asyncio

    from smith.protocol import ops
    from smith.text import inert

    from ._adapt import joined
    from ._conn import MCP_TIMEOUT

    alias = conn.server.name
    missing = [n for n in required if n not in arguments]
    if missing:
        needs = ", ".join(missing)
        host.tell(inert(f"prompt {prompt} of MCP server {alias} needs {needs}: give it in "
                        f"order or as NAME=VALUE, /{command_name(alias, prompt)} ..."),
                  error=True)  # fmt: skip
        return
    hub = manager.hub
    if hub is None:
        host.tell("the MCP servers are closed", error=True)
        return
    future = hub.submit(conn.get_prompt(prompt, arguments))
    try:
        got = await asyncio.wait_for(asyncio.wrap_future(future), conn.server.timeout)
    except TimeoutError:
        future.cancel()  # the request is cancelled on the server too
        seconds = f"{conn.server.timeout:g}"
        failure = conn.failure(MCP_TIMEOUT, operation=f"the prompt {prompt}", seconds=seconds)
        host.tell(inert(failure.diagnostic.render()), error=True)
        return
    except Exception as exc:
        host.tell(inert(f"prompt {prompt} of MCP server {alias}: {exc}"), error=True)
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
        about = "MCP servers, their state and prompts; reconnect NAME connects a failed one"
        self.main = Command("mcp", about, self._main, "[reconnect NAME]")

    def _all(self) -> list[Command]:
        from smith.text import inert

        out = [self.main]
        for manager in self.managers:
            for alias, conn in list(manager.connections.items()):
                for prompt in list(conn.listing.prompts):
                    key = (id(manager), alias, prompt.name)
                    if key not in self.made:
                        names = [a.name for a in prompt.arguments or []]
                        required = [a.name for a in prompt.arguments or [] if a.required]
                        usage = inert(" ".join(f"[{n}]" for n in names))
                        about = prompt.description or f"the prompt {prompt.name} of {alias}"

                        async def run(host: CommandHost, text: str, manager: Manager = manager,
                                      conn: Connection = conn, name: str = prompt.name,
                                      names: list[str] = names,
                                      required: list[str] = required) -> None:  # fmt: skip
                            arguments = _arguments(names, text)
                            await _send(host, manager, conn, name, arguments, required)

                        name = command_name(alias, prompt.name)
                        about = inert(" ".join(f"{about} (MCP {alias})".split()))
                        self.made[key] = Command(name, about, run, usage)
                    out.append(self.made[key])
        return out

    async def _main(self, host: CommandHost, text: str) -> None:
        words = text.split()
        if not words:
            await self._list(host, text)
        elif words[0] == "reconnect" and len(words) == 2:
            await self._reconnect(host, words[1])
        else:
            host.tell("write /mcp to list the servers, or /mcp reconnect NAME", error=True)

    async def _reconnect(self, host: CommandHost, name: str) -> None:
        """`/mcp reconnect NAME`: connect a server that failed (or was lost) again, within
        its startup-timeout; its tools are offered from the next request."""
        import asyncio

        from smith.diagnostics import SmithError
        from smith.text import inert
        from smith.ui import Status

        found = [(m, c) for m in self.managers for a, c in list(m.connections.items()) if a == name]
        if not found:
            host.tell(inert(f"there is no MCP server {name!r}: /mcp lists them"), error=True)
            return
        manager, conn = found[-1]
        if conn.state in ("ready", "idle", "connecting"):
            host.tell(inert(f"MCP server {name} is {conn.state} already"))
            return
        if manager.hub is None:
            host.tell("the MCP servers are closed", error=True)
            return
        host.post(Status(f"mcp: {name} connecting", "mcp"))
        future = manager.hub.submit(conn.connect())
        try:
            bound = conn.server.startup_timeout + 10  # connect gives up at its startup-timeout
            await asyncio.wait_for(asyncio.wrap_future(future), bound)
        except SmithError as exc:
            host.tell(inert(exc.diagnostic.render()), error=True)
        except Exception as exc:
            future.cancel()
            host.tell(inert(f"MCP server {name} could not be connected: {exc!r}"), error=True)
        else:
            host.tell(inert(f"MCP server {name} is ready: {len(conn.listing.tools)} tools"))
        host.post(Status(manager.status(), "mcp"))

    async def _list(self, host: CommandHost, text: str) -> None:
        from smith.text import inert

        lines = []
        for manager in self.managers:
            for alias, conn in manager.connections.items():
                tools = len(conn.listing.tools)
                lines.append(
                    inert(f"{alias}  {conn.server.transport}  {conn.state}  {tools} tools")
                )
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
