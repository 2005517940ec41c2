"""The durable effect boundary and the built-in tools.

from smith.effects import EffectJournal, ToolContext, builtin_tools, run_tool
journal = EffectJournal(session)
outcome = run_tool(journal, builtin_tools()["read"], {"path": "README.md"}, ctx)
"""

from smith._lazy import lazy_exports
from smith._readfile import FileRefused, FileTooBig, Reach, read_file
from smith.effects._journal import Effect, EffectJournal, JournalError, lost_result, unfinished
from smith.effects._outputs import prune as prune_outputs
from smith.effects._run import Outcome, run_tool, validate
from smith.effects._tool import (
    Presentation,
    ToolCancelled,
    ToolContext,
    ToolEffect,
    ToolError,
    ToolFacts,
    ToolResult,
    ToolSpec,
)
from smith.effects.tools import builtin as builtin_tools

__all__ = [
    "Effect",
    "EffectJournal",
    "FileRefused",
    "FileTooBig",
    "JournalError",
    "Outcome",
    "Presentation",
    "Reach",
    "Sandbox",
    "SecretRoutes",
    "ToolCancelled",
    "ToolContext",
    "ToolEffect",
    "ToolError",
    "ToolFacts",
    "ToolResult",
    "ToolSpec",
    "bounded",
    "builtin_tools",
    "dies_with_smith",
    "list_files",
    "lost_result",
    "namespace_prefix",
    "preview_change",
    "process_env",
    "prune_outputs",
    "read_file",
    "run_tool",
    "sandbox_unavailable",
    "unfinished",
    "validate",
]


TYPE_CHECKING = False
# Exported on first use (PEP 562): these modules are not imported with the package.
if TYPE_CHECKING:
    from smith._spawn import dies_with_smith as dies_with_smith
    from smith._spawn import process_env as process_env
    from smith.effects._journal import bounded as bounded
    from smith.effects._procs import namespace_prefix as namespace_prefix
    from smith.effects._routes import SecretRoutes as SecretRoutes
    from smith.effects._sandbox import Sandbox as Sandbox
    from smith.effects._sandbox import unavailable as sandbox_unavailable
    from smith.effects.tools import list_files as list_files
    from smith.effects.tools import preview as preview_change


_LAZY = {
    "bounded": "smith.effects._journal",
    "Sandbox": "smith.effects._sandbox",
    "SecretRoutes": "smith.effects._routes",
    "sandbox_unavailable": "smith.effects._sandbox",
    "list_files": "smith.effects.tools",
    "preview_change": "smith.effects.tools",
    "process_env": "smith._spawn",
    "dies_with_smith": "smith._spawn",
    "namespace_prefix": "smith.effects._procs",
}

__getattr__ = lazy_exports(
    __name__, _LAZY, {"sandbox_unavailable": "unavailable", "preview_change": "preview"}
)
