"""Session core against its baselines, all measured in the same run.

- Load a 100,000-entry session file into the arena, against `orjson.loads` over the same
  entries as JSONL lines (what JSONL agents do on resume) and a bare `read()` of the file.
- Resident bytes of the loaded arena against the decompressed payload size.
- Fork at the last entry, and append one entry.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from benchmarks._entries import representative_entries
from benchmarks._measure import best
from smith._fast import _frames
from smith._fast._arena import Arena
from smith.session import Session, _codec

ENTRIES = 100_000


class SessionFile:
    timeout = 600
    number = 1
    repeat = (3, 5, 60.0)

    def setup_cache(self) -> dict[str, object]:
        import json

        directory = tempfile.mkdtemp(prefix="smith-bench-session-")
        entries = representative_entries(ENTRIES, seed=1)
        parent = None
        frames = [
            _frames.file_header(),
            _codec.session_frame(
                {"id": "bench", "name": "bench", "created": 0, "cwd": "/", "version": 1}
            ),
        ]
        lines = []
        payload = 0
        for e in entries:
            frames.append(
                _codec.entry_frame(e["id"], parent, e["ts"], e["kind"], None, e["content"])
            )
            payload += len(_codec._cbor.encode(e["content"]))
            lines.append(
                json.dumps(
                    {
                        "id": e["id"],
                        "parent": parent,
                        "ts": e["ts"],
                        "kind": e["kind"],
                        "content": e["content"],
                    }
                )
            )
            parent = e["id"]
        path = os.path.join(directory, "bench.smith")
        with open(path, "wb") as f:
            f.write(b"".join(frames))
        jsonl = os.path.join(directory, "bench.jsonl")
        with open(jsonl, "w") as f:
            f.write("\n".join(lines) + "\n")
        return {"dir": directory, "path": path, "jsonl": jsonl, "payload": payload}

    def setup(self, cache: dict[str, object]) -> None:
        self.path = str(cache["path"])
        self.jsonl = str(cache["jsonl"])
        self.payload = int(cache["payload"])  # type: ignore[call-overload]
        self.size = os.path.getsize(self.path)
        with open(self.path, "rb") as f:
            self.arena = Arena.load(f, self.size)
        self.scratch = tempfile.mkdtemp(prefix="smith-bench-append-")
        self.session = Session.create(os.path.join(self.scratch, "a.smith"), name="a", cwd="/")

    def teardown(self, cache: dict[str, object]) -> None:
        self.session.close()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def _load(self) -> Arena:
        with open(self.path, "rb") as f:
            return Arena.load(f, self.size)

    def _read(self) -> bytes:
        with open(self.path, "rb") as f:
            return f.read()

    def _orjson(self) -> None:
        import orjson

        with open(self.jsonl, "rb") as f:
            for line in f:
                orjson.loads(line)

    def time_load_arena(self, cache: dict[str, object]) -> None:
        self._load()

    def time_read_baseline(self, cache: dict[str, object]) -> None:
        self._read()

    def time_orjson_jsonl_baseline(self, cache: dict[str, object]) -> None:
        self._orjson()

    def track_orjson_over_load(self, cache: dict[str, object]) -> float:
        return best(self._orjson) / best(self._load)

    def track_load_over_read(self, cache: dict[str, object]) -> float:
        return best(self._load) / best(self._read)

    def track_arena_bytes_over_payload(self, cache: dict[str, object]) -> float:
        return self.arena.nbytes / self.payload

    def time_fork_last_entry(self, cache: dict[str, object]) -> None:
        """In memory: the fork shares the arena copy-on-write."""
        self.arena.fork(len(self.arena) - 1)

    def time_fork_file_bytes_last_entry(self, cache: dict[str, object]) -> None:
        """The bytes of the fork's own file (what Session.fork then writes)."""
        self.arena.fork_bytes(len(self.arena) - 1, b"h" * 16, b"s" * 20)

    def time_append_one_entry(self, cache: dict[str, object]) -> None:
        """One append to an open session: encode, one write, index (no fsync)."""
        self.session.append("message", {"role": "user", "text": "one more line"})

    track_orjson_over_load.unit = "x"  # type: ignore[attr-defined]
    track_load_over_read.unit = "x"  # type: ignore[attr-defined]
    track_arena_bytes_over_payload.unit = "x"  # type: ignore[attr-defined]


_MEASURE = """
import json, os, sys, time
from smith._fast._arena import Arena
path = sys.argv[1]
size = os.path.getsize(path)
def best(fn, n=7):
    times = []
    for _ in range(n):
        start = time.perf_counter(); fn(); times.append(time.perf_counter() - start)
    return min(times)
def load():
    with open(path, "rb") as f:
        return Arena.load(f, size)
def read():
    with open(path, "rb") as f:
        return f.read()
print(json.dumps({"load": best(load), "read": best(read)}))
"""


def figures() -> dict[str, float]:
    """The same comparisons without asv (benchmarks/compare.py). Load and read are timed
    in a fresh interpreter, as asv does: in this one, building the file leaves memory
    that a bare read() reuses without page faults, which flatters the baseline."""
    import json
    import subprocess
    import sys

    bench = SessionFile()
    cache = bench.setup_cache()
    bench.setup(cache)
    try:
        fresh = json.loads(
            subprocess.run(
                [sys.executable, "-c", _MEASURE, bench.path],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        last = len(bench.arena) - 1
        fork = best(lambda: bench.arena.fork(last))
        fork_file = best(lambda: bench.arena.fork_bytes(last, b"h" * 16, b"s" * 20))
        return {
            "load_ms": fresh["load"] * 1e3,
            "orjson_over_load": best(bench._orjson, 3) / fresh["load"],
            "load_over_read": fresh["load"] / fresh["read"],
            "arena_over_payload": bench.arena.nbytes / bench.payload,
            "fork_ms": fork * 1e3,
            "fork_file_ms": fork_file * 1e3,
        }
    finally:
        bench.teardown(cache)
        shutil.rmtree(str(cache["dir"]), ignore_errors=True)


if __name__ == "__main__":
    print(figures())
