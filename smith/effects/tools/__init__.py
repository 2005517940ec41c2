"""The built-in tools, one module each: read, write, edit, bash, find, grep, ls."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.effects._tool import ToolSpec

NAMES = ("read", "write", "edit", "bash", "find", "grep", "ls")


def builtin() -> dict[str, ToolSpec]:
    import importlib

    return {name: importlib.import_module(f"smith.effects.tools.{name}").SPEC for name in NAMES}
