"""`@alias:uri` in a message: the resource `uri` of the MCP server `alias`, read when the
message is sent (the plugin's `input` hook, so every frontend has it) and attached after
the typed text as an `@path`'s file is (TransformInput.attach: the runtime wraps it in
`<attached path="alias:uri" ...>`, cuts it at the result limit and notes it in the
message's `attached`). A mention of an unknown server, or of a resource that cannot be
read (no such resource, no text, the server failing or not answering), stays as typed,
and a warning names it and says why."""

from __future__ import annotations

import concurrent.futures
from typing import TYPE_CHECKING, Any

from smith.diagnostics import DiagnosticKind, SmithError, Source

if TYPE_CHECKING:
    from ._manager import Manager

MCP_MENTION_FAILED = DiagnosticKind(
    "mcp.mention-failed",
    what="'@{alias}:{uri}' was not attached: {reason}",
    why="an @alias:uri attaches the text of the resource uri of the MCP server alias "
    "(a configured server's name), read when the message is sent",
    fix="name a resource the server lists (/mcp shows the servers; the app's @ completes "
    "their resources); the message was sent with '@{alias}:{uri}' as typed",
    severity="warning",
)
READ_WAIT = 20.0  # seconds a mention's read may take at most (within the handler's deadline)


def resource_text(manager: Manager, alias: str, uri: str) -> str:
    """The text of resource `uri` of server `alias`; LookupError saying why not."""
    from ._adapt import resource_text as text_of

    conn = manager.connections.get(alias)
    hub = manager.hub
    if conn is None or hub is None:
        known = ", ".join(manager.connections) or "none is configured"
        raise LookupError(f"there is no MCP server named {alias} (servers: {known})")
    wait = min(conn.server.timeout, READ_WAIT)
    future = hub.submit(conn.read_resource(uri))
    try:
        result = future.result(wait + 1)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise LookupError(f"the server {alias} did not answer within {wait:g} s") from None
    except SmithError as exc:
        raise LookupError(exc.diagnostic.what) from None
    except Exception as exc:
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        raise LookupError(f"the server {alias} answered: {message}") from None
    texts = [c.text for c in result.contents if isinstance(getattr(c, "text", None), str)]
    if not texts:
        kinds = ", ".join(text_of(c) for c in result.contents) or "nothing"
        raise LookupError(f"it has no text (the server gave {kinds})")
    return "\n".join(texts)


def attach(managers: list[Manager], session: str, text: str) -> list[Any] | None:
    """The `input` hook's answer for `text`: a TransformInput attaching what its
    `@alias:uri`s name, and a warning Notify for each that cannot be; None for none."""
    from smith.runtime import resource_mentions
    from smith.sdk import TransformInput
    from smith.ui import Notify

    named = resource_mentions(text) if "@" in text else []
    if not named:
        return None
    mine = [m for m in managers if m.session in ("", session)]
    out: list[Any] = []
    attached: list[tuple[str, str]] = []
    for alias, uri in named:
        manager = next((m for m in mine if alias in m.connections), mine[0] if mine else None)
        try:
            if manager is None:
                raise LookupError(f"there is no MCP server named {alias} (none is connected)")
            attached.append((f"{alias}:{uri}", resource_text(manager, alias, uri)))
        except LookupError as exc:
            said = MCP_MENTION_FAILED(
                value=f"@{alias}:{uri}",
                source=Source("plugin", "mcp"),
                alias=alias,
                uri=uri,
                reason=str(exc.args[0]),
            )
            out.append(Notify(said.render(), "warning"))
    if attached:
        out.append(TransformInput(text, attach=tuple(attached)))
    return out
