"""The runtime's two read-only faces.

`status(rt)` is `Runtime.status()`, the one view frontends read: they speak to a runtime
through operations (smith.runtime.ops), its events and this view, never its internals
(tests/test_architecture.py holds them to it; docs/architecture.md lists what they read).

`View` is what a plugin's handlers are given (smith.sdk.RuntimeView): a frozen snapshot of
the published generation and where the loop is, with the plugin's own settings, its way to
ask the user, its way to keep an item of a setting it owns, and its state in the session
(smith.runtime._pluginstate; Runtime.view)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from smith.runtime._mode import mode

if TYPE_CHECKING:
    from collections.abc import Sequence

    from smith.config import Config
    from smith.effects import ToolContext, ToolFacts, ToolSpec
    from smith.runtime._pluginstate import PluginState
    from smith.runtime._runtime import Runtime
    from smith.runtime._toolsets import ToolSets
    from smith.sdk import Plugin, RuntimeView
    from smith.ui import Asked, Detail, Reply, Shown

log = logging.getLogger("smith.runtime")


def status(rt: Runtime) -> dict[str, Any]:
    """`rt.state()` (busy, session id, model, thinking, generation, tools, queue, cost, mode);
    what reading the session had to leave out (`damage`, or None); context use (estimated
    tokens of what the next request sends, from the records with nothing decoded, and
    of the system prompt and tool definitions as `/context` counts them, the limit
    compaction uses, whether the messages are held decoded); live memory of the
    session's and turn's scopes (None unless memory accounting is on); the working
    directory tools and `@path`s resolve against (`cwd`); what images the current model
    takes (`images`: `accepted`, and `max_bytes`, images.max-bytes); and the names of the
    plugins running in it (`plugins`, in load order: the active built-ins, then the
    caller's own)."""
    from smith.runtime._compaction import context_limit
    from smith.runtime._images import takes_images

    return {
        **rt.state(),
        "damage": rt.session.damage,
        "context": {
            "tokens": rt.context_cache.tokens(rt.session),
            "system": system_tokens(rt),
            "limit": context_limit(rt),
            "decoded": rt.context_cache.built,  # its messages are held decoded
        },
        "memory": rt.memory.status(),
        "cwd": rt.context.cwd,
        "images": {
            "accepted": takes_images(rt.current.provider),
            "max_bytes": rt.limits.image_bytes,
        },
        "plugins": [p.name for p in rt.plugins],
    }


_SYSTEM: WeakKeyDictionary[Runtime, tuple[object, int]] = WeakKeyDictionary()


def system_tokens(rt: Runtime) -> int:
    """The estimated tokens of what every request sends besides the conversation: the
    system prompt and the tool definitions, counted as `/context` and `smith context`
    count them (once per generation)."""
    gen = rt.current
    cached = _SYSTEM.get(rt)
    if cached is not None and cached[0] is gen:
        return cached[1]
    from smith.runtime._project import context_parts, generation_parts

    system = generation_parts(rt.prompt_parts, gen.system_prompt)
    tokens = sum(p.tokens for p in context_parts(system, gen.tools, [], None, secrets=rt.secrets))
    _SYSTEM[rt] = (gen, tokens)
    return tokens


@dataclass(frozen=True)
class View:
    generation: int
    model: str
    thinking: str
    system_prompt: str
    tool_names: tuple[str, ...]
    turn: int
    settings: Mapping[str, object]
    session_id: str
    asker: Callable[[Asked], Awaitable[Reply]] = field(repr=False, compare=False)
    keeper: Keeper = field(repr=False, compare=False)
    # What the active tools would change (preview) and declare (facts): Tools, live.
    previewer: Callable[[str, Mapping[str, object]], Detail | None] = field(
        default=lambda name, arguments: None, repr=False, compare=False
    )
    # The session's plugin state (RuntimeView.state); None: a view with nowhere to keep it.
    states: PluginState | None = field(default=None, repr=False, compare=False)
    # The tools each plugin offers (RuntimeView.set_tools); None: a view that cannot set them.
    tool_sets: ToolSets | None = field(default=None, repr=False, compare=False)
    # The configuration and the tools' context the runtime was built with (RuntimeView).
    config: Config | None = field(default=None, repr=False, compare=False)
    context: ToolContext | None = field(default=None, repr=False, compare=False)
    mode: str = "normal"  # the runtime's mode (smith.runtime._mode): normal or plan
    surface: str = "library"  # where the runtime runs: tui, eval, rpc, mcp, library...
    # RuntimeView.post: a notice or status sent out now, from any thread (None: dropped).
    poster: Callable[[Shown], None] | None = field(default=None, repr=False, compare=False)
    subagent: str | None = None  # a sub-agent's runtime: what it does (Runtime.subagent)

    async def ask(self, question: Asked) -> Reply:
        return await self.asker(question)

    def preview(self, name: str, arguments: Mapping[str, object]) -> Detail | None:
        return self.previewer(name, arguments)

    def tool(self, name: str) -> ToolFacts | None:
        facts = getattr(self.previewer, "facts", None)
        return facts(name) if facts is not None else None

    def remember(self, key: str, item: str) -> str:
        return self.keeper(key, item)

    def post(self, value: Shown) -> None:
        if self.poster is not None:
            self.poster(value)

    @property
    def state(self) -> Mapping[str, object]:
        return self.states.of(self.keeper.plugin) if self.states is not None else {}

    def set_state(self, key: str, value: object) -> None:
        if self.states is None:
            raise OSError("this view has no session to keep plugin state in")
        self.states.set(self.keeper.plugin, key, value)

    def set_tools(self, tools: Sequence[ToolSpec]) -> None:
        if self.tool_sets is None:
            raise OSError("this view cannot change the plugin's tools")
        self.tool_sets.set(self.keeper.plugin, tools)


@dataclass(frozen=True)
class Keeper:
    """RuntimeView.remember for one plugin: only the settings it owns, and only where the
    assembly gave the runtime a user file to keep them in."""

    plugin: str
    owned: frozenset[str]
    remember: Callable[[str, str], str] | None

    def __call__(self, key: str, item: str) -> str:
        if key not in self.owned:
            raise LookupError(f"the plugin {self.plugin!r} does not own the setting {key!r}")
        if self.remember is None:
            raise OSError("this runtime has no user configuration file to keep settings in")
        return self.remember(key, item)


def previewer(rt: Runtime) -> Tools:
    """RuntimeView.preview and RuntimeView.tool for `rt`'s active tools."""
    return Tools(rt)


class Tools:
    """The active tools of a runtime as a plugin's view sees them: called as
    RuntimeView.preview, the change a call would make, from the tool's own code (its
    spec's `preview`) in a context of this runtime's, changing nothing; `facts(name)`,
    what the tool declares (RuntimeView.tool)."""

    __slots__ = ("rt",)

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    def facts(self, name: str) -> ToolFacts | None:
        spec = self.rt.current.tool(name)
        return spec.facts if spec is not None else None

    def __call__(self, name: str, arguments: Mapping[str, object]) -> Detail | None:
        return preview_detail(self.rt.current.tool(name), self.rt.context, name, arguments)


def preview_detail(
    spec: ToolSpec | None, context: ToolContext, name: str, arguments: Mapping[str, object]
) -> Detail | None:
    """What a call of `spec` would change, shown with its question (a diff), or why it
    would fail; None where the tool previews nothing (or the preview fails: it is an aid,
    the question is asked without it)."""
    from smith.effects import ToolError
    from smith.ui import Detail

    if spec is None or spec.preview is None:
        return None
    try:
        return Detail("diff", spec.preview(context.for_call(), dict(arguments)))
    except KeyError:  # arguments without a path
        return None
    except ToolError as exc:
        return Detail("text", f"this {name} call would fail: {exc.message}")
    except Exception:
        log.exception("no preview of a %s call", name)
        return None


def plugin_view(rt: Runtime, plugin: Plugin | None, gate: Any) -> RuntimeView:
    """`Runtime.view`: the frozen snapshot `plugin`'s handlers get, with its own
    settings; its `ask` asks on behalf of `plugin`, pausing `gate` meanwhile. A view
    without a gate (what Plugin.wants is asked with, at every event) is kept while what
    it shows holds: one per plugin, not one per event."""
    name = plugin.name if plugin is not None else ""
    key = (rt.generation, rt.turn, mode(rt)) if gate is None else None
    kept = rt.kept_views.get(name) if key is not None else None
    if kept is not None and kept[0] == key:
        return kept[1]
    from types import MappingProxyType

    from smith.runtime._intents import HandlerAsker, poster

    settings = MappingProxyType(rt.plugin_list.settings_for(plugin) if plugin is not None else {})
    owned = frozenset(plugin.settings) if plugin is not None else frozenset()
    view = View(rt.generation, rt.model, rt.thinking, rt.system_prompt, rt.tool_names,
                rt.turn, settings, rt.session.id, HandlerAsker(rt, name, gate),
                Keeper(name, owned, rt.remember), previewer(rt), rt.plugin_state,
                rt.lifecycle.tool_sets, rt.parts.plugins.config, rt.context, mode(rt),
                rt.surface, poster(rt, name), rt.subagent)  # fmt: skip
    if key is not None:
        rt.kept_views[name] = (key, view)
    return view
