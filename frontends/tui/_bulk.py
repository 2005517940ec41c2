"""A long history shown at once (the app's first frame over a resumed session, a switch
to another branch): read from the session's records in bulk, with no collector pass
walking the objects while they are made.

At 100,000 entries the first frame was about 300 ms, mostly per-entry Python: an Entry
made for every entry of the branch, its kind, id and pairing each read through a
property, a block, a height and a slot appended one at a time, and some 300 collector
passes over the growing heap. Here the shown kinds are found from the records
(Arena.of_kind), only their entries are made, ids and pairings are read in one pass
each, and the transcript adds its blocks in bulk (Transcript.add_entries).
"""

from __future__ import annotations

import array
import contextlib
import gc
from itertools import repeat

from smith.session import Entry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from smith.session import Session


class Shown:
    """The entries of some kinds on a branch, in branch order, with their ids and
    pairings (a tool result's call id, else None)."""

    __slots__ = ("entries", "ids", "pairs")

    def __init__(self, entries: list[Entry], ids: list[str], pairs: list[str | None]) -> None:
        self.entries = entries
        self.ids = ids
        self.pairs = pairs


def branch_shown(session: Session, leaf: str, kinds: Iterable[str]) -> Shown:
    """The entries of `kinds` on the branch from the root to `leaf`."""
    records = session.records
    path = session.branch_indices(leaf)
    # Indices grow along a path (a parent is always earlier): sorted is branch order.
    found = sorted([i for kind in kinds for i in records.of_kind(kind, path).tolist()])
    pairs = records.pairs(memoryview(array.array("q", found)))
    entries = list(map(Entry, repeat(records), found))  # as session.at(i) makes them
    return Shown(entries, list(map(records.id, found)), pairs)


@contextlib.contextmanager
def collector_paused(when: bool) -> Iterator[None]:
    """No collector pass while the body makes a long history's objects (hundreds of them
    would walk the growing heap); what it made is then frozen out of later full passes,
    as objects that live as long as the app. Nothing changes unless `when`, or while
    the collector is off already."""
    if not (when and gc.isenabled()):
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
