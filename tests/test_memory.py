"""Memory accounting by lifetime scope (smith.memory): attribution, cross-scope frees and
resizes, threads, coroutines, ceilings, the switch, and the `smith debug memory` surface.

The suite runs with accounting off; the tests marked `accounting` need the hooks and
run where they are on (a child pytest, tests/accounting.py). Figures are read from scope
records: (slot, kind, name, state, count, frees, allocated, live, peak, hits).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smith import memory
from smith._fast import _memory
from tests.conftest import Result, SmithEnv

COUNT, FREES, ALLOCATED, LIVE, PEAK, HITS = 4, 5, 6, 7, 8, 9
BIG = 1 << 20  # one block that size: far above anything else a few lines allocate

accounting = pytest.mark.accounting  # needs the hooks: runs where they are on


def block(n: int = BIG) -> bytearray:
    return bytearray(n)


def rec(scope: object) -> _memory.Record:
    """A scope's record (every scope here is a real one: accounting is on)."""
    record = scope.record()  # type: ignore[attr-defined]
    assert isinstance(record, tuple)
    return record


@accounting
def test_a_guard_charges_its_block_and_the_innermost_scope_wins() -> None:
    outer = memory.open_scope("turn", "outer")
    inner = memory.open_scope("kernel", "inner")
    with outer:
        a = block()
        with inner:
            b = block()
        c = block()
    o, i = outer.record(), inner.record()
    assert o is not None and i is not None
    assert BIG * 2 <= o[LIVE] < BIG * 2 + 4096  # a and c, not b
    assert BIG <= i[LIVE] < BIG + 4096
    assert o[PEAK] >= o[LIVE] and o[COUNT] >= 2
    assert (o[1], o[2], i[1], i[2]) == ("turn", "outer", "kernel", "inner")
    del a, b, c
    assert rec(outer)[LIVE] < 4096
    assert _memory.depth() == 0


@accounting
def test_a_thread_with_no_guard_is_in_the_process_scope() -> None:
    assert _memory.depth() == 0
    before = _memory.record(0)[ALLOCATED]
    x = block()
    assert _memory.record(0)[ALLOCATED] - before >= BIG
    del x


@accounting
def test_a_block_freed_in_another_scope_stays_charged_to_its_owner() -> None:
    owner, other = memory.open_scope("turn", "owner"), memory.open_scope("turn", "other")
    with owner:
        x = block()
    live = rec(owner)[LIVE]
    with other:
        del x
    assert live - BIG - 4096 < rec(owner)[LIVE] <= live - BIG
    assert rec(owner)[FREES] >= 1
    assert rec(other)[FREES] == 0
    assert rec(other)[PEAK] < 4096


@accounting
def test_a_block_resized_in_another_scope_stays_charged_to_its_owner() -> None:
    owner, other = memory.open_scope("turn", "owner"), memory.open_scope("kernel", "other")
    with owner:
        x = block(1000)
    before = owner.record()
    with other:
        x.extend(b"\0" * (BIG * 2))  # realloc of a block the other scope does not own
    after = owner.record()
    assert before is not None and after is not None
    assert after[LIVE] - before[LIVE] >= BIG * 2
    assert after[PEAK] >= after[LIVE]
    assert after[COUNT] == before[COUNT]  # a resize is not a new block
    assert rec(other)[LIVE] < BIG
    del x
    assert rec(owner)[LIVE] < before[LIVE]


@accounting
def test_threads_are_charged_to_their_own_scopes() -> None:
    shared = memory.open_scope("kernel", "shared")
    ready = threading.Barrier(3)
    kept: list[bytearray] = []

    def guarded() -> None:
        ready.wait()
        with shared:
            kept.extend(block() for _ in range(4))

    def unguarded() -> None:
        ready.wait()
        kept.extend(block() for _ in range(4))

    threads = [threading.Thread(target=f) for f in (guarded, guarded, unguarded)]
    mine = memory.open_scope("turn", "main")
    with mine:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    live = rec(shared)[LIVE]
    assert BIG * 8 <= live < BIG * 8 + 64 * 1024  # both guarded threads, exactly summed
    assert rec(mine)[LIVE] < BIG  # never the other threads'
    kept.clear()
    assert rec(shared)[LIVE] < 64 * 1024


@accounting
def test_thread_totals_count_allocations_exactly() -> None:
    with memory.measure() as empty:
        pass
    with memory.measure() as m:
        xs = [bytearray(10) for _ in range(100)]
    assert m.count - empty.count >= 100
    assert m.allocated >= 100 * 10
    del xs


@accounting
def test_run_charges_only_the_coroutines_own_steps() -> None:
    async def owned(gate: asyncio.Event) -> bytearray:
        x = block()
        await gate.wait()
        return x + b""

    async def other(gate: asyncio.Event, out: list[bytearray]) -> None:
        out.append(block(BIG * 3))
        gate.set()

    async def main() -> tuple[object, object]:
        gate = asyncio.Event()
        out: list[bytearray] = []
        scope = memory.open_scope("turn", "owned")
        task = asyncio.ensure_future(scope.run(owned(gate)))
        await asyncio.sleep(0)
        await other(gate, out)
        result = await task
        return scope.record(), result

    figures, result = asyncio.run(main())
    assert isinstance(figures, tuple)
    assert BIG * 2 <= figures[ALLOCATED] < BIG * 3  # its two blocks, not the other task's
    assert len(result) == BIG  # type: ignore[arg-type]


@accounting
def test_a_once_scope_ends_with_its_coroutine_and_passes_exceptions() -> None:
    async def fails() -> None:
        await asyncio.sleep(0)
        raise KeyError("x")

    scope = memory.scope("turn", "failing")

    async def main() -> None:
        with pytest.raises(KeyError):
            await scope.run(fails())

    asyncio.run(main())
    assert scope.closed
    assert rec(scope)[3] == "closed"
    assert _memory.depth() == 0


@accounting
def test_cancelling_a_scoped_coroutine_cancels_the_inner_one() -> None:
    seen: list[str] = []

    async def waits() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def main() -> None:
        task = asyncio.ensure_future(memory.run("turn", "cancelled", waits()))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert seen == ["cancelled"]
    assert _memory.depth() == 0


@accounting
def test_iterate_charges_an_async_generators_steps() -> None:
    async def chunks() -> object:
        for _ in range(3):
            yield block()

    async def main() -> tuple[list[int], object]:
        scope = memory.scope("io", "stream")
        got = [len(c) async for c in scope.iterate(chunks())]  # type: ignore[arg-type]
        return got, scope

    got, scope = asyncio.run(main())
    assert got == [BIG] * 3
    figures = rec(scope)
    assert figures[1] == "io" and figures[3] == "closed" and figures[ALLOCATED] >= BIG * 3


@accounting
def test_ceiling_crossings_are_counted_and_warned_never_enforced(
    caplog: pytest.LogCaptureFixture,
) -> None:
    kernel = memory.KINDS.index("kernel")
    _memory.set_ceiling(kernel, BIG * 2)
    try:
        with caplog.at_level(logging.WARNING, logger="smith.memory"):
            with memory.scope("kernel", "greedy") as scope:
                a = block()
                b = block()  # live passes 2 MiB: one crossing
                c = block()  # still above: no new crossing
                del b, c
                d = block(BIG * 2)  # crosses again
            del a, d
        assert rec(scope)[HITS] == 2
        [warning] = [r for r in caplog.records if "memory.ceiling" in r.getMessage()]
        assert "greedy" in warning.getMessage() and "kernel" in warning.getMessage()
        with memory.scope("kernel", "modest") as modest:
            e = block()
        del e
        assert rec(modest)[HITS] == 0
    finally:
        _memory.set_ceiling(kernel, 0)


@accounting
def test_ceilings_come_from_configuration(senv: SmithEnv) -> None:
    from smith.config import resolve

    env = {**senv.env, "SMITH_MEMORY_CEILING_TURN": "4096"}
    config = resolve(env=env, flags={}, cwd=str(senv.root))
    try:
        memory.configure(config)
        assert _memory.ceiling(memory.KINDS.index("turn")) == 4096
        assert _memory.ceiling(memory.KINDS.index("io")) == 0
    finally:
        _memory.set_ceiling(memory.KINDS.index("turn"), 0)


@accounting
def test_the_table_recycles_ended_scopes_into_their_kinds_row() -> None:
    frame = memory.KINDS.index("frame")
    before = _memory.record(frame)[COUNT]
    n = _memory.SLOTS + 100
    for i in range(n):
        with memory.scope("frame", f"f{i}") as last:
            x = [i]
        del x
    # More scopes than slots, and the last still has a row of its own: ended ones were
    # recycled (a full table would have put it in the kind's row, slot `frame`)...
    assert last.slot >= len(memory.KINDS)  # type: ignore[union-attr]
    assert rec(last)[2] == f"f{n - 1}" and rec(last)[COUNT] >= 1
    # ...their figures added to the kind's row, each having allocated at least once.
    assert _memory.record(frame)[COUNT] - before >= 100


@accounting
def test_report_records_are_json_and_name_their_scopes() -> None:
    with memory.scope("turn", "reported"):
        x = block()
    records = memory.report()
    json.dumps(records)
    assert records[0]["scope"] == "process"
    [mine] = [r for r in records if r["scope"] == "reported"]
    assert mine["kind"] == "turn" and mine["state"] == "closed"
    assert mine["live"] >= BIG and mine["blocks"] >= 1 and mine["peak"] >= mine["live"]  # type: ignore[operator]
    del x


@accounting
def test_a_runtime_has_a_session_scope_and_a_turn_per_round(tmp_path: Path) -> None:
    from tests.runtime_kit import Fake, World, say

    async def main() -> tuple[object, object]:
        rt = World(tmp_path).runtime(Fake(say("one"), say("two")))
        rt.prompt("a")
        await rt.wait_idle()
        first = rt.memory.status()
        rt.prompt("b")
        await rt.wait_idle()
        status = rt.memory.status()
        await rt.close()
        return first, status

    first, status = asyncio.run(main())
    assert isinstance(first, dict) and isinstance(status, dict)
    assert status["session"] > 0 and set(status) == {"session", "turn"}
    names = {str(r["scope"]) for r in memory.report()}
    assert {"turn 1", "turn 2"} <= names


def test_the_suite_runs_with_accounting_off_unless_asked() -> None:
    """Most tests must run the default path: no hooks (tests/__init__.py installs them
    only for SMITH_MEMORY_ACCOUNTING=1, as the child pytest of tests/accounting.py has)."""
    asked = os.environ.get(memory.ENV, "").strip().lower() in ("1", "true", "yes", "on")
    assert memory.enabled() is asked and _memory.installed() is asked


def test_requested_reads_the_flag_then_the_environment() -> None:
    assert memory.requested(["--memory-accounting", "eval", "x"], {})
    assert not memory.requested(["--memory-accounting", "--no-memory-accounting"], {})
    assert not memory.requested(["eval", "--no-memory-accounting"], {memory.ENV: "1"})
    assert memory.requested(["eval", "x"], {memory.ENV: "yes"})
    assert not memory.requested(["eval", "x"], {memory.ENV: "0"})
    assert memory.requested(["debug", "memory", "hi"], {})
    assert not memory.requested(["eval", "remember memory"], {})
    assert not memory.requested(["eval", "debug", "memory"], {})  # a prompt


def test_debug_memory_is_recognised_after_settings() -> None:
    """`smith [settings] COMMAND`: settings with values come before `debug memory`, which
    must still turn accounting on from the start (else the process row misses the start
    and the command says it started late)."""
    assert memory.requested(["--model", "demo", "debug", "memory", "hi"], {})
    assert memory.requested(["--memory-ceiling-turn", "4000", "debug", "memory", "hi"], {})
    assert memory.requested(["--debug", "debug", "memory", "--json", "hi"], {})
    assert memory.requested(["--model=demo", "debug", "memory", "hi"], {})
    assert not memory.requested(["--model", "demo", "eval", "debug", "memory"], {})
    assert not memory.requested(["--model=demo", "eval", "debug", "memory"], {})


SCRIPT = """
import gc, os, sys
keep = [bytes([i % 256]) * (i % 700) for i in range(20000)]   # before the hooks
grow = [bytearray(i % 300) for i in range(5000)]
from smith import memory
assert memory.install() and not memory.install()
from smith._fast import _memory
for b in grow:
    b.extend(b"x" * 100)          # resizing blocks from before: they get headers
del keep[::2]                     # freeing blocks from before
grow.clear()
gc.collect()
stats = _memory.stats()
assert stats["foreign_frees"] >= 10000, stats
assert stats["adopted"] >= 4000, stats
print("ok", memory.enabled())
"""


def test_blocks_from_before_the_hooks_are_freed_and_resized_safely() -> None:
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ok", "True"]


OFF = """
import os
from smith import memory
import smith.session._codec as codec
from smith._fast import _memory
assert not memory.enabled() and not _memory.installed()
assert memory.scope("turn") is memory.OFF and memory.open_scope("io") is memory.OFF
coro = object()
assert memory.run("turn", "t", coro) is coro  # type: ignore
assert codec.entry_frame.__module__ == "smith.session._codec"
assert not hasattr(codec.entry_frame, "__wrapped__")
assert memory.report() == []
print("off")
"""


def test_off_installs_nothing_and_guards_are_no_ops() -> None:
    r = subprocess.run([sys.executable, "-c", OFF], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "off"


def test_tracemalloc_already_tracing_keeps_the_hooks_out() -> None:
    code = (
        "import tracemalloc; tracemalloc.start()\n"
        "from smith import memory\n"
        "assert not memory.install() and not memory.enabled()\n"
        "tracemalloc.stop(); print('refused')"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "refused"


def _script(tmp_path: Path) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"responses": [{"text": "hello", "stop": "end"}]}))
    return str(path)


def test_debug_memory_prints_a_table(smith_process: Callable[..., Result], tmp_path: Path) -> None:
    # Not in-process: `debug memory` installs the hooks, for the life of the process.
    r = smith_process("debug", "memory", "--model", f"scripted:{_script(tmp_path)}", "hi")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    header = ["scope", "kind", "state", "count", "blocks", "allocated", "live", "peak", "hits"]
    assert lines[0].split() == header
    assert lines[1].startswith("process")
    assert any(line.startswith("turn ") for line in lines)


def test_debug_memory_json_is_one_record_per_scope_and_the_turn_is_repeatable(
    smith_process: Callable[..., Result], tmp_path: Path
) -> None:
    script = _script(tmp_path)
    counts = []
    for _ in range(2):
        r = smith_process(
            "debug",
            "memory",
            "--json",
            "--model",
            f"scripted:{script}",
            "hi",
            env={"PYTHONHASHSEED": "0", "SMITH_MEMORY_ACCOUNTING": "1"},
        )
        assert r.code == 0, r.err
        records = [json.loads(line) for line in r.out.splitlines()]
        kinds = {rec["kind"] for rec in records}
        assert {"process", "session", "turn"} <= kinds
        [turn] = [rec for rec in records if rec["scope"] == "turn 1"]
        assert turn["count"] > 0 and turn["peak"] >= turn["live"] >= 0
        assert set(turn) >= {"scope", "kind", "count", "allocated", "live", "peak"}
        counts.append(turn["count"])
    # Nearly the same: the turn's coroutine steps are charged to it, and how many it
    # takes depends on timing (a thread's result ready before it is awaited or not: a
    # few blocks, 509 or 513 on this machine). The hash seed, the model and the work
    # are the same, so anything more is a real change.
    assert abs(counts[0] - counts[1]) <= max(8, counts[0] // 100), counts


def test_debug_memory_says_why_when_accounting_cannot_start(
    smith_process: Callable[..., Result], tmp_path: Path
) -> None:
    """tracemalloc tracing from the start keeps the hooks out: `smith debug memory` must
    say so and fail, not print an empty table and succeed."""
    model = f"scripted:{_script(tmp_path)}"
    for args in (("debug", "memory"), ("debug", "memory", "--json")):
        r = smith_process(*args, "--model", model, "hi", env={"PYTHONTRACEMALLOC": "1"})
        assert r.code == 1, (r.code, r.out, r.err)
        assert r.out == ""
        assert "error: memory accounting could not start" in r.err and "tracemalloc" in r.err


# -- exactness, as a property: blocks of known sizes through every domain ---------------
OPS = st.lists(
    st.tuples(
        st.sampled_from(["alloc", "resize", "free"]),
        st.integers(0, 2),  # the scope doing it
        st.integers(0, 2),  # the domain
        st.integers(0, 70_000),  # a size (pymalloc's and malloc's sizes both)
        st.integers(0, 1_000),  # which block
    ),
    max_size=60,
)


@accounting
@settings(max_examples=60, deadline=None)
@given(OPS)
def test_live_peak_and_counts_stay_exact_whatever_scope_frees_or_resizes(
    ops: list[tuple[str, int, int, int, int]],
) -> None:
    scopes = [memory.open_scope("turn", f"p{i}") for i in range(3)]
    slots = [s.slot for s in scopes]  # type: ignore[union-attr]
    blocks: list[tuple[int, int, int, int]] = []  # (owner, domain, address, size)
    live, peak, count, frees, allocated = [0] * 3, [0] * 3, [0] * 3, [0] * 3, [0] * 3
    try:
        for op, who, domain, size, pick in ops:
            if op == "alloc" or not blocks:
                blocks.append((who, domain, _memory._block(slots[who], domain, size), size))
                count[who] += 1
                allocated[who] += size
                live[who] += size
            elif op == "resize":
                owner, d, address, old = blocks.pop(pick % len(blocks))
                address = _memory._resize(slots[who], d, address, size)
                blocks.append((owner, d, address, size))
                allocated[owner] += max(size - old, 0)
                live[owner] += size - old
            else:
                owner, d, address, old = blocks.pop(pick % len(blocks))
                _memory._release(slots[who], d, address)
                frees[owner] += 1
                live[owner] -= old
            for i in range(3):
                peak[i] = max(peak[i], live[i])
        for i, scope in enumerate(scopes):
            r = rec(scope)
            got = (r[COUNT], r[FREES], r[ALLOCATED], r[LIVE], r[PEAK])
            assert got == (count[i], frees[i], allocated[i], live[i], peak[i])
    finally:
        for _owner, d, address, _size in blocks:
            _memory._release(0, d, address)
        for scope in scopes:
            scope.close()
