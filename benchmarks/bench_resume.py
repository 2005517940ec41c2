"""Resume at scale, as a client sees it: `smith rpc --session S` on a 100,000-entry
session, from launch to the answer of its first `get_state`, and the process's peak
resident memory; against a fresh interpreter reading the same session's JSONL dump with
orjson (what a JSONL agent does to resume), measured in the same run."""

from __future__ import annotations

import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks._entries import representative_entries
from benchmarks._measure import smith_command

ENTRIES = 100_000

_ORJSON = (
    "import orjson, sys\nwith open(sys.argv[1], 'rb') as f:\n    x = [orjson.loads(l) for l in f]"
)


def make(directory: str, entries: int = ENTRIES) -> dict[str, str]:
    """A project, a SMITH_HOME holding one session of `entries` entries, and its dump."""
    from smith._fast import _frames
    from smith.effects import EffectJournal
    from smith.session import Session, SessionStore, calls_pair, dump
    from smith.session._codec import entry_frame, session_frame

    home, project = os.path.join(directory, "home"), os.path.join(directory, "project")
    os.makedirs(project)
    store = SessionStore(home)
    path = store.path_for("resume-bench", project)
    store.directory(project)
    frames = [
        _frames.file_header(),
        session_frame({"id": "resume-bench", "name": "bench", "created": 0, "cwd": project}),
    ]
    for e in representative_entries(entries, seed=3):
        content = e["content"]
        pair = None
        if content.get("role") == "tool_result":
            pair = str(content["tool_call_id"])
        elif content.get("role") == "assistant":
            ids = [str(p["id"]) for p in content["content"] if p.get("type") == "tool_call"]
            pair = calls_pair(ids)
        frames.append(entry_frame(e["id"], e["parent"], e["ts"], e["kind"], pair, content))
    with open(path, "wb") as f:
        f.write(b"".join(frames))
    jsonl = os.path.join(directory, "dump.jsonl")
    with Session.open(path) as session, open(jsonl, "w") as out:
        EffectJournal(session).reconcile()  # answer the mix's unpaired calls once, here
        out.writelines(line + "\n" for line in dump(session))
    return {"home": home, "project": project, "jsonl": jsonl}


def resume(made: dict[str, str]) -> tuple[float, float]:
    """(seconds from launch to the get_state answer, peak resident MB) of one run."""
    env = {**os.environ, "SMITH_HOME": made["home"]}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's interpreter keeps bytecode
    start = time.perf_counter()
    p = subprocess.Popen(
        [*smith_command(), "rpc", "--session", "resume-bench", "--model", "demo"],
        cwd=made["project"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write(b'{"jsonrpc": "2.0", "id": 1, "method": "get_state"}\n')
    p.stdin.flush()
    buf, took = b"", None
    while took is None and select.select([p.stdout], [], [], 120)[0]:
        chunk = os.read(p.stdout.fileno(), 1 << 16)
        if not chunk:
            break
        buf += chunk
        for line in buf.split(b"\n")[:-1]:
            if json.loads(line).get("id") == 1:
                took = time.perf_counter() - start
    # The process's own peak since it started (VmHWM): wait4's ru_maxrss would count the
    # memory of the process it was forked from, which is this one, not smith.
    peak = _peak_mb(p.pid)
    p.stdin.close()
    _, status, _ = os.wait4(p.pid, 0)
    if took is None or peak is None:
        raise RuntimeError(f"smith rpc gave no get_state answer (status {status})")
    return took, peak


def _peak_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def orjson_read(made: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", _ORJSON, made["jsonl"]], check=True)
    return time.perf_counter() - start


def made_elsewhere(directory: str) -> dict[str, str]:
    """`make`, in a child interpreter: building the session takes a few hundred MB, and a
    process forked from one that big starts with that much resident, which its peak
    (wait4's ru_maxrss) would report as smith's own."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = "import json, sys; from benchmarks.bench_resume import make; "
    code += "print(json.dumps(make(sys.argv[1])))"
    out = subprocess.run(
        [sys.executable, "-c", code, directory],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    made: dict[str, str] = json.loads(out.stdout)
    return made


def figures(repeat: int = 5) -> dict[str, float]:
    directory = tempfile.mkdtemp(prefix="smith-bench-resume-")
    try:
        made = made_elsewhere(directory)
        resume(made)  # writes bytecode and warms the page cache, as for the baseline
        orjson_read(made)
        ours, theirs, peak = [], [], 0.0
        for _ in range(repeat):  # interleaved: machine noise hits both alike
            took, rss = resume(made)
            ours.append(took)
            peak = max(peak, rss)
            theirs.append(orjson_read(made))
        a, b = statistics.median(ours), statistics.median(theirs)
        return {"resume_ms": a * 1e3, "orjson_ms": b * 1e3, "over_orjson": a / b, "peak_mb": peak}
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def line(f: dict[str, float]) -> str:
    return (
        f"rpc resume       {f['resume_ms']:.0f} ms launch to first get_state on 100k entries, "
        f"peak {f['peak_mb']:.0f} MB: {f['over_orjson']:.2f}x orjson reading its JSONL dump "
        f"({f['orjson_ms']:.0f} ms)"
    )


class Resume:
    """asv: the figures are measured once (setup_cache) and each track_ method reads one."""

    timeout = 900

    def setup_cache(self) -> dict[str, float]:
        return figures(repeat=3)

    def track_resume_over_orjson(self, f: dict[str, float]) -> float:
        return f["over_orjson"]

    def track_resume_peak_mb(self, f: dict[str, float]) -> float:
        return f["peak_mb"]

    track_resume_over_orjson.unit = "x"  # type: ignore[attr-defined]
    track_resume_peak_mb.unit = "MB"  # type: ignore[attr-defined]


if __name__ == "__main__":
    print(line(figures()))
