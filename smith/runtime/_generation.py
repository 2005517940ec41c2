"""Runtime generations and the plugin event boundary.

A generation is one coherent set of what the next provider request uses: model, thinking
level, system prompt, tools and sampling settings. Plugin handlers propose changes as
action batches at safe points; `plan` validates the batch of one event and either gives
the next generation or the diagnostics that reject it. Nothing is half-applied.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from smith.diagnostics import Diagnostic, DiagnosticKind, SmithError, Source
from smith.sdk import (
    ACTION_TYPES,
    Action,
    AddTool,
    AppendSystemPrompt,
    Enqueue,
    RemoveTool,
    SetModel,
    SetSetting,
    SetSystemPrompt,
    SetThinking,
)

if TYPE_CHECKING:
    from smith.effects import ToolSpec
    from smith.providers import Provider

BAD_ACTION = DiagnosticKind(
    "plugin.bad-action",
    what="plugin '{plugin}' returned {returned} from its {event} handler, which is not an action",
    why="handlers return a list of smith.sdk actions (SetModel, AddTool, Enqueue, ...) or None",
    fix="return only smith.sdk action objects; the plugin's whole batch was ignored",
)
CONFLICT = DiagnosticKind(
    "plugin.conflict",
    what="plugins {plugins} asked for different values of {slot} at {event}: {values}",
    why="one runtime generation holds one value per setting, and smith will not pick a "
    "winner silently",
    fix="configure one of these plugins not to set {slot}; nothing from this event's "
    "handlers was applied",
)
INVALID = DiagnosticKind(
    "plugin.invalid-action",
    what="plugin '{plugin}' asked to {action}, which cannot be done: {reason}",
    why="a generation is published only when every change in it is valid",
    fix="fix the plugin's action; nothing from this event's handlers was applied",
)


@dataclass(frozen=True)
class Generation:
    number: int
    model: str  # the model setting, e.g. "scripted:/path" or "demo"
    model_id: str  # what the provider is asked for
    provider: Provider
    thinking: str
    system_prompt: str
    tools: tuple[ToolSpec, ...]
    settings: Mapping[str, object] = field(default_factory=dict)

    def tool(self, name: str) -> ToolSpec | None:
        return next((t for t in self.tools if t.name == name), None)


@dataclass
class Plan:
    """The outcome of one event's action batch."""

    generation: Generation | None = None  # None: nothing changed (or rejected)
    enqueue: list[Enqueue] = field(default_factory=list)
    problems: list[Diagnostic] = field(default_factory=list)
    model_changed: bool = False
    thinking_changed: bool = False


Resolve = Callable[[str], "tuple[Provider, str]"]


def plan(
    current: Generation,
    event: str,
    batches: Sequence[tuple[str, object]],
    *,
    resolve: Resolve,
    thinking_levels: Sequence[str],
) -> Plan:
    """Validate every handler's batch for `event` together; `resolve(model)` gives
    (provider, model_id) for a model setting or raises SmithError."""
    actions, problems = _collect(event, batches)
    problems += _conflicts(event, actions)
    if problems:
        return Plan(problems=problems)
    draft = _Draft(current, resolve, thinking_levels)
    seen: set[str] = set()
    for plugin, action in actions:
        if action.slot() in seen:
            continue  # the same action from two plugins: once
        seen.add(action.slot())
        problem = draft.apply(action)
        if problem:
            problems.append(
                INVALID(
                    value=_describe(action),
                    source=_src(plugin),
                    plugin=plugin,
                    action=_describe(action),
                    reason=problem,
                )
            )
    if problems:
        return Plan(problems=problems)
    return draft.finish(current)


def _collect(
    event: str, batches: Sequence[tuple[str, object]]
) -> tuple[list[tuple[str, Action]], list[Diagnostic]]:
    actions: list[tuple[str, Action]] = []
    problems: list[Diagnostic] = []
    for plugin, batch in batches:
        if batch is None:
            continue
        items = list(batch) if isinstance(batch, list | tuple) else [batch]
        bad = next((a for a in items if not isinstance(a, ACTION_TYPES)), None)
        if bad is not None:
            shown = repr(bad)[:80]
            problems.append(
                BAD_ACTION(
                    value=shown, returned=shown, plugin=plugin, event=event, source=_src(plugin)
                )
            )
            continue
        actions += [(plugin, a) for a in items if isinstance(a, ACTION_TYPES)]
    return actions, problems


def _conflicts(event: str, actions: list[tuple[str, Action]]) -> list[Diagnostic]:
    by_slot: dict[str, list[tuple[str, Action]]] = {}
    for plugin, action in actions:
        by_slot.setdefault(action.slot(), []).append((plugin, action))
    return [
        CONFLICT(
            value=slot,
            source=_src(claims[0][0]),
            plugins=", ".join(sorted({p for p, _ in claims})),
            slot=slot.split(":")[0],
            event=event,
            values="; ".join(f"{p}: {_describe(a)}" for p, a in claims),
        )
        for slot, claims in by_slot.items()
        if len({repr(a) for _, a in claims}) > 1
    ]


class _Draft:
    """The next generation while a batch is applied to it."""

    def __init__(self, gen: Generation, resolve: Resolve, levels: Sequence[str]) -> None:
        self.gen = gen
        self.resolve = resolve
        self.levels = levels
        self.tools = {t.name: t for t in gen.tools}
        self.settings = dict(gen.settings)
        self.appended: list[str] = []
        self.plan = Plan()

    def apply(self, action: Action) -> str | None:
        """Apply one action; what is wrong with it, if anything."""
        if isinstance(action, SetModel):
            try:
                provider, model_id = self.resolve(action.model)
            except SmithError as exc:
                return exc.diagnostic.what
            self.gen = replace(self.gen, model=action.model, model_id=model_id, provider=provider)
            self.plan.model_changed = True
        elif isinstance(action, SetThinking):
            if action.level not in self.levels:
                return f"'{action.level}' is not one of {', '.join(self.levels)}"
            self.gen = replace(self.gen, thinking=action.level)
            self.plan.thinking_changed = True
        elif isinstance(action, SetSystemPrompt):
            self.gen = replace(self.gen, system_prompt=action.text)
        elif isinstance(action, AppendSystemPrompt):
            self.appended.append(action.text)
        elif isinstance(action, AddTool):
            self.tools[action.tool.name] = action.tool
        elif isinstance(action, RemoveTool):
            if self.tools.pop(action.name, None) is None:
                return f"no tool '{action.name}' is active"
        elif isinstance(action, SetSetting):
            self.settings[action.key] = action.value
        elif action.mode not in ("steer", "follow_up"):  # Enqueue
            return f"queue mode must be steer or follow_up, not '{action.mode}'"
        else:
            self.plan.enqueue.append(action)
        return None

    def finish(self, current: Generation) -> Plan:
        gen = self.gen
        system = "\n\n".join([gen.system_prompt, *self.appended])
        new = replace(
            gen,
            system_prompt=system if self.appended else gen.system_prompt,
            tools=tuple(self.tools.values()),
            settings=self.settings,
        )
        if new != current:
            self.plan.generation = replace(new, number=current.number + 1)
        return self.plan


def _src(plugin: str) -> Source:
    return Source("plugin", plugin)


def _describe(action: Action) -> str:
    if isinstance(action, AddTool):
        return f"add tool {action.tool.name}"
    if isinstance(action, RemoveTool):
        return f"remove tool {action.name}"
    return repr(action)
