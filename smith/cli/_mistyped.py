"""Telling a mistyped command from a prompt.

Words that are not a command are the interactive app's prompt (`smith fix the tests`).
But `smith sesions list` is a slip of the fingers, not a question for the model: when the
first word is close to a command's name and the words after it read as that command's
arguments (a subcommand of it, or a word close to one, then flags it knows; or only flags
it knows), smith says which command was meant instead of opening the app. Anything else
stays a prompt, and `smith -- WORDS` always is one.
"""

from __future__ import annotations

import argparse
import difflib
import shlex

from smith.cli._commands import BY_NAME
from smith.diagnostics import DiagnosticKind, Source

CUTOFF = 0.75  # difflib's similarity ratio: "sesions"/"sessions" 0.93, "fix"/"diff" 0.57

MISTYPED_COMMAND = DiagnosticKind(
    "cli.mistyped-command",
    what="'{word}' is not a smith command, and `smith {line}` reads as a mistyped command "
    "rather than a prompt",
    why="'{word}' is close to the command `{command}`, and {follows}",
    fix="did you mean `smith {suggestion}`? To send the words to the app as a prompt "
    "instead, put `--` before them: `smith -- {line}`",
)


def check(words: list[str]) -> None:
    """Raise MISTYPED_COMMAND when `words` (the command line from its first word that is
    not a setting) read as a mistyped command; return when they are a prompt."""
    suggestion = mistyped(words)
    if suggestion is not None:
        line = shlex.join(words)
        raise MISTYPED_COMMAND.error(
            value=words[0],
            source=Source("argument", words[0]),
            word=words[0],
            line=line,
            command=f"smith {suggestion[0]}",
            follows="what follows it is what that command takes"
            if words[1:]
            else "a lone word is not taken for a prompt",
            suggestion=shlex.join(suggestion),
        )


def mistyped(words: list[str]) -> list[str] | None:
    """The command line `words` were probably meant to be, or None when they read as a
    prompt."""
    if not words:
        return None
    close = _close(words[0], list(BY_NAME))
    if close is None:
        return None
    command = BY_NAME[close]
    rest = words[1:]
    if not rest:
        return [command.name]  # a lone word like a command's name is never a prompt
    if command.module is None:
        return None
    fixed = _arguments(_parser_of(command.name), rest)
    return None if fixed is None else [command.name, *fixed]


def _close(word: str, names: list[str]) -> str | None:
    found = difflib.get_close_matches(word, names, n=1, cutoff=CUTOFF)
    return found[0] if found else None


def _parser_of(name: str) -> argparse.ArgumentParser:
    """The command's parser, as the CLI builds it to run the command."""
    import importlib

    from smith.cli import _parser

    command = BY_NAME[name]
    parser = _parser.command_parser(command)
    assert command.module is not None
    importlib.import_module(command.module).add_arguments(parser)
    _parser.add_settings_to_subcommands(parser)
    return parser


def _arguments(parser: argparse.ArgumentParser, words: list[str]) -> list[str] | None:
    """`words` (with a mistyped subcommand corrected) when they read as arguments
    `parser` takes: flags it knows (and their values), and where it has subcommands, one
    of them (or a word close to one) followed by its own arguments. A word that would be
    a free positional (a prompt, a file, an entry) reads as prose: None."""
    subcommands = next(
        (a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None
    )
    fixed: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word.startswith("-") and word != "-":
            action = parser._option_string_actions.get(word.split("=", 1)[0])
            if action is None:
                return None
            fixed.append(word)
            if "=" not in word and action.nargs != 0 and index + 1 < len(words):
                fixed.append(words[index + 1])  # its value
                index += 1
            index += 1
            continue
        if subcommands is None:
            return None
        choices = dict(subcommands.choices)
        name = word if word in choices else _close(word, list(choices))
        if name is None:
            return None
        after = _arguments(choices[name], words[index + 1 :])
        return None if after is None else [*fixed, name, *after]
    return fixed
