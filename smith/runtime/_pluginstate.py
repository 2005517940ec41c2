"""Plugins' per-session state (RuntimeView.state, RuntimeView.set_state).

A plugin keeps small JSON-like values under keys of its own; each write is a session
entry (kind `plugin_state`: `plugin`, `key`, `value`; a `value` of null removes the key),
so a resumed session and replay see what the plugin kept, and a branch keeps the state it
had where it was forked. Nothing is held anywhere else: two runtimes in one process, each
with its own session, share none of it.

The state of the selected branch is folded from its `plugin_state` entries once and then
brought up to date from the entries appended since (a walk over those only); selecting
another branch folds it again.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from smith.session import Entry, Session

KIND = "plugin_state"

# A value a plugin may keep: what JSON holds (finite numbers; objects with string keys).
Json = None | bool | int | float | str | list["Json"] | dict[str, "Json"]


def checked(value: object, where: str = "value") -> Json:
    """`value` if it is JSON-like (see Json), else TypeError naming the part that is not."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TypeError(f"plugin state {where} is {value!r}: only finite numbers are kept")
        return value
    if isinstance(value, list | tuple):
        return [checked(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        out: dict[str, Json] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"plugin state {where} has the key {k!r}: keys are strings")
            out[k] = checked(v, f"{where}[{k!r}]")
        return out
    raise TypeError(
        f"plugin state {where} is a {type(value).__name__}: keep None, booleans, numbers, "
        "strings, and lists and string-keyed dicts of them"
    )


# Plugins whose state is the whole session's, not one agent's: a sub-agent's runtime
# reads and keeps theirs in its parent's (TreeState), so what the user approved "for this
# session" in the parent holds in every sub-agent, and the other way round.
TREE_WIDE = frozenset({"approval"})


class PluginState:
    """The plugins' state in one session, on its selected branch."""

    __slots__ = ("_leaf", "_lock", "_state", "session")

    def __init__(self, session: Session) -> None:
        self.session = session
        self._lock = threading.Lock()
        self._leaf: str | None = None  # the leaf `_state` was folded up to
        self._state: dict[str, dict[str, Json]] = {}

    def of(self, plugin: str) -> Mapping[str, Json]:
        """`plugin`'s state (a read-only copy)."""
        with self._lock:
            self._update()
            return MappingProxyType(dict(self._state.get(plugin, {})))

    def set(self, plugin: str, key: str, value: object) -> None:
        """Keep `value` under `key` for `plugin` (None removes it): a durable entry."""
        if not plugin or not isinstance(key, str) or not key:
            raise ValueError("plugin state needs a plugin and a non-empty string key")
        kept = checked(value)
        with self._lock:
            self._update()
            self.session.append(KIND, {"plugin": plugin, "key": key, "value": kept},
                                durable=True)  # fmt: skip
            self._fold(plugin, key, kept)
            self._leaf = self.session.leaf

    def _update(self) -> None:
        leaf = self.session.leaf
        if leaf == self._leaf:
            return
        since = self.session.entries_between(self._leaf, leaf) if self._leaf else None
        entries: list[Entry]
        if since is None:  # first read, or another branch: fold it whole
            self._state = {}
            entries = self.session.branch(kind=KIND)
        else:
            entries = [e for e in since if e.kind == KIND]
        for entry in entries:
            content = entry.content
            if isinstance(content, dict) and isinstance(content.get("plugin"), str):
                self._fold(content["plugin"], str(content.get("key", "")), content.get("value"))
        self._leaf = leaf

    def _fold(self, plugin: str, key: str, value: object) -> None:
        state = self._state.setdefault(plugin, {})
        if value is None:
            state.pop(key, None)
        else:
            state[key] = value  # type: ignore[assignment]  # checked when it was written


class TreeState(PluginState):
    """A sub-agent's plugin state: its own branch's, but the TREE_WIDE plugins' are its
    parent runtime's (`parent`), read and kept there."""

    __slots__ = ("parent",)

    def __init__(self, session: Session, parent: PluginState) -> None:
        super().__init__(session)
        self.parent = parent

    def of(self, plugin: str) -> Mapping[str, Json]:
        return self.parent.of(plugin) if plugin in TREE_WIDE else super().of(plugin)

    def set(self, plugin: str, key: str, value: object) -> None:
        if plugin in TREE_WIDE:
            self.parent.set(plugin, key, value)
        else:
            super().set(plugin, key, value)
