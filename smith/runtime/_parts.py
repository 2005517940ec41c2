"""What a `Runtime` is built from: a few typed parts instead of twenty keywords.

    Parts       what a caller gives (`Parts.of(model=..., tools=..., context=..., **options)`:
                the keywords of `Runtime(...)`, `Options`), grouped as
      Model       what the first generation is made of: model, tools, prompt, thinking
      Policies    the runtime's bounds and rules: limits, context and queue policies,
                  surface, prompt templates, where a remembered setting goes
      PluginSide  the plugin list, the caller's own plugins, the assembly's tool sets,
                  the configuration plugins read
    Services    what the runtime works through over its session, opened from the parts:
                the session (or branch cursor), tool context, secrets, effect journal,
                file history, memory scopes, plugin state

The assembly (smith.runtime._build) builds the parts and `Runtime.of(session, parts)`;
a library caller keeps writing `Runtime(session, model=..., tools=..., context=...)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict, Unpack

from smith.runtime._context import ContextPolicy
from smith.runtime._limits import Limits

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from smith.config import Config
    from smith.diagnostics import Surface
    from smith.effects import EffectJournal, ToolContext, ToolSpec
    from smith.memory import RuntimeScopes
    from smith.providers import Provider
    from smith.runtime._lifecycle import Lifecycle
    from smith.runtime._pluginstate import PluginState
    from smith.runtime._project import ProjectContext
    from smith.runtime._secrets import SecretProxy
    from smith.runtime._templates import Template
    from smith.runtime._toolsets import ToolSets
    from smith.sdk import Plugin, PluginList
    from smith.session import Session
    from smith.vcs import FileHistory, HistorySettings


class Options(TypedDict, total=False):
    """The optional keywords of `Runtime(...)` and `Parts.of` (defaults: see the parts)."""

    system_prompt: str | None
    project: ProjectContext | None
    thinking: str
    settings: Mapping[str, object] | None
    plugins: Sequence[Plugin]
    plugin_list: PluginList | None
    limits: Limits | None
    context_policy: ContextPolicy | None
    secrets: SecretProxy | None
    queue_policy: tuple[str, str]
    resolve: Callable[[str], tuple[Provider, str]] | None
    history: HistorySettings | None
    surface: Surface
    config: Config | None
    templates: Mapping[str, Template] | None
    remember: Callable[[str, str], str] | None
    tool_sets: ToolSets | None
    lifecycle: Lifecycle | None


@dataclass(frozen=True)
class Model:
    """What the first generation is made of."""

    model: str | tuple[Provider, str]  # a setting (resolved), or a provider and model id
    tools: tuple[ToolSpec, ...]
    system_prompt: str | None = None  # replaces the default parts (docs/context.md)
    project: ProjectContext | None = None  # environment, instruction files; None: none
    thinking: str = "off"
    settings: Mapping[str, object] = field(default_factory=dict)  # temperature, max_tokens
    resolve: Callable[[str], tuple[Provider, str]] | None = None  # None: the registry's


@dataclass(frozen=True)
class Policies:
    """The runtime's bounds and rules, fixed for its life."""

    limits: Limits = field(default_factory=Limits)
    context_policy: ContextPolicy = field(default_factory=ContextPolicy)
    queue_policy: tuple[str, str] = ("one-at-a-time", "one-at-a-time")  # steer, follow-up
    surface: Surface = "library"  # who asks for operations: named in diagnostics
    # Prompt templates by name: input `/NAME args` is sent as NAME's expansion.
    templates: Mapping[str, Template] = field(default_factory=dict)
    # Keeps an item of a list setting in the user's configuration (RuntimeView.remember).
    remember: Callable[[str, str], str] | None = None


@dataclass(frozen=True)
class PluginSide:
    """The plugins: the resolved list's active ones (None: resolved from no
    configuration), then the caller's own; the tool sets (None: the runtime's own)."""

    plugin_list: PluginList | None = None
    plugins: tuple[Plugin, ...] = ()
    tool_sets: ToolSets | None = None
    # A child runtime's: its parent's plugin lifecycle, shared (the plugins are started
    # and stopped once, by the parent; a child's end is no session_end).
    lifecycle: Lifecycle | None = None
    # The resolved configuration plugins read (RuntimeView.config); None: built without.
    config: Config | None = None


@dataclass(frozen=True)
class Parts:
    """Everything a runtime is built from besides its session."""

    context: ToolContext  # confinement, limits, environment of the tools
    model: Model
    policies: Policies = field(default_factory=Policies)
    plugins: PluginSide = field(default_factory=PluginSide)
    secrets: SecretProxy | None = None  # None: a proxy of its own
    history: HistorySettings | None = None  # file history; None (or disabled): off

    @classmethod
    def of(
        cls,
        *,
        model: str | tuple[Provider, str],
        tools: Sequence[ToolSpec],
        context: ToolContext,
        **given: Unpack[Options],
    ) -> Parts:
        """The parts the keywords of `Runtime(...)` name (`Options`)."""
        unknown = sorted(set(given) - set(Options.__annotations__))
        if unknown:  # what the signature of old said for a misspelt keyword
            raise TypeError(f"Runtime() got unexpected keyword arguments: {unknown}")
        return cls(
            context,
            Model(
                model,
                tuple(tools),
                given.get("system_prompt"),
                given.get("project"),
                given.get("thinking", "off"),
                dict(given.get("settings") or {}),
                given.get("resolve"),
            ),
            Policies(
                given.get("limits") or Limits(),
                given.get("context_policy") or ContextPolicy(),
                given.get("queue_policy", ("one-at-a-time", "one-at-a-time")),
                given.get("surface", "library"),
                dict(given.get("templates") or {}),
                given.get("remember"),
            ),
            PluginSide(
                given.get("plugin_list"),
                tuple(given.get("plugins", ())),
                given.get("tool_sets"),
                given.get("lifecycle"),
                given.get("config"),
            ),
            given.get("secrets"),
            given.get("history"),
        )


@dataclass(frozen=True)
class Services:
    """What a runtime works through over its session (the one it was given: a session,
    or a branch cursor, smith.session.Branch)."""

    session: Session
    context: ToolContext
    secrets: SecretProxy
    journal: EffectJournal
    history: FileHistory | None  # snapshots around mutating batches; None when off
    memory: RuntimeScopes  # the runtime's session scope, each round a turn scope
    plugin_state: PluginState  # what plugins keep for this session (RuntimeView.state)

    @classmethod
    def open(cls, session: Session, parts: Parts, *, stopping: Callable[[], bool]) -> Services:
        """The services of a runtime over `session`; `stopping`: whether an abort is
        pending (a snapshot running a few seconds into one is abandoned)."""
        from smith.effects import EffectJournal
        from smith.memory import RuntimeScopes
        from smith.runtime._pluginstate import PluginState
        from smith.runtime._secrets import SecretProxy

        journal = EffectJournal(session)
        history: FileHistory | None = None
        if parts.history is not None and parts.history.enabled:
            from smith.vcs import FileHistory

            # watch: changes are tracked (inotify) so a batch that changed nothing costs
            # no scan of the project; close() releases the watches.
            history = FileHistory(parts.history, session, parts.context.root,
                                  journal=journal, watch=True, stopping=stopping)  # fmt: skip
        return cls(
            session,
            parts.context,
            parts.secrets if parts.secrets is not None else SecretProxy(),
            journal,
            history,
            RuntimeScopes(f"session {session.id}"),
            PluginState(session),
        )
