"""What a plugin's handlers are given (smith.sdk.RuntimeView): a frozen snapshot of the
published generation and where the loop is, with the plugin's own settings, its way to
ask the user, and its way to keep an item of a setting it owns (Runtime.view)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from smith.ui import Asked, Reply


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
