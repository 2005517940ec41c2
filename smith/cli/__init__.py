"""The `smith` command line. `main` is the console-script entry point."""

from __future__ import annotations

import sys

from smith._lazy import lazy_exports


def main(argv: list[str] | None = None) -> int:
    """Run smith with `argv` (default: the process arguments); return the exit status."""
    from smith.cli._main import run

    return run(sys.argv[1:] if argv is None else argv)


__all__ = [
    "Context",
    "main",
    "plugin_for",
]


TYPE_CHECKING = False
# Exported on first use (PEP 562): these modules are not imported with the package.
if TYPE_CHECKING:
    from smith.cli._auth import plugin_for as plugin_for
    from smith.cli._main import Context as Context


_LAZY = {
    "Context": "smith.cli._main",
    "plugin_for": "smith.cli._auth",
}

__getattr__ = lazy_exports(__name__, _LAZY)
