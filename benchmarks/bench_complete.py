"""`@` completion over 100,000 project paths: the warm query against a plain substring
filter of the same list, in the same run, and the cold list against bare `rg --files`.

The paths are a deterministic synthetic tree shaped like a large repository (1-6
directory levels from a small vocabulary, snake_case names, common extensions). A query
is what `PathIndex.top` does for one keystroke: frizbee's two rankings and the fzf-like
scoring of their best candidates, giving the best 8 with their matched characters. The
baseline is the cheapest thing that could be called filtering: `q in path` over the
already lower-cased list, no ranking at all. QUERIES are what a person types, prefix by
prefix. The issue's budget: first suggestions within 50 ms once the list is warm.

In the app, each key of `@editor` is timed from its event to the end of the first frame
drawn after it (bench_editor's measure), the warm list handed to the editor.

The cold list (`read_listing`: rg, the mentionable filter, directories, the index) is
measured over the same paths as empty files on disk, against `rg --files` alone.

    python -m benchmarks.bench_complete     # the figures
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from typing import Any

from benchmarks._measure import best
from smith.effects import ToolContext
from smith.frontends.tui._files import context_lister, read_listing
from smith.frontends.tui._fuzzy import PathIndex

PATHS = 100_000
WORDS = (
    *("src", "lib", "app", "core", "utils", "tests", "docs", "api", "models", "views"),
    *("widgets", "config", "runtime", "session", "effects", "tools", "frontends"),
    *("plugins", "parser", "editor", "render", "history", "vendor", "components"),
    *("hooks", "services", "store", "assets", "images", "styles"),
)
EXTENSIONS = (".py", ".ts", ".tsx", ".md", ".json", ".rs", ".go", ".css", ".txt", ".yaml")
TYPED = ("editor", "srcapp", "tstrun", "README", "frontends/ed", "cfg.yaml")
QUERIES = [word[:n] for word in TYPED for n in range(1, len(word) + 1)]


def paths(n: int = PATHS, seed: int = 7) -> list[str]:
    r = random.Random(seed)
    out: set[str] = set()
    while len(out) < n:
        dirs = [r.choice(WORDS) for _ in range(r.randint(1, 6))]
        name = "_".join(r.choice(WORDS) for _ in range(r.randint(1, 3))) + r.choice(EXTENSIONS)
        out.add("/".join([*dirs, name]))
    return sorted(out)


def _query_times(index: PathIndex, queries: list[str]) -> list[float]:
    return [best(lambda q=q: index.top(q, 8), 5) for q in queries]  # type: ignore[misc]


def _substring_times(lowered: list[str], queries: list[str]) -> list[float]:
    def substring(q: str) -> list[str]:
        needle = q.lower()
        return [p for p in lowered if needle in p]

    return [best(lambda q=q: substring(q), 5) for q in queries]  # type: ignore[misc]


def query_figures() -> dict[str, float]:
    listed = paths()
    start = time.perf_counter()
    index = PathIndex(listed)
    build = time.perf_counter() - start
    lowered = [p.lower() for p in index.paths]
    ours = _query_times(index, QUERIES)
    plain = _substring_times(lowered, QUERIES)
    return {
        "index_ms": build * 1e3,
        "query_median_ms": statistics.median(ours) * 1e3,
        "query_worst_ms": max(ours) * 1e3,
        "substring_median_ms": statistics.median(plain) * 1e3,
        "substring_worst_ms": max(plain) * 1e3,
        "over_substring": statistics.median(ours) / statistics.median(plain),
    }


def _tree(listed: list[str]) -> str:
    root = tempfile.mkdtemp(prefix="smith-bench-complete-")
    made: set[str] = set()
    for rel in listed:
        parent = os.path.dirname(rel)
        if parent not in made:
            os.makedirs(os.path.join(root, parent), exist_ok=True)
            made.add(parent)
        with open(os.path.join(root, rel), "wb"):
            pass
    return root


def listing_figures() -> dict[str, float]:
    from smith.effects.tools import _rg

    root = _tree(paths())
    try:
        ctx = ToolContext(root=root, cwd=root)
        argv = [_rg.binary(), *_rg.COMMON, "--files", "--null", "."]

        def bare() -> None:
            subprocess.run(argv, cwd=root, stdout=subprocess.DEVNULL, check=False)

        ours = best(lambda: read_listing(context_lister(ctx)), 3)
        rg = best(bare, 3)
        return {"list_ms": ours * 1e3, "rg_files_ms": rg * 1e3, "list_over_rg": ours / rg}
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def _keys(index: PathIndex, frames: Any) -> list[float]:
    """From each key of "@" + TYPED[0] posted to the end of the first frame after it, in
    the app, the warm list given to its editor."""
    from textual import events

    from benchmarks.bench_tui import SIZE, _session, _smith_app, _Stream
    from smith.frontends.tui._files import Listing

    app = _smith_app(_session(1_000), _Stream([], 0))
    out: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        completion = app.editor.completion
        completion.files.listing = Listing(index, len(index), False)
        completion.files.stale = lambda: False  # warm: no reading again while measured
        for char in "@" + TYPED[0]:
            shown = len(frames.ends)
            start = time.perf_counter()
            app.editor.post_message(events.Key(char, char))
            while len(frames.ends) == shown:
                if time.perf_counter() - start > 5:
                    raise RuntimeError("a key press was never drawn")
                await asyncio.sleep(0.0005)
            out.append(frames.ends[shown] - start)
            await pilot.pause()
        if [p for p, _ in completion.matches] != [p for p, _ in index.top(TYPED[0])]:
            raise RuntimeError("the list does not show the matches")
    return out


def keystroke_figures() -> dict[str, float]:
    from benchmarks.bench_editor import _EndFrames
    from benchmarks.bench_tui import _run

    frames = _EndFrames()
    index = PathIndex(paths())
    with frames.installed():
        latency = [t * 1e3 for t in _run(_keys(index, frames))]
    return {"key_median_ms": statistics.median(latency), "key_worst_ms": max(latency)}


def figures() -> dict[str, float]:
    return {**query_figures(), **keystroke_figures(), **listing_figures()}


def line(f: dict[str, float]) -> str:
    return (
        f"@ completion     100k paths warm: a query in median {f['query_median_ms']:.1f} ms "
        f"(worst {f['query_worst_ms']:.1f}), {f['over_substring']:.2f}x a bare substring "
        f"filter ({f['substring_median_ms']:.1f} ms); a key to the list drawn in median "
        f"{f['key_median_ms']:.1f} ms (worst {f['key_worst_ms']:.1f}); the cold list "
        f"{f['list_ms']:.0f} ms, {f['list_over_rg']:.1f}x rg --files ({f['rg_files_ms']:.0f} ms)"
    )


class Complete:
    """asv: measured once (setup_cache), each track_ method reads one figure."""

    timeout = 600
    number = 1
    repeat = 1

    def setup_cache(self) -> dict[str, float]:
        return figures()

    def track_query_median_100k(self, f: dict[str, float]) -> float:
        return f["query_median_ms"]

    track_query_median_100k.unit = "ms"  # type: ignore[attr-defined]

    def track_query_worst_100k(self, f: dict[str, float]) -> float:
        return f["query_worst_ms"]

    track_query_worst_100k.unit = "ms"  # type: ignore[attr-defined]

    def track_query_over_substring(self, f: dict[str, float]) -> float:
        return f["over_substring"]

    track_query_over_substring.unit = "x substring filter"  # type: ignore[attr-defined]

    def track_key_to_list_drawn_worst_100k(self, f: dict[str, float]) -> float:
        return f["key_worst_ms"]

    track_key_to_list_drawn_worst_100k.unit = "ms"  # type: ignore[attr-defined]

    def track_list_over_rg(self, f: dict[str, float]) -> float:
        return f["list_over_rg"]

    track_list_over_rg.unit = "x rg --files"  # type: ignore[attr-defined]


if __name__ == "__main__":
    print(line(figures()))
