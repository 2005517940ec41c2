"""Reading a file for a tool, with every way it can fail said in the model's terms."""

from __future__ import annotations

import os

from smith._readfile import FileRefused, Reach, read_file
from smith.effects._tool import ToolError


def read_bytes(path: str, shown: str, *, missing: str) -> bytes:
    """The bytes of a regular file (`path`: real, already confined by ToolContext.path).
    `missing` says what to do when it does not exist. Pipes, sockets and devices are
    refused (reading one could block or never end), also one swapped in since the check."""
    try:
        if os.path.isdir(path):
            raise ToolError(f"{shown} is a directory; use ls to list it")
        return read_file(path, limit=None, reach=Reach.anywhere())
    except FileRefused as exc:
        raise ToolError(f"{shown} cannot be read: {exc.reason}") from None
    except FileNotFoundError:
        raise ToolError(f"{shown} does not exist; {missing}") from None
    except PermissionError:
        raise ToolError(f"{shown} cannot be read: permission denied") from None
    except OSError as exc:
        raise ToolError(f"{shown} cannot be read: {exc.strerror or exc}") from None


def unified(before: str, after: str, shown: str, *, created: bool = False) -> str:
    """The unified diff of a file's text, as edit and write record it (details' `diff`)
    and as an approval shows it before either runs: a new file's lines are all added."""
    import difflib  # here: a start that runs no edit need not import it

    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile="/dev/null" if created else f"a/{shown}",
            tofile=f"b/{shown}",
        )
    )
