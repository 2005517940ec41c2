"""Sub-agents: the `task` tool, which runs a child agent from an agent definition
(docs/agents.md).

The plugin declares `task` over the built-in definitions (`general`: the parent's tools,
task among them, so a sub-agent may delegate in turn; `explore`: read, grep, find and
ls), so every frontend knows how its calls are shown; where no child can start (a bare
`Runtime(...)`, a tool host) a call is an error result saying so. At `session_start`
(before the first request) of a runtime that can start children it offers `task` again
(RuntimeView.set_tools) with this plugin's limits (`max-depth` levels of sub-agents,
`max-turns` provider rounds of all the sub-agents of one prompt together), then over the
definitions it reads from the user's $SMITH_CONFIG_HOME/agents and a trusted project's
.smith/agents and .claude/agents too (plugins/agents/_definitions.py). A definition left
out (and why) or shadowed is a warning (`ui` notify, and smith's log). A child runtime
shares its parent's plugins and tools, so it reads nothing again.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from smith.config import Integer, Option
from smith.sdk import Plugin

from ._definitions import BUILTINS, Found
from ._task import task_tool

if TYPE_CHECKING:
    from smith.sdk import RuntimeView
    from smith.ui import Notify

log = logging.getLogger("smith.plugins.agents")

MAX_DEPTH = 3
MAX_TURNS = 100
OPTIONS = (
    Option(
        "max-depth",
        Integer(1, 16, "levels"),
        MAX_DEPTH,
        doc="How deep sub-agents may nest: the parent's own sub-agents are level 1; a task "
        "call that would start one deeper is an error result the model reads.",
    ),
    Option(
        "max-turns",
        Integer(1, 100_000, "turns"),
        MAX_TURNS,
        doc="Most provider rounds all the sub-agents of one prompt may take together "
        "(counted again from each prompt); past it the running one is stopped before its "
        "request and no other starts (an error result).",
    ),
)

# The sessions whose definitions are read (a child runtime's session_start reads none).
_READ: set[str] = set()


def _session_start(event: dict[str, Any], view: RuntimeView) -> list[Notify] | None:
    from smith.ui import Notify

    from ._definitions import definition_folders, discover

    context = view.context
    if context is None or context.children is None or view.session_id in _READ:
        return None  # no children can start here, or a child's runtime: set already
    _READ.add(view.session_id)
    settings = view.settings
    depth = int(str(settings.get("max-depth", MAX_DEPTH)))
    turns = int(str(settings.get("max-turns", MAX_TURNS)))
    # The built-ins first: reading the folders is bounded by the handler's deadline.
    view.set_tools([task_tool(Found(BUILTINS), max_depth=depth, max_turns=turns)])
    config = view.config
    if config is None:
        return None
    found = discover(definition_folders(config))
    view.set_tools([task_tool(found, max_depth=depth, max_turns=turns)])
    for warning in found.warnings:
        log.warning("%s", warning)
    return [Notify(w, "warning") for w in found.warnings] or None


def _session_end(event: dict[str, Any], view: RuntimeView) -> None:
    _READ.discard(view.session_id)


PLUGIN = Plugin(
    "agents",
    tools=(task_tool(Found(BUILTINS), max_depth=MAX_DEPTH, max_turns=MAX_TURNS),),
    options=OPTIONS,
    handlers={"session_start": _session_start, "session_end": _session_end},
    # Nothing to do where no child can start (a runtime built without an assembly): its
    # handlers start no thread there.
    wants=lambda kind, view: view.context is not None and view.context.children is not None,
)
