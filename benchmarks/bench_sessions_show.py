"""`smith sessions show --json` on a 100,000-entry session, launch to exit, against a
fresh interpreter reading the same session's JSONL dump with orjson (a JSONL agent's
whole resume, bench_resume's baseline), measured in the same run; and the encoding alone,
smith's (smith._jsonout) against the standard library's `json.dumps(indent=2)` of the
same document."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

from benchmarks._measure import best, smith_command
from benchmarks.bench_resume import made_elsewhere, orjson_read


def show(made: dict[str, str]) -> float:
    """Seconds from launch to exit of `smith sessions show resume-bench --json`."""
    env = {**os.environ, "SMITH_HOME": made["home"]}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's interpreter keeps bytecode
    start = time.perf_counter()
    subprocess.run(
        [*smith_command(), "sessions", "show", "resume-bench", "--json"],
        cwd=made["project"],
        env=env,
        stdout=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - start


def encoding(made: dict[str, str]) -> tuple[float, float]:
    """(smith's, the standard library's) seconds to write the document's JSON."""
    from smith._jsonout import with_rows
    from smith.session import Session, SessionStore

    store = SessionStore(made["home"])
    session = Session.load(store.lookup("resume-bench", made["project"]))
    head: dict[str, object] = {"id": session.id, "recovery": session.recovery}
    rows: list[dict[str, object]] = [
        {"id": e.id, "parent": e.parent, "ts": e.ts, "kind": e.kind} for e in session.entries()
    ]
    ours = best(lambda: with_rows(head, "entries", rows), 3)
    theirs = best(lambda: json.dumps({**head, "entries": rows}, indent=2), 3)
    assert with_rows(head, "entries", rows) == json.dumps({**head, "entries": rows}, indent=2)
    return ours, theirs


def figures(repeat: int = 5) -> dict[str, float]:
    directory = tempfile.mkdtemp(prefix="smith-bench-show-")
    try:
        made = made_elsewhere(directory)
        show(made)  # writes bytecode and warms the page cache, as for the baseline
        orjson_read(made)
        ours, theirs = [], []
        for _ in range(repeat):  # interleaved: machine noise hits both alike
            ours.append(show(made))
            theirs.append(orjson_read(made))
        a, b = statistics.median(ours), statistics.median(theirs)
        enc, std = encoding(made)
        return {
            "show_ms": a * 1e3,
            "orjson_ms": b * 1e3,
            "over_orjson": a / b,
            "encode_ms": enc * 1e3,
            "stdlib_encode_ms": std * 1e3,
            "encode_speedup": std / enc,
        }
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def line(f: dict[str, float]) -> str:
    return (
        f"sessions show    {f['show_ms']:.0f} ms for --json on 100k entries: "
        f"{f['over_orjson']:.2f}x orjson reading its JSONL dump ({f['orjson_ms']:.0f} ms); "
        f"its JSON written in {f['encode_ms']:.0f} ms, {f['encode_speedup']:.0f}x faster than "
        f"json.dumps(indent=2) ({f['stdlib_encode_ms']:.0f} ms)"
    )


class SessionsShow:
    """asv: the figures are measured once (setup_cache) and each track_ method reads one."""

    timeout = 900

    def setup_cache(self) -> dict[str, float]:
        return figures(repeat=3)

    def track_show_json_over_orjson(self, f: dict[str, float]) -> float:
        return f["over_orjson"]

    def track_encode_speedup(self, f: dict[str, float]) -> float:
        return f["encode_speedup"]

    track_show_json_over_orjson.unit = "x"  # type: ignore[attr-defined]
    track_encode_speedup.unit = "x"  # type: ignore[attr-defined]


if __name__ == "__main__":
    print(line(figures()))
