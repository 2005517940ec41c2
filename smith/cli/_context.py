"""`smith context`: what the model would be told now besides the conversation, part by
part, with each part's source and estimated tokens (docs/context.md)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from smith.cli._main import Context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the parts as JSON, each with its text: {parts: [{name, source, sent, "
        "tokens, text}], tokens}",
    )
    parser.add_argument(
        "--session",
        metavar="NAME",
        help="also the notes recorded in this session (name or id): its environment blocks "
        "and the instruction files it reached",
    )


def run(args: argparse.Namespace, ctx: Context) -> int:
    import json

    from smith.runtime import build

    # Nothing runs here (no operation asks the runtime for anything): "library", as for
    # `smith debug memory`, names the caller in any diagnostic of the assembly.
    assembly = build(ctx.config(), cwd=ctx.cwd, surface="library", warn=ctx.print_diagnostic)
    session = None
    if args.session:
        from smith.session import Session

        session = Session.load(assembly.find_session(args.session))
    parts = assembly.context_parts(session)
    total = sum(p.tokens for p in parts)
    if args.json:
        ctx.out(json.dumps({"parts": [p.to_dict() for p in parts], "tokens": total}, indent=2))
        return 0
    from smith.runtime import context_table

    for line in context_table([p.to_dict() for p in parts]):
        ctx.out(line)
    return 0
