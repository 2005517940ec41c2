"""A server's tools as smith ToolSpecs: `mcp_<alias>__<tool>`, the server's input schema,
the effect its annotations declare, results joined and bounded, errors as tool errors.

A call runs in the runner's worker thread and waits for the connection's loop (Hub):
when the runner cancels it (an abort, the tool timeout) the request's task is
cancelled, and the SDK sends `notifications/cancelled` for it.
"""

from __future__ import annotations

import concurrent.futures
import fnmatch
import hashlib
import json
import re
from typing import TYPE_CHECKING, Any

from smith.diagnostics import DiagnosticKind, SmithError
from smith.effects import ToolCancelled, ToolError, ToolResult, ToolSpec

from ._conn import Lost

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from mcp_types import Tool

    from smith.effects import ToolContext, ToolEffect

    from ._conn import Connection, Hub

MCP_NAME_COLLISION = DiagnosticKind(
    "mcp.name-collision",
    what="MCP tool '{tool}' of server '{server}' is not offered: its name {name} is taken "
    "by {other}",
    why="every tool the model is offered needs a name of its own (names are made valid "
    "for every provider: letters, digits, _ and -, 64 at most)",
    fix="rename one of the servers (its alias is part of the name), or leave one tool out "
    'with deny="{tool}" in its block',
    severity="warning",
)

NAME = re.compile(r"[^a-zA-Z0-9_-]")
MAX_NAME = 64
MAX_TEXT = 1024 * 1024  # cut before joining; the runner then cuts at Limits.result_bytes
MAX_IMAGE = 5 * 1024 * 1024
_POLL = 0.05


def safe(text: str) -> str:
    return NAME.sub("_", text) or "_"


def tool_name(alias: str, tool: str) -> str:
    """`mcp_<alias>__<tool>`, valid for every provider; a long one keeps its start and a
    hash of the whole, so two long names stay apart."""
    name = f"mcp_{safe(alias)}__{safe(tool)}"
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


def chosen(tool: str, allow: list[str], deny: list[str]) -> bool:
    """Whether a tool passes a server's allow and deny patterns (deny wins)."""
    if any(fnmatch.fnmatchcase(tool, p) for p in deny):
        return False
    return not allow or any(fnmatch.fnmatchcase(tool, p) for p in allow)


def effect_of(tool: Tool) -> ToolEffect:
    """The effect class its annotations declare: readOnlyHint -> reads (network when
    openWorldHint says so too), destructiveHint -> writes, openWorldHint -> network;
    unknown when they say nothing."""
    notes = tool.annotations
    if notes is None:
        return "unknown"
    if notes.read_only_hint:
        return "network" if notes.open_world_hint else "reads"
    if notes.destructive_hint:
        return "writes"
    if notes.open_world_hint:
        return "network"
    if notes.read_only_hint is False:
        return "writes"
    return "unknown"


def _wait(hub: Hub, coro: Coroutine[Any, Any, Any], ctx: ToolContext, unsure: str) -> Any:
    """Run `coro` on the hub's loop; cancel it when the call is cancelled."""
    future = hub.submit(coro)
    while True:
        try:
            return future.result(timeout=_POLL)
        except concurrent.futures.TimeoutError:
            if ctx.cancelled.is_set():
                future.cancel()  # the request's task is cancelled: notifications/cancelled
                raise ToolCancelled(unsure) from None
        except concurrent.futures.CancelledError:
            raise ToolCancelled(unsure) from None
        except SmithError as exc:
            details: dict[str, object] = {"diagnostic": exc.diagnostic.code}
            raise ToolError(exc.diagnostic.render(), mutation=unsure, details=details) from None
        except Lost as exc:
            lost: dict[str, object] = {"diagnostic": "mcp.lost"}
            raise ToolError(str(exc), mutation=unsure, details=lost) from None
        except Exception as exc:
            message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
            raise ToolError(
                f"the MCP server answered with an error: {message}", mutation=unsure
            ) from None


def joined(
    content: list[Any], limit: int = MAX_TEXT, image_bytes: int = MAX_IMAGE
) -> tuple[str, tuple[str, bytes] | None]:
    """The text of a result's content blocks, joined and cut at `limit` characters (what
    follows is not looked at: linear however many blocks there are), and its first image
    that is one (checked as an attached image is: PNG, JPEG, GIF or WebP by its bytes, as
    declared, at most `image_bytes`); an image that is not is said in a note."""
    parts: list[str] = []
    size = 0
    image: tuple[str, bytes] | None = None
    for block in content:
        kind = getattr(block, "type", "")
        if kind == "text":
            part = str(block.text)
        elif kind == "image":
            part, found = _image(block, image_bytes)
            if image is None and found is not None:
                image = found
        elif kind == "resource":
            part = resource_text(block.resource)
        elif kind == "resource_link":
            part = f"[resource {block.uri}]"
        else:
            part = f"[{kind or 'content'}]"
        parts.append(part[: limit - size + 1])
        size += len(part) + 1
        if size > limit:
            break
    text = "\n".join(parts)
    return (text[:limit] + "\n[cut]" if size - 1 > limit else text), image


def _image(block: Any, bound: int) -> tuple[str, tuple[str, bytes] | None]:
    """An image block: its note and (media type, bytes), or why it is not passed on."""
    from smith.runtime import Image

    mime = inert_line(str(getattr(block, "mime_type", "") or "?"))[:60]
    try:
        checked = Image.from_base64(
            str(block.data), name="from the server", media_type=mime, max_bytes=bound
        )
    except SmithError as exc:
        return f"[image {mime} left out: {exc.diagnostic.what}]", None
    return f"[image {checked.media_type}]", (checked.media_type, checked.data)


def inert_line(text: str) -> str:
    """`text` on one line, its control characters made visible."""
    from smith.text import inert

    return inert(" ".join(text.split()))


def resource_text(contents: Any) -> str:
    text = getattr(contents, "text", None)
    if isinstance(text, str):
        return text
    mime = getattr(contents, "mime_type", None) or "application/octet-stream"
    size = len(getattr(contents, "blob", "") or "") * 3 // 4
    return f"[{mime}, about {size} bytes, at {contents.uri}]"


def tool_spec(hub: Hub, conn: Connection, tool: Tool, name: str) -> ToolSpec:
    effect = effect_of(tool)
    server = conn.server.name
    spec_holder: list[ToolSpec] = []

    def run(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
        spec = spec_holder[0]
        unsure = "unknown" if spec.mutating else "not-applied"
        result = _wait(hub, conn.call_tool(tool.name, dict(args)), ctx, unsure)
        text, image = joined(list(result.content or []), image_bytes=conn.image_bytes)
        if not text and result.structured_content is not None:
            text = json.dumps(result.structured_content, ensure_ascii=False)[:MAX_TEXT]
        details: dict[str, object] = {"server": server, "tool": tool.name}
        if result.is_error:
            raise ToolError(text or "the tool reported an error", mutation=unsure, details=details)
        return ToolResult(
            text or "(no output)",
            details=details,
            image=image,
            mutation="applied" if spec.mutating else "not-applied",
        )

    schema = dict(tool.input_schema or {"type": "object"})
    schema.setdefault("type", "object")
    if schema.get("type") == "object":
        schema.setdefault("properties", {})
    title = tool.title or (tool.annotations.title if tool.annotations else None)
    about = tool.description or title or f"The {tool.name} tool."
    spec = ToolSpec(
        name,
        f"{about.strip()}\n\n(MCP server '{server}', tool {tool.name})",
        schema,
        run,
        effect=effect,
        confined=False,
        touches=lambda _args: None,
        timeout=conn.server.timeout + 10,
        outside=conn.server.url is not None or not conn.server.sandbox,  # approval asks
    )
    spec_holder.append(spec)
    return spec


def resource_spec(hub: Hub, conn: Connection, name: str) -> ToolSpec:
    server = conn.server.name
    listing = conn.listing
    shown = [
        f"- {r.uri}"
        + (f" ({r.name})" if r.name else "")
        + (f": {r.description.strip()}" if r.description else "")
        for r in listing.resources[:30]
    ]
    more = len(listing.resources) - len(shown)
    if more > 0:
        shown.append(f"- ... and {more} more")
    if listing.templates:
        shown.append(f"(and {listing.templates} URI template(s))")
    about = f"Read a resource of the MCP server '{server}' by its URI." + (
        "\nIts resources:\n" + "\n".join(shown) if shown else ""
    )

    def run(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
        uri = str(args["uri"])
        result = _wait(hub, conn.read_resource(uri), ctx, "not-applied")
        parts = [resource_text(c) for c in result.contents]
        text = "\n".join(parts)
        text = text[:MAX_TEXT] + "\n[cut]" if len(text) > MAX_TEXT else text
        return ToolResult(text or "(empty)", details={"server": server, "uri": uri})

    params: dict[str, object] = {
        "type": "object",
        "properties": {"uri": {"type": "string", "description": "the resource's URI"}},
        "required": ["uri"],
    }
    return ToolSpec(
        name,
        about,
        params,
        run,
        effect="reads",
        confined=False,
        touches=lambda _args: None,
        timeout=conn.server.timeout + 10,
    )
