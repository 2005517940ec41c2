"""`smith help [COMMAND]`: the same text as `--help`; `smith help sdk` is the plugin SDK's
help (`smith plugins help`, generated from the WIT by smith.wasm)."""

from __future__ import annotations

from smith.diagnostics import DiagnosticKind, Source

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from smith.cli._main import Context

UNKNOWN_TOPIC = DiagnosticKind(
    "cli.unknown-help-topic",
    what="'{topic}' is not a smith command, so there is no help for it",
    why="`smith help COMMAND` describes one of the commands `smith --help` lists",
    fix="{hint} (`smith --help` lists every command)",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "topic", nargs="?", metavar="COMMAND", help="command to describe (or sdk: the plugin SDK)"
    )


def run(args: argparse.Namespace, ctx: Context) -> int:
    from smith.cli._commands import BY_NAME
    from smith.cli._main import run as smith

    if args.topic == "sdk":
        from smith.wasm import sdk_help

        ctx.out(sdk_help(None).rstrip("\n"))
        return 0
    if args.topic and args.topic not in BY_NAME:
        # Not a command: `smith TOPIC --help` would open the app with it as a prompt.
        from smith.diagnostics import did_you_mean

        hint = did_you_mean(args.topic, BY_NAME, template="`smith help {}`")
        raise UNKNOWN_TOPIC.error(
            value=args.topic, source=Source("argument", args.topic), topic=args.topic, hint=hint
        )
    argv = [args.topic, "--help"] if args.topic else ["--help"]
    return smith(argv, env=ctx.env, stdout=ctx.stdout, stderr=ctx.stderr)
