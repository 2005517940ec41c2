"""Hostile session and JSONL files, built by hand with valid frame checksums: each bad
value is a diagnostic naming the file, the place and the way out, never smith's
"internal error"; one bad session never fails a list; an import streams, refuses what
is no file, and never leaves a half-written session behind."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from smith._fast import _cbor, _frames
from smith.session import Session, SessionStore, _codec
from tests.conftest import Result, SmithEnv, smith_executable

BIG = 10**4900  # a 2,000-byte integer: no str(), no JSON (sys.get_int_max_str_digits)


def _user(text: object) -> dict[str, object]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def _assistant(text: object) -> dict[str, object]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "stop": "success"}


def _session(
    senv: SmithEnv,
    sid: str,
    info: dict[str, object] | None = None,
    frames: tuple[bytes, ...] | list[bytes] = (),
) -> Path:
    """A session file as another program could write it: any info, any entry frames."""
    path = Path(SessionStore(str(senv.data_home)).path_for(sid, str(senv.root)))
    path.parent.mkdir(parents=True, exist_ok=True)
    header = {"version": 1, "id": sid, "name": sid, "created": 1, "cwd": str(senv.root)}
    header.update(info or {})
    path.write_bytes(_frames.file_header() + _codec.session_frame(header) + b"".join(frames))
    return path


def _entry(eid: str, parent: str | None, content: object) -> bytes:
    return _codec.entry_frame(eid, parent, 1, "message", None, content)


def _no_bug(r: Result) -> None:
    assert "internal error" not in r.err and "Traceback" not in r.err, r.err


def _run(senv: SmithEnv, *args: str, env: dict[str, str] | None = None) -> Result:
    """The installed smith with a strict UTF-8 stdout, under a memory limit (a read
    without bound fails fast) and a timeout (a hang fails the test)."""
    command = f"ulimit -v 1500000; exec {shlex.join([smith_executable(), *args])}"
    try:
        proc = subprocess.run(
            ["bash", "-c", command],
            cwd=senv.root,
            env={**senv.env, "PYTHONIOENCODING": "utf-8", **(env or {})},
            capture_output=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"smith {' '.join(args)} hung")
    return Result(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


# -- session files -----------------------------------------------------------------------


def test_a_bignum_as_text_is_shown_and_left_out_not_a_crash(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    answer = {**_assistant(BIG), "text": BIG}
    path = _session(senv, "big", frames=[_entry("a", None, _user("hi")), _entry("b", "a", answer)])
    shown = _run(senv, "sessions", "show", "big")
    _no_bug(shown)
    assert shown.code == 0 and "b message: (int too large to show)" in shown.out
    dumped = _run(senv, "sessions", "dump", "big")
    _no_bug(dumped)
    assert dumped.code == 1
    assert f"error: {path}: cannot dump entry 'b': its content holds an integer too long" in (
        dumped.err
    )
    assert "`smith sessions fork big --at ENTRY`" in dumped.err
    replayed = _run(senv, "replay", "big", "--json", "--instant")
    _no_bug(replayed)
    events = [json.loads(line) for line in replayed.out.splitlines()]
    [notice] = [e for e in events if e["type"] == "error"]
    assert notice["entries"] == ["b"]
    assert notice["diagnostic"]["code"] == "replay.entries-left-out"
    assert "holds an integer too long to write as text" in notice["diagnostic"]["why"]
    text = smith("replay", "big", "--instant")
    assert text.code == 0 and "1 entry of this session cannot be replayed, left out: 'b'" in (
        text.err
    )


@pytest.mark.parametrize(
    ("created", "shown"),
    [(BIG, "an integer of about 4,901 digits"), (b"xx", "bytes (2)"), (float("nan"), "NaN")],
    ids=["bignum", "bytes", "nan"],
)
def test_a_bad_created_is_unknown_in_lists_and_refused_by_dump(
    senv: SmithEnv, smith: Callable[..., Result], created: object, shown: str
) -> None:
    _session(senv, "good", frames=[_entry("a", None, _user("fine"))])
    path = _session(senv, "odd", {"created": created}, [_entry("a", None, _user("hi"))])
    listed = _run(senv, "sessions", "list", "--json")
    _no_bug(listed)
    assert listed.code == 0
    sessions = {s["id"]: s for s in json.loads(listed.out)["sessions"]}
    assert set(sessions) == {"good", "odd"}  # one bad session never fails the list
    assert sessions["odd"]["created"] is None and sessions["good"]["created"] == 1
    assert f"warning: {path}: created: this session's header holds 'created' = {shown}" in (
        listed.err
    )
    dumped = smith("sessions", "dump", "odd")
    assert dumped.code == 1 and f"{path}: created: cannot dump it: this session's header" in (
        dumped.err
    )
    assert "`smith sessions fork odd` copies the session into a new one" in dumped.err
    # ... and the fork has a sound header, which dumps.
    forked = smith("sessions", "fork", "odd")
    new_id = forked.out.split()[-1]
    again = smith("sessions", "dump", new_id)
    assert again.code == 0 and json.loads(again.out.splitlines()[0])["created"] > 1


def test_an_entry_id_that_is_not_utf8(senv: SmithEnv, smith: Callable[..., Result]) -> None:
    body = _cbor.encode(["XX", None, 1, "message", None, _cbor.encode(_user("x"))])
    bad = _frames.encode_frame(2, 0, body.replace(b"\x62XX", b"\x62\xff\xfe"))
    path = _session(senv, "badid", frames=[_entry("a", None, _user("hi")), bad])
    out = senv.root / "out.jsonl"
    dumped = _run(senv, "sessions", "dump", "badid", "-o", str(out))
    _no_bug(dumped)
    assert dumped.code == 1 and not out.exists()
    assert f"error: {path}: cannot dump entry '\\\\xff\\\\xfe': its id is not UTF-8" in dumped.err
    shown = _run(senv, "sessions", "show", "badid")  # a strict UTF-8 stdout
    _no_bug(shown)
    assert shown.code == 0 and "\ufffd\ufffd message" in shown.out
    replayed = _run(senv, "replay", "badid", "--instant")
    assert replayed.code == 0, replayed.err


def test_a_nul_in_cwd(senv: SmithEnv, smith: Callable[..., Result]) -> None:
    path = _session(senv, "nul", {"cwd": "/tmp/a\0b"}, [_entry("a", None, _user("hi"))])
    shown = smith("sessions", "show", "nul")
    assert shown.code == 0 and "cwd unknown" in shown.out
    assert f"{path}: cwd: this session's header holds 'cwd' = a path with a NUL" in shown.err
    forked = _run(senv, "sessions", "fork", "nul")
    _no_bug(forked)
    assert forked.code == 0 and f"the fork belongs to this project ({senv.root})" in forked.out
    fork = Session.load(SessionStore(str(senv.data_home)).lookup(forked.out.split()[-1]))
    assert fork.info["cwd"] == str(senv.root) and [e.id for e in fork.entries()] == ["a"]


# -- JSONL import ------------------------------------------------------------------------


def _header(senv: SmithEnv, **fields: object) -> dict[str, object]:
    header = {"type": "session", "version": 1, "id": "imp", "name": "x", "created": 1,
              "cwd": str(senv.root), "leaf": None}  # fmt: skip
    header.update(fields)
    return header


def _nothing_left(senv: SmithEnv) -> None:
    sessions = senv.data_home / "sessions"
    left = [p.name for p in sessions.rglob("*") if p.is_file()] if sessions.exists() else []
    assert left == [], left


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"name": "a\udcff"}, "'name' holds text with a lone surrogate (\\udcff), which is not"),
        ({"cwd": "/tmp/\udc80x"}, "'cwd' holds text with a lone surrogate (\\udc80)"),
        ({"cwd": "/tmp/a\0b"}, "'cwd' holds a path with a NUL character, which no path can"),
        ({"created": int("9" * 4000)}, "'created' must be milliseconds since 1970"),
        ({"created": -1}, "'created' must be milliseconds since 1970"),
    ],
    ids=["surrogate-name", "surrogate-cwd", "nul-cwd", "bignum-created", "negative-created"],
)
def test_a_bad_jsonl_header_is_a_diagnostic(
    senv: SmithEnv, fields: dict[str, object], problem: str
) -> None:
    src = senv.root / "in.jsonl"
    src.write_text(json.dumps(_header(senv, **fields)) + "\n")
    r = _run(senv, "sessions", "import", str(src))
    _no_bug(r)
    assert r.code == 1 and f"error: {src}:1: cannot import this line: {problem}" in r.err
    _nothing_left(senv)


def test_an_import_of_what_is_no_file_never_hangs(senv: SmithEnv) -> None:
    r = _run(senv, "sessions", "import", "/dev/zero")
    assert r.code == 1 and "it is a character device, not a regular file" in r.err
    fifo = senv.root / "pipe.jsonl"
    os.mkfifo(fifo)
    r = _run(senv, "sessions", "import", str(fifo))
    assert r.code == 1 and "it is a FIFO (named pipe), not a regular file" in r.err
    assert "save the dump to a file first" in r.err
    _nothing_left(senv)


def test_a_line_of_gigabytes_is_refused_at_its_bound(senv: SmithEnv) -> None:
    src = senv.root / "huge.jsonl"
    src.write_text(json.dumps(_header(senv)) + "\n")
    with src.open("r+b") as f:
        f.truncate(2 << 30)  # a sparse 2 GiB second line, without a newline
    r = _run(senv, "sessions", "import", str(src))
    _no_bug(r)
    assert r.code == 1 and f"{src}:2: cannot import this line: the line is longer than" in r.err
    _nothing_left(senv)


def test_a_failing_import_leaves_no_session_behind(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    lines = [json.dumps(_header(senv))]
    for i in range(3000):  # frames are written (past the first flush) before the bad line
        parent = f"e{i - 1}" if i else None
        lines.append(json.dumps({"id": f"e{i}", "parent": parent, "ts": i, "kind": "message",
                                 "content": {"text": "x" * 500}}))  # fmt: skip
    lines.append(json.dumps({"id": "z", "parent": "nope", "ts": 1, "kind": "m", "content": 1}))
    src = senv.root / "in.jsonl"
    src.write_text("\n".join(lines) + "\n")
    r = smith("sessions", "import", str(src))
    assert r.code == 1 and f'{src}:3002: cannot import this line: parent "nope"' in r.err
    _nothing_left(senv)
    src.write_text("\n".join(lines[:-1]) + "\n")
    r = smith("sessions", "import", str(src))
    assert r.code == 0 and "imported imp: 3000 entries" in r.out


def test_import_streams_holding_a_line_not_the_file(
    senv: SmithEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What an import holds while it reads is a line (and the ids), not every frame of
    the file: 10 million lines took 5.65 GB, then a MemoryError."""
    import smith.session._jsonl as jsonl

    lines = [json.dumps(_header(senv))]
    for i in range(40):
        text = os.urandom(256 * 1024).hex()  # 512 KiB a line: 20 MiB in all
        lines.append(json.dumps({"id": f"e{i}", "parent": f"e{i - 1}" if i else None, "ts": i,
                                 "kind": "message", "content": {"text": text}}))  # fmt: skip
    src = senv.root / "in.jsonl"
    src.write_text("\n".join(lines) + "\n")
    loaded: list[str] = []
    # Loading the published session costs what the session costs; the import is measured.
    monkeypatch.setattr(Session, "load", classmethod(lambda cls, p: loaded.append(p)))
    tracemalloc.start()
    try:
        jsonl.import_jsonl(str(src), SessionStore(str(senv.data_home)))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert loaded and Path(loaded[0]).stat().st_size > 10 << 20
    assert peak < 8 << 20, f"{peak:,} bytes held for a 20 MiB file"


def test_an_undecodable_entry_is_said_by_replay(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    body = _cbor.encode(["broken", "a", 3, "message", None, b"not zstd"])
    frames = [_entry("a", None, _user("hi")),
              _frames.encode_frame(2, _frames.FLAG_COMPRESSED, body)]  # fmt: skip
    _session(senv, "rbad", frames=frames)
    r = smith("replay", "rbad", "--instant")
    assert r.code == 0 and "1 entry of this session cannot be replayed, left out: 'broken'" in (
        r.err
    )
    assert "the content of entry 'broken' cannot be decoded" in r.err
    r = smith("replay", "rbad", "--instant", "--json")
    events = [json.loads(line) for line in r.out.splitlines()]
    assert [e.get("entries") for e in events if e["type"] == "error"] == [["broken"]]
    assert events[0]["type"] == "replay_start" and events[1]["type"] == "error"


def test_content_bytes_and_nan_replay_as_json(senv: SmithEnv, smith: Callable[..., Result]) -> None:
    frames = [_entry("a", None, _user(b"\x00\x01")), _entry("b", "a", _assistant(float("nan")))]
    _session(senv, "odd", frames=frames)
    r = smith("replay", "odd", "--instant", "--json")
    assert r.code == 0, r.err

    def no_constants(name: str) -> object:
        raise AssertionError(f"{name} is not JSON")

    events = [json.loads(line, parse_constant=no_constants) for line in r.out.splitlines()]
    [end] = [e for e in events if e["type"] == "message_end" and e["message"]["role"] == "user"]
    assert end["message"]["content"][0]["text"] == {"$bytes": "AAE="}
    assert any('"$float": "nan"' in line for line in r.out.splitlines())
