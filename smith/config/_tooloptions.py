"""smith's own options of the built-in tools and of what the model is told: two groups of
the product-defaults layer (smith.config._options assembles the schema).
"""

from __future__ import annotations

from smith.config._schema import Option
from smith.config._types import Integer, String, Strings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

MIB = 1024 * 1024


def tool_options(add: Callable[[Option], object]) -> None:
    """The built-in tools' settings (docs/tools.md)."""
    add(
        Option(
            "tools.timeout",
            Integer(1, 86_400, "seconds"),
            600,
            doc="Time limit of one tool call for tools without their own (bash has "
            "tools.bash.timeout).",
        )
    )
    add(
        Option(
            "tools.bash.timeout",
            Integer(1, 86_400, "seconds"),
            120,
            doc="Default time limit of one bash command.",
        )
    )
    add(
        Option(
            "tools.bash.env",
            Strings(),
            [],
            doc="Provider credential variables that bash commands inherit. By default "
            "none: every variable that holds a provider key (those the provider plugins "
            "declare, such as ANTHROPIC_API_KEY or GEMINI_API_KEY, and those named by "
            "providers.NAME.api-key-env) is removed from their environment. A variable "
            "passed through is still redacted from what the model and the session see.",
        )
    )
    add(
        Option(
            "tools.bash.outputs-max-bytes",
            Integer(MIB, 1024 * 1024 * MIB, "bytes"),
            256 * MIB,
            doc="Most bytes the folder of saved long command output ($SMITH_HOME/outputs) "
            "holds; past it the oldest files are removed first (files older than a week "
            "always are). One file holds at most 64 MiB of output, or this if smaller.",
        )
    )
    add(
        Option(
            "tools.read.max-lines",
            Integer(1, 1_000_000),
            2000,
            doc="Most lines one read returns before it asks for a continuation.",
        )
    )
    add(
        Option(
            "tools.read.max-bytes",
            Integer(1024, 64 * MIB, "bytes"),
            50 * 1024,
            doc="Most bytes one read returns before it asks for a continuation.",
        )
    )

    add(
        Option(
            "tools.ignore",
            Strings(),
            [],
            doc="More paths for find, grep and ls to leave out, as globs (gitignore style), "
            "on top of the project's .gitignore files.",
        )
    )
    add(
        Option(
            "tools.protected",
            Strings(),
            [".git", ".smith"],
            doc="Paths the write and edit tools refuse to change, checked after symbolic "
            "links are resolved: a name without a slash (.git) at any depth, a path with "
            "one from the project root.",
        )
    )
    add(
        Option(
            "tools.extra-roots",
            Strings(),
            [],
            doc="Directories outside the project that file tools may also read and write.",
        )
    )


def context_options(add: Callable[[Option], object]) -> None:
    """What the model is told besides the conversation (docs/context.md)."""
    add(
        Option(
            "prompt.system",
            String(),
            None,
            doc="A file whose text replaces smith's default system prompt (identity, tool "
            "guidance, rules, reporting); instruction files, prompt.append and the "
            "environment block still follow. Relative to the configuration file's directory "
            "(the project root for the project's file), else the working directory.",
        )
    )
    add(
        Option(
            "prompt.append",
            Strings(),
            [],
            doc="Added to the system prompt after the default (or prompt.system): each value "
            "is a file (a path starting with /, ~/, ./ or ../, or one word with a / or "
            "ending in .md or .txt) or else the text itself.",
        )
    )
    add(
        Option(
            "context.files",
            Strings(),
            ["AGENTS.md", "CLAUDE.md"],
            doc="Instruction files, by name: in smith's configuration directory and in each "
            "directory from the project root to the working directory (and below it once "
            "the agent works there), the first of these names that exists is loaded.",
        )
    )
    add(
        Option(
            "context.max-bytes",
            Integer(1, 16 * MIB, "bytes"),
            32 * 1024,
            doc="Largest instruction file loaded; a larger one is refused whole, with a "
            "warning, never cut.",
        )
    )
    add(
        Option(
            "images.max-bytes",
            Integer(1, 32 * MIB, "bytes"),
            5 * MIB,
            doc="Largest image attached to a message (a pasted or typed path, the "
            "clipboard, `eval --image`, RPC) or returned by the read tool; a larger one "
            "is refused with a diagnostic naming it. Each image is stored once per "
            "session.",
        )
    )
