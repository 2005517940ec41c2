"""The one agent runtime every mode drives: loop, events, queue, abort, compaction, cost,
secrets. See `Runtime` and docs/events.md.

    from smith.runtime import Runtime
    runtime = Runtime(session, model="scripted:script.json", tools=tools, context=ctx)
    runtime.prompt("hello")
    await runtime.wait_idle()
"""

from smith.runtime._context import ContextPolicy
from smith.runtime._cost import CostMeter
from smith.runtime._events import TYPES as EVENT_TYPES
from smith.runtime._events import Event
from smith.runtime._generation import Generation
from smith.runtime._runtime import DEFAULT_SYSTEM_PROMPT, THINKING_LEVELS, Limits, Runtime
from smith.runtime._secrets import SecretProxy
from smith.runtime._steps import truncate

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "EVENT_TYPES",
    "THINKING_LEVELS",
    "ContextPolicy",
    "CostMeter",
    "Event",
    "Generation",
    "Limits",
    "Runtime",
    "SecretProxy",
    "truncate",
]
