"""`smith redo`: apply again what the latest `smith undo` took back."""

from __future__ import annotations

from smith.cli._vcs import add_common, add_force, open_history, report

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from smith.cli._main import Context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common(parser)
    add_force(parser)


def run(args: argparse.Namespace, ctx: Context) -> int:
    with open_history(ctx, args, "redo") as files:
        result = files.redo(force=args.force)
        session = files.session
    return report(ctx, args, result, f"redid {result['title']}", session)
