"""find: files whose path matches a glob, sorted, bounded, honouring .gitignore."""

from __future__ import annotations

import os

from smith.effects._tool import ToolContext, ToolError, ToolResult, ToolSpec
from smith.effects.tools import _rg

MAX_RESULTS = 1000


def run(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
    where = ctx.path(str(args.get("path", ".")))
    if not os.path.isdir(where):
        raise ToolError(f"{ctx.show(where)} is not a directory")
    pattern = str(args["pattern"])
    out, cut = _rg.run(ctx, ["--files", "--glob", pattern], where)
    paths = sorted(
        _rg.relative(p) for p in out.decode("utf-8", "surrogateescape").splitlines() if p
    )
    text = "\n".join(paths[:MAX_RESULTS]) or f"no files match {pattern}"
    if len(paths) > MAX_RESULTS or cut:
        text += (
            f"\n[{len(paths)}{'+' if cut else ''} files match; showing the first "
            f"{MAX_RESULTS}: narrow the pattern or the path]"
        )
    return ToolResult(text, details={"matches": len(paths), "complete": not cut})


SPEC = ToolSpec(
    "find",
    "Find files by glob (e.g. '*.py', 'src/**/test_*.py') under `path` (default: the "
    "working directory); sorted, leaving out what .gitignore ignores.",
    {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1},
            "path": {"type": "string", "minLength": 1},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
    run,
    mutating=False,
)
