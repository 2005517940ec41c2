"""A long history shown at once (frontends/tui/_bulk.py, Transcript.add_entries in bulk,
Heights.extend): the same blocks, in the same order, as entry-by-entry adding made."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from smith.frontends.tui._app import BIG, SHOWN_KINDS
from smith.frontends.tui._bulk import collector_paused
from smith.frontends.tui._transcript import ESTIMATE, Heights, Transcript
from smith.runtime._sessionface import entries
from smith.session import Session
from tests.runtime_kit import Fake
from tests.test_tui import SIZE, _app, _project


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.integers(0, 80), st.integers(0, 9), st.integers(0, 500)),
        max_size=6,
    )
)
def test_heights_extend_is_what_as_many_appends_make(steps: list[tuple[int, ...]]) -> None:
    one, bulk = Heights(), Heights()
    for value, count, new, at in steps:
        for _ in range(count):
            one.append(value)
        bulk.extend(value, count)
        if len(one):  # and a change between extensions
            one.set(at % len(one), new)
            bulk.set(at % len(bulk), new)
        assert bulk._values == one._values and bulk._tree == one._tree
        assert [bulk.before(i) for i in range(len(bulk) + 1)] == [
            one.before(i) for i in range(len(one) + 1)
        ]


class _Entry:
    def __init__(self, id: str) -> None:
        self.id = id


def test_add_entries_skips_what_is_shown_and_repeats_as_before() -> None:
    from textual.app import App, ComposeResult

    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield Transcript()

    def check(t: Transcript) -> None:
        t.add("notice-1", lambda: None)
        t.add_entries([_Entry("a"), _Entry("b")])
        assert t.block_keys() == ["notice-1", "a", "b"]
        assert t.index == {"notice-1": 0, "a": 1, "b": 2}
        # An entry already shown, and one repeated in the same call: the first is kept.
        t.add_entries([_Entry("b"), _Entry("c"), _Entry("c"), _Entry("d")])
        assert t.block_keys() == ["notice-1", "a", "b", "c", "d"]
        assert t.index == {"notice-1": 0, "a": 1, "b": 2, "c": 3, "d": 4}
        assert t.slots == [0, 1, 2, 3, 4] and len(t.heights) == 5
        assert t.heights.total() == 5 * ESTIMATE
        t.add_entries([_Entry("e")], ["e"])  # ids given
        assert t.block_keys()[-1] == "e" and t.slots[-1] == 5 and t.index["e"] == 5
        assert all(t.blocks[t.index[k]].key == k for k in t.index)
        assert t.blocks[t.index["c"]].entry.id == "c"

    async def main() -> None:
        app = One()
        async with app.run_test(size=SIZE):
            check(app.query_one(Transcript))

    asyncio.run(asyncio.wait_for(main(), 60))


def _branched() -> Session:
    """Messages, tool results (paired), other kinds, a side branch and a compaction."""
    entries: list[dict[str, Any]] = []

    def add(eid: str, parent: str | None, kind: str, pair: str | None = None) -> None:
        content = {"role": "user", "content": [], "text": eid}
        entry: dict[str, Any] = {"id": eid, "parent": parent, "ts": len(entries), "kind": kind}
        entry["content"] = content
        if pair:
            entry["pair"] = pair
        entries.append(entry)

    parent = None
    for i in range(BIG + 500):
        kind = ("message", "message", "label", "question", "compaction", "message")[i % 6]
        pair = f"call-{i}" if i % 7 == 0 and kind == "message" else None
        add(f"m{i}", parent, kind, pair)
        if i % 1000 == 3:
            add(f"side{i}", f"m{i - 1}", "message")  # a branch not taken
        parent = f"m{i}"
    return Session.from_entries(entries, info={"id": "b", "name": "b", "cwd": "/"})


def test_entries_are_the_branch_filtered_by_kind() -> None:
    session = _branched()
    leaf = session.leaf
    assert leaf is not None
    expected = [e for e in session.branch(leaf) if e.kind in SHOWN_KINDS]
    shown = entries(session, None, leaf, SHOWN_KINDS)
    assert shown.whole and shown.leaf == leaf
    assert [e.id for e in shown.entries] == [e.id for e in expected] == shown.ids
    assert [e.index for e in shown.entries] == [e.index for e in expected]
    assert shown.pairs == [e.pair for e in expected] and any(shown.pairs)
    older = session.branch(leaf)[100].id  # another leaf: a shorter branch
    assert entries(session, None, older, SHOWN_KINDS).ids == [
        e.id for e in session.branch(older) if e.kind in SHOWN_KINDS
    ]
    # Since an entry on the branch: only what follows it; since one off it: the whole.
    since = session.branch(leaf)[-50].id
    later = entries(session, since, leaf, SHOWN_KINDS)
    assert not later.whole
    assert later.ids == [e.id for e in session.branch(leaf)[-49:] if e.kind in SHOWN_KINDS]
    assert entries(session, "side1003", leaf, SHOWN_KINDS).whole


def test_collector_paused_pauses_and_freezes_only_when_asked() -> None:
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    with collector_paused(False):
        assert gc.isenabled()
    assert gc.get_freeze_count() == frozen
    try:
        with collector_paused(True):
            assert not gc.isenabled()
            made = [[i] for i in range(100)]
        assert gc.isenabled() and gc.get_freeze_count() >= frozen + len(made)
        gc.disable()  # off already: left as it is
        with collector_paused(True):
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()


def test_a_long_branched_session_opens_with_its_shown_branch(tmp_path: Path) -> None:
    """Through the app: the transcript holds the selected branch's shown entries, in order,
    the newest on screen."""
    _project(tmp_path)
    session = _branched()
    leaf = session.leaf
    assert leaf is not None and len(session) > BIG
    expected = [e.id for e in session.branch(leaf) if e.kind in SHOWN_KINDS]
    seen: dict[str, Any] = {}

    async def main() -> None:
        app = _app(tmp_path, (Fake(), "m"), session=session)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            t = app.query_one(Transcript)
            seen["keys"] = [k for k in t.block_keys() if k in set(expected)]
            seen["index"] = all(t.blocks[t.index[k]].key == k for k in expected)
            seen["bottom"] = t.scroll_y == t.max_scroll_y
            seen["gc"] = gc.isenabled()

    try:
        asyncio.run(asyncio.wait_for(main(), 60))
    finally:
        gc.unfreeze()
    assert seen == {"keys": expected, "index": True, "bottom": True, "gc": True}
