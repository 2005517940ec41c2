"""A server's tool list, checked before its tools are offered: a tool the SDK's types
refuse (no inputSchema, a name that is no string), one whose inputSchema is no valid
JSON Schema (Draft 2020-12), and those past the bound on a server's tool definitions
(TOOLS_BYTES of names, descriptions and schemas: each is sent with every request) are
left out, each said in one line; the server's other tools are offered."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from smith.diagnostics import DiagnosticKind

if TYPE_CHECKING:
    from mcp import Client
    from mcp_types import Tool

TOOLS_BYTES = 256 * 1024
PAGES = 100

MCP_TOOL_LEFT_OUT = DiagnosticKind(
    "mcp.tool-left-out",
    what="MCP server '{server}': {what}",
    why="a tool is offered to the model only with a valid definition (its inputSchema a "
    "JSON Schema), and a server's definitions, sent with every request, are bounded "
    f"({TOOLS_BYTES // 1024} KiB of names, descriptions and schemas)",
    fix="fix the server's tool, or leave tools out with allow or deny in its block; its "
    "other tools are offered",
    severity="warning",
)


async def tools(client: Client, problems: list[str]) -> list[Tool]:
    """The server's tools, each page (PAGES at most); what was left out of them and why
    added to `problems`, one line each."""
    from pydantic import ValidationError

    found: list[Tool] = []
    cursor: str | None = None
    for _ in range(PAGES):
        try:
            page = await client.list_tools(cursor=cursor)
            found += page.tools
            cursor = page.next_cursor
        except ValidationError:  # one bad tool: the others are taken one by one
            got, cursor = await _raw_page(client, cursor, problems)
            found += got
        if not cursor:
            break
    return checked(found, problems)


async def _raw_page(
    client: Client, cursor: str | None, problems: list[str]
) -> tuple[list[Tool], str | None]:
    from mcp_types import Tool
    from pydantic import ValidationError

    dispatcher = getattr(client.session, "_dispatcher", None)
    if dispatcher is None:
        problems.append("its tool list is not valid MCP (no tool of it is offered)")
        return [], None
    raw = await dispatcher.send_raw_request("tools/list", {"cursor": cursor} if cursor else None)
    items = raw.get("tools") if isinstance(raw, dict) else None
    kept: list[Tool] = []
    for item in items if isinstance(items, list) else []:
        try:
            kept.append(Tool.model_validate(item, by_name=False))
        except ValidationError as exc:
            name = item.get("name") if isinstance(item, dict) else None
            errors = exc.errors()
            where = ".".join(str(p) for p in errors[0]["loc"]) if errors else ""
            said = f"{where or 'it'}: {errors[0]['msg'] if errors else 'invalid'}"
            problems.append(f"the tool {_shown(name)} is left out ({said})")
    following = raw.get("nextCursor") if isinstance(raw, dict) else None
    return kept, following if isinstance(following, str) and following else None


def checked(found: list[Tool], problems: list[str]) -> list[Tool]:
    """`found` but those whose inputSchema is no JSON Schema, and those past TOOLS_BYTES."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    kept: list[Tool] = []
    size = 0
    over: list[str] = []
    for tool in found:
        try:
            Draft202012Validator.check_schema(tool.input_schema)
        except SchemaError as exc:
            said = " ".join(str(exc.message).split())[:200]
            problems.append(f"the tool {_shown(tool.name)} is left out: its inputSchema {said}")
            continue
        except RecursionError:
            problems.append(f"the tool {_shown(tool.name)} is left out: its inputSchema nests "
                            "too deep")  # fmt: skip
            continue
        size += len(tool.name) + len(tool.description or "") + _bytes(tool.input_schema)
        if size > TOOLS_BYTES:
            over.append(tool.name)
            continue
        kept.append(tool)
    if over:
        problems.append(
            f"{len(over)} of its {len(found)} tools are left out (from {_shown(over[0])} on): "
            f"their definitions pass {TOOLS_BYTES // 1024} KiB"
        )
    return kept


def _bytes(schema: Any) -> int:
    try:
        return len(json.dumps(schema, ensure_ascii=False))
    except (TypeError, ValueError, RecursionError):
        return TOOLS_BYTES + 1


def _shown(name: object) -> str:
    from smith.text import inert

    text = name if isinstance(name, str) else json.dumps(name)
    return repr(inert(" ".join(str(text).split()))[:80])
