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

__all__ = [
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
    "HostReview",
    "Image",
    "Limits",
    "Operation",
    "Part",
    "PluginState",
    "ProjectContext",
    "ProjectSessions",
    "Ran",
    "RedactingFilter",
    "Runtime",
    "SecretProxy",
    "SessionTree",
    "Shown",
    "Template",
    "ToolHost",
    "ToolRunner",
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
    "not_stopped",
    "ops",
    "parse_op",
    "registry",
    "resource_mentions",
    "runtime_options",
    "session_name",
    "session_path",
    "takes_images",
    "timed_out",
    "tool_context",
    "truncate",
    "unreviewed",
]


TYPE_CHECKING = False
# Exported on first use (PEP 562): importing the package imports none of its modules, so
# a command takes only what it uses (`smith tools run` runs no agent loop: no asyncio).
if TYPE_CHECKING:
    from smith.config import THINKING_LEVELS as THINKING_LEVELS
    from smith.runtime import ops as ops
    from smith.runtime._attach import mentionable as mentionable
    from smith.runtime._attach import resource_mentions as resource_mentions
    from smith.runtime._build import MISSING_SECRET as MISSING_SECRET
    from smith.runtime._build import REJECTED_SECRET as REJECTED_SECRET
    from smith.runtime._build import UNKNOWN_EFFECT as UNKNOWN_EFFECT
    from smith.runtime._build import Assembly as Assembly
    from smith.runtime._build import build as build
    from smith.runtime._build import session_name as session_name
    from smith.runtime._compaction import context_limit as context_limit
    from smith.runtime._context import ContextPolicy as ContextPolicy
    from smith.runtime._cost import CostMeter as CostMeter
    from smith.runtime._cost import format_cost as format_cost
    from smith.runtime._events import TYPES as EVENT_TYPES
    from smith.runtime._events import Event as Event
    from smith.runtime._generation import Generation as Generation
    from smith.runtime._hooks import unreviewed as unreviewed
    from smith.runtime._host import ToolHost as ToolHost
    from smith.runtime._images import SUFFIXES as IMAGE_SUFFIXES
    from smith.runtime._images import Image as Image
    from smith.runtime._images import chip as image_chip
    from smith.runtime._images import human_size as human_size
    from smith.runtime._images import load_image as load_image
    from smith.runtime._images import looks_like_image_path as looks_like_image_path
    from smith.runtime._images import takes_images as takes_images
    from smith.runtime._limits import Limits as Limits
    from smith.runtime._pluginstate import PluginState as PluginState
    from smith.runtime._project import ProjectContext as ProjectContext
    from smith.runtime._prompt import Part as Part
    from smith.runtime._prompt import context_table as context_table
    from smith.runtime._review import HostReview as HostReview
    from smith.runtime._runner import Ran as Ran
    from smith.runtime._runner import ToolRunner as ToolRunner
    from smith.runtime._runner import not_stopped as not_stopped
    from smith.runtime._runner import timed_out as timed_out
    from smith.runtime._runner import truncate as truncate
    from smith.runtime._runtime import Runtime as Runtime
    from smith.runtime._secrets import RedactingFilter as RedactingFilter
    from smith.runtime._secrets import SecretProxy as SecretProxy
    from smith.runtime._sessionface import ProjectSessions as ProjectSessions
    from smith.runtime._sessionface import Shown as Shown
    from smith.runtime._sessionface import Tree as SessionTree
    from smith.runtime._setup import DEMO_BANNER as DEMO_BANNER
    from smith.runtime._setup import entered_name as entered_name
    from smith.runtime._setup import model_setting as model_setting
    from smith.runtime._setup import named_session as named_session
    from smith.runtime._setup import registry as registry
    from smith.runtime._setup import runtime_options as runtime_options
    from smith.runtime._setup import session_path as session_path
    from smith.runtime._setup import tool_context as tool_context
    from smith.runtime._templates import Template as Template
    from smith.runtime.ops import OPERATIONS as OPERATIONS
    from smith.runtime.ops import Operation as Operation
    from smith.runtime.ops import parse_op as parse_op


_LAZY = {
    "mentionable": "smith.runtime._attach",
    "resource_mentions": "smith.runtime._attach",
    "Assembly": "smith.runtime._build",
    "MISSING_SECRET": "smith.runtime._build",
    "REJECTED_SECRET": "smith.runtime._build",
    "UNKNOWN_EFFECT": "smith.runtime._build",
    "build": "smith.runtime._build",
    "session_name": "smith.runtime._build",
    "context_limit": "smith.runtime._compaction",
    "ContextPolicy": "smith.runtime._context",
    "CostMeter": "smith.runtime._cost",
    "format_cost": "smith.runtime._cost",
    "EVENT_TYPES": "smith.runtime._events",
    "Event": "smith.runtime._events",
    "Generation": "smith.runtime._generation",
    "unreviewed": "smith.runtime._hooks",
    "ToolHost": "smith.runtime._host",
    "HostReview": "smith.runtime._review",
    "Ran": "smith.runtime._runner",
    "ToolRunner": "smith.runtime._runner",
    "not_stopped": "smith.runtime._runner",
    "timed_out": "smith.runtime._runner",
    "ProjectSessions": "smith.runtime._sessionface",
    "Shown": "smith.runtime._sessionface",
    "SessionTree": "smith.runtime._sessionface",
    "IMAGE_SUFFIXES": "smith.runtime._images",
    "Image": "smith.runtime._images",
    "human_size": "smith.runtime._images",
    "image_chip": "smith.runtime._images",
    "load_image": "smith.runtime._images",
    "looks_like_image_path": "smith.runtime._images",
    "takes_images": "smith.runtime._images",
    "ProjectContext": "smith.runtime._project",
    "Part": "smith.runtime._prompt",
    "context_table": "smith.runtime._prompt",
    "Limits": "smith.runtime._limits",
    "PluginState": "smith.runtime._pluginstate",
    "Runtime": "smith.runtime._runtime",
    "THINKING_LEVELS": "smith.config",
    "RedactingFilter": "smith.runtime._secrets",
    "SecretProxy": "smith.runtime._secrets",
    "DEMO_BANNER": "smith.runtime._setup",
    "entered_name": "smith.runtime._setup",
    "model_setting": "smith.runtime._setup",
    "named_session": "smith.runtime._setup",
    "registry": "smith.runtime._setup",
    "runtime_options": "smith.runtime._setup",
    "session_path": "smith.runtime._setup",
    "tool_context": "smith.runtime._setup",
    "truncate": "smith.runtime._runner",
    "Template": "smith.runtime._templates",
    "OPERATIONS": "smith.runtime.ops",
    "Operation": "smith.runtime.ops",
    "ops": "smith.runtime.ops",
    "parse_op": "smith.runtime.ops",
}

__getattr__ = lazy_exports(
    __name__,
    _LAZY,
    {
        "EVENT_TYPES": "TYPES",
        "IMAGE_SUFFIXES": "SUFFIXES",
        "image_chip": "chip",
        "SessionTree": "Tree",
    },
)
