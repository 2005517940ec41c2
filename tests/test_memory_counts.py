"""Determinism: exact allocation counts of deterministic paths (expected values in
tests/memory_counts.py). The measurements run in a fresh process (isolated state), twice,
which must agree with each other and with the recorded counts; inside it each operation
is warmed up and must then repeat its count. Regenerate: python tests/test_memory_counts.py
"""

from __future__ import annotations

import asyncio
import gc
import io
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from smith import memory

pytestmark = pytest.mark.skipif(
    os.environ.get(memory.ENV, "1").strip().lower() in ("0", "false", "no", "off"),
    reason="the suite runs with memory accounting switched off",
)


CONTENT = {
    "role": "user",
    "content": [{"type": "text", "text": "Read src/app.py and tell me what app() returns."}],
}


def counted(fn: Callable[[], object], runs: int = 4) -> list[int]:
    """Allocation counts of `fn` on this thread, garbage collection held off."""
    counts = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(runs):
            with memory.measure() as m:
                result = fn()
            counts.append(m.count)
            del result
    finally:
        gc.enable()
    return counts


def steady(counts: list[int], check: bool = True) -> int:
    """The count once warm: the last runs must agree."""
    assert not check or counts[-1] == counts[-2] == counts[-3], f"not deterministic: {counts}"
    return counts[-1]


def _linear(path: str, n: int) -> object:
    from smith.session import Session

    s = Session.create(path, name="t", cwd="/p", id="sid")
    for i in range(n):
        s.append("message", {"role": "user", "text": "x" * 40, "n": i}, id=f"e{i}", ts=1000 + i)
    return s


def fork_count(directory: Path, n: int, check: bool = True) -> int:
    directory.mkdir(exist_ok=True)
    session = _linear(str(directory / f"{n}.smith"), n)
    # The paths are made before measuring: building them (pathlib) allocates by how long
    # and deep the temporary directory is, which is not what is measured.
    forks = iter([str(directory / f"{n}-fork-{i}.smith") for i in range(10)])

    def fork() -> object:
        child = session.fork(next(forks))  # type: ignore[attr-defined]
        child.close()
        return child

    count = steady(counted(fork, 5 if check else 8), check)
    session.close()  # type: ignore[attr-defined]
    return count


def load_count(directory: Path, n: int, check: bool = True) -> int:
    from smith._fast._arena import Arena

    directory.mkdir(exist_ok=True)
    path = directory / f"load-{n}.smith"
    _linear(str(path), n).close()  # type: ignore[attr-defined]
    data = path.read_bytes()
    # One read for the whole file: the arena reads 1 MiB chunks, each a memoryview and a
    # readinto call (a few blocks per MiB), which is not what is measured here.
    return steady(counted(lambda: Arena.load(io.BytesIO(data), len(data), chunk=1 << 24), 5), check)


def encode_count() -> int:
    from smith.session import _codec

    frame = _codec.entry_frame
    return steady(
        counted(lambda: frame("a1b2c3d4", "e0f1a2b3", 1 << 40, "message", None, CONTENT), 5)
    )


def idle_turn_count(directory: Path) -> int:
    from smith.effects import ToolContext
    from smith.runtime import Runtime
    from smith.session import Session

    script = directory / "script.json"
    script.write_text(json.dumps({"responses": [{"text": "hello", "stop": "end"}]}))
    runs = iter(range(100))

    async def turn() -> int:
        session = Session.create(str(directory / f"turn-{next(runs)}.smith"), id="sid")
        ctx = ToolContext(root=str(directory), cwd=str(directory), session=session)
        rt = Runtime(session, model=f"scripted:{script}", tools=[], context=ctx)
        rt.prompt("hi")
        await rt.wait_idle()
        record = rt.memory.turn.record()
        await rt.close()
        session.close()
        assert record is not None
        return record[4]

    # The third turn of the process: the free lists and tables a turn touches keep what
    # earlier work left in them, so a fixed sequence in a fresh process is the
    # deterministic path (isolated state), not any turn of a long-running one.
    gc.collect()
    gc.disable()
    try:
        counts = [asyncio.run(turn()) for _ in range(3)]
    finally:
        gc.enable()
    return counts[-1]


def measure_all(directory: Path) -> dict[str, int]:
    # A first pass warms what a process sets up once (caches, free lists), whatever the
    # order the tests ran in.
    fork_count(directory / "warm", 100, check=False)
    load_count(directory / "warm", 100, check=False)
    forks = [fork_count(directory, n) for n in (1000, 4000)]
    assert forks[0] == forks[1], f"forking depends on the entry count: {forks}"
    loads = [load_count(directory, n) for n in (1000, 10_000)]
    assert loads[0] == loads[1], f"loading depends on the entry count: {loads}"
    return {
        "session.fork": forks[0],
        "arena.load": loads[0],
        "entry.encode": encode_count(),
        "turn.idle": idle_turn_count(directory),
    }


def _measured(tmpdir: str | None = None) -> dict[str, int]:
    """The counts from a fresh process (isolated state; str hashing fixed), its scratch
    files under `tmpdir` when given."""

    env = {**os.environ, "PYTHONHASHSEED": "0", "SMITH_MEMORY_ACCOUNTING": "1"}
    if tmpdir is not None:
        env["TMPDIR"] = tmpdir
    r = subprocess.run(
        [sys.executable, __file__], capture_output=True, text=True, env=env, timeout=240
    )
    assert r.returncode == 0, r.stderr[-3000:]
    counts: dict[str, int] = json.loads(r.stdout)
    return counts


def test_exact_allocation_counts_identical_across_runs(tmp_path: Path) -> None:
    from tests.memory_counts import BOUNDS, COUNTS

    # The second run's scratch directory is longer and deeper (as on a CI runner whose
    # TMPDIR is not /tmp): where the files are must not change the counts.
    elsewhere = tmp_path.joinpath("a-longer-temporary-directory", *"bcdefgh")
    elsewhere.mkdir(parents=True)
    first, second = _measured(), _measured(str(elsewhere))
    assert first == second, "the same path allocated differently in two runs"
    assert first == COUNTS, "update tests/memory_counts.py (python tests/test_memory_counts.py)"
    for name, count in COUNTS.items():
        assert count <= BOUNDS[name], f"{name}: {count} is over its bound {BOUNDS[name]}"


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import tests  # noqa: F401  (turns accounting on, as under pytest)

    # One shape of scratch path wherever TMPDIR points: publishing a session file calls
    # os.makedirs, whose allocations depend on the path's depth and one-letter parts.
    with tempfile.TemporaryDirectory(prefix="smith-memory-counts-", dir="/tmp") as d:
        print(json.dumps(measure_all(Path(d)), indent=4))
