"""write: create or replace a file atomically, keeping the mode of a file it replaces."""

from __future__ import annotations

import os

from smith.effects._filestate import digest
from smith.effects._tool import Presentation, ToolContext, ToolError, ToolResult, ToolSpec
from smith.effects.tools._files import unified


def _target(ctx: ToolContext, args: dict[str, object]) -> tuple[str, str, str, bool, str | None]:
    """What a write is about, as the write and its preview both see it: the path, as
    shown, the content, whether the file exists, and the text it holds (None: too big,
    not UTF-8 or unreadable); ToolError for a path that cannot be written."""
    path = ctx.writable(str(args["path"]))
    shown = ctx.show(path)
    if os.path.isdir(path):
        raise ToolError(f"{shown} is a directory; give a file path")
    existed = os.path.exists(path)
    return path, shown, str(args["content"]), existed, _old_text(path) if existed else ""


def run(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
    from smith._atomic import write_atomic

    path, shown, content, existed, before = _target(ctx, args)
    try:
        write_atomic(path, content)  # creates missing parents (inside the root: confined)
    except OSError as exc:  # the temporary file is gone and any old file untouched
        reason = exc.strerror or str(exc)
        raise ToolError(f"{shown} cannot be written: {reason}") from None
    data = content.encode("utf-8")
    verb = "replaced" if existed else "created"
    details: dict[str, object] = {
        "path": shown, "sha256": digest(data), "bytes": len(data), "created": not existed,
    }  # fmt: skip
    if before is not None:
        diff = unified(before, content, shown, created=not existed)
        if len(diff) <= DIFF_LIMIT:  # what a review shows (the app); a bigger one is left out
            details["diff"] = diff
    return ToolResult(f"{verb} {shown} ({len(data)} bytes)", mutation="applied", details=details)


def preview(ctx: ToolContext, args: dict[str, object]) -> str:
    """The diff the write would make, writing nothing (what an approval shows): a new
    file's content as added lines; ToolError for a write that would be refused, and for
    an older file that cannot be diffed (too big, not UTF-8), saying what would happen."""
    _, shown, content, existed, before = _target(ctx, args)
    if before is None:
        size = len(content.encode("utf-8"))
        raise ToolError(f"{shown} would be replaced by {size} bytes; what it holds now is "
                        "too big or not UTF-8 text, so no diff can be shown")  # fmt: skip
    if not existed and not content:  # no lines to add: the diff's header says it is new
        return f"--- /dev/null\n+++ b/{shown}\n"
    return unified(before, content, shown, created=not existed)


DIFF_LIMIT = 64 * 1024  # characters of diff recorded in a write's details
_OLD_LIMIT = 1024 * 1024  # an older file bigger than this is not diffed


def _old_text(path: str) -> str | None:
    """What the file held before, as text, to diff against (None: too big, not UTF-8 or
    unreadable; the write goes ahead all the same)."""
    from smith._readfile import FileRefused, Reach, read_file

    try:  # never a FIFO, not even one swapped in: opened without blocking
        return read_file(path, limit=_OLD_LIMIT, reach=Reach.anywhere()).decode("utf-8")
    except (OSError, FileRefused, UnicodeDecodeError):
        return None


SPEC = ToolSpec(
    "write",
    "Write a whole file, creating it and its parent directories if needed. Replaces the "
    "file atomically and keeps its permissions. For new files and whole rewrites; prefer "
    "edit for changing part of a file. Refuses directories, paths outside the project "
    "and protected paths (.git, .smith, tools.protected).",
    {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "minLength": 1,
                "description": "the file: relative to the working directory, or absolute "
                "inside the project",
            },
            "content": {
                "type": "string",
                "description": "the complete new content of the file, as UTF-8 text; no size "
                "limit of its own (what one reply can hold bounds it)",
            },
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    },
    run,
    effect="writes",
    preview=preview,
    presentation=Presentation("path", "change"),
)
