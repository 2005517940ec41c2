"""The built-in queue delivery policies (plugin contributions with these defaults).

`one-at-a-time` delivers the oldest queued item of a mode at each delivery point, so the
model sees each message separately; `all` delivers every queued item of the mode at once.
"""

from __future__ import annotations

from collections.abc import Sequence

from smith.sdk import Plugin, QueuedItem


def one_at_a_time(items: Sequence[QueuedItem]) -> Sequence[QueuedItem]:
    return items[:1]


def all_at_once(items: Sequence[QueuedItem]) -> Sequence[QueuedItem]:
    return items


PLUGIN = Plugin(
    "queue",
    queue_policies={"one-at-a-time": one_at_a_time, "all": all_at_once},
    # The settings that choose a policy for each mode (declared in smith.config).
    settings={"queue.steer": "one-at-a-time", "queue.follow-up": "one-at-a-time"},
)
