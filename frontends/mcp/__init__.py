"""`smith mcp`: serve smith's built-in tools and its sessions over MCP on stdin/stdout.

Tool calls are recorded in a session of this project ('mcp', or --session NAME) through
the effect journal, as `smith tools run` records them; unfinished effects left by an
earlier server are recorded as unknown at start (never re-run). While serving, standard
output carries only the protocol: the SDK moves file descriptor 1 to standard error, and
anything Python code prints goes there too. Logs go to standard error. See docs/mcp.md
and `_server.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smith.diagnostics import DiagnosticKind, Source

if TYPE_CHECKING:
    import argparse
    from typing import Any

    from smith.cli import Context

    from ._server import SmithMcp

DEFAULT_SESSION = "mcp"


ACTIONS = ("serve", "list", "tools", "add", "remove", "login")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action",
        nargs="?",
        default="serve",
        choices=ACTIONS,
        help="serve (the default): smith's tools over MCP on stdio; list: the MCP servers "
        "smith connects to, their state and tool count; tools ALIAS: a server's tools; add "
        "ALIAS (--url URL | -- COMMAND ARGS...): add a server to your configuration; remove "
        "ALIAS; login ALIAS: sign in to a server configured with oauth=true",
    )
    import argparse as _argparse

    parser.add_argument(
        "words",
        nargs=_argparse.REMAINDER,
        metavar="ARG",
        help="the action's own arguments: list [--json] [--timeout S]; tools ALIAS [--json]; "
        "add ALIAS [--env K=V] [--no-sandbox] -- COMMAND ARGS...; add ALIAS --url URL "
        "[--header K=V] [--token-env VAR]; remove ALIAS; login ALIAS",
    )
    parser.add_argument(
        "--session",
        metavar="NAME",
        help=f"record tool calls in this session (name or id; default: '{DEFAULT_SESSION}')",
    )


def run(args: argparse.Namespace, ctx: Context) -> int:
    import asyncio

    from smith._version import __version__
    from smith.runtime import build
    from smith.text import inert

    from ._server import SmithMcp

    if args.action != "serve":
        from ._manage import manage

        return manage(args, ctx)
    if args.words:  # `smith mcp serve --session NAME`: its options after the action
        import argparse

        serve = argparse.ArgumentParser(prog="smith mcp serve")
        serve.add_argument("--session", metavar="NAME")
        args.session = serve.parse_args(args.words).session or args.session
    assembly = build(ctx.config(), cwd=ctx.cwd, surface="mcp", warn=ctx.print_diagnostic,
                     model=False, env=ctx.env)  # fmt: skip
    assembly.log_to(ctx.stderr, name="mcp", fmt="smith: %(levelname)s: %(name)s: %(message)s")
    session = assembly.named_session(args.session or DEFAULT_SESSION)
    assert session is not None
    with session:
        # The tool host every mode shares: the journal, the secret proxy (secrets restored
        # for bash, masked in results and records), snapshots so `smith undo` works.
        host = assembly.tool_host(session)
        print(
            inert(
                f"smith: serving MCP on stdio; tool calls are recorded in session "
                f"{session.name} ({session.id})"
            ),
            file=ctx.stderr,
        )
        server = SmithMcp(
            host=host,
            home=assembly.config.home,
            project=assembly.config.project_root,
            version=__version__,
        )
        ctx.stdout.flush()
        asyncio.run(_serve(server, ctx))
    return 0


SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP")

MCP_NOT_JSON = DiagnosticKind(
    "mcp.not-json",
    what="input line {line} is not JSON: {detail}",
    why="smith mcp reads one JSON-RPC 2.0 message per line (MCP's stdio transport)",
    fix="send each message as compact JSON on a single line, ending with a line feed",
)


async def _serve(server: SmithMcp, ctx: Context) -> None:
    """Serve until the client closes stdin; SIGTERM, SIGINT and SIGHUP end it the same
    way (running tools are stopped and record how they ended), stdin open or not."""
    import asyncio
    import contextlib
    import signal
    from typing import cast

    from mcp.server.stdio import stdio_server

    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    signals = [getattr(signal, name) for name in SIGNALS]
    for sig in signals:
        loop.add_signal_handler(sig, task.cancel)
    try:
        # The SDK takes file descriptor 1 for the protocol (pointing it at stderr
        # meanwhile); Python's own stdout is sent to stderr too, so nothing printed can
        # reach the protocol stream, even when flushed late. Input comes from _Input.
        lines = _Input()
        async with stdio_server(stdin=cast("Any", lines)) as (read, write):
            lines.answer = write.send  # lines that never reach the SDK are answered here
            with contextlib.redirect_stdout(ctx.stderr):
                mcp = server.server
                await mcp.run(read, write, mcp.create_initialization_options())
    except asyncio.CancelledError:
        pass
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)


class _Input:
    """The protocol's input lines, as the SDK iterates them. They are read from a
    private duplicate of fd 0 by a daemon thread (fd 0 itself then reads the null
    device, so children never take protocol input): the SDK's own reader blocks a
    worker thread the process waits for, so a signal could not end the server while
    the client kept its end of the pipe open.

    Each line is read here with smith.text.loads before the SDK sees it: a line that is
    not JSON, not UTF-8 or nested too deeply is answered with -32700 at once (the SDK
    would drop it without an answer), and lone surrogates, which the SDK's parser
    refuses, are replaced with U+FFFD (a warning on stderr says how many)."""

    answer: Any = None  # the SDK's write stream's send, once the transport is up

    def __init__(self) -> None:
        import asyncio
        import fcntl
        import os
        import sys

        # Relative: frontends/ installs as smith.frontends, which mypy cannot see.
        from ..rpc import LineReader  # noqa: TID252

        if sys.stdin is None:  # started without stdin: fd 0 may be a file smith opened
            private = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)  # no input at all
        else:
            private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.close(null)
        loop = asyncio.get_running_loop()
        self._lines: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._number = 0

        def deliver(line: bytes | None) -> None:  # from the reading thread
            loop.call_soon_threadsafe(self._lines.put_nowait, line)

        LineReader(private, deliver).start()

    def __aiter__(self) -> _Input:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._lines.get()
            if line is None:
                raise StopAsyncIteration
            self._number += 1
            if not line.strip():
                continue
            text = await self._checked(line)
            if text is not None:
                return text

    async def _checked(self, line: bytes) -> str | None:
        """The line for the SDK, or None when it was answered here."""
        import json
        import logging

        from smith.text import TEXT_REPLACED, loads, replace_surrogates

        try:
            message = loads(line)
        except ValueError as exc:
            await self._parse_error(line, str(exc))
            return None
        message, replaced = replace_surrogates(message)
        if not replaced:
            return line.decode("utf-8")
        where = f"input line {self._number}"
        note = TEXT_REPLACED(
            value=replaced, source=Source("mcp", where), count=replaced, where=where
        )
        logging.getLogger("smith.mcp").warning("%s", note.headline())
        return json.dumps(message, ensure_ascii=False)

    async def _parse_error(self, line: bytes, detail: str) -> None:
        import mcp_types as types
        from mcp.shared.message import SessionMessage

        where = Source("mcp", f"input line {self._number}")
        shown = line[:200].decode("utf-8", "replace")
        diagnostic = MCP_NOT_JSON(value=shown, source=where, line=self._number, detail=detail)
        data = diagnostic.to_dict()
        error = types.ErrorData(code=types.PARSE_ERROR, message="Parse error", data=data)
        reply = types.JSONRPCError(jsonrpc="2.0", id=None, error=error)
        if self.answer is not None:
            await self.answer(SessionMessage(reply))


__all__ = ["add_arguments", "run"]
