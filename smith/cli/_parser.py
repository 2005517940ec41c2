"""Command-line parsing in two stages, like git.

Stage one reads the settings flags (generated from the configuration schema), `--help`,
`--version`, and the command name; everything after the command name is left for stage
two, the command's own parser, which accepts the same settings flags again so that
`smith --model m eval` and `smith eval --model m` mean the same. Only the chosen
command's parser is built.
"""

from __future__ import annotations

import argparse
import textwrap

from smith.cli._commands import COMMANDS, Command
from smith.config import SCHEMA
from smith.diagnostics import DiagnosticKind, Source

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

USAGE = DiagnosticKind(
    "cli.usage",
    what="the command line is not valid: {message}",
    why="smith could not make sense of the command line",
    fix="see `{help}` for what `{prog}` accepts",
)

# Words a command does not take: said so, with how to send them as a prompt.
NOT_A_PROMPT = DiagnosticKind(
    "cli.command-not-prompt",
    what="the command line is not valid: {message}",
    why="`{prog}` is a smith command, so the words after it are its arguments, not a prompt",
    fix="see `{prog} --help` for what it takes; to send the words to the app as a prompt, "
    "put `--` before them: `smith -- {line}`",
)

OPTION_DEST = "setting:"
# argparse's words for a command line with words the command does not take
PROSE = ("unrecognized arguments:", "argument ACTION: invalid choice:")


SETTINGS = "settings"
# The settings a command's help shows; `--help-all` shows every one.
COMMON = ("model", "thinking", "approval", "sandbox.mode", "project", "debug")


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are diagnostics instead of a bare exit, and whose
    help leads with the command's own usage and options: of the settings flags (every
    command takes all of them) it shows only the COMMON ones unless `show_all`."""

    show_all = False
    # The command line from the command's name on, for a command's own parser: words it
    # cannot take may have been meant as a prompt (`smith undo the last change`).
    words: list[str] | None = None
    describe_common = False  # smith's own help; a command's only names the settings

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _formatter)  # nested commands' parsers too
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        if self.words is not None and message.startswith(PROSE):
            import shlex

            line = shlex.join(self.words)
            raise NOT_A_PROMPT.error(
                source=Source("argument", self.prog), message=message, prog=self.prog, line=line
            )
        raise USAGE.error(
            source=Source("argument", self.prog),
            message=message,
            prog=self.prog,
            help=f"{self.prog} --help",
        )

    def _usage(self, formatter: argparse.HelpFormatter) -> None:
        """The usage line of the command's own arguments; the settings are `[settings]`."""
        if self.usage is not None:
            formatter.add_usage(self.usage, [], [])
            return
        own = [
            a for a in self._actions if not a.dest.startswith(OPTION_DEST) and a.dest != "help_all"
        ]
        line = argparse.HelpFormatter(self.prog, width=10_000)
        line.add_usage(None, own, self._mutually_exclusive_groups, prefix="")
        formatter.add_usage(line.format_help().strip() + " [settings]", [], [])

    def format_usage(self) -> str:
        formatter = self._get_formatter()
        self._usage(formatter)
        return formatter.format_help()

    def format_help(self) -> str:
        formatter = self._get_formatter()
        self._usage(formatter)
        formatter.add_text(self.description)
        for group in self._action_groups:
            actions, description = group._group_actions, group.description
            if group.title == SETTINGS and not self.show_all:
                actions, description = self._settings_in_short(actions, description or "")
            if not actions and not description:
                continue
            formatter.start_section(group.title)
            formatter.add_text(description)
            formatter.add_arguments(actions)
            formatter.end_section()
        formatter.add_text(self.epilog)
        return formatter.format_help()

    def _settings_in_short(
        self, actions: list[argparse.Action], description: str
    ) -> tuple[list[argparse.Action], str]:
        """The settings group of the short help: smith's own help describes the COMMON
        settings; a command's names them in a line, after its own options."""
        common = sorted(
            (a for a in actions if a.dest[len(OPTION_DEST) :] in COMMON),
            key=lambda a: COMMON.index(a.dest[len(OPTION_DEST) :]),
        )
        everything = f"`{self.prog} --help-all` describes all {len(actions)}"
        if self.describe_common:
            return common, f"{description}\nThe most used are below; {everything}."
        flags = ", ".join(a.option_strings[0] for a in common)
        return [], textwrap.fill(
            f"Every setting of smith works here too ({flags}, ...); {everything}.", WIDTH - 2
        )


class _HelpAll(argparse.Action):
    """`--help-all`: the help with every setting, then exit (as `--help` does)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show this help with every setting, and exit")  # fmt: skip

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        if isinstance(parser, Parser):
            parser.show_all = True
        parser.print_help()
        parser.exit()


WIDTH = 100  # of help text, whatever the terminal's width (it stays the same in tests)


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32, width=WIDTH)


def add_settings(parser: argparse.ArgumentParser, *, help_all: bool = True) -> None:
    """One flag per configuration option, generated from its declaration, and
    `--help-all` (unless `help_all` is False) to show them all.

    Every flag defaults to "absent", so the two stages' values can be merged.
    """
    if help_all:
        parser.add_argument("--help-all", action=_HelpAll, dest="help_all")
    group = parser.add_argument_group(
        SETTINGS,
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
        usage="smith [settings] [COMMAND [ARGS...] | [--] PROMPT]",
        description="smith is a coding agent: a model reads, searches, edits and runs code in "
        "your project,\nwith every effect recorded and every file change undoable.\n\n"
        "Run `smith` alone, or `smith PROMPT`, for the interactive app (`smith -- PROMPT`\n"
        "when the prompt's first word could be taken for a command).\n\n"
        "commands:\n" + "\n".join(lines),
        epilog="`smith COMMAND --help` describes one command; `smith --help-all` shows every "
        "setting.\nExit status: 0 success, 1 failure, 2 bad usage, bad configuration, or a "
        "capability\nthat is not built yet.",
        formatter_class=_formatter,
        add_help=False,
    )
    parser.describe_common = True
    parser.add_argument("-h", "--help", action="store_true", help="show this help and exit")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument(
        "--help-all", action="store_true", help="show this help with every setting, and exit"
    )
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
    add_settings(parser, help_all=False)
    parser.add_argument("command", nargs="?", help=argparse.SUPPRESS)
    parser.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return parser


def command_parser(command: Command) -> Parser:
    note = "" if command.built else f"\n\nNot built yet: this version lacks {command.capability}."
    parser = Parser(
        prog=f"smith {command.name}",
        description=textwrap.fill(command.description, WIDTH) + note,
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
