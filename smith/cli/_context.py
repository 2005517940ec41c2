"""`smith context`: what the model would be told now besides the conversation, part by
part, with each part's source and estimated tokens (docs/context.md)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from smith.cli._main import Context
    from smith.runtime import Part


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
    for line in table(parts, total):
        ctx.out(line)
    return 0


def table(parts: list[Part], total: int) -> list[str]:
    rows = [("PART", "SOURCE", "SENT AS", "TOKENS")]
    rows += [(p.name, p.source, _sent(p.sent), f"{p.tokens:,}") for p in parts]
    rows.append(("total", "", "", f"{total:,}"))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    width = max(len(row[3]) for row in rows)
    return [
        "  ".join(
            [*(c.ljust(w) for c, w in zip(row[:3], widths, strict=True)), row[3].rjust(width)]
        )
        for row in rows
    ]


def _sent(sent: str) -> str:
    return {"system": "system prompt", "tools": "tool definitions", "message": "message"}[sent]
