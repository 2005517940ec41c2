"""Queued user input: steer (delivered at the next safe point) and follow-up (delivered
when the agent would otherwise stop).

Items keep their order and id; a delivery policy (a plugin contribution, see
smith.sdk.QueuePolicy) picks which items of a mode are delivered at one point.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from smith.sdk import QueuedItem, QueuePolicy
from smith.session import new_id

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.runtime._secrets import SecretProxy

MODES = ("steer", "follow_up")


class InputQueue:
    def __init__(
        self,
        policies: Mapping[str, QueuePolicy],
        *,
        steer: str = "one-at-a-time",
        follow_up: str = "one-at-a-time",
        on_change: Callable[[list[QueuedItem]], None] = lambda items: None,
    ) -> None:
        for mode, name in (("steer", steer), ("follow_up", follow_up)):
            if name not in policies:
                known = ", ".join(sorted(policies))
                raise ValueError(f"no queue policy {name!r} for {mode} (known: {known})")
        self._policies = dict(policies)
        self.policy = {"steer": steer, "follow_up": follow_up}
        self._items: list[QueuedItem] = []
        self._on_change = on_change

    def __len__(self) -> int:
        return len(self._items)

    def items(self) -> list[QueuedItem]:
        return list(self._items)

    def has(self, mode: str) -> bool:
        return any(item.mode == mode for item in self._items)

    def add(self, mode: str, text: str, images: tuple[object, ...] = ()) -> QueuedItem:
        if mode not in MODES:
            raise ValueError(f"queue mode must be one of {MODES}, not {mode!r}")
        item = QueuedItem(f"q-{new_id(4)}", mode, text, tuple(images))
        self._items.append(item)
        self._on_change(self.items())
        return item

    def remove(self, id: str) -> bool:
        kept = [item for item in self._items if item.id != id]
        if len(kept) == len(self._items):
            return False
        self._items = kept
        self._on_change(self.items())
        return True

    def clear(self) -> int:
        count = len(self._items)
        self._items = []
        if count:
            self._on_change([])
        return count

    def take_all(self) -> list[QueuedItem]:
        """Remove and return everything queued, in order."""
        items = self._items
        self._items = []
        if items:
            self._on_change([])
        return items

    def take(self, mode: str) -> list[QueuedItem]:
        """Remove and return what the mode's policy delivers now (may be nothing), in
        the order the policy gives."""
        waiting = [item for item in self._items if item.mode == mode]
        if not waiting:
            return []
        chosen: Sequence[QueuedItem] = self._policies[self.policy[mode]](waiting)
        # The queued items, in the policy's order; each once, and only what was waiting
        # (a policy that names anything else cannot deliver it, nor lose what it left
        # queued). No mapping is built: a queue is short, and this runs every turn.
        left = {item.id for item in waiting}
        taken: list[QueuedItem] = []
        for item in chosen:
            if item.id in left:
                left.remove(item.id)
                for queued in waiting:
                    if queued.id == item.id:
                        taken.append(queued)
                        break
        self._items = [item for item in self._items if item.mode != mode or item.id in left]
        self._on_change(self.items())
        return taken


def listed(items: Sequence[QueuedItem], secrets: SecretProxy) -> list[dict[str, object]]:
    """Queued input as status and events show it: id, mode, the text with secrets
    masked, and each image by name and size (`shot.png 34 KB`)."""
    shown_items: list[dict[str, object]] = []
    for i in items:
        shown: dict[str, object] = {"id": i.id, "mode": i.mode, "text": str(secrets.redact(i.text))}
        if i.images:
            shown["images"] = [image.label() for image in i.images]
        shown_items.append(shown)
    return shown_items
