"""Durable branching sessions: append, branch, select, fork, recovery, locks, bounds."""

from __future__ import annotations

import io
import os
import tracemalloc
from pathlib import Path

import pytest

from smith._fast import _frames
from smith._fast._arena import Arena
from smith.diagnostics import SmithError
from smith.session import Session
from smith.session._codec import ContentError, decode_content
from smith.session._repair import repair


@pytest.fixture
def path(tmp_path: Path) -> str:
    return str(tmp_path / "s.smith")


def _linear(path: str, n: int, size: int = 40) -> Session:
    s = Session.create(path, name="t", cwd="/p", id="sid")
    for i in range(n):
        s.append("message", {"role": "user", "text": "x" * size, "n": i}, id=f"e{i}", ts=1000 + i)
    return s


def test_entries_round_trip_through_the_file(path: str) -> None:
    s = Session.create(path, name="demo", cwd="/repo", id="s1")
    a = s.append("message", {"role": "user", "text": "hi", "raw": b"\x00\xff"}, ts=5)
    b = s.append("tool_activity", {"name": "bash", "args": {"command": "ls"}}, pair="call-1")
    c = s.append("x-future-kind", {"anything": [1, 2.5, None, True]})
    s.close()
    loaded = Session.load(path)
    assert (loaded.id, loaded.name, loaded.info["cwd"]) == ("s1", "demo", "/repo")
    got = [(e.id, e.parent, e.kind, e.pair, e.content) for e in loaded.entries()]
    assert got == [
        (a.id, None, "message", None, {"role": "user", "text": "hi", "raw": b"\x00\xff"}),
        (b.id, a.id, "tool_activity", "call-1", {"name": "bash", "args": {"command": "ls"}}),
        (c.id, b.id, "x-future-kind", None, {"anything": [1, 2.5, None, True]}),
    ]
    assert loaded.entry(a.id).ts == 5
    assert loaded.leaf == c.id


def test_branching_select_and_reload(path: str) -> None:
    s = _linear(path, 3)
    s.append("message", {"text": "other way"}, parent="e0", id="alt")
    assert [e.id for e in s.branch()] == ["e0", "alt"]
    s.select("e2")
    assert s.leaf == "e2" and [e.id for e in s.branch()] == ["e0", "e1", "e2"]
    s.close()
    again = Session.open(path)
    assert again.leaf == "e2"
    assert again.children() == {None: ["e0"], "e0": ["e1", "alt"], "e1": ["e2"]}
    again.append("message", {"text": "continue"}, id="e3")  # under the selected leaf
    again.close()
    final = Session.load(path)
    assert final.leaf == "e3" and [e.id for e in final.branch()] == ["e0", "e1", "e2", "e3"]
    assert [e.id for e in final.branch("alt")] == ["e0", "alt"]


def test_unknown_entries_and_parents_are_refused(path: str) -> None:
    s = _linear(path, 1)
    with pytest.raises(SmithError) as info:
        s.append("message", {}, parent="nope")
    assert info.value.diagnostic.code == "session.unknown-entry"
    with pytest.raises(SmithError):
        s.select("nope")
    assert len(Session.load(path)) == 1  # nothing was written


def test_large_content_is_compressed_and_the_file_is_deterministic(tmp_path: Path) -> None:
    paths = [str(tmp_path / f"{k}.smith") for k in "ab"]
    for p in paths:
        s = Session.create(p, name="d", cwd="/", id="same", created=1)
        s.append("message", {"text": "compressible " * 500}, id="big", ts=1)
        s.append("message", {"text": "tiny"}, id="small", ts=2)
        s.close()
    a, b = (Path(p).read_bytes() for p in paths)
    assert a == b
    loaded = Session.load(paths[0])
    arena = loaded._arena
    assert arena.compressed(0) and not arena.compressed(1)
    assert len(a) < 2000  # 6.5 KB of text stored compressed
    assert loaded.entry("big").content == {"text": "compressible " * 500}


def test_decompression_is_bounded() -> None:
    import zstandard

    bomb = zstandard.ZstdCompressor().compress(b"\x00" * 1_000_000)
    with pytest.raises(ContentError, match="declares 1000000 bytes"):
        decode_content(bomb, True, max_size=1000)


def test_each_append_is_one_write(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    s = _linear(path, 1)
    calls: list[int] = []
    real = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: calls.append(fd) or real(fd, data))
    syncs: list[int] = []
    real_sync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: syncs.append(fd) or real_sync(fd))
    s.append("message", {"text": "a" * 5000})
    s.append("message", {"text": "b"}, durable=True)
    assert len(calls) == 2 and len(syncs) == 1


def test_a_torn_tail_is_cut_when_reopened_for_writing(path: str) -> None:
    _linear(path, 3).close()
    frame = _frames.encode_frame(2, 0, b"\x86" + b"z" * 40)
    with open(path, "ab") as f:
        f.write(frame[:25])
    loaded = Session.load(path)
    assert len(loaded) == 3 and loaded.recovery["truncated_bytes"] == 25
    s = Session.open(path)
    s.append("message", {"text": "after"}, id="e3")
    s.close()
    again = Session.load(path)
    assert [e.id for e in again.entries()] == ["e0", "e1", "e2", "e3"]
    assert again.recovery["truncated_bytes"] == 0


def test_damage_in_the_middle_is_reported_and_repair_recovers_the_rest(path: str) -> None:
    _linear(path, 6).close()
    data = bytearray(Path(path).read_bytes())
    third = Session.load(path)._arena.offset(2)
    data[third + 1] ^= 0x55  # the length field of entry e2's header
    Path(path).write_bytes(bytes(data))
    loaded = Session.load(path)
    assert [e.id for e in loaded.entries()] == ["e0", "e1"]
    assert loaded.recovery["error"] == {"problem": "damaged", "offset": third}
    with pytest.raises(SmithError) as info:
        Session.open(path)
    assert "smith sessions repair sid" in info.value.diagnostic.fix
    cautious = repair(path)  # by default: stop at the damage, keep the rest in the backup
    assert cautious["frames_kept"] == 1 + 2 and cautious["bytes_left_in_backup"] > 0
    assert Path(str(cautious["backup"])).read_bytes() == bytes(data)
    assert [e.id for e in Session.load(path).entries()] == ["e0", "e1"]
    Path(path).write_bytes(bytes(data))
    report = repair(path, resync=True)
    assert report["frames_kept"] == 1 + 5 and report["stopped_at"] is None
    assert report["backup"] != cautious["backup"]  # repairs in one second keep both
    fixed = Session.load(path)
    assert [e.id for e in fixed.entries()] == ["e0", "e1", "e3", "e4", "e5"]
    assert fixed.recovery["orphans"] == 1  # e3's parent e2 was the damaged frame


def test_unknown_frame_types_survive_load_fork_and_repair(path: str, tmp_path: Path) -> None:
    s = _linear(path, 2)
    s.close()
    future = _frames.encode_frame(0x1234, 0x8000, b"from the future \x00\x01")
    with open(path, "ab") as f:
        f.write(future)
    loaded = Session.load(path)
    assert (0x1234, future) in loaded._arena.meta_frames()
    forked = loaded.fork(str(tmp_path / "f.smith"), at="e1", id="fork")
    assert (0x1234, future) in forked._arena.meta_frames()
    forked.close()
    repair(path)
    assert future in Path(path).read_bytes()


def test_fork_holds_the_path_and_records_its_origin(path: str, tmp_path: Path) -> None:
    s = _linear(path, 4)
    s.append("message", {"text": "side"}, parent="e1", id="side")
    forked = s.fork(str(tmp_path / "f.smith"), at="side", name="forked", id="f1")
    assert [e.id for e in forked.entries()] == ["e0", "e1", "side"]
    assert forked.info["forked_from"] == "sid" and forked.name == "forked"
    assert forked.entry("side").content == {"text": "side"}
    forked.append("message", {"text": "more"}, id="m")
    forked.close()
    assert [e.id for e in Session.load(str(tmp_path / "f.smith")).branch()] == [
        "e0",
        "e1",
        "side",
        "m",
    ]
    assert len(Session.load(path)) == 5  # the source is untouched


def test_a_second_writer_gets_a_diagnostic(path: str) -> None:
    first = _linear(path, 1)
    with pytest.raises(SmithError) as info:
        Session.open(path, lock_timeout=0.05)
    assert info.value.diagnostic.code == "session.locked"
    first.close()
    Session.open(path).close()


def test_foreign_and_future_files_are_diagnostics(tmp_path: Path) -> None:
    foreign = tmp_path / "notes.smith"
    foreign.write_text("just some text\n" * 10)
    with pytest.raises(SmithError) as info:
        Session.load(str(foreign))
    assert info.value.diagnostic.code == "session.not-a-session"
    future = tmp_path / "future.smith"
    future.write_bytes(_frames.file_header(99))
    with pytest.raises(SmithError) as info:
        Session.load(str(future))
    assert "format version 99" in info.value.diagnostic.what


def _allocations(fn: object) -> int:
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    result = fn()  # type: ignore[operator]
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    del result
    return sum(max(d.count_diff, 0) for d in after.compare_to(before, "lineno"))


@pytest.mark.parametrize("what", ["load", "fork", "fork_bytes"])
def test_load_and_fork_allocate_a_constant_number_of_blocks(tmp_path: Path, what: str) -> None:
    counts = []
    for n in (1000, 8000):  # both above the small-int cache, so report ints count alike
        p = str(tmp_path / f"{n}.smith")
        _linear(p, n).close()
        data = Path(p).read_bytes()
        arena = Arena.load(io.BytesIO(data), len(data))
        header, session = _frames.file_header(), _frames.encode_frame(1, 0, b"\xa0")
        if what == "load":
            counts.append(_allocations(lambda d=data: Arena.load(io.BytesIO(d), len(d))))
        elif what == "fork":
            counts.append(_allocations(lambda a=arena, n=n: a.fork(n - 1)))
        else:
            counts.append(
                _allocations(lambda a=arena, n=n, h=header, s=session: a.fork_bytes(n - 1, h, s))
            )
    assert counts[0] == counts[1], counts


def test_clone_keeps_every_branch_and_the_selection(path: str, tmp_path: Path) -> None:
    s = _linear(path, 3)
    s.append("message", {"text": "alt"}, parent="e0", id="alt")
    s.select("e2")
    clone = s.clone(str(tmp_path / "c.smith"), id="c1")
    assert [e.id for e in clone.entries()] == ["e0", "e1", "e2", "alt"]
    assert clone.leaf == "e2" and clone.info["cloned_from"] == "sid"
    clone.close()


def test_external_entries_initialise_an_in_memory_session() -> None:
    entries = [
        {"id": "z9", "parent": None, "ts": 3, "kind": "message", "content": {"text": "a"}},
        {
            "id": "a1",
            "parent": "z9",
            "ts": 1,
            "kind": "tool_activity",
            "pair": "c",
            "content": {"n": 1},
        },
    ]
    s = Session.from_entries(entries, info={"id": "mem"})
    assert [(e.id, e.parent, e.ts, e.pair) for e in s.entries()] == [
        ("z9", None, 3, None),
        ("a1", "z9", 1, "c"),
    ]
    s.append("message", {"text": "more"}, id="m")
    assert [e.id for e in s.branch()] == ["z9", "a1", "m"]
    with pytest.raises(ValueError, match="'x'"):
        Session.from_entries(
            [{"id": "x", "parent": "missing", "ts": 0, "kind": "k", "content": None}]
        )


def test_an_in_memory_fork_shares_until_either_side_writes(path: str) -> None:
    from smith.session import _codec

    _linear(path, 5).close()
    with open(path, "rb") as f:
        parent = Arena.load(f, os.path.getsize(path))
    child = parent.fork(2)
    assert child is not None and len(child) == 3
    assert child.index("e4") == -1 and child.index("e1") == 1
    child.append(_codec.entry_frame("c", "e2", 9, "message", None, {"t": "child"}))
    parent.append(_codec.entry_frame("p", "e4", 9, "message", None, {"t": "parent"}))
    assert [child.id(i) for i in range(len(child))] == ["e0", "e1", "e2", "c"]
    assert [parent.id(i) for i in range(len(parent))] == ["e0", "e1", "e2", "e3", "e4", "p"]
    assert parent.index("c") == -1 and child.index("p") == -1
    grandchild = child.fork(3)
    del parent, child
    assert grandchild is not None and decode_content(grandchild.content(3), False) == {"t": "child"}


def test_only_a_linear_history_is_shared(path: str) -> None:
    s = _linear(path, 3)
    s.append("message", {}, parent="e0", id="side")
    assert s._arena.fork(2) is not None  # e0-e1-e2 is still one line
    assert s._arena.fork(3) is None  # side's path skips e1 and e2


def test_session_fork_of_a_linear_history_reads_nothing_back(
    path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = _linear(path, 50)

    def no_reading(*_: object, **__: object) -> None:
        raise AssertionError("the fork read its file back")

    monkeypatch.setattr(Session, "load", no_reading)
    forked = s.fork(str(tmp_path / "f.smith"), at="e9", id="f")
    forked.append("message", {"text": "after"}, id="n")
    forked.close()
    monkeypatch.undo()
    assert [e.id for e in Session.load(str(tmp_path / "f.smith")).branch()] == [
        *(f"e{i}" for i in range(10)),
        "n",
    ]


def test_fork_and_clone_keep_the_compaction_boundary(path: str, tmp_path: Path) -> None:
    s = _linear(path, 3)
    s.append("compaction", {"summary": "the story so far", "first_kept": "e2"}, id="c1")
    s.append("message", {"text": "after"}, id="a1")
    assert s.compaction_boundary() == "c1"
    assert s.compaction_boundary("e2") is None
    forked = s.fork(str(tmp_path / "f.smith"), at="a1", id="f")
    cloned = s.clone(str(tmp_path / "c.smith"), id="c")
    assert forked.compaction_boundary() == "c1" and cloned.compaction_boundary() == "c1"
    forked.close()
    cloned.close()
    assert Session.load(str(tmp_path / "f.smith")).compaction_boundary() == "c1"


def test_forked_arenas_that_die_in_a_reference_cycle_free_their_memory_once(
    tmp_path: Path,
) -> None:
    """The garbage collector clears an arena's object fields before freeing it when it
    dies in a cycle (a runtime always holds one); shared memory must still be freed once,
    by its owner. A double free aborts the process, so this runs in a child."""
    code = f"""
import gc, os
from smith.session import Session
d = {str(tmp_path)!r}
s = Session.create(os.path.join(d, "a.smith"))
e = s.append("message", {{"role": "user", "content": []}})
s.append("message", {{"role": "user", "content": []}})
f = s.fork(os.path.join(d, "f.smith"), at=e.id, id="f1")
s.close(); f.close()
for a in (s.records, f.records):
    a.report = {{"self": a}}
del s, f, a
gc.collect()
print("freed")
"""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (done.returncode, done.stdout.strip()) == (0, "freed"), done.stderr[-500:]
