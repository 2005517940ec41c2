"""The `smith` command line. `main` is the console-script entry point."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run smith with `argv` (default: the process arguments); return the exit status."""
    from smith.cli._main import run

    return run(sys.argv[1:] if argv is None else argv)


__all__ = ["main"]
