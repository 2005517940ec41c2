"""read: a bounded window of a text file's lines, with a hint to continue."""

from __future__ import annotations

from smith.effects._filestate import digest
from smith.effects._tool import ToolContext, ToolError, ToolResult, ToolSpec


def run(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
    path = ctx.path(str(args["path"]))
    shown = ctx.show(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise ToolError(f"{shown} does not exist; use ls or find to see what is there") from None
    except IsADirectoryError:
        raise ToolError(f"{shown} is a directory; use ls to list it") from None
    except PermissionError:
        raise ToolError(f"{shown} cannot be read: permission denied") from None
    details: dict[str, object] = {"path": shown, "sha256": digest(data), "bytes": len(data)}
    if b"\0" in data[:8192]:
        raise ToolError(
            f"{shown} is a binary file ({len(data)} bytes); reading binary "
            "content is not supported",
            details=details,
        )
    text = data.decode("utf-8", "replace")
    lines = text.splitlines(keepends=True)
    offset = args.get("offset", 1)
    limit = args.get("limit", ctx.limits["read.max-lines"])
    assert isinstance(offset, int) and isinstance(limit, int)  # checked by the schema
    max_bytes = ctx.limits["read.max-bytes"]
    if offset > max(len(lines), 1):
        raise ToolError(
            f"offset {offset} is past the end: {shown} has {len(lines)} lines", details=details
        )
    start = offset - 1
    window: list[str] = []
    size = 0
    for line in lines[start : start + limit]:
        size += len(line.encode("utf-8"))
        if window and size > max_bytes:
            break
        window.append(line)
    end = start + len(window)
    out = "".join(window)
    details.update(lines=len(lines), first=offset, last=end)
    if end < len(lines):
        out += f"\n[showing lines {offset}-{end} of {len(lines)}; continue with offset={end + 1}]"
    return ToolResult(out, details=details)


SPEC = ToolSpec(
    "read",
    "Read a text file: up to `limit` lines (default 2,000, and at most about 50 KB) "
    "starting at line `offset` (1-based). Says how to continue when there is more.",
    {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "minLength": 1,
                "description": "file path, relative to the working directory",
            },
            "offset": {"type": "integer", "minimum": 1, "description": "first line (1-based)"},
            "limit": {"type": "integer", "minimum": 1, "description": "most lines to return"},
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    run,
    mutating=False,
)
