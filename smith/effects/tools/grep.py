"""grep: lines matching a regex (or literal text), with context, sorted and bounded."""

from __future__ import annotations

import os

from smith.effects._tool import ToolContext, ToolError, ToolResult, ToolSpec
from smith.effects.tools import _rg

MAX_LINES = 500
MAX_COLUMNS = 500
PER_FILE = 200


def run(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
    where = ctx.path(str(args.get("path", ".")))
    special = _rg.special(where)
    if special:  # rg would wait for ever on a FIFO that no one writes
        raise ToolError(
            f"{ctx.show(where)} is {special}, not a file or directory: grep searches "
            "regular files (give the directory around it to search the files there)"
        )
    if not os.path.exists(where):
        raise ToolError(f"{ctx.show(where)} does not exist")
    flags = [
        "--null",
        "--with-filename",
        "--line-number",
        "--no-heading",
        "--max-columns",
        str(MAX_COLUMNS),
        "--max-columns-preview",
        "--max-count",
        str(PER_FILE),
    ]
    if args.get("literal"):
        flags.append("--fixed-strings")
    context = int(args.get("context", 0))  # type: ignore[call-overload]
    if context:
        flags += ["--context", str(context)]
    if "glob" in args:
        glob = str(args["glob"])
        # A file-name glob filters without overriding .gitignore; a path glob has to be
        # an rg --glob, which can bring ignored files back (documented).
        flags += _rg.name_filter(glob) if "/" not in glob else ["--glob", glob]
    out, cut = _rg.run(
        ctx,
        [*flags, "--regexp", str(args["pattern"])],
        where,
        stop_after=MAX_LINES + 2 * context + 1,
    )
    rows = []
    per_file: dict[str, int] = {}
    for raw in _rg.text(out).split("\n"):
        name, sep, rest = raw.partition("\0")
        if not sep:
            continue  # "--" between context groups
        number, kind, text = _split(rest)
        if number is None:
            continue
        rows.append((_rg.relative(name), number, kind, text))
        if kind == ":":
            per_file[name] = per_file.get(name, 0) + 1
    rows.sort(key=lambda r: (r[0], r[1]))  # rg's order is stable but not by full path
    matches = sum(1 for r in rows if r[2] == ":")
    lines = [f"{path}{kind}{number}{kind}{text}" for path, number, kind, text in rows]
    body = "\n".join(lines[:MAX_LINES]) or f"no matches for {args['pattern']}"
    if len(lines) > MAX_LINES or cut:
        body += (
            f"\n[{matches}{'+' if cut else ''} matching lines; showing the first "
            f"{MAX_LINES} lines: narrow the pattern, path or glob]"
        )
    capped = sorted(_rg.relative(n) for n, c in per_file.items() if c >= PER_FILE)
    if capped:
        more = " and more" if len(capped) > 5 else ""
        body += f"\n[showing the first {PER_FILE} matches in {', '.join(capped[:5])}{more}]"
    return ToolResult(body, details={"matches": matches, "complete": not cut and not capped})


def _split(rest: str) -> tuple[int | None, str, str]:
    """'12:text' (a match) or '12-text' (context) into (12, ':', 'text')."""
    digits = 0
    while digits < len(rest) and rest[digits].isdigit():
        digits += 1
    if not digits or digits == len(rest) or rest[digits] not in ":-":
        return None, "", ""
    return int(rest[:digits]), rest[digits], rest[digits + 1 :]


SPEC = ToolSpec(
    "grep",
    "Search file contents under `path` (default: the working directory) for a regular "
    "expression (Rust regex syntax; exact text with literal=true), optionally only in "
    "files matching `glob`, with `context` lines around each match. Results are sorted by "
    "file and line: at most 500 lines (it says when there are more), 200 matches a file, "
    "lines cut at 500 characters; .gitignore is honoured; FIFOs, sockets and devices are "
    "skipped. Refuses a path outside the project, one that does not exist or is no file "
    "or directory, and a pattern that is not a valid regular expression (pass "
    "literal=true for exact text).",
    {
        "type": "object",
        "properties": {
            "pattern": {
                "type": "string",
                "minLength": 1,
                "description": "the regular expression to find (or the exact text, with literal)",
            },
            "path": {
                "type": "string",
                "minLength": 1,
                "description": "file or directory to search: relative to the working directory, or "
                "absolute inside the project (default: the working directory)",
            },
            "glob": {
                "type": "string",
                "minLength": 1,
                "description": "only files whose path matches this glob, e.g. '*.py' "
                "(default: every file .gitignore does not ignore)",
            },
            "literal": {
                "type": "boolean",
                "description": "treat pattern as exact text, not a regex (default false)",
            },
            "context": {
                "type": "integer",
                "minimum": 0,
                "maximum": 20,
                "description": "lines shown before and after each match (default 0, at most 20)",
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
    run,
    effect="reads",
)
