"""ls: a directory's entries, sorted, bounded, without what .gitignore hides."""

from __future__ import annotations

import os

from smith.effects._tool import ToolContext, ToolError, ToolResult, ToolSpec
from smith.effects.tools import _rg

TYPE_CHECKING = False
if TYPE_CHECKING:
    import pathspec

MAX_ENTRIES = 1000
IGNORE_FILE_BYTES = 1 << 20


def ignored(ctx: ToolContext, directory: str) -> pathspec.GitIgnoreSpec:
    """A matcher for what the ignore files from the root down to `directory` hide: each
    .gitignore and .ignore (rules in a subdirectory apply below it; a rule without '/'
    matches at any depth), .git/info/exclude, and last, so winning, tools.ignore."""
    import pathspec

    root = os.path.realpath(ctx.root)
    rel = os.path.relpath(directory, root)
    parts = [] if rel == "." else rel.split(os.sep)
    lines = _rules(os.path.join(root, ".git", "info", "exclude"), "", root)
    here, prefix = root, ""
    for part in ["", *parts]:
        if part:
            here = os.path.join(here, part)
            prefix = f"{prefix}{part}/"
        for name in (".gitignore", ".ignore"):
            lines += _rules(os.path.join(here, name), prefix, root)
    return pathspec.GitIgnoreSpec.from_lines([*lines, *ctx.ignore])


def _rules(path: str, prefix: str, root: str) -> list[str]:
    """The rules of one ignore file, rewritten to apply from the root. One that is no
    regular file of the project (a FIFO, a link out of it) or is over 1 MiB has none."""
    from smith._readfile import FileRefused, Reach, read_file

    try:
        data = read_file(path, limit=IGNORE_FILE_BYTES, reach=Reach.project(root, private=()))
    except (OSError, FileRefused):
        return []
    raw = data.decode("utf-8", "replace").splitlines()
    out = []
    for line in raw:
        if not line.strip() or line.startswith("#"):
            continue
        bang = "!" if line.startswith("!") else ""
        rule = line[len(bang) :]
        if prefix:
            anchored = "/" in rule.rstrip("/")
            rule = prefix + (rule.lstrip("/") if anchored else f"**/{rule}")
        out.append(bang + rule)
    return out


def run(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
    path = ctx.path(str(args.get("path", ".")))
    shown = ctx.show(path)
    try:
        names = sorted(os.listdir(path))
    except FileNotFoundError:
        raise ToolError(f"{shown} does not exist") from None
    except NotADirectoryError:
        raise ToolError(f"{shown} is a file; use read to see it") from None
    except PermissionError:
        raise ToolError(f"{shown} cannot be listed: permission denied") from None
    spec = ignored(ctx, path)
    root = os.path.realpath(ctx.root)
    shown_entries = []
    hidden = special = 0
    for name in names:
        full = os.path.join(path, name)
        if _rg.special(full):  # a FIFO, socket or device: nothing a tool reads
            special += 1
            continue
        is_dir = os.path.isdir(full)
        rel = os.path.relpath(full, root) + ("/" if is_dir else "")
        if name == ".git" or spec.match_file(rel):
            hidden += 1
            continue
        shown_entries.append(_printable(name) + ("/" if is_dir else ""))
    total = len(shown_entries)
    text = "\n".join(shown_entries[:MAX_ENTRIES]) or "(empty)"
    if total > MAX_ENTRIES:
        more = total - MAX_ENTRIES
        text += f"\n[{more} more {'entry' if more == 1 else 'entries'} not shown]"
    if hidden:
        text += f"\n[{hidden} ignored {'entry' if hidden == 1 else 'entries'} hidden]"
    if special:
        kinds = "FIFO, socket or device" if special == 1 else "FIFOs, sockets or devices"
        text += f"\n[{special} {kinds} left out]"
    details = {"path": shown, "entries": total, "ignored": hidden, "special": special}
    return ToolResult(text, details=details)


def _printable(name: str) -> str:
    """A file name as text that can be recorded: a byte that is not UTF-8 (a lone
    surrogate from os.listdir) is shown escaped (`\\xff`), as find and grep show it."""
    if name.isascii():
        return name
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


SPEC = ToolSpec(
    "ls",
    "List a directory (default: the working directory), sorted, directories marked with "
    "/, leaving out what .gitignore ignores and FIFOs, sockets and devices; at most 1,000 "
    "entries (it says how many more). "
    "Refuses a path outside the project, a file (use read) and a missing directory.",
    {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "minLength": 1,
                "description": "directory to list: relative to the working directory, or "
                "absolute inside the project (default: the working directory)",
            }
        },
        "additionalProperties": False,
    },
    run,
    effect="reads",
)
