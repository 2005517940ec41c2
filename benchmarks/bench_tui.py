"""The interactive app, headless: time to first frame, and frame times while streaming.

Time to first frame: from constructing `SmithApp` (and entering `run_test`) until the
first complete screen is produced, over an empty session and over a 100,000-entry session
(representative message entries on one linear branch, built in memory with
`Session.from_entries`). Textual paints nothing while the app starts (compose, mount and
`App.on_mount` run inside `batch_update`), so the first screen produced already has the
transcript's tail and the status line. The baseline, in the same run and at the same size,
is a bare Textual app with a single `Static`.

Frame times while streaming: a provider streams DELTAS text deltas (a few words each, a
paragraph break now and then, one every PACE seconds as a fast model would) into the
100,000-entry session, the view following the bottom. The baseline is the same stream
into an empty session, so the figures show whether history costs anything per frame.
The answer being written is drawn as Markdown as it arrives (`_render.render_live`); a
third run streams into the 100,000 entries with it drawn as plain text, as the app did
before, so `frame_median_100k_over_plain_tail` is what Markdown costs per frame.

What one frame is. Textual produces a screen update in `Screen._on_timer_update` (the
screen's update timer, at most MAX_FPS a second: layout reflow when needed, then the
compositor renders the dirty regions, which is where the transcript renders its visible
lines, and hands the update to `App._display`), or in `Screen._refresh_layout` and
`Screen._compositor_refresh` called directly (start, resize, batch end). A frame is the
outermost call of any of these that reaches `App._display` with an update for the
current screen, timed from its entry to its return: everything between "the screen is
dirty" and "the bytes are ready". Headless, `App._display` skips encoding the update for
the terminal, so the hook does it (`render_segments`, discarding the string): each frame
costs what it would in a terminal except the write itself. Work the app does between
frames (handling each delta) is not in a frame; the stream's wall time, against
DELTAS * PACE, shows it. `ends_at_bottom` says whether the view is still at the bottom
once the streamed message has been recorded (a figure, not a condition of the run).

    python benchmarks/bench_tui.py     # the figures, as compare.py prints them
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

SIZE = (100, 30)
ENTRIES = 100_000
DELTAS = 2_000
PACE = 0.001  # seconds between deltas
REPEAT = 5  # runs of the cheap first-frame cases (the median is reported)
TIMEOUT = 240.0  # seconds for any one run: a broken app fails the benchmark, never hangs it

TEXT = (
    "the parser now keeps every entry in order so a branch can be read back "
    "without decoding the whole file and each frame renders only what is visible"
)


def _deltas() -> list[str]:
    """DELTAS pieces of a few words each; every 40th ends a paragraph."""
    words, out = TEXT.split(), []
    for i in range(DELTAS):
        piece = [words[(i * 3 + k) % len(words)] for k in range(2 + i % 3)]
        out.append(" ".join(piece) + ("\n\n" if i % 40 == 39 else " "))
    return out


class _Stream:
    """A provider that streams the same text deltas for every request, PACE apart."""

    name = "bench"

    def __init__(self, deltas: list[str], pace: float) -> None:
        self.deltas = deltas
        self.pace = pace

    def pricing(self, model: str) -> Any:
        return None

    async def stream(self, request: Any) -> AsyncIterator[Any]:
        from smith.providers import End, TextDelta

        for text in self.deltas:
            await asyncio.sleep(self.pace)
            yield TextDelta(text)
        yield End("success")


class _Frames:
    """Times each frame Textual produces (see the module docstring), while installed."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.first: float | None = None  # perf_counter when the first frame was ready
        self._displays = 0
        self._depth = 0

    def reset(self) -> None:
        self.times = []

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        from textual.app import App
        from textual.screen import Screen

        originals = {
            (App, "_display"): App._display,
            (Screen, "_on_timer_update"): Screen._on_timer_update,
            (Screen, "_refresh_layout"): Screen._refresh_layout,
            (Screen, "_compositor_refresh"): Screen._compositor_refresh,
        }
        App._display = self._display_hook(App._display)  # type: ignore[method-assign]
        for (cls, name), original in originals.items():
            if cls is Screen:
                setattr(cls, name, self._frame_hook(original))
        try:
            yield
        finally:
            for (cls, name), original in originals.items():
                setattr(cls, name, original)

    def _frame_hook(self, original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def frame(screen: Any, *args: Any, **kwargs: Any) -> Any:
            if self._depth:
                return original(screen, *args, **kwargs)
            self._depth = 1
            displays = self._displays
            start = time.perf_counter()
            try:
                return original(screen, *args, **kwargs)
            finally:
                self._depth = 0
                if self._displays != displays:
                    self.times.append(time.perf_counter() - start)

        return frame

    def _display_hook(self, original: Callable[..., Any]) -> Callable[..., Any]:
        from textual._compositor import CompositorUpdate

        @functools.wraps(original)
        def display(app: Any, screen: Any, renderable: Any) -> Any:
            result = original(app, screen, renderable)
            if renderable is None or app._batch_count or screen is not app.screen:
                return result
            if app.is_headless and isinstance(renderable, CompositorUpdate):
                renderable.render_segments(app.console)  # what a terminal frame encodes
            self._displays += 1
            if self.first is None:
                self.first = time.perf_counter()
            return result

        return display


def _session(n: int) -> Any:
    """An in-memory session of n message entries on one linear branch."""
    from benchmarks._entries import representative_entries
    from smith.session import Session

    entries: list[dict[str, Any]] = []
    parent = None
    extra = n // 6 + 64  # 88 % of representative entries are messages
    while len(entries) < n:
        entries = [e for e in representative_entries(n + extra) if e["kind"] == "message"]
        extra *= 2
    entries = entries[:n]
    for e in entries:
        e["parent"], parent = parent, e["id"]
    info = {"id": f"bench-{n}", "name": f"bench {n}", "cwd": tempfile.gettempdir()}
    return Session.from_entries(entries, info=info)


def _smith_app(session: Any, provider: Any) -> Any:
    from smith.effects import ToolContext
    from smith.frontends.tui._app import SmithApp
    from smith.runtime import Runtime

    root = tempfile.gettempdir()

    def runtime(*given: Any) -> Any:  # called with the session, or with nothing
        shown = given[0] if given else session
        ctx = ToolContext(root=root, cwd=root, session=shown)
        return Runtime(shown, model=(provider, "bench"), tools=[], context=ctx)

    return SmithApp(runtime, session)


def _bare_app() -> Any:
    from textual.app import App, ComposeResult
    from textual.widgets import Static

    class Bare(App[None]):
        def compose(self) -> ComposeResult:
            yield Static("a bare Textual app")

    return Bare()


async def _first_frame(make: Callable[[], Any], frames: _Frames) -> float:
    frames.first = None
    start = time.perf_counter()
    app = make()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
    if frames.first is None:
        raise RuntimeError("the app produced no frame")
    return frames.first - start


async def _open_and_stream(session: Any, frames: _Frames) -> dict[str, Any]:
    """Open the app over `session` (time to first frame), then stream into it."""
    deltas = _deltas()
    frames.first = None
    start = time.perf_counter()
    app = _smith_app(session, _Stream(deltas, PACE))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        if frames.first is None:
            raise RuntimeError("the app produced no frame")
        first = frames.first - start
        before = len(session)
        frames.reset()
        started = time.perf_counter()
        await pilot.press("g", "o", "enter")
        deadline = started + 30
        while not (app.runtime and app.runtime.busy) and len(session) == before:
            if time.perf_counter() > deadline:
                raise RuntimeError("the app did not take the prompt")
            await asyncio.sleep(0.001)
        assert app.runtime is not None
        await asyncio.wait_for(app.runtime.wait_idle(), TIMEOUT)
        streamed = time.perf_counter() - started
        await pilot.pause()
        times = frames.times
        view = app.query_one("#transcript")
        at_bottom = view.scroll_y == view.max_scroll_y  # a figure, not a condition
    last = session.branch()[-1].content
    text = "".join(p.get("text", "") for p in last.get("content", []))
    if text != "".join(deltas):
        raise RuntimeError(f"the stream did not arrive whole: {last.get('stop')!r}")
    return {"first": first, "frames": times, "stream_s": streamed, "at_bottom": at_bottom}


@contextlib.contextmanager
def _plain_tail() -> Iterator[None]:
    """The answer being written drawn as plain text (the baseline of Markdown as it
    streams)."""
    from rich.text import Text

    from smith.frontends.tui import _app
    from smith.text import inert

    drawn = _app.render_live
    _app.render_live = lambda text: Text(inert(text))  # type: ignore[assignment]
    try:
        yield
    finally:
        _app.render_live = drawn  # type: ignore[assignment]


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, -(-len(ordered) * 95 // 100) - 1)]  # nearest rank


def _run(coro: Any) -> Any:
    """One run in a fresh event loop. What the process held before (earlier benchmarks,
    the entries) is frozen out of the garbage collector, so a run's collections traverse
    what the app made, as in a process of its own."""
    import gc

    gc.collect()
    gc.freeze()
    try:
        return asyncio.run(asyncio.wait_for(coro, TIMEOUT))
    finally:
        gc.unfreeze()


def figures() -> dict[str, float]:
    from smith.session import Session

    def empty() -> Any:
        return Session.from_entries([], info={"id": "bench-0", "name": "bench 0", "cwd": "/"})

    big = _session(ENTRIES)
    frames = _Frames()
    with frames.installed():
        # Warm up imports and Textual's caches, so no case pays for loading code.
        _run(_first_frame(_bare_app, frames))
        _run(_first_frame(lambda: _smith_app(empty(), _Stream([], 0)), frames))
        bare = [_run(_first_frame(_bare_app, frames)) for _ in range(REPEAT)]
        first_empty = [
            _run(_first_frame(lambda: _smith_app(empty(), _Stream([], 0)), frames))
            for _ in range(REPEAT)
        ]
        small = _run(_open_and_stream(empty(), frames))
        large = _run(_open_and_stream(big, frames))
        with _plain_tail():
            plain = _run(_open_and_stream(big, frames))
    out = {
        "first_frame_ms": large["first"] * 1e3,
        "first_frame_empty_ms": statistics.median(first_empty) * 1e3,
        "first_frame_bare_ms": statistics.median(bare) * 1e3,
        "deltas": float(DELTAS),
        "stream_paced_s": DELTAS * PACE,
    }
    for prefix, run in (("", large), ("empty_", small), ("plain_", plain)):
        times = [t * 1e3 for t in run["frames"]]
        out |= {
            f"{prefix}frames": float(len(times)),
            f"{prefix}frame_median_ms": statistics.median(times),
            f"{prefix}frame_p95_ms": _p95(times),
            f"{prefix}frame_worst_ms": max(times),
            f"{prefix}stream_s": run["stream_s"],
            f"{prefix}ends_at_bottom": float(run["at_bottom"]),
        }
    return out


def line(f: dict[str, float]) -> str:
    """The figures as compare.py prints them."""
    return (
        f"tui frames       first frame {f['first_frame_ms']:,.0f} ms at 100k entries "
        f"({f['first_frame_empty_ms']:.0f} ms empty, {f['first_frame_bare_ms']:.0f} ms bare "
        f"textual); streaming {f['deltas']:,.0f} deltas into 100k entries: median "
        f"{f['frame_median_ms']:.1f} ms, p95 {f['frame_p95_ms']:.1f} ms, worst "
        f"{f['frame_worst_ms']:.0f} ms of {f['frames']:.0f} frames (empty session: median "
        f"{f['empty_frame_median_ms']:.1f} ms, p95 {f['empty_frame_p95_ms']:.1f} ms, worst "
        f"{f['empty_frame_worst_ms']:.0f} ms of {f['empty_frames']:.0f}); the stream took "
        f"{f['stream_s']:.1f} s ({f['empty_stream_s']:.1f} s empty) for "
        f"{f['stream_paced_s']:.1f} s of pacing; the answer as plain text while it streams "
        f"(before): median {f['plain_frame_median_ms']:.1f} ms, p95 "
        f"{f['plain_frame_p95_ms']:.1f} ms"
    )


class Frames:
    """asv: the figures are measured once (setup_cache) and each track_ method reads one."""

    timeout = 300
    number = 1
    repeat = 1

    def setup_cache(self) -> dict[str, float]:
        return figures()

    def track_first_frame_100k(self, f: dict[str, float]) -> float:
        return f["first_frame_ms"]

    track_first_frame_100k.unit = "ms"  # type: ignore[attr-defined]

    def track_first_frame_empty(self, f: dict[str, float]) -> float:
        return f["first_frame_empty_ms"]

    track_first_frame_empty.unit = "ms"  # type: ignore[attr-defined]

    def track_first_frame_100k_over_bare_textual(self, f: dict[str, float]) -> float:
        return f["first_frame_ms"] / f["first_frame_bare_ms"]

    track_first_frame_100k_over_bare_textual.unit = "x a bare Textual app"  # type: ignore[attr-defined]

    def track_frame_median_100k(self, f: dict[str, float]) -> float:
        return f["frame_median_ms"]

    track_frame_median_100k.unit = "ms"  # type: ignore[attr-defined]

    def track_frame_p95_100k(self, f: dict[str, float]) -> float:
        return f["frame_p95_ms"]

    track_frame_p95_100k.unit = "ms"  # type: ignore[attr-defined]

    def track_frame_worst_100k(self, f: dict[str, float]) -> float:
        return f["frame_worst_ms"]

    track_frame_worst_100k.unit = "ms"  # type: ignore[attr-defined]

    def track_frame_median_100k_over_empty(self, f: dict[str, float]) -> float:
        return f["frame_median_ms"] / f["empty_frame_median_ms"]

    track_frame_median_100k_over_empty.unit = "x the empty session"  # type: ignore[attr-defined]

    def track_frame_median_100k_over_plain_tail(self, f: dict[str, float]) -> float:
        return f["frame_median_ms"] / f["plain_frame_median_ms"]

    track_frame_median_100k_over_plain_tail.unit = "x the answer drawn as plain text"  # type: ignore[attr-defined]

    def track_frames_100k(self, f: dict[str, float]) -> float:
        return f["frames"]

    track_frames_100k.unit = "frames"  # type: ignore[attr-defined]


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    print(line(figures()))
