"""`smith web`: the interactive app, the very same one, in a browser (textual-serve).

    smith web                       serve on 127.0.0.1, a free port; open the browser
    smith web --port 8765 --no-open a fixed port; only print the URL
    smith web --model demo          settings flags pass on to every app it starts

Each browser tab ("smith — PROJECT") gets its own `smith` app process, started with this
command's settings flags in this directory. Whoever drives the app can run commands in
the project, so the server answers only requests carrying a secret made at launch (it is
in the printed URL), accepts the websocket only from its own page, and listens on
loopback unless `--host` says otherwise (with a warning). The URL is the first line on
stdout (textual-serve copies what the apps write to stderr there too); Ctrl+C or SIGTERM
stops the server and every app it started (see _server.py for how none is left behind).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smith.diagnostics import DiagnosticKind, Source

if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping

    from smith.cli import Context

    from ._server import SmithServer

EXPOSED = DiagnosticKind(
    "web.exposed",
    severity="warning",
    what="the app is served on {host}, not only on this machine's loopback interface",
    why="whoever can reach that address and learns the URL can run commands in this project "
    "as you, and plain HTTP carries the URL's secret unencrypted",
    fix="leave out --host to serve on 127.0.0.1 (reach it from elsewhere through an SSH "
    "tunnel), or use --host only on a network you trust",
)
CANNOT_LISTEN = DiagnosticKind(
    "web.cannot-listen",
    what="cannot serve on {address}: {reason}",
    why="the operating system refused to listen there: the port is taken, needs privileges, "
    "or the host is not an address of this machine",
    fix="choose another --port (0 lets the system pick a free one) or another --host",
)
DEFAULT_HOST = "127.0.0.1"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help=f"address to listen on (default {DEFAULT_HOST}; anything else is reachable from "
        "other machines)",
    )
    parser.add_argument(
        "--port", type=_port, default=0, help="port to listen on (default 0: a free one)"
    )
    parser.add_argument(
        "--no-open", action="store_true", help="only print the URL; do not open a browser"
    )


def _port(text: str) -> int:
    import argparse

    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0 to 65535)")
    return int(text)


def run(args: argparse.Namespace, ctx: Context) -> int:
    import asyncio
    import os

    from ._server import SmithServer, is_loopback

    root = ctx.config().project_root  # a configuration error is reported now, not in each tab
    project = os.path.basename(os.path.normpath(root)) or root
    if not is_loopback(args.host):
        ctx.print_diagnostic(
            EXPOSED(value=args.host, source=Source("flag", "--host"), host=args.host)
        )
    argv, env = app_command(ctx.flags, ctx.env)
    server = SmithServer(
        argv, host=args.host, port=args.port, env=env, cwd=ctx.cwd, title=f"smith — {project}"
    )
    return asyncio.run(_serve(server, ctx, open_browser=not args.no_open))


def app_command(
    flags: Mapping[str, object], env: Mapping[str, str]
) -> tuple[list[str], dict[str, str]]:
    """The app's command line and environment: this interpreter running `smith` with the
    settings flags this command was given, so that every tab runs with the same settings."""
    import sys

    from smith.config import SCHEMA

    argv = [sys.executable, "-m", "smith"]
    env = dict(env)
    for option in SCHEMA:
        if option.key not in flags:
            continue
        value = flags[option.key]
        if isinstance(value, bool):
            argv.append(option.flag if value else f"--no-{option.flag[2:]}")
        elif option.secret:
            env[option.env] = str(value)  # other users can read a command line, not this
        else:
            argv.append(f"{option.flag}={value}")  # `=`: a value may begin with "-"
    return argv, env


async def _serve(server: SmithServer, ctx: Context, *, open_browser: bool) -> int:
    import asyncio
    import signal

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    for sig in signals:
        loop.add_signal_handler(sig, stop.set)
    try:
        try:
            await server.start()
        except OSError as exc:
            address = f"{server.host}:{server.port}"
            raise CANNOT_LISTEN.error(
                value=address,
                source=Source("flag", "--host/--port"),
                address=address,
                reason=exc.strerror or str(exc),
            ) from None
        print(server.url, file=ctx.stdout, flush=True)
        print(
            "smith: serving the app at the URL above; anyone with it can use this project. "
            "Ctrl+C stops.",
            file=ctx.stderr,
            flush=True,
        )
        if open_browser:
            _open(server.url)
        await stop.wait()
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
        await server.close()
    return 0


def _open(url: str) -> None:
    """Open the page in a graphical browser, if there is one. Without a display Python's
    webbrowser falls back to text browsers, which would fight the server for the terminal;
    and a browser command may block, so it runs beside the server, never in its way."""
    import os
    import sys
    import threading
    import webbrowser

    graphical = sys.platform in ("darwin", "win32") or any(
        os.environ.get(name) for name in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")
    )
    if graphical:
        threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()


__all__ = ["add_arguments", "app_command", "run"]
