"""`smith tools`: list the built-in tools, or run one (a built-in tool or a plugin's, as
`smith mcp` serves them) by hand as a recorded effect."""

from __future__ import annotations

import json

from smith.diagnostics import DiagnosticKind, Source
from smith.text import loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from smith.cli._main import Context
    from smith.effects import Outcome
    from smith.runtime import ToolHost

UNKNOWN_TOOL = DiagnosticKind(
    "cli.unknown-tool",
    what="there is no tool '{name}'",
    why="the tools that can be run are the built-in ones and those of the active plugins: {names}",
    fix="{hint}; `smith tools list` shows each tool's arguments",
)
BAD_ARGS = DiagnosticKind(
    "cli.tool-args",
    what="the tool arguments are not a JSON object: {reason}",
    why="tools take their arguments as one JSON object, as a model would send them",
    fix='quote it for the shell, e.g. smith tools run read \'{{"path": "README.md"}}\'',
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = actions.add_parser("list", help="the active tools and their argument schemas")
    ls.add_argument("--json", action="store_true", help="print the definitions as JSON")
    run = actions.add_parser("run", help="run one tool in this project as a recorded effect")
    run.add_argument("name", metavar="NAME")
    run.add_argument(
        "args",
        metavar="JSON-ARGS",
        nargs="?",
        default="{}",
        help="the arguments as one JSON object (default {})",
    )
    run.add_argument(
        "--session", metavar="NAME", help="record in this session (name or id; default: 'manual')"
    )
    run.add_argument(
        "--json", action="store_true", help="print the result and its effect record as JSON"
    )


def _list(args: argparse.Namespace, ctx: Context) -> int:
    from smith.runtime import build

    # What `tools run` (and MCP) take: the built-ins as configured limits bind them, and
    # the tools of the active plugins.
    assembly = build(ctx.config(), cwd=ctx.cwd, surface="tools", warn=ctx.print_diagnostic,
                     model=False, env=ctx.env)  # fmt: skip
    tools, origins = assembly.host_tools()
    if args.json:
        ctx.out(json.dumps({"tools": [t.definition() for t in tools.values()]}, indent=2))
        return 0
    for tool in tools.values():
        props = tool.parameters.get("properties", {})
        assert isinstance(props, dict)
        origin = f"  (plugin {origins[tool.name]})" if tool.name in origins else ""
        ctx.out(f"{tool.name:<6} {', '.join(props)}{origin}")
        ctx.out(f"       {tool.description}")
    return 0


def _run(args: argparse.Namespace, ctx: Context) -> int:
    try:
        tool_args = loads(args.args)
    except ValueError as exc:
        raise BAD_ARGS.error(
            value=args.args, source=Source("argument", args.args), reason=str(exc)
        ) from None
    if not isinstance(tool_args, dict):
        raise BAD_ARGS.error(
            value=args.args,
            source=Source("argument", args.args),
            reason=f"got {type(tool_args).__name__}",
        )
    from smith.cli._early import probe_sandbox

    probed = probe_sandbox()  # its wait overlaps the imports below
    from smith.effects import JournalError
    from smith.runtime import build

    probed()
    assembly = build(ctx.config(), cwd=ctx.cwd, surface="tools", warn=ctx.print_diagnostic,
                     model=False, env=ctx.env)  # fmt: skip
    # Log records go out masked, as in every mode (a crashing tool is logged).
    assembly.log_to(ctx.stderr)
    # The tools MCP serves: the built-in ones and those of the active plugins.
    tools, _ = assembly.host_tools()
    spec = tools.get(args.name)
    if spec is None:  # before any session is opened
        from smith.diagnostics import did_you_mean

        raise UNKNOWN_TOOL.error(
            value=args.name,
            source=Source("argument", args.name),
            name=args.name,
            names=", ".join(tools),
            hint=did_you_mean(args.name, tools),
        )
    session = assembly.named_session(args.session or "manual")
    assert session is not None
    with session:
        # The same host as MCP's: journaled, secrets restored for bash and masked in what
        # is recorded and shown, snapshotted around a change so `smith undo` takes it back.
        host = assembly.tool_host(session)
        try:
            outcome = _bounded(host, spec.name, tool_args)
        except JournalError as exc:
            ctx.print_diagnostic(exc.error.diagnostic)
            return 1
        if args.json:
            ctx.out(json.dumps({**outcome.to_dict(), "session": session.id}, indent=2))
        else:
            ctx.out(outcome.result.text)
    return 0 if outcome.result.ok else 1


STOP_GRACE = 10.0  # seconds a timed-out or aborted call gets to stop and record its end (as MCP)


def _bounded(host: ToolHost, name: str, tool_args: dict[str, object]) -> Outcome:
    """Run the call in a worker thread, through the runner a turn's calls take: at its
    timeout (the runner's: tools.timeout, --tools-timeout, or the call's own limit) it is
    told to stop; on Ctrl-C, SIGTERM or SIGHUP too. It gets STOP_GRACE seconds to stop
    (its processes ended and waited for) and record how it ended."""
    import threading

    from smith.effects import Outcome
    from smith.runtime import not_stopped, timed_out

    spec = host.tools[name]
    timeout = host.runner.timeout(spec, tool_args)
    call = host.context.for_call()
    done: dict[str, object] = {}
    # Waited for with an Event, not Thread.join: a join that a signal interrupts marks the
    # thread finished while it runs (CPython bpo-45274), and a second join returns at once.
    finished = threading.Event()

    def work() -> None:
        try:
            # The user's own direct call: not reviewed by the plugins (review=None).
            done["outcome"] = host.run(spec, tool_args, call=call, cause={"manual": True},
                                       review=None)  # fmt: skip
        except BaseException as exc:  # raised again in the main thread
            done["error"] = exc
        finally:
            finished.set()

    worker = threading.Thread(target=work, name=f"smith-tool-{name}", daemon=True)
    try:
        with _aborts_on_termination():
            worker.start()
            if not finished.wait(timeout + STOP_GRACE):  # told to stop at `timeout`
                call.cancelled.set()
    except KeyboardInterrupt:
        call.cancelled.set()  # the tool ends its processes and records it was cancelled
        finished.wait(STOP_GRACE)
        raise
    if "error" in done:
        raise done["error"]  # type: ignore[misc]
    outcome = done.get("outcome")
    if not isinstance(outcome, Outcome):  # still running after the grace: it ignores cancel
        from smith.runtime import Ran

        return Ran(timed_out(not_stopped(spec), timeout)).outcome()
    return outcome


class _aborts_on_termination:
    """SIGTERM and SIGHUP abort the tool like Ctrl-C does: its processes are ended and
    waited for and its effect recorded as cancelled, instead of smith dying with them
    still running."""

    def __enter__(self) -> None:
        import signal

        def abort(signum: int, frame: object) -> None:
            raise KeyboardInterrupt(signal.Signals(signum).name)

        self.saved = {sig: signal.signal(sig, abort) for sig in (signal.SIGTERM, signal.SIGHUP)}

    def __exit__(self, *exc: object) -> None:
        import signal

        for sig, handler in self.saved.items():
            signal.signal(sig, handler)


def run(args: argparse.Namespace, ctx: Context) -> int:
    return {"list": _list, "run": _run}[args.action](args, ctx)
