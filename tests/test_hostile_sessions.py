"""Hostile session files built by hand, checksums valid, so they pass the frame checks
(issue 26, "Hostile files"): opening one for writing never deletes an intact frame, no
walk of the tree loops, decoding is bounded by items as well as bytes, repair stays
linear and leaves a writable file, a sparse file costs its data, and a declared size is
never taken on trust. Each is driven through the command a user runs, with a memory
ceiling (prlimit --as) so that an unfixed smith fails fast instead of filling the machine."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import zstandard

from smith._fast import _cbor, _frames
from smith.diagnostics import SmithError
from smith.session import Session, SessionStore, _codec
from smith.session._repair import repair
from tests.conftest import Result, SmithEnv, smith_executable

GB = 1 << 30
MESSAGE = {"role": "user", "content": [{"type": "text", "text": "m"}]}


def _smith(*args: str) -> list[str]:
    """The command line of `smith ARGS` under a 1 GB address-space ceiling (util-linux's
    prlimit, where there is one)."""
    ceiling = [found, f"--as={GB}", "--"] if (found := shutil.which("prlimit")) else []
    return [*ceiling, smith_executable(), *args]


def _run(senv: SmithEnv, cwd: Path, *args: str, input: str | None = None) -> Result:
    """`smith ARGS` as a user runs it, under the ceiling."""
    proc = subprocess.run(
        _smith(*args), cwd=cwd, env=senv.env, input=input, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def project(senv: SmithEnv) -> Path:
    return senv.make_project().resolve()


def _path(senv: SmithEnv, project: Path, sid: str) -> str:
    store = SessionStore(str(senv.data_home))
    store.directory(str(project))
    return store.path_for(sid, str(project))


def _info(sid: str, cwd: str = "/p") -> bytes:
    return _codec.session_frame({"id": sid, "name": sid, "created": 1, "cwd": cwd, "version": 1})


def _entries(n: int, start: int = 0, parent: str | None = None) -> list[bytes]:
    out = []
    for i in range(start, start + n):
        out.append(_codec.entry_frame(f"e{i}", parent, i, "message", None, MESSAGE))
        parent = f"e{i}"
    return out


def _header(body_len: int, type: int = 2) -> bytes:
    """A frame header whose own checksum is valid, with no body behind it."""
    head = struct.pack("<IHHI", body_len, type, 0, 0)
    return head + struct.pack("<I", _frames.crc32c(head))


def _write(path: str, *frames: bytes) -> bytes:
    data = _frames.file_header() + b"".join(frames)
    Path(path).write_bytes(data)
    return data


# -- 1. opening for writing never deletes an intact frame ------------------------------


def _overlong(path: str, sid: str, cwd: str) -> bytes:
    """3 entries, a header declaring 64 MiB, then 47 intact entries (the probe's file)."""
    return _write(path, _info(sid, cwd), *_entries(3), _header(64 << 20), *_entries(47, 3, "e2"))


def test_an_overlong_header_before_intact_frames_is_damage_not_a_torn_tail(
    senv: SmithEnv, project: Path
) -> None:
    path = _path(senv, project, "loss")
    data = _overlong(path, "loss", str(project))
    for args in (["eval", "--session", "loss", "--model", "demo", "hi"],
                 ["rpc", "--session", "loss", "--model", "demo"]):  # fmt: skip
        r = _run(senv, project, *args, input="")
        assert r.code == 1 and "this session file is damaged at byte" in r.err, r.err
        assert Path(path).read_bytes() == data, args  # not one byte cut
    r = _run(senv, project, "sessions", "repair", "loss", "--resync")
    assert r.code == 0, r.err
    assert len(Session.load(path)) == 50
    backups = list(Path(path).parent.glob("loss.smith.damaged-*"))
    assert [b.read_bytes() for b in backups] == [data]


def test_corrupt_frames_at_the_end_hiding_an_intact_frame_are_not_cut(tmp_path: Path) -> None:
    path = str(tmp_path / "s.smith")
    inner = _entries(1, 5, "e1")[0]
    body = b"x" * 40 + inner + b"y" * 40
    head = struct.pack("<IHHI", len(body), 2, 0, _frames.crc32c(body) ^ 1)  # body fails
    corrupt = head + struct.pack("<I", _frames.crc32c(head)) + body
    data = _write(path, _info("s"), *_entries(2), corrupt)
    at = len(data) - len(corrupt)
    assert Session.load(path).recovery["error"] == {"problem": "damaged", "offset": at}
    with pytest.raises(SmithError) as info:
        Session.open(path)
    assert info.value.diagnostic.code == "session.damaged"
    assert Path(path).read_bytes() == data
    scanned = _frames.scan(data, resync=True)
    assert scanned.error is None and len(scanned.frames) == 4  # info, e0, e1, and e5 inside


def test_a_malformed_entry_frame_at_the_end_is_not_cut(tmp_path: Path) -> None:
    path = str(tmp_path / "s.smith")
    malformed = _frames.encode_frame(2, 0, _cbor.encode(["only", "three", 1]))
    data = _write(path, _info("s"), *_entries(2), malformed)
    with pytest.raises(SmithError):
        Session.open(path)
    assert Path(path).read_bytes() == data


def test_opening_keeps_the_torn_tail_it_cuts(tmp_path: Path) -> None:
    path = str(tmp_path / "s.smith")
    torn = _entries(1, 2, "e1")[0][:-7]  # an append that did not finish
    data = _write(path, _info("s"), *_entries(2), torn)
    with Session.open(path) as s:
        kept = s.tail_backup
        assert kept is not None and f"kept in {kept}" in (s.damage or "")
        s.append("message", MESSAGE, id="after")
    assert Path(kept).read_bytes() == torn and os.stat(kept).st_mode & 0o077 == 0
    assert Path(path).read_bytes().startswith(data[: len(data) - len(torn)])
    assert [e.id for e in Session.load(path).entries()] == ["e0", "e1", "after"]
    with open(path, "ab") as f:  # a zero-filled tail holds nothing: cut, no copy
        f.truncate(os.path.getsize(path) + 4096)
    with Session.open(path) as s:
        assert s.tail_backup is None and s.recovery["truncated_bytes"] == 4096


def test_a_fork_or_clone_never_replaces_an_existing_file(tmp_path: Path) -> None:
    source = Session.create(str(tmp_path / "a.smith"), id="a")
    source.append("message", MESSAGE, id="m")
    other = _write(str(tmp_path / "b.smith"), _info("b"), *_entries(2))
    for make in (source.fork, source.clone):
        with pytest.raises(SmithError) as info:
            make(str(tmp_path / "b.smith"), id="b2")
        assert info.value.diagnostic.code == "session.exists"
        assert Path(tmp_path / "b.smith").read_bytes() == other
    source.close()


# -- 2. no walk of the tree loops ----------------------------------------------------


def test_an_entry_cycle_ends_every_walk(senv: SmithEnv, project: Path) -> None:
    path = _path(senv, project, "cyc")
    frames = [
        _codec.entry_frame("a", None, 1, "message", None, {"role": "user", "text": "x"}),
        _codec.entry_frame("b", "a", 2, "message", None, {"role": "user", "text": "y"}),
        _codec.entry_frame("a", "b", 3, "message", None, {"role": "user", "text": "z"}),
    ]
    _write(path, _info("cyc", str(project)), *frames)
    shown = _run(senv, project, "sessions", "show", "cyc")
    assert shown.code == 0, shown.err
    tree = [line for line in shown.out.splitlines() if line.lstrip("* ").startswith(("a ", "b "))]
    assert len(tree) == 2 and "repeating an earlier entry's id" in shown.out
    for args in (["sessions", "show", "cyc", "--json"], ["sessions", "dump", "cyc"],
                 ["replay", "cyc", "--json"], ["sessions", "fork", "cyc"],
                 ["history", "--session", "cyc"]):  # fmt: skip
        r = _run(senv, project, *args)
        assert r.code == 0 and "internal error" not in r.err, (args, r.err)
    tree_request = '{"jsonrpc": "2.0", "id": 1, "method": "get_tree"}\n'
    r = _run(senv, project, "rpc", "--session", "cyc", "--model", "demo", input=tree_request)
    answer = json.loads(r.out.splitlines()[0])["result"]
    assert answer["leaves"] == ["b"], answer
    s = Session.load(path)
    assert s.children() == {None: ["a"], "a": ["b"]}
    assert [e.id for e in s.branch("b")] == ["a", "b"]
    assert s.entries_between("a", "b") is not None
    repaired = repair(path)
    assert repaired["duplicates_dropped"] == 1 and len(Session.load(path)) == 2


# -- 3. decoding is bounded by items, and nothing decoded is kept ---------------------


def _bomb(items: int = 64_000_000) -> bytes:
    """zstd of one CBOR array of `items` empty arrays: 2 KB on disk, 64 MB of CBOR."""
    raw = b"\x9a" + items.to_bytes(4, "big") + b"\x80" * items
    return zstandard.ZstdCompressor(level=1, write_content_size=True).compress(raw)


def _amplified(path: str, sid: str, cwd: str, count: int = 1) -> None:
    frames, parent, packed = [], None, _bomb()
    for k in range(count):
        body = _cbor.encode([f"z{k}", parent, k, "message", None, packed])
        frames.append(_frames.encode_frame(2, _frames.FLAG_COMPRESSED, body))
        parent = f"z{k}"
    _write(path, _info(sid, cwd), *frames)


def test_amplified_content_is_refused_by_every_reader(senv: SmithEnv, project: Path) -> None:
    _amplified(_path(senv, project, "amp"), "amp", str(project), count=4)
    shown = _run(senv, project, "sessions", "show", "amp")
    assert shown.code == 0 and shown.out.count("(content unreadable)") == 4, shown.err
    dumped = _run(senv, project, "sessions", "dump", "amp")
    assert dumped.code == 1 and "over max_items" in dumped.err and "internal" not in dumped.err
    replayed = _run(senv, project, "replay", "amp", "--json")
    assert replayed.code == 0 and "internal error" not in replayed.err
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "get_state"},
        {"jsonrpc": "2.0", "id": 2, "method": "prompt", "params": {"text": "hi"}},
    ]
    events = _rpc_until_settled(senv, project, "amp", requests)
    errors = [e["diagnostic"]["code"] for e in events if e.get("type") == "error"]
    assert errors == ["session.content-unreadable"], events


def _rpc_until_settled(
    senv: SmithEnv, project: Path, sid: str, requests: list[dict[str, object]]
) -> list[dict[str, Any]]:
    """The events of `smith rpc --session SID` (under the ceiling) until it settles."""
    with subprocess.Popen(
        _smith("rpc", "--session", sid, "--model", "demo"),
        cwd=project,
        env=senv.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
        proc.stdin.flush()
        events: list[dict[str, Any]] = []
        for line in proc.stdout:
            record = json.loads(line)
            if record.get("method") == "event":
                events.append(record["params"])
                if record["params"].get("type") == "settled":
                    break
        proc.stdin.close()
        proc.wait(60)
    return events


def test_the_decoder_counts_items_not_bytes() -> None:
    raw = zstandard.ZstdDecompressor().decompress(_bomb())
    with pytest.raises(_cbor.DecodeError, match="over max_items: more than 1048576 items"):
        _cbor.decode(raw)  # refused at the array's head, before 64 million lists exist
    assert _cbor.decode(b"\x83\x80\x80\x80", max_items=4) == [[], [], []]
    for data, bound in ((b"\x83\x80\x80\x80", 3), (b"\xa1\x61a\x80", 2), (b"\x9f\x80\x80\xff", 2)):
        with pytest.raises(_cbor.DecodeError, match="over max_items"):
            _cbor.decode(data, max_items=bound)
    with pytest.raises(ValueError, match="over smith's bound of 1,048,576 items"):
        _codec.entry_frame("big", None, 1, "message", None, [0] * (_codec.MAX_ITEMS + 1))


def test_a_session_info_frame_of_millions_of_items_costs_nothing(
    senv: SmithEnv, project: Path
) -> None:
    path = _path(senv, project, "big")
    info = {"id": "big", "name": "big", "created": 1, "cwd": str(project), "x": [[]] * 8_000_000}
    _write(path, _frames.encode_frame(1, 0, _cbor.encode(info)), *_entries(1))
    listed = _run(senv, project, "sessions", "list", "--json")
    assert listed.code == 0, listed.err
    [found] = json.loads(listed.out)["sessions"]
    assert found["id"] == "big" and "session info or leaf frame at byte 16" in found["damage"]
    assert repair(path)["unreadable_meta_dropped"] == 1 and Session.load(path).damage is None


def test_entries_hold_no_decoded_content(tmp_path: Path) -> None:
    s = Session.create(str(tmp_path / "s.smith"))
    s.append("message", {"text": "x" * 100}, id="a")
    entry = s.entry("a")
    assert entry.content == entry.content and entry.content is not entry.content
    assert not hasattr(entry, "__dict__") and "_content" not in type(entry).__slots__


# -- 4. repair: linear, and a writable result; sparse files --------------------------


def _bait(total: int, at: int) -> bytes:
    head = struct.pack("<IHHI", total - at - 16, 2, 0, 0xDEADBEEF)  # a body that fails
    return head + struct.pack("<I", _frames.crc32c(head))


def _stretches(count: int, pad: int = 16 * 1024) -> bytes:
    """Damage, then three headers each claiming the rest of the file, then an intact
    entry, `count` times: every search after damage met bodies as long as the file."""
    frames = [_codec.entry_frame(f"r{i}", None, i, "m", None, {"i": i}) for i in range(count)]
    total = 16 + sum(pad + 48 + len(f) for f in frames)
    parts, at = [_frames.file_header()], 16
    for frame in frames:
        parts.append(b"\xaa" * pad)
        at += pad
        for _ in range(3):
            parts.append(_bait(total, at))
            at += 16
        parts.append(frame)
        at += len(frame)
    return b"".join(parts)


def test_resync_recovers_every_stretch_in_linear_work(senv: SmithEnv, project: Path) -> None:
    data = _stretches(200)
    scanned = _frames.scan(data, resync=True)
    assert len(scanned.frames) == 200 and scanned.error is None
    assert scanned.work < 2 * len(data)  # each bait body costs a constant, not its length
    path = _path(senv, project, "rs")
    Path(path).write_bytes(data)
    r = _run(senv, project, "sessions", "repair", "rs", "--resync", "--json")
    assert r.code == 0 and json.loads(r.out)["frames_kept"] == 200, r.err


def test_repair_drops_malformed_entries_so_the_session_is_writable(
    senv: SmithEnv, project: Path
) -> None:
    path = _path(senv, project, "bad")
    malformed = [_frames.encode_frame(2, 0, _cbor.encode([f"x{i}", None])) for i in range(20)]
    _write(path, _info("bad", str(project)), *_entries(2), *malformed, *_entries(1, 2, "e1"))
    before = _run(senv, project, "eval", "--session", "bad", "--model", "demo", "hi")
    assert before.code == 1 and "too-many-corrupt" in before.err
    r = _run(senv, project, "sessions", "repair", "bad")
    assert r.code == 0 and "dropped 20 corrupt ones" in r.out, r.out + r.err
    after = _run(senv, project, "eval", "--session", "bad", "--model", "demo", "hi")
    assert after.code == 0, after.err
    assert [e.id for e in Session.load(path).entries()][:3] == ["e0", "e1", "e2"]


def _sparse(path: str, sid: str, cwd: str, size: int) -> int:
    data = _write(path, _info(sid, cwd), *_entries(10))
    os.truncate(path, size)
    return len(data)


def test_a_sparse_session_costs_its_data(senv: SmithEnv, project: Path) -> None:
    _sparse(_path(senv, project, "sparse"), "sparse", str(project), 1200 << 20)
    _write(_path(senv, project, "fine"), _info("fine", str(project)), *_entries(3))
    listed = _run(senv, project, "sessions", "list", "--json")
    assert listed.code == 0, listed.err
    found = {s["id"]: s for s in json.loads(listed.out)["sessions"]}
    assert found["sparse"]["entry_count"] == 10 and found["fine"]["entry_count"] == 3
    r = _run(senv, project, "sessions", "repair", "sparse")
    assert r.code == 0 and len(Session.load(_path(senv, project, "sparse"))) == 10, r.err
    probe = (
        "import resource, sys\nfrom smith.session import Session\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "s = Session.load(sys.argv[1])\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before, len(s))"
    )
    path = _path(senv, project, "peak")
    _sparse(path, "peak", str(project), 600 << 20)
    out = subprocess.run([sys.executable, "-c", probe, path], capture_output=True, text=True,
                         check=True).stdout.split()  # fmt: skip
    assert int(out[0]) < 64 * 1024 and out[1] == "10"  # KB: not the 600 MB it claims


def test_one_unreadable_session_does_not_fail_the_list(
    senv: SmithEnv, project: Path, smith: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(_path(senv, project, "ok"), _info("ok", str(project)), *_entries(1))
    _write(_path(senv, project, "huge"), _info("huge", str(project)), *_entries(1))
    real = Session._load

    def load(path: str, max_skips: int) -> Session:
        if path.endswith("huge.smith"):
            raise MemoryError("cannot hold a session of 5000000000 bytes in memory")
        return real(path, max_skips)

    monkeypatch.setattr(Session, "_load", load)
    r = smith("sessions", "list", cwd=project)  # type: ignore[operator]
    assert r.code == 0 and "ok " in r.out and "huge" not in r.out
    assert "cannot be read: there is not enough memory to hold it" in r.err


# -- 5. declared sizes are claims ----------------------------------------------------


def test_a_zstd_header_cannot_claim_context_tokens(senv: SmithEnv, project: Path) -> None:
    path = _path(senv, project, "tok")
    claim = b"\x28\xb5\x2f\xfd\xe0" + (1 << 62).to_bytes(8, "little") + b"\x01\x00\x00"
    small = b"\x28\xb5\x2f\xfd\xe0" + (60 << 20).to_bytes(8, "little") + b"\x01\x00\x00"
    frames = [
        _frames.encode_frame(2, 1, _cbor.encode(["t0", None, 1, "message", None, claim])),
        _frames.encode_frame(2, 1, _cbor.encode(["t1", "t0", 2, "message", None, small])),
    ]
    _write(path, _info("tok", str(project)), *frames)
    arena = Session.load(path).records
    assert arena.content_size(0) == -1  # over the 64 MiB bound any decode allows
    assert arena.content_size(1) == -1  # more than 16 stored bytes can expand to
    request = '{"jsonrpc": "2.0", "id": 1, "method": "get_state"}\n'
    r = _run(senv, project, "rpc", "--session", "tok", "--model", "demo", input=request)
    state = json.loads(r.out.splitlines()[0])["result"]
    assert state["context"]["tokens"] < 1000, state["context"]
