"""`smith restore ENTRY`: the project's files as they were at a session entry."""

from __future__ import annotations

from smith.cli._vcs import add_common, add_force, open_history, report

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from smith.cli._main import Context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "entry", metavar="ENTRY", help="a session entry id or prefix (see `smith history`)"
    )
    parser.add_argument(
        "--conversation",
        action="store_true",
        help="also continue the session from that entry (a new branch of it)",
    )
    add_common(parser)
    add_force(parser)


def run(args: argparse.Namespace, ctx: Context) -> int:
    with open_history(ctx, args, "restore") as files:
        result = files.restore(args.entry, conversation=args.conversation, force=args.force)
        session = files.session
    done = f"restored the files as they were at entry {result['target']}"
    return report(ctx, args, result, done, session)
