"""`smith sessions` through the command line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.conftest import Result, SmithEnv


def _write_jsonl(path: Path, cwd: str, n: int = 5, sid: str = "sess-1") -> Path:
    header = {
        "type": "session",
        "version": 1,
        "id": sid,
        "name": "demo",
        "created": 1764460800000,
        "cwd": cwd,
        "leaf": f"e{n - 1}",
    }
    lines = [header] + [
        {
            "id": f"e{i}",
            "parent": None if i == 0 else f"e{i - 1}",
            "ts": 1764460800000 + i,
            "kind": "message",
            "content": {"role": "user", "text": f"hello {i}", "n": i},
        }
        for i in range(n)
    ]
    lines[3]["pair"] = "call-7"
    lines[2]["content"] = {"blob": {"$bytes": "AAEC/w=="}, "big": "y" * 3000, "f": 0.1}
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_import_dump_import_dump_is_byte_identical(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    src = _write_jsonl(senv.root / "in.jsonl", str(senv.root))
    assert smith("sessions", "import", str(src)).code == 0
    first = smith("sessions", "dump", "sess-1")
    assert first.code == 0, first.err
    records = [json.loads(line) for line in first.out.splitlines()]
    assert records[0]["leaf"] == "e4" and records[3]["pair"] == "call-7"
    assert records[2]["content"]["blob"] == {"$bytes": "AAEC/w=="}
    assert smith("sessions", "rm", "sess-1").code == 0
    again = senv.root / "again.jsonl"
    assert smith("sessions", "dump", "sess-1").code == 1  # gone
    again.write_text(first.out)
    assert smith("sessions", "import", str(again)).code == 0
    second = smith("sessions", "dump", "sess-1", "--output", str(senv.root / "out.jsonl"))
    assert second.code == 0
    assert (senv.root / "out.jsonl").read_text() == first.out


def test_list_is_per_project_unless_all(senv: SmithEnv, smith: Callable[..., Result]) -> None:
    here = senv.make_project("here")
    there = senv.make_project("there")
    smith("sessions", "import", str(_write_jsonl(senv.root / "a.jsonl", str(here), sid="a1")))
    smith("sessions", "import", str(_write_jsonl(senv.root / "b.jsonl", str(there), sid="b1")))
    mine = json.loads(smith("sessions", "list", "--json", cwd=here).out)["sessions"]
    assert [s["id"] for s in mine] == ["a1"] and mine[0]["entry_count"] == 5
    every = json.loads(smith("sessions", "list", "--all", "--json", cwd=here).out)["sessions"]
    assert sorted(s["id"] for s in every) == ["a1", "b1"]


def test_show_marks_the_selected_path(senv: SmithEnv, smith: Callable[..., Result]) -> None:
    from smith.session import Session, SessionStore

    store = SessionStore(str(senv.data_home))
    s = store.create(name="tree", cwd=str(senv.root), id="t1")
    s.append("message", {"text": "root"}, id="r")
    s.append("message", {"text": "left"}, id="l")
    s.append("message", {"text": "right"}, parent="r", id="x")
    s.select("l")
    s.close()
    out = smith("sessions", "show", "t1").out.splitlines()
    assert out[1:] == ["* r message: root", "  * l message: left  <- leaf", "    x message: right"]
    data = json.loads(smith("sessions", "show", "t1", "--json").out)
    assert (data["entry_count"], data["leaf"]) == (3, "l")
    assert data["recovery"]["truncated_bytes"] == 0
    assert Session.load(s.path).leaf == "l"


def test_fork_repair_and_rm(senv: SmithEnv, smith: Callable[..., Result]) -> None:
    smith("sessions", "import", str(_write_jsonl(senv.root / "a.jsonl", str(senv.root))))
    r = smith("sessions", "fork", "sess-1", "--at", "e2", "--name", "branch")
    assert r.code == 0, r.err
    new_id = r.out.split()[-1]
    shown = json.loads(smith("sessions", "show", new_id, "--json").out)
    assert [e["id"] for e in shown["entries"]] == ["e0", "e1", "e2"]
    from smith.session import Session

    path = Path(json.loads(smith("sessions", "show", "sess-1", "--json").out)["path"])
    data = bytearray(path.read_bytes())
    data[Session.load(str(path))._arena.offset(1) + 20] ^= 0xFF  # inside e1's body
    path.write_bytes(bytes(data))
    broken = json.loads(smith("sessions", "show", "sess-1", "--json").out)
    assert broken["recovery"]["frames_skipped"] == 1 and broken["entry_count"] == 4
    fixed = smith("sessions", "repair", "sess-1", "--json")
    report = json.loads(fixed.out)
    assert (report["frames_kept"], report["frames_skipped"]) == (1 + 4, 1)
    assert Path(report["backup"]).read_bytes() == bytes(data)
    assert smith("sessions", "rm", "sess-1").code == 0
    assert "no sessions" in smith("sessions", "list").out or new_id in smith("sessions", "list").out


def test_bad_input_is_a_diagnostic(senv: SmithEnv, smith: Callable[..., Result]) -> None:
    missing = smith("sessions", "show", "nope")
    assert missing.code == 1 and "there is no session 'nope'" in missing.err
    bad = senv.root / "bad.jsonl"
    good = _write_jsonl(senv.root / "good.jsonl", str(senv.root)).read_text().splitlines()
    good[3] = good[3].replace('"parent": "e1"', '"parent": "e9"')
    bad.write_text("\n".join(good) + "\n")
    r = smith("sessions", "import", str(bad))
    assert r.code == 1 and f"{bad}:4: cannot import this line" in r.err
    assert "is not an earlier entry" in r.err and "Traceback" not in r.err
    dup = smith("sessions", "import", str(senv.root / "good.jsonl"))
    assert dup.code == 0
    assert "already exists" in smith("sessions", "import", str(senv.root / "good.jsonl")).err
