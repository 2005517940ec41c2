"""Determinism: exact allocation counts of deterministic paths (expected values in
tests/memory_counts.py). The measurements run in fresh processes (isolated state) that
differ in everything that must not matter: the checkout's directory, PYTHONHASHSEED, and
whether modules are compiled from source or loaded from cached bytecode; all must agree
with each other and with the recorded counts. Inside each, every operation is warmed up
and must then repeat its count. Regenerate: python tests/test_memory_counts.py

The interpreter's free lists (tuples, lists, dicts, floats, contexts, async generator
wrappers) hand out objects without calling the allocator, so a count taken over them
depends on what the process did before: compiling a module from source leaves them
fuller than loading its cached bytecode, and a thread's timing changes what they hold.
A full collection empties them, so each measurement starts from one collection.
"""

from __future__ import annotations

import asyncio
import gc
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from smith import memory

CHECKOUT = Path(__file__).resolve().parents[1]


CONTENT = {
    "role": "user",
    "content": [{"type": "text", "text": "Read src/app.py and tell me what app() returns."}],
}


def counted(fn: Callable[[], object], runs: int = 4) -> list[int]:
    """Allocation counts of `fn` on this thread, garbage collection held off."""
    counts = []
    gc.disable()
    try:
        for _ in range(runs):
            gc.collect()  # empties the free lists: every run starts from the same state
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

    # A turn's first runs fill tables that later turns find ready (caches, interned
    # names): the steady count is that of the turns after them, each from one collection.
    gc.disable()
    try:
        counts = []
        for _ in range(12):
            gc.collect()
            counts.append(asyncio.run(turn()))
            if len(counts) >= 3 and counts[-1] == counts[-2] == counts[-3]:
                break
    finally:
        gc.enable()
    return steady(counts)


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


def _measured(
    checkout: Path, pycache: Path, seed: str, *, bytecode: bool
) -> tuple[dict[str, int], str]:
    """The counts from a fresh process running `checkout`'s code with hash seed `seed`,
    and where its smith came from. Its bytecode cache is in `pycache`: with `bytecode`
    it reads what is there and writes what is not; without, every module is compiled
    from source and nothing is written."""
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPYCACHEPREFIX": str(pycache)}
    env.update({memory.ENV: "1", "PYTHONPATH": str(checkout)})  # its smith, whatever is installed
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    script = str(checkout / "tests" / Path(__file__).name)
    args = [sys.executable, *([] if bytecode else ["-B"]), script]
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    found = json.loads(r.stdout)
    return found["counts"], found["smith"]


def _copy(destination: Path) -> Path:
    """This checkout's code, as imported here (with its compiled modules), elsewhere."""
    import plugins
    import smith

    ignore = shutil.ignore_patterns("__pycache__")
    for module in (smith, plugins):
        source = Path(str(module.__file__)).parent
        shutil.copytree(source, destination / source.name, ignore=ignore)
    shutil.copytree(CHECKOUT / "tests", destination / "tests", ignore=ignore)
    return destination


def test_exact_allocation_counts_identical_across_processes_directories_seeds_bytecode(
    tmp_path: Path,
) -> None:
    from tests.memory_counts import BOUNDS, COUNTS, SPREAD

    cache, none = tmp_path / "pycache", tmp_path / "no-pycache"
    runs = {}
    # Compiled from source (nothing cached, nothing written), then from cached bytecode
    # (written by a run before it), with different hash seeds.
    runs["from source, seed 0"] = _measured(CHECKOUT, none, "0", bytecode=False)[0]
    _measured(CHECKOUT, cache, "1", bytecode=True)  # compiles, and writes the cache
    assert any(cache.rglob("smith/session/*.pyc")) and any(cache.rglob("asyncio/*.pyc"))
    runs["cached bytecode, seed 2"] = _measured(CHECKOUT, cache, "2", bytecode=True)[0]
    # Another checkout directory, longer and deeper, with another seed.
    elsewhere = _copy(tmp_path.joinpath("a-checkout-somewhere-else", *"bcdefgh", "smith"))
    counts, where = _measured(elsewhere, none, "12345", bytecode=False)
    assert where == str(elsewhere / "smith" / "__init__.py")
    runs["another directory, seed 12345"] = counts
    first = next(iter(runs.values()))
    assert all(counts == first for counts in runs.values()), (
        f"the same paths allocated differently: {runs}"
    )
    moved = {n: (c, COUNTS[n]) for n, c in first.items() if abs(c - COUNTS[n]) > SPREAD[n]}
    assert first.keys() == COUNTS.keys() and not moved, (
        f"counts (found, recorded) moved past their spread: {moved}; if every run agrees on "
        "a new count, update tests/memory_counts.py (python tests/test_memory_counts.py)"
    )
    for name, count in first.items():
        assert count <= BOUNDS[name], f"{name}: {count} is over its bound {BOUNDS[name]}"


if __name__ == "__main__":
    sys.path.insert(0, str(CHECKOUT))
    import smith
    import tests  # noqa: F401  (turns accounting on, as under pytest)

    # One shape of scratch path wherever TMPDIR points: publishing a session file calls
    # os.makedirs, whose allocations depend on the path's depth and one-letter parts.
    with tempfile.TemporaryDirectory(prefix="smith-memory-counts-", dir="/tmp") as d:
        counts = measure_all(Path(d))
    print(json.dumps({"counts": counts, "smith": smith.__file__}, indent=4))
