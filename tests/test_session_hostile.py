"""Hostile and broken input for the session core: nothing crashes, nothing is invented,
nothing already recorded is lost."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from smith._fast import _frames
from smith._fast._arena import Arena, ArenaError
from smith.diagnostics import SmithError
from smith.session import Session, SessionStore, _codec
from smith.session._repair import repair
from tests.conftest import Result, SmithEnv


@pytest.fixture
def path(tmp_path: Path) -> str:
    return str(tmp_path / "s.smith")


def _linear(path: str, n: int) -> Session:
    s = Session.create(path, name="t", cwd="/p", id="sid")
    for i in range(n):
        s.append("message", {"text": f"m{i}"}, id=f"e{i}", ts=i)
    return s


def test_repair_does_not_turn_content_into_entries(path: str) -> None:
    s = _linear(path, 2)
    smuggled = _codec.entry_frame("INJECTED", "e0", 1, "message", None, {"evil": True})
    s.append("tool_result", {"output": smuggled}, id="carrier")
    s.append("message", {"text": "after"}, id="later")
    s.close()
    data = bytearray(Path(path).read_bytes())
    carrier = Session.load(path)._arena.offset(2)
    data[carrier : carrier + 16] = bytes(16)  # the carrier's header is lost
    Path(path).write_bytes(bytes(data))
    repair(path)
    ids = [e.id for e in Session.load(path).entries()]
    assert ids == ["e0", "e1"] and "INJECTED" not in ids


def test_a_crashed_append_with_a_zeroed_body_is_a_torn_tail(path: str) -> None:
    _linear(path, 1).close()
    for round in range(20):  # more rounds than the corrupt-frame bound
        frame = bytearray(_codec.entry_frame(f"x{round}", "e0", 1, "m", None, {"t": 1}))
        frame[16:] = bytes(len(frame) - 16)  # the header reached the disk, the body did not
        with open(path, "ab") as f:
            f.write(bytes(frame))
        loaded = Session.load(path)
        assert loaded.recovery["frames_skipped"] == 0
        assert loaded.recovery["truncated_bytes"] == len(frame)
        s = Session.open(path)
        s.append("message", {"t": round}, parent="e0", id=f"ok{round}")
        s.close()
    assert len(Session.load(path)) == 21


def test_ids_cannot_escape_the_store(senv: SmithEnv, smith: Callable[..., Result]) -> None:
    for bad in ("../../../escaped", "", ".hidden", "a/b"):
        src = senv.root / "in.jsonl"
        header = {
            "type": "session",
            "version": 1,
            "id": bad,
            "name": "x",
            "created": 1,
            "cwd": str(senv.root),
            "leaf": None,
        }
        src.write_text(json.dumps(header) + "\n")
        r = smith("sessions", "import", str(src))
        assert r.code == 1 and "cannot be a session id" in r.err, bad
    assert not list(senv.root.parent.rglob("escaped.smith"))


def test_files_in_use_are_not_replaced_or_removed(path: str, tmp_path: Path) -> None:
    writer = _linear(path, 1)
    with pytest.raises(SmithError) as info:
        repair(path)
    assert info.value.diagnostic.code == "session.locked"
    store = SessionStore(str(tmp_path / "home"))
    live = store.create(name="x", cwd="/p", id="live")
    with pytest.raises(SmithError) as info:
        store.remove("live")
    assert info.value.diagnostic.code == "session.locked"
    live.close()
    store.remove("live")
    with pytest.raises(SmithError) as info:
        Session.create(path, id="again")
    assert info.value.diagnostic.code == "session.exists"
    writer.append("message", {"t": "still mine"}, id="kept", durable=True)
    writer.close()
    assert Session.load(path).entry("kept").content == {"t": "still mine"}


def test_a_future_version_file_is_not_repaired(path: str) -> None:
    data = _frames.file_header(2) + _frames.encode_frame(9, 0, b"future")
    Path(path).write_bytes(data)
    with pytest.raises(SmithError) as info:
        repair(path)
    assert info.value.diagnostic.code == "session.future-version"
    assert Path(path).read_bytes() == data


def test_undecodable_content_is_a_diagnostic(senv: SmithEnv, smith: Callable[..., Result]) -> None:
    store = SessionStore(str(senv.data_home))
    s = store.create(name="x", cwd=str(senv.root), id="bad-content")
    s.append("message", {"text": "fine"}, id="ok")
    body = _codec._cbor.encode(["broken", "ok", 1, "message", None, b"not zstd"])
    os.write(s._fd, _frames.encode_frame(2, _frames.FLAG_COMPRESSED, body))
    s.close()
    shown = smith("sessions", "show", "bad-content")
    assert shown.code == 0 and "(content unreadable)" in shown.out
    dumped = smith("sessions", "dump", "bad-content")
    assert dumped.code == 1 and "entry 'broken' cannot be decoded" in dumped.err
    assert "Traceback" not in dumped.err + shown.err


def test_import_checks_what_the_arena_would_reject(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    header = {
        "type": "session",
        "version": 1,
        "id": "neg",
        "name": "x",
        "created": 1,
        "cwd": str(senv.root),
        "leaf": None,
    }
    entry = {"id": "a", "parent": None, "ts": -5, "kind": "m", "content": 1}
    src = senv.root / "neg.jsonl"
    src.write_text(json.dumps(header) + "\n" + json.dumps(entry) + "\n")
    r = smith("sessions", "import", str(src))
    assert r.code == 1 and f"{src}:2: cannot import this line" in r.err
    src.write_bytes(b'{"type": "session", "name": "\xff"}\n')
    r = smith("sessions", "import", str(src))
    assert r.code == 1 and "not UTF-8" in r.err


def test_escapes_round_trip_the_data_itself(senv: SmithEnv) -> None:
    from smith.session import dump, import_jsonl

    store = SessionStore(str(senv.data_home))
    s = store.create(name="x", cwd=str(senv.root), id="esc")
    content = {"a": {"$bytes": "AAE="}, "b": float("nan"), "c": [float("-inf"), b"\x00"]}
    s.append("message", content, id="e")
    s.close()
    lines = list(dump(Session.load(s.path)))
    (senv.root / "d.jsonl").write_text("\n".join(lines) + "\n")
    store.remove("esc")
    back = import_jsonl(str(senv.root / "d.jsonl"), store).entry("e").content
    assert isinstance(back, dict) and back["a"] == {"$bytes": "AAE="}
    assert back["b"] != back["b"] and back["c"] == [float("-inf"), b"\x00"]
    assert all("NaN" not in line and "Infinity" not in line for line in lines)


def test_failed_writes_leave_nothing_behind(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    s = _linear(path, 1)
    before = Path(path).read_bytes()
    real = os.write

    def half_then_fail(fd: int, data: bytes) -> int:
        monkeypatch.setattr(os, "write", failing)
        return real(fd, bytes(data)[:10])

    def failing(fd: int, data: bytes) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_fail)
    with pytest.raises(OSError):
        s.append("message", {"t": "lost"}, id="lost")
    monkeypatch.setattr(os, "write", real)
    assert Path(path).read_bytes() == before
    assert [e.id for e in s.entries()] == ["e0"] and s.leaf == "e0"
    s.append("message", {"t": "next"}, id="next")
    s.close()
    assert [e.id for e in Session.load(path).entries()] == ["e0", "next"]
    readonly = Session.load(path)
    with pytest.raises(ValueError, match="read-only"):
        readonly.append("message", {}, id="ghost")
    assert readonly._arena.index("ghost") == -1


def test_misuse_of_the_arena_cannot_crash_it() -> None:
    assert Arena().index("x") == -1 and len(Arena()) == 0

    class Liar(io.BytesIO):
        def readinto(self, b: object) -> int:  # type: ignore[override]
            return 1 << 30

    with pytest.raises(ArenaError):
        Arena.load(Liar(b"x" * 100), 100)


def test_a_huge_declared_length_is_refused_before_allocating() -> None:
    import struct
    import tracemalloc

    head = struct.pack("<IHHI", 1 << 31, 2, 0, 0)
    head += struct.pack("<I", _frames.crc32c(head))
    data = _frames.file_header() + head + b"x" * 64
    tracemalloc.start()
    arena = Arena.load(io.BytesIO(data), len(data), max_body=1 << 20)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert arena.report["error"] == ("too-large", 16) and peak < 1 << 20


def test_crafted_resync_bait_stays_linear(path: str) -> None:
    import struct

    # A damaged header, then an intact header every 16 bytes, each claiming the rest.
    blocks = []
    total = 8192
    for at in range(0, total, 16):
        head = struct.pack("<IHHI", total - at - 16, 7, 0, 0)
        blocks.append(head + struct.pack("<I", _frames.crc32c(head)))
    data = _frames.file_header() + b"\xff" * 16 + b"".join(blocks)
    # Checking every bait body directly would be quadratic; through the scan's checksum
    # index each costs a constant, so it decides: nothing intact follows, a torn tail.
    s = _frames.scan(data)
    assert s.frames == [] and s.error is None and s.truncated == len(data) - 16


def test_a_second_process_is_locked_out(path: str) -> None:
    _linear(path, 1).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom smith.session import Session\n"
            f"s = Session.open({path!r})\nprint('ready', flush=True)\nsys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "ready\n"
        with pytest.raises(SmithError) as info:
            Session.open(path, lock_timeout=0.1)
        assert info.value.diagnostic.code == "session.locked"
    finally:
        holder.communicate("", timeout=30)
    Session.open(path).close()


def test_cli_fork_at_an_unknown_entry_creates_nothing(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    store = SessionStore(str(senv.data_home))
    s = store.create(name="x", cwd=str(senv.root), id="src")
    s.append("message", {"t": 1}, id="a")
    s.close()
    r = smith("sessions", "fork", "src", "--at", "nope")
    assert r.code == 1 and "there is no entry 'nope'" in r.err
    assert len(store.paths()) == 1
