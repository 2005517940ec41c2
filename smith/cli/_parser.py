"""Command-line parsing in two stages, like git.

Stage one reads the settings flags (generated from the configuration schema), `--help`,
`--version`, and the command name; everything after the command name is left for stage
two, the command's own parser, which accepts the same settings flags again so that
`smith --model m eval` and `smith eval --model m` mean the same. Only the chosen
command's parser is built.
"""

from __future__ import annotations

import argparse

from smith.cli._commands import COMMANDS, Command
from smith.config import SCHEMA
from smith.diagnostics import DiagnosticKind, Source

USAGE = DiagnosticKind(
    "cli.usage",
    what="the command line is not valid: {message}",
    why="smith could not make sense of the command line",
    fix="see `{help}` for what `{prog}` accepts",
)

OPTION_DEST = "setting:"


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are diagnostics instead of a bare exit."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise USAGE.error(
            source=Source("argument", self.prog),
            message=message,
            prog=self.prog,
            help=f"{self.prog} --help",
        )


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32, width=100)


def add_settings(parser: argparse.ArgumentParser) -> None:
    """One flag per configuration option, generated from its declaration.

    Every flag defaults to "absent", so the two stages' values can be merged.
    """
    group = parser.add_argument_group(
        "settings",
        "Each also reads its SMITH_ environment variable and its key in config.kdl;\n"
        "a flag wins over both. `smith config show` says where every value comes from.",
    )
    for option in SCHEMA:
        default = option.default
        shown = (
            ""
            if default is None or callable(default)
            else f"; default {str(default).lower() if isinstance(default, bool) else default}"
        )
        help_text = f"{option.doc} [{option.env}{shown}]".replace("%", "%%")
        dest = OPTION_DEST + option.key
        if option.type.name == "boolean":
            group.add_argument(
                option.flag,
                action=argparse.BooleanOptionalAction,
                dest=dest,
                help=help_text,
                default=argparse.SUPPRESS,
            )
        else:
            group.add_argument(
                option.flag,
                metavar=option.type.metavar,
                dest=dest,
                help=help_text,
                default=argparse.SUPPRESS,
            )


def top_parser() -> Parser:
    width = max(len(c.name) for c in COMMANDS) + 2
    lines = []
    for command in COMMANDS:
        note = "" if command.built else " (not built yet)"
        lines.append(f"  {command.name:<{width}}{command.summary}{note}")
    parser = Parser(
        prog="smith",
        usage="smith [settings] [COMMAND [ARGS...] | PROMPT]",
        description="smith is a coding agent: a model reads, searches, edits and runs code in "
        "your project,\nwith every effect recorded and every file change undoable.\n\n"
        "Run `smith` alone, or `smith PROMPT`, for the interactive app.\n\n"
        "commands:\n" + "\n".join(lines),
        epilog="`smith COMMAND --help` describes one command. Exit status: 0 success, "
        "1 failure,\n2 bad usage, bad configuration, or a capability that is not built yet.",
        formatter_class=_formatter,
        add_help=False,
    )
    parser.add_argument("-h", "--help", action="store_true", help="show this help and exit")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    app = parser.add_argument_group("the interactive app (`smith [PROMPT]`)")
    app.add_argument(
        "--continue", dest="continue_", action="store_true", help="open the latest session"
    )
    app.add_argument(
        "--resume", metavar="SESSION", help="open this session (name, id or id prefix)"
    )
    app.add_argument(
        "--session", metavar="NAME", help="open the session with this name (created if none)"
    )
    add_settings(parser)
    parser.add_argument("command", nargs="?", help=argparse.SUPPRESS)
    parser.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return parser


def command_parser(command: Command) -> Parser:
    note = "" if command.built else f"\n\nNot built yet: this version lacks {command.capability}."
    parser = Parser(
        prog=f"smith {command.name}",
        description=command.description + note,
        formatter_class=_formatter,
    )
    add_settings(parser)
    return parser


def add_settings_to_subcommands(parser: argparse.ArgumentParser) -> None:
    """Give nested subcommands (`config get`) the settings flags too, so that a flag may
    follow any word of the command."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in set(action.choices.values()):
                add_settings(child)
                add_settings_to_subcommands(child)


def flag_values(namespace: argparse.Namespace) -> dict[str, object]:
    """The settings given as flags, keyed by option key."""
    return {
        dest[len(OPTION_DEST) :]: value
        for dest, value in vars(namespace).items()
        if dest.startswith(OPTION_DEST)
    }
