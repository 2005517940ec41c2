"""The app over a transcript full of large diffs, everything expanded, while a reply streams.

The 100,000-entry session of bench_tui.py, with every edit and write result carrying a
large diff in its details (40-400 changed lines of code) and every bash result its
command, exit status and duration, as the tools record them. The app opens over it
(time to first frame, blocks collapsed to their summary lines), Ctrl+O expands every block
(the frame that draws the expanded diffs in syntax colour: `expand_ms` the first time in
the process, pygments loading its lexers, `expand_again_ms` after collapsing), then a reply
streams in as in bench_tui.py (frame median, p95 and worst): expanded blocks are
highlighted only when drawn, and once drawn their lines are cached, so the history must
cost nothing per frame.

    python benchmarks/bench_tui_review.py
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any


def _with_review_details(session: Any) -> Any:
    """`session`'s entries with edit, write and bash results carrying their details."""
    from smith.session import Session

    entries = []
    for n, entry in enumerate(session.branch()):
        content = dict(entry.content)
        if content.get("role") == "tool_result":
            text = "".join(p.get("text", "") for p in content.get("content", []))
            lines = text.splitlines() or ["pass"]
            name = content.get("tool_name")
            path = f"src/module_{n}.py"
            if name in ("edit", "write"):
                body = [f"-{line}" for line in lines[: len(lines) // 3]] if name == "edit" else []
                body += [f"+{line.replace('value', 'item')}" for line in lines]
                head = f"--- a/{path}\n+++ b/{path}\n@@ -1,{len(lines)} +1,{len(lines)} @@\n"
                content["details"] = {"path": path, "diff": head + "\n".join(body) + "\n"}
            elif name == "bash":
                content["details"] = {"command": "python -m pytest -q", "exit_status": n % 2,
                                      "duration": (n % 97) / 7}  # fmt: skip
        entries.append({"id": entry.id, "parent": entry.parent, "ts": 1, "kind": entry.kind,
                        "content": content})  # fmt: skip
    info = {"id": "bench-review", "name": "bench review", "cwd": "/"}
    return Session.from_entries(entries, info=info)


async def _expand_and_stream(session: Any, frames: Any) -> dict[str, Any]:
    from benchmarks.bench_tui import PACE, SIZE, TIMEOUT, _deltas, _smith_app, _Stream

    deltas = _deltas()
    frames.first = None
    start = time.perf_counter()
    app = _smith_app(session, _Stream(deltas, PACE))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        if frames.first is None:
            raise RuntimeError("the app produced no frame")
        first = frames.first - start
        frames.reset()
        await pilot.press("ctrl+o")
        await pilot.pause()
        expand = max(frames.times) if frames.times else float("nan")
        await pilot.press("ctrl+o")  # collapsed again, then expanded with lexers loaded
        await pilot.pause()
        frames.reset()
        await pilot.press("ctrl+o")
        await pilot.pause()
        again = max(frames.times) if frames.times else float("nan")
        frames.reset()
        await pilot.press("g", "o", "enter")
        await asyncio.sleep(0.05)
        assert app.runtime is not None
        await asyncio.wait_for(app.runtime.wait_idle(), TIMEOUT)
        await pilot.pause()
        times = list(frames.times)
    return {"first": first, "expand": expand, "again": again, "frames": times}


def figures() -> dict[str, float]:
    from benchmarks.bench_tui import (
        ENTRIES,
        _first_frame,
        _Frames,
        _p95,
        _run,
        _session,
        _smith_app,
        _Stream,
    )
    from smith.session import Session

    empty = Session.from_entries([], info={"id": "bench-0", "name": "bench 0", "cwd": "/"})
    session = _with_review_details(_session(ENTRIES))
    frames = _Frames()
    with frames.installed():
        # Warm up imports and Textual's caches (as bench_tui.py does), not the lexers:
        # the first expansion in a process loads them, and is reported as such.
        _run(_first_frame(lambda: _smith_app(empty, _Stream([], 0)), frames))
        run = _run(_expand_and_stream(session, frames))
    times = [t * 1e3 for t in run["frames"]]
    return {
        "first_frame_ms": run["first"] * 1e3,
        "expand_ms": run["expand"] * 1e3,
        "expand_again_ms": run["again"] * 1e3,
        "frames": float(len(times)),
        "frame_median_ms": statistics.median(times),
        "frame_p95_ms": _p95(times),
        "frame_worst_ms": max(times),
    }


def line(f: dict[str, float]) -> str:
    return (
        f"tui review       first frame {f['first_frame_ms']:,.0f} ms at 100k entries with "
        f"diffs; expanding all: {f['expand_ms']:.0f} ms (lexers loading), "
        f"{f['expand_again_ms']:.0f} ms again; streaming expanded: median "
        f"{f['frame_median_ms']:.1f} ms, p95 {f['frame_p95_ms']:.1f} ms, worst "
        f"{f['frame_worst_ms']:.0f} ms of {f['frames']:.0f} frames"
    )


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    print(line(figures()))
