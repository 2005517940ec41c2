"""`smith diff [A] [B]`: what changed between two session entries (B: the files now); with
neither, what the newest turn changed."""

from __future__ import annotations

import json

from smith.cli._vcs import add_common, open_history

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from smith.cli._main import Context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", metavar="A", nargs="?", help="entry to compare from")
    parser.add_argument("b", metavar="B", nargs="?", help="entry to compare to (default: now)")
    parser.add_argument("--stat", action="store_true", help="only the files and line counts")
    add_common(parser)


def run(args: argparse.Namespace, ctx: Context) -> int:
    with open_history(ctx, args, "diff") as files:
        result = files.diff(args.a, args.b)
    if args.json:
        ctx.out(json.dumps(result, indent=2))
        return 0
    changed = result["files"]
    assert isinstance(changed, list)
    if not changed:
        ctx.out("no changes")
        return 0
    if args.stat:
        for item in changed:
            ctx.out(f"  {item['change']:<9} {item['path']}")
        ctx.out(
            f"{len(changed)} file{'s' if len(changed) != 1 else ''}, "
            f"+{result['insertions']} -{result['deletions']} lines, "
            f"{result['title']}"
        )
        return 0
    ctx.out(str(result["patch"]).rstrip("\n"))
    return 0
