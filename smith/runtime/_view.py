"""The runtime's two read-only faces.

`status(rt)` is `Runtime.status()`, the one view frontends read: they speak to a runtime
through operations (smith.runtime.ops), its events and this view, never its internals
(tests/test_architecture.py holds them to it; docs/architecture.md lists what they read).

`View` is what a plugin's handlers are given (smith.sdk.RuntimeView): a frozen snapshot of
the published generation and where the loop is, with the plugin's own settings, its way to
ask the user, and its way to keep an item of a setting it owns (Runtime.view)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smith.runtime._runtime import Runtime
    from smith.ui import Asked, Reply


def status(rt: Runtime) -> dict[str, Any]:
    """`rt.state()` (busy, session id, model, thinking, generation, tools, queue, cost);
    what reading the session had to leave out (`damage`, or None); context use (estimated
    tokens of what the next request sends, from the records with nothing decoded, the
    limit compaction uses, whether the messages are held decoded); live memory of the
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

    async def ask(self, question: Asked) -> Reply:
        return await self.asker(question)

    def remember(self, key: str, item: str) -> str:
        return self.keeper(key, item)


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
