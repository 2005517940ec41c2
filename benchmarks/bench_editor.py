"""Typing in the app's editor over a 100,000-entry transcript, headless.

KEYS characters are typed one at a time into the editor of the app opened over the same
in-memory session bench_tui uses, then NEWLINES Ctrl+J presses (each grows the editor by a
row, so the screen is laid out again). For each key: the frames it caused (bench_tui's
definition: from "the screen is dirty" to "the bytes are ready") and its latency, from
the key's event being posted to the end of the first frame that followed. The issue's
budget is one frame (16.7 ms at 60 frames a second).

    python -m benchmarks.bench_editor     # the figures
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from benchmarks.bench_tui import (
    ENTRIES,
    SIZE,
    _Frames,
    _p95,
    _run,
    _session,
    _smith_app,
    _Stream,
)

KEYS = "the parser keeps every entry in order"
NEWLINES = 6  # within tui.editor.max-lines (8): each one grows the editor


async def _type(session: Any, frames: _EndFrames) -> dict[str, list[float]]:
    from textual import events

    app = _smith_app(session, _Stream([], 0))
    out: dict[str, list[float]] = {"key": [], "key_frames": [], "newline": [], "nl_frames": []}
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.pause(0.2)
        keys = [(c, "key") for c in KEYS] + [("\n", "newline")] * NEWLINES
        for char, kind in keys:
            name = "ctrl+j" if char == "\n" else ("space" if char == " " else char)
            frames.reset()
            shown = len(frames.ends)
            start = time.perf_counter()
            app.editor.post_message(events.Key(name, None if char == "\n" else char))
            while len(frames.ends) == shown:
                if time.perf_counter() - start > 5:
                    raise RuntimeError("a key press was never drawn")
                await asyncio.sleep(0.0005)
            out[kind].append(frames.ends[shown] - start)
            await pilot.pause()
            out["key_frames" if kind == "key" else "nl_frames"] += frames.times
        if app.editor.text != KEYS + "\n" * NEWLINES:
            raise RuntimeError(f"the editor did not take the keys: {app.editor.text!r}")
    return out


class _EndFrames(_Frames):
    """bench_tui's frames, also noting when each one ended."""

    def __init__(self) -> None:
        super().__init__()
        self.ends: list[float] = []

    def _frame_hook(self, original: Any) -> Any:
        timed = super()._frame_hook(original)

        def frame(screen: Any, *args: Any, **kwargs: Any) -> Any:
            count = len(self.times)
            try:
                return timed(screen, *args, **kwargs)
            finally:
                if len(self.times) != count:
                    self.ends.append(time.perf_counter())

        return frame


def figures() -> dict[str, float]:
    big = _session(ENTRIES)
    frames = _EndFrames()
    with frames.installed():
        run = _run(_type(big, frames))
    out: dict[str, float] = {}
    for kind, label in (("key", "key"), ("newline", "newline")):
        latency = [t * 1e3 for t in run[kind]]
        times = [t * 1e3 for t in run["key_frames" if kind == "key" else "nl_frames"]]
        out |= {
            f"{label}_latency_median_ms": statistics.median(latency),
            f"{label}_latency_p95_ms": _p95(latency),
            f"{label}_frame_median_ms": statistics.median(times),
            f"{label}_frame_worst_ms": max(times),
        }
    return out


def line(f: dict[str, float]) -> str:
    return (
        f"tui editor       typing at {ENTRIES // 1000}k entries: a key drawn in median "
        f"{f['key_latency_median_ms']:.1f} ms (p95 {f['key_latency_p95_ms']:.1f}; its frames "
        f"median {f['key_frame_median_ms']:.1f}, worst {f['key_frame_worst_ms']:.1f}); a new "
        f"row in {f['newline_latency_median_ms']:.1f} ms (p95 "
        f"{f['newline_latency_p95_ms']:.1f}; frames worst {f['newline_frame_worst_ms']:.1f})"
    )


class Typing:
    """asv: measured once (setup_cache), each track_ method reads one figure."""

    timeout = 300
    number = 1
    repeat = 1

    def setup_cache(self) -> dict[str, float]:
        return figures()

    def track_key_latency_p95_100k(self, f: dict[str, float]) -> float:
        return f["key_latency_p95_ms"]

    track_key_latency_p95_100k.unit = "ms"  # type: ignore[attr-defined]

    def track_newline_latency_p95_100k(self, f: dict[str, float]) -> float:
        return f["newline_latency_p95_ms"]

    track_newline_latency_p95_100k.unit = "ms"  # type: ignore[attr-defined]


if __name__ == "__main__":
    print(line(figures()))
