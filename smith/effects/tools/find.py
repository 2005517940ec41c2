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
    if "/" in pattern:
        # A path glob: rg lists what the ignore rules leave and the glob is matched here
        # (an rg --glob that matches a directory would bring ignored files back).
        import pathspec

        match = pathspec.GitIgnoreSpec.from_lines([pattern]).match_file
        out, cut = _rg.run(ctx, ["--files", "--null"], where)
        listed = (_rg.relative(p) for p in _rg.text(out).split("\0") if p)
        paths = sorted(p for p in listed if match(p))
    else:
        out, cut = _rg.run(ctx, ["--files", "--null", *_rg.name_filter(pattern)], where)
        paths = sorted(_rg.relative(p) for p in _rg.text(out).split("\0") if p)
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
    "working directory); sorted, leaving out what .gitignore ignores, at most 1,000 paths "
    "(it says when there are more). Paths are relative to the working directory. "
    "Refuses a path outside the project or one that is not a directory.",
    {
        "type": "object",
        "properties": {
            "pattern": {
                "type": "string",
                "minLength": 1,
                "description": "a glob of file paths: * within a name, ** across directories",
            },
            "path": {
                "type": "string",
                "minLength": 1,
                "description": "directory to search: relative to the working directory, or "
                "absolute inside the project (default: the working directory)",
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
    run,
    effect="reads",
)
