"""`smith rpc`: JSON-RPC 2.0 over standard input and output, for programs that drive
smith (editors, scripts, other agents). docs/rpc.md is the reference.

One request (or batch) per line in, one response or notification per line out, LF
only. Standard output carries protocol records and nothing else: logs, warnings and
diagnostics go to stderr. Runtime events arrive as `event` notifications in the schema
of docs/events.md; what plugins ask the user is a `ui.ask` request from the server,
which the client answers on its input (docs/ui.md). Settings flags (`--model`,
`--thinking`, ...) apply as in every mode.

    smith rpc                    a new session in this project
    smith rpc --session NAME     that session (name or id), created if there is none
    smith rpc --schema           the protocol's JSON Schema (draft 2020-12), then exit

Exit status: 0 after `shutdown`, end of input or SIGTERM (the running turn is aborted
and recorded first); 2 when the configuration or model is unusable before it starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smith._lazy import lazy_exports

if TYPE_CHECKING:
    import argparse

    from smith.cli import Context
    from smith.runtime import Runtime
    from smith.session import Session


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--session",
        metavar="NAME",
        help="use this session (name or id; created if there is none) instead of a new one",
    )
    parser.add_argument(
        "--schema",
        action="store_true",
        help="print the protocol's JSON Schema (events and operations) and exit",
    )


def run(args: argparse.Namespace, ctx: Context) -> int:
    import asyncio

    from smith.runtime import DEMO_BANNER, build
    from smith.text import inert

    if args.schema:  # the declarations' schema (smith.protocol): nothing is built
        import json

        from smith.protocol import schema

        print(json.dumps(schema(), indent=2), file=ctx.stdout)
        return 0

    from ._io import protocol_output
    from ._server import Server

    write = protocol_output(ctx.stdout)  # first: nothing else may reach stdout from here
    # Everything is checked before anything is created (smith.runtime.build).
    assembly = build(ctx.config(), cwd=ctx.cwd, surface="rpc", warn=ctx.print_diagnostic,
                     env=ctx.env)  # fmt: skip
    if assembly.is_demo:
        print(DEMO_BANNER, file=ctx.stderr)
    assembly.log_to(ctx.stderr)
    if args.session:
        session = assembly.named_session(args.session)
        assert session is not None
    else:
        session = assembly.new_session("rpc")
    print(inert(f"smith: session {session.name} ({session.id})"), file=ctx.stderr)

    def make_runtime(session: Session, model: str, thinking: str) -> Runtime:
        return assembly.runtime(session, model=model, thinking=thinking)

    try:
        server = Server(assembly.config, ctx.env, session, make_runtime, write,
                        model=assembly.model, thinking=assembly.thinking)  # fmt: skip
    except BaseException:
        session.close()
        raise
    try:
        return asyncio.run(server.serve())
    finally:
        server.session.close()  # already closed unless serving failed


__all__ = [
    "LineReader",
    "add_arguments",
    "run",
]


# Exported on first use (PEP 562): these modules are not imported with the package.
if TYPE_CHECKING:
    from ._io import LineReader as LineReader


_LAZY = {
    "LineReader": "smith.frontends.rpc._io",
}

__getattr__ = lazy_exports(__name__, _LAZY)
