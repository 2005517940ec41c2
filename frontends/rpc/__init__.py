"""`smith rpc`: JSON-RPC 2.0 over standard input and output, for programs that drive
smith (editors, scripts, other agents). docs/rpc.md is the reference.

One request (or batch) per line in, one response or notification per line out, LF
only. Standard output carries protocol records and nothing else: logs, warnings and
diagnostics go to stderr. Runtime events arrive as `event` notifications in the schema
of docs/events.md. Settings flags (`--model`, `--thinking`, ...) apply as in every mode.

    smith rpc                    a new session in this project
    smith rpc --session NAME     that session (name or id), created if there is none

Exit status: 0 after `shutdown`, end of input or SIGTERM (the running turn is aborted
and recorded first); 2 when the configuration or model is unusable before it starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

    from smith.cli._main import Context
    from smith.runtime import Runtime
    from smith.session import Session


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--session",
        metavar="NAME",
        help="use this session (name or id; created if there is none) instead of a new one",
    )


def run(args: argparse.Namespace, ctx: Context) -> int:
    import asyncio
    import time

    from smith.runtime._setup import DEMO_BANNER, model_setting, named_session, runtime_options
    from smith.session import SessionStore
    from smith.text import inert

    # Relative: installed, frontends/ is smith.frontends (eval shares its set-up helpers).
    from ..eval import load_secrets, log_to  # noqa: TID252
    from ._io import protocol_output
    from ._server import Server

    write = protocol_output(ctx.stdout)  # first: nothing else may reach stdout from here
    config = ctx.config()
    model, is_demo = model_setting(config)
    if is_demo:
        print(DEMO_BANNER, file=ctx.stderr)
    options = runtime_options(config)  # checked before anything is created
    secrets = load_secrets(config, ctx)
    log_to(ctx.stderr, secrets, debug=config["debug"] is True)
    if args.session:
        session = named_session(config, args.session)
        assert session is not None
    else:
        name = f"rpc {time.strftime('%Y-%m-%d %H:%M:%S')}"
        session = SessionStore(config.home).create(name=name, cwd=config.project_root)
    print(inert(f"smith: session {session.name} ({session.id})"), file=ctx.stderr)

    def make_runtime(session: Session, model: str, thinking: str) -> Runtime:
        from smith.effects import EffectJournal, builtin_tools
        from smith.runtime import Runtime
        from smith.runtime._setup import tool_context

        EffectJournal(session).reconcile()
        kw: dict[str, Any] = {**options, "thinking": thinking}
        return Runtime(
            session,
            model=model,
            tools=list(builtin_tools().values()),
            context=tool_context(config, ctx.cwd, session),
            secrets=secrets,
            surface="rpc",
            **kw,
        )

    try:
        server = Server(config, ctx.env, session, make_runtime, write, model=model,
                        thinking=str(options["thinking"]))  # fmt: skip
    except BaseException:
        session.close()
        raise
    try:
        return asyncio.run(server.serve())
    finally:
        server.session.close()  # already closed unless serving failed


__all__ = ["add_arguments", "run"]
