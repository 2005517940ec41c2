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


_PREVIEWED = ("edit", "write")  # the built-ins whose change can be shown before it is made


def preview(name: str, ctx: ToolContext, args: dict[str, object]) -> str:
    """The unified diff a call of a built-in file tool (_PREVIEWED) would make, changing
    nothing: computed by the tool's own code (edit.preview, write.preview), so what an
    approval shows is what the call does. ToolError (with the tool's words) for a call
    the tool would refuse; KeyError for a tool that has no preview."""
    import importlib

    if name not in _PREVIEWED:
        raise KeyError(name)
    tool = importlib.import_module(f"smith.effects.tools.{name}")
    diff: str = tool.preview(ctx, args)
    return diff


__all__ = ["builtin", "list_files"]  # preview: smith.effects.preview_change
