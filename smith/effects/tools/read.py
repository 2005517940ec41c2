"""read: a bounded window of a text file's lines, with a hint to continue; an image
(PNG, JPEG, GIF, WebP by its first bytes, at most images.max-bytes) as image content."""

from __future__ import annotations

import re

from smith.effects._filestate import digest
from smith.effects._tool import ToolContext, ToolError, ToolResult, ToolSpec
from smith.effects.tools._files import read_bytes
from smith.media import human_size, image_type

LINES = re.compile(r"[^\n]*\n|[^\n]+$").findall


def run(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
    path = ctx.path(str(args["path"]))
    shown = ctx.show(path)
    data = read_bytes(path, shown, missing="use ls or find to see what is there")
    details: dict[str, object] = {"path": shown, "sha256": digest(data), "bytes": len(data)}
    media_type = image_type(data)
    if media_type is not None:
        return _image(ctx, shown, data, media_type, details)
    if b"\0" in data[:8192]:
        raise ToolError(
            f"{shown} is a binary file ({len(data)} bytes); reading binary "
            "content is not supported",
            details=details,
        )
    text = data.decode("utf-8", "replace")
    lines = LINES(text)  # split at \n only, as grep and edit count lines
    # The schema admits whole numbers, which JSON may spell 2.0.
    offset = int(args.get("offset", 1))  # type: ignore[call-overload]
    limit = int(args.get("limit", ctx.limits["read.max-lines"]))  # type: ignore[call-overload]
    max_bytes = ctx.limits["read.max-bytes"]
    if offset > max(len(lines), 1):
        raise ToolError(
            f"offset {offset} is past the end: {shown} has {len(lines)} "
            f"line{'' if len(lines) == 1 else 's'}",
            details=details,
        )
    start = offset - 1
    window: list[str] = []
    size = 0
    for line in lines[start : start + limit]:
        size += len(line.encode("utf-8"))
        if window and size > max_bytes:
            break
        if size > max_bytes:  # one line longer than the whole window: cut it
            window.append(line[:max_bytes] + f" [... line cut: {len(line)} characters]\n")
        else:
            window.append(line)
    end = start + len(window)
    out = "".join(window)
    details.update(lines=len(lines), first=offset, last=end)
    if end < len(lines):
        out += f"\n[showing lines {offset}-{end} of {len(lines)}; continue with offset={end + 1}]"
    return ToolResult(out, details=details)


def _image(
    ctx: ToolContext, shown: str, data: bytes, media_type: str, details: dict[str, object]
) -> ToolResult:
    """An image file: its bytes go to the model as an image (the runtime stores them once
    in the session; a model without image input gets the text alone, saying so)."""
    bound = ctx.limits.get("images.max-bytes", IMAGE_BYTES_DEFAULT)
    details["image"] = media_type
    if len(data) > bound:
        raise ToolError(
            f"{shown} is a {media_type} image of {human_size(len(data))}, over "
            f"images.max-bytes ({human_size(bound)}); it was not read",
            details=details,
        )
    text = f"[{shown}: {media_type} image, {human_size(len(data))}]"
    return ToolResult(text, details=details, image=(media_type, data))


LINES_DEFAULT = 2000  # tools.read.max-lines
IMAGE_BYTES_DEFAULT = 5 * 1024 * 1024  # images.max-bytes
BYTES_DEFAULT = 50 * 1024  # tools.read.max-bytes


def _size(n: int) -> str:
    return f"{n // 1024:,} KB" if n % 1024 == 0 else f"{n:,} bytes"


def _spec(lines: int = LINES_DEFAULT, size: int = BYTES_DEFAULT) -> ToolSpec:
    """read as tools.read.max-lines and tools.read.max-bytes bound it."""
    return ToolSpec(
        "read",
        f"Read a text file: up to `limit` lines (default {lines:,}, tools.read.max-lines) "
        f"from line `offset` (1-based), at most {_size(size)} (tools.read.max-bytes) at "
        "once; a longer line is cut. When there is more it says which offset continues. "
        "An image (PNG, JPEG, GIF, WebP) is returned as the image itself. "
        "Refuses other binary files, directories (use ls), and paths outside the project.",
        {
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "minLength": 1,
                    "description": "the file: relative to the working directory, or "
                    "absolute inside the project",
                },
                "offset": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "first line to return, counting from 1 (default 1)",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "description": f"most lines to return (default {lines:,}); the "
                    f"{_size(size)} window still applies",
                },
            },
            "required": ["path"],
            "additionalProperties": False,
        },
        run,
        effect="reads",
        tuned=lambda limits: _spec(
            limits.get("read.max-lines", LINES_DEFAULT), limits.get("read.max-bytes", BYTES_DEFAULT)
        ),
    )


SPEC = _spec()
