"""ls: a directory's entries, sorted, bounded, without what .gitignore hides."""

from __future__ import annotations

import os

from smith.effects._tool import ToolContext, ToolError, ToolResult, ToolSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    import pathspec

MAX_ENTRIES = 1000


def ignored(ctx: ToolContext, directory: str) -> pathspec.GitIgnoreSpec:
    """A matcher for paths under `directory` that the project's .gitignore files hide."""
    import pathspec

    lines: list[str] = []
    root = os.path.realpath(ctx.root)
    here = root
    rel_parts = os.path.relpath(directory, root).split(os.sep)
    for part in ["", *([] if rel_parts == ["."] else rel_parts)]:
        here = os.path.join(here, part) if part else here
        prefix = os.path.relpath(here, root)
        try:
            with open(os.path.join(here, ".gitignore"), encoding="utf-8") as f:
                for raw in f:
                    line = raw.rstrip("\n")
                    if line and not line.startswith("#"):
                        anchored = line.lstrip("!")
                        bang = "!" if line.startswith("!") else ""
                        lines.append(
                            bang
                            + (anchored if prefix == "." else f"{prefix}/{anchored.lstrip('/')}")
                        )
        except OSError:
            pass
    return pathspec.GitIgnoreSpec.from_lines([*ctx.ignore, *lines])


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
    hidden = 0
    for name in names:
        full = os.path.join(path, name)
        is_dir = os.path.isdir(full)
        rel = os.path.relpath(full, root) + ("/" if is_dir else "")
        if name == ".git" or spec.match_file(rel):
            hidden += 1
            continue
        shown_entries.append(name + ("/" if is_dir else ""))
    total = len(shown_entries)
    text = "\n".join(shown_entries[:MAX_ENTRIES]) or "(empty)"
    if total > MAX_ENTRIES:
        text += f"\n[{total - MAX_ENTRIES} more entries not shown]"
    if hidden:
        text += f"\n[{hidden} ignored entries hidden]"
    return ToolResult(text, details={"path": shown, "entries": total, "ignored": hidden})


SPEC = ToolSpec(
    "ls",
    "List a directory (default: the working directory), sorted, directories marked with "
    "/, leaving out what .gitignore ignores.",
    {
        "type": "object",
        "properties": {"path": {"type": "string", "minLength": 1}},
        "additionalProperties": False,
    },
    run,
    mutating=False,
)
