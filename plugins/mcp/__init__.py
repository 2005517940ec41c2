"""The MCP client: servers from configuration, their tools, resources and prompts.

`mcp { server "files" command="python3" args="srv.py"; server "web" url="..."; }` (and a
trusted project's `.mcp.json`) name the servers (_config). When a runtime starts, the
plugin's start connects each in the background, on an event loop thread of its own
(_conn.Hub), and returns at once: start-up never waits for a server. Each server's tools
appear (RuntimeView.set_tools) when it is ready, as `mcp_<alias>__<tool>` ToolSpecs
(_adapt), so every call goes through smith's one tool runner (review, journal,
timeout, truncation); a server with resources also gets `mcp_<alias>__read_resource`.
What went wrong (a bad value, a server that would not start, a timeout) is logged and
shown as a notice at the next turn; the status line names each server and its state.
Each server's prompts are `/mcp__<alias>__<prompt>` commands (_commands), and `/mcp`
lists the servers and their prompts. `@alias:uri` in a message attaches that resource
(_mention, the `input` hook). `smith mcp list | tools | add | remove` are in
frontends/mcp (`manage`). docs/mcp.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smith.config import Number, Option
from smith.sdk import Plugin

from ._commands import Commands

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from smith.config import Config
    from smith.diagnostics import Diagnostic, Source
    from smith.effects import ToolContext
    from smith.sdk import RuntimeView

    from ._bundle import Servers as Servers  # the handle connect returns
    from ._manager import Manager

__all__ = [
    "PLUGIN",
    "add_server",
    "connect",
    "login",
    "probe",
    "prompt_command",
    "remove_server",
    "running",
]

# The managers of the runtimes running now, oldest first (a process may run several,
# one after the other as the app switches sessions): stop closes the oldest.
_RUNNING: list[Manager] = []


def running() -> list[Manager]:
    return list(_RUNNING)


def probe(
    config: Config,
    context: ToolContext | None,
    names: Sequence[str] | None = None,
    timeout: float = 10.0,
) -> tuple[list[dict[str, Any]], list[Diagnostic]]:
    """Each configured server (those in `names`), connected briefly: its name,
    transport, target, source, state (ready, failed...), error, tools, resources and
    prompts; and what is wrong with the configuration (`smith mcp list`, `tools`)."""
    from ._manager import probe as probing

    return probing(config, context, names, timeout)


def prompt_command(alias: str, prompt: str) -> str:
    """The `/` command (without the slash) that sends server `alias`'s prompt."""
    from ._commands import command_name

    return command_name(alias, prompt)


def login(alias: str, config: Config, say: Callable[[str], None]) -> int:
    """`smith mcp login ALIAS`: sign in to the HTTP server `alias` (configured with
    oauth=true), its tokens kept in smith's credential store (the OAuth half,
    smith.plugins._mcp_oauth's `login`); `say` shows the URL to open. SmithError when
    there is no such server."""
    import importlib

    from smith.diagnostics import SmithError, Source

    from ._config import servers
    from ._conn import MCP_CONNECT_FAILED

    where = Source("argument", "smith mcp login")
    found = {s.name: s for s in servers(config)[0]}
    server = found.get(alias)
    if server is None or server.url is None:
        reason = "it is no configured HTTP server" if server is None else "it is a stdio server"
        remedy = "`smith mcp list` shows the servers; login is for a url server with oauth=true"
        raise SmithError(MCP_CONNECT_FAILED(value=alias, source=where, server=alias,
                                            reason=reason, remedy=remedy))  # fmt: skip
    oauth = importlib.import_module("smith.plugins._mcp_oauth")
    return int(oauth.login(alias, server.url, home=config.home, say=say))


def connect(
    prefix: str,
    servers: Mapping[str, Mapping[str, object]],
    *,
    context: ToolContext | None,
    home: str | None,
    source: Source,
    readable: tuple[str, ...] = (),
) -> Servers:
    """Connect MCP servers another plugin brings (a skill's front matter `mcp`: name ->
    the keys a configured server takes, checked as configuration's are), each in the
    sandbox unless it says sandbox=false, within its startup-timeout; blocks until each
    is connected or failed; in the sandbox they may read the `readable` folders (a
    skill's, even in smith's configuration directory). The handle's `tools()` are their
    tools as ToolSpecs named `<prefix>__<tool>`, its `problems` what could not be had,
    and `close()` stops them."""
    from ._bundle import connect as connecting

    return connecting(prefix, servers, context=context, home=home, source=source, readable=readable)


def add_server(path: str, name: str, fields: dict[str, object], replace: bool = False) -> str:
    """Append server `name`'s block (`fields`: command, args, env, url, headers, ...)
    to the configuration file at `path` (`replace`: taking out a server of that name
    first); the text added, secrets masked. SmithError (mcp.edit)."""
    from ._edit import add

    return add(path, name, fields, replace)


def remove_server(path: str, name: str) -> str:
    """Take server `name`'s block out of the configuration file at `path`; the text
    removed. SmithError (mcp.edit) when it is not there."""
    from ._edit import remove

    return remove(path, name)


async def _start(view: RuntimeView) -> None:
    config = view.config
    if config is None:
        return  # a runtime built without configuration: no servers
    from ._manager import Manager

    manager = Manager(config, view.context, view.set_tools)
    manager.session = view.session_id  # whose notices they are
    _RUNNING.append(manager)
    manager.begin()  # in the background: returns at once
    if manager.connections and view.surface in WATCHED_SURFACES:
        import asyncio

        _WATCHERS[id(manager)] = asyncio.get_running_loop().create_task(_watch(manager, view))


# Where the servers' states and failures are posted as they change (the app's status
# line, an RPC client), not only at the next turn; eval says them at its prompt.
WATCHED_SURFACES = ("tui", "rpc")
_WATCHERS: dict[int, Any] = {}  # manager id -> the asyncio task posting its news


async def _watch(manager: Manager, view: RuntimeView) -> None:
    """Post a manager's notices and each change of its servers' state, as they come."""
    import asyncio

    from smith.ui import Notify, Status

    while True:
        await asyncio.sleep(0.25)
        while manager.notices:
            diagnostic = manager.notices.popleft()
            error = diagnostic.severity == "error"
            view.post(Notify(diagnostic.render(), "error" if error else "warning"))
        status = manager.changed_status()
        if status is not None:
            view.post(Status(status, "mcp"))


async def _stop() -> None:
    if not _RUNNING:
        return
    import asyncio

    manager = _RUNNING.pop(0)
    _WAITED.discard(id(manager))
    watcher = _WATCHERS.pop(id(manager), None)
    if watcher is not None:
        watcher.cancel()
    await asyncio.to_thread(manager.close)


def _notices(event: dict[str, Any], view: RuntimeView) -> Any:
    """What went wrong since the last safe point, and the servers' states."""
    from smith.ui import Notify, Status

    out: list[Any] = []
    for manager in _RUNNING:
        if manager.session not in ("", view.session_id):
            continue  # another runtime's servers
        while manager.notices:
            diagnostic = manager.notices.popleft()
            error = diagnostic.severity == "error"
            out.append(Notify(diagnostic.render(), "error" if error else "warning"))
        status = manager.changed_status()
        if status is not None:
            out.append(Status(status, "mcp"))
    return out or None


# Where a first prompt waits for the servers still connecting: where nobody watches the
# tools arrive (one-shot `smith eval`, an RPC client's first prompt). The app never waits.
WAITING_SURFACES = ("eval", "rpc")
OPTIONS = (
    Option(
        "first-wait",
        Number(0, 20),
        20,
        doc="Seconds at most the first prompt of `smith eval` or of an RPC session waits "
        "for MCP servers still connecting (each one's startup-timeout if shorter), so their "
        "tools are offered from the first request; 0: never wait. The app never waits.",
    ),
)
_WAITED: set[int] = set()  # the managers whose first prompt waited (by id)


def _connecting(view: RuntimeView) -> list[tuple[Manager, Any]]:
    return [
        (manager, conn)
        for manager in _RUNNING
        if manager.session in ("", view.session_id) and id(manager) not in _WAITED
        for conn in list(manager.connections.values())
        if conn.state in ("idle", "connecting")
    ]


async def _first_prompt(event: dict[str, Any], view: RuntimeView) -> Any:
    """agent_start: a runtime's first prompt in eval or RPC waits for the servers still
    connecting (bounded), so their tools are offered from its first request; then what
    went wrong and the servers' state, as at a turn."""
    import asyncio
    import time

    waiting = _connecting(view) if view.surface in WAITING_SURFACES else []
    if waiting:
        first = view.settings.get("first-wait", 20)
        limit = float(first) if isinstance(first, int | float) else 20.0
        bound = min(limit, max(conn.server.startup_timeout for _, conn in waiting))
        until = time.monotonic() + bound
        while time.monotonic() < until and any(
            conn.state in ("idle", "connecting") for _, conn in waiting
        ):
            await asyncio.sleep(0.05)
    for manager in _RUNNING:
        if manager.session in ("", view.session_id):
            _WAITED.add(id(manager))
    return _notices(event, view)


def _input(event: dict[str, Any], view: RuntimeView) -> Any:
    """`@alias:uri` mentions: the resources they name attached (_mention)."""
    from ._mention import attach

    return attach(_RUNNING, view.session_id, str(event.get("text", "")))


def _wants(kind: str, view: RuntimeView) -> bool:
    """Whether a notice or a new status waits for this runtime, or (at `input`) it has
    servers a message may mention (a lookup): otherwise no handler thread is started."""
    if kind == "input":
        return any(m.session in ("", view.session_id) for m in _RUNNING)
    if kind == "agent_start" and view.surface in WAITING_SURFACES and _connecting(view):
        return True
    return any(
        m.session in ("", view.session_id) and (m.notices or m.status() != m.shown_status)
        for m in _RUNNING
    )


def _mentions() -> list[str]:
    """`alias:uri` of each resource of the ready servers, for the editor's `@`."""
    return [
        f"{alias}:{resource.uri}"
        for manager in _RUNNING
        for alias, conn in list(manager.connections.items())
        if conn.state == "ready"
        for resource in list(conn.listing.resources)
    ]


PLUGIN = Plugin(
    "mcp",
    start=_start,
    stop=_stop,
    handlers={
        "agent_start": _first_prompt,
        "turn_start": _notices,
        "agent_end": _notices,
        "input": _input,
    },
    wants=_wants,
    # A mention's resource is read before the message is sent (_mention: 20 s at most).
    handler_deadline=25.0,
    commands=Commands(_RUNNING),
    mentions=_mentions,
    options=OPTIONS,
)
