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
    # rg lists what the ignore rules leave; the glob is matched here, because an rg
    # --glob that matches a directory would bring ignored files back.
    out, cut = _rg.run(ctx, ["--files"], where)
    paths = sorted(_select(out.decode("utf-8", "surrogateescape"), pattern))
    text = "\n".join(paths[:MAX_RESULTS]) or f"no files match {pattern}"
    if len(paths) > MAX_RESULTS or cut:
        text += (
            f"\n[{len(paths)}{'+' if cut else ''} files match; showing the first "
            f"{MAX_RESULTS}: narrow the pattern or the path]"
        )
    return ToolResult(text, details={"matches": len(paths), "complete": not cut})


def _select(listing: str, pattern: str) -> list[str]:
    """The paths (one a line, as rg prints them) matching a gitignore-style glob:
    '*.py' at any depth, 'src/**/t_*.py' from the root."""
    if not any(c in pattern for c in "/[\\"):
        import re

        # The common case, a file-name glob: one regex over the whole listing, in C.
        name = "".join(
            "[^/\n]*" if c == "*" else "[^/\n]" if c == "?" else re.escape(c) for c in pattern
        )
        return re.findall(rf"^(?:\./)?((?:[^\n]*/)?{name})$", listing, re.M)
    import pathspec

    match = pathspec.GitIgnoreSpec.from_lines([pattern]).match_file
    listed = (_rg.relative(p) for p in listing.splitlines() if p)
    return [path for path in listed if match(path)]


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
