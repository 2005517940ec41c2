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


def preview(name: str, ctx: ToolContext, args: dict[str, object]) -> str:
    """The unified diff a call of the built-in tool `name` would make, changing nothing:
    computed by the tool's own code (its spec's `preview`: edit.preview, write.preview),
    so what an approval shows is what the call does. ToolError (with the tool's words)
    for a call the tool would refuse; KeyError for a tool that has no preview."""
    spec = builtin().get(name)
    if spec is None or spec.preview is None:
        raise KeyError(name)
    return spec.preview(ctx, args)


__all__ = ["builtin", "list_files"]  # preview: smith.effects.preview_change
