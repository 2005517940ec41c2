"""`smith help [COMMAND]`: the same text as `--help`."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from smith.cli._main import Context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topic", nargs="?", metavar="COMMAND", help="command to describe")


def run(args: argparse.Namespace, ctx: Context) -> int:
    from smith.cli._main import run as smith

    argv = [args.topic, "--help"] if args.topic else ["--help"]
    return smith(argv, env=ctx.env, stdout=ctx.stdout, stderr=ctx.stderr)
