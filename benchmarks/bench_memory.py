"""What memory accounting costs: the same work with the allocator hooks on and off.

The hooks are installed once per process and never removed, so each side runs in a
process of its own (this module run as a script, SMITH_MEMORY_ACCOUNTING=1 or 0), the
two interleaved so that machine noise hits both alike; each figure is the ratio of the
fastest run with accounting on to the fastest with it off, measured now.

Workloads:
  alloc   the worst case: nothing but small allocations and frees (dicts, lists, strings)
  turn    runtime turns with the scripted provider and a no-op tool (bench_runtime's)
  encode  canonical CBOR of 1,000 session entries (the Cython encoder allocates little)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

WORKLOADS = ("alloc", "turn", "encode")
ROUNDS = 5  # processes per side and workload


def _alloc() -> float:
    start = time.perf_counter()
    for i in range(200_000):
        d = {"id": i, "name": f"entry {i}", "parts": [i, i + 1, i + 2]}
        del d
    return time.perf_counter() - start


def _turn() -> float:
    from benchmarks import bench_runtime

    return bench_runtime.figures(repeat=1)["turn_ms"] / 1e3


def _encode() -> float:
    from benchmarks import bench_cbor

    ours, _cbor2 = bench_cbor.encode_times()
    return ours


def _child(workload: str) -> None:
    """Run one workload in this process and print its best time in seconds."""
    if os.environ.get("SMITH_MEMORY_ACCOUNTING") == "1":
        from smith import memory

        memory.install()
    fn = {"alloc": _alloc, "turn": _turn, "encode": _encode}[workload]
    fn()  # warm up: imports, caches
    print(json.dumps(min(fn() for _ in range(3))))


def _side(workload: str, on: bool) -> float:
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "SMITH_MEMORY_ACCOUNTING": "1" if on else "0", "PYTHONHASHSEED": "0"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH", "")]))
    r = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_memory", workload],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        check=True,
        timeout=600,
    )
    seconds: float = json.loads(r.stdout.strip().splitlines()[-1])
    return seconds


def figures(rounds: int = ROUNDS) -> dict[str, float]:
    """Per workload: the best time off and on (ms), and on over off."""
    out: dict[str, float] = {}
    for workload in WORKLOADS:
        off, on = [], []
        for _ in range(rounds):
            off.append(_side(workload, False))
            on.append(_side(workload, True))
        out[f"{workload}_off_ms"] = min(off) * 1e3
        out[f"{workload}_on_ms"] = min(on) * 1e3
        out[f"{workload}_ratio"] = min(on) / min(off)
    return out


def line(f: dict[str, float]) -> str:
    """The figures as compare.py prints them."""
    return (
        f"memory accounting on/off: small allocations {f['alloc_ratio']:.2f}x "
        f"({f['alloc_off_ms']:.1f} -> {f['alloc_on_ms']:.1f} ms), runtime turn "
        f"{f['turn_ratio']:.2f}x ({f['turn_off_ms']:.2f} -> {f['turn_on_ms']:.2f} ms), "
        f"cbor encode {f['encode_ratio']:.2f}x"
    )


class Overhead:
    timeout = 900
    number = 1
    repeat = 1

    def setup(self) -> None:
        self.figures = figures(rounds=3)

    def track_small_allocations_on_over_off(self) -> float:
        return self.figures["alloc_ratio"]

    track_small_allocations_on_over_off.unit = "x off"  # type: ignore[attr-defined]

    def track_runtime_turn_on_over_off(self) -> float:
        return self.figures["turn_ratio"]

    track_runtime_turn_on_over_off.unit = "x off"  # type: ignore[attr-defined]

    def track_cbor_encode_on_over_off(self) -> float:
        return self.figures["encode_ratio"]

    track_cbor_encode_on_over_off.unit = "x off"  # type: ignore[attr-defined]


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] in WORKLOADS:
        _child(sys.argv[1])
    else:
        print(line(figures()))
