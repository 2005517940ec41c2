"""The built-in tools, one module each: read, write, edit, bash, find, grep, ls."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.effects._tool import ToolContext, ToolSpec

NAMES = ("read", "write", "edit", "bash", "find", "grep", "ls")


def builtin() -> dict[str, ToolSpec]:
    import importlib

    return {name: importlib.import_module(f"smith.effects.tools.{name}").SPEC for name in NAMES}


def list_files(ctx: ToolContext, limit: int) -> tuple[list[str], bool]:
    """The files under `ctx`'s working directory as find sees them, at most `limit`, and
    whether there were more (smith.effects.list_files; see _rg.list_files)."""
    from smith.effects.tools._rg import list_files as listed

    return listed(ctx, limit)


__all__ = ["builtin", "list_files"]
