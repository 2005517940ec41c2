"""Reading a file for a tool, with every way it can fail said in the model's terms."""

from __future__ import annotations

import os
import stat

from smith.effects._tool import ToolError


def read_bytes(path: str, shown: str, *, missing: str) -> bytes:
    """The bytes of a regular file. `missing` says what to do when it does not exist.
    Pipes, sockets and devices are refused (reading one could block or never end)."""
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISDIR(mode):
            raise ToolError(f"{shown} is a directory; use ls to list it")
        if not stat.S_ISREG(mode):
            raise ToolError(f"{shown} is not a regular file (a pipe, socket or device)")
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise ToolError(f"{shown} does not exist; {missing}") from None
    except PermissionError:
        raise ToolError(f"{shown} cannot be read: permission denied") from None
    except OSError as exc:
        raise ToolError(f"{shown} cannot be read: {exc.strerror or exc}") from None
