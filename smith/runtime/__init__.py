"""The one agent runtime every mode drives: loop, events, queue, abort, compaction, cost,
secrets. See `Runtime` and docs/events.md.

    from smith.runtime import Runtime
    runtime = Runtime(session, model="scripted:script.json", tools=tools, context=ctx)
    runtime.prompt("hello")
    await runtime.wait_idle()

Every mode assembles its runtime the same way, from configuration (`build`, `Assembly`):

    assembly = build(config, cwd=cwd, surface="eval", warn=print_diagnostic)
    runtime = assembly.runtime(assembly.new_session("eval"))

What the model is told besides the conversation (docs/context.md) is listed part by part
(`Part`: name, source, text, tokens) by `Assembly.context_parts(session)` and a live
runtime's `Runtime.context_parts()`.
"""

from smith._lazy import lazy_exports
from smith.runtime import ops
from smith.runtime._build import (
    MISSING_SECRET,
    REJECTED_SECRET,
    UNKNOWN_EFFECT,
    Assembly,
    build,
    session_name,
)
from smith.runtime._context import ContextPolicy
from smith.runtime._cost import CostMeter, format_cost
from smith.runtime._events import TYPES as EVENT_TYPES
from smith.runtime._events import Event
from smith.runtime._generation import Generation
from smith.runtime._hooks import unreviewed
from smith.runtime._host import AUTHORISED, ToolHost
from smith.runtime._images import SUFFIXES as IMAGE_SUFFIXES
from smith.runtime._images import (
    Image,
    human_size,
    load_image,
    looks_like_image_path,
    takes_images,
)
from smith.runtime._images import chip as image_chip
from smith.runtime._project import ProjectContext
from smith.runtime._prompt import Part
from smith.runtime._runtime import THINKING_LEVELS, Limits, Runtime
from smith.runtime._secrets import RedactingFilter, SecretProxy
from smith.runtime._setup import (
    DEMO_BANNER,
    entered_name,
    model_setting,
    named_session,
    registry,
    runtime_options,
    session_path,
    tool_context,
)
from smith.runtime._steps import truncate
from smith.runtime.ops import OPERATIONS, Operation, parse_op

__all__ = [
    "AUTHORISED",
    "DEMO_BANNER",
    "EVENT_TYPES",
    "IMAGE_SUFFIXES",
    "MISSING_SECRET",
    "OPERATIONS",
    "REJECTED_SECRET",
    "THINKING_LEVELS",
    "UNKNOWN_EFFECT",
    "Assembly",
    "ContextPolicy",
    "CostMeter",
    "Event",
    "Generation",
    "Image",
    "Limits",
    "Operation",
    "Part",
    "ProjectContext",
    "RedactingFilter",
    "Runtime",
    "SecretProxy",
    "Template",
    "ToolHost",
    "build",
    "context_limit",
    "context_table",
    "entered_name",
    "format_cost",
    "human_size",
    "image_chip",
    "load_image",
    "looks_like_image_path",
    "mentionable",
    "model_setting",
    "named_session",
    "ops",
    "parse_op",
    "registry",
    "runtime_options",
    "session_name",
    "session_path",
    "takes_images",
    "tool_context",
    "truncate",
    "unreviewed",
]


TYPE_CHECKING = False
# Exported on first use (PEP 562): these modules are not imported with the package.
if TYPE_CHECKING:
    from smith.runtime._attach import mentionable as mentionable
    from smith.runtime._compaction import context_limit as context_limit
    from smith.runtime._prompt import context_table as context_table
    from smith.runtime._templates import Template as Template


_LAZY = {
    "mentionable": "smith.runtime._attach",
    "context_limit": "smith.runtime._compaction",
    "context_table": "smith.runtime._prompt",
    "Template": "smith.runtime._templates",
}

__getattr__ = lazy_exports(__name__, _LAZY)
