"""What a WebAssembly plugin costs (smith.wasm): per-event dispatch to its `tool_call`
handler (the test guest's gate, tests/wasm_guest: deny `rm -rf`, else allow) against
the same handler as a Python plugin, in events per second, the handlers called as the
runtime calls them (event, view); and its load time: cold (compiled: no cache), cached
(deserialized from $SMITH_CACHE_HOME/wasm) and each to its first answer (instantiated,
`start` called, one event); and, for scale, ms per tool call of a runtime whose every
call the gate reviews (none, the Python gate, the wasm gate: the runtime runs each
handler in a thread of its own, whatever it is). The guest is built once with
componentize-py.

    python benchmarks/bench_wasm.py
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

EVENTS = 2000  # events per timed run
EVENT = {"type": "tool_call", "tool_call_id": "c1", "name": "bash", "turn": 1,
         "arguments": {"command": "ls -la src"}}  # fmt: skip


class _View:
    """The little of a RuntimeView the wasm plugin reads."""

    def __init__(self) -> None:
        self.settings: dict[str, object] = {}
        self.context = None
        self.generation = 1

    def post(self, shown: object) -> None:
        pass


def _python_gate(event: dict[str, Any], view: Any) -> list[Any]:
    from smith.sdk import DenyCall

    if "rm -rf" in event.get("arguments", {}).get("command", ""):
        return [DenyCall("no rm -rf here")]
    return []


def _package(module: Path, name: str) -> Any:
    from smith.packages import PackageManifest

    return PackageManifest(name, "0.1.0", str(module.parent), module=module.name,
                           events=("tool_call",))  # fmt: skip


def _rate(handler: Any, view: Any) -> float:
    start = time.perf_counter()
    for _ in range(EVENTS):
        handler(EVENT, view)
    return EVENTS / (time.perf_counter() - start)


CALLS = 20  # tool calls in a runtime run, each reviewed at tool_call


def _runtime_ms_per_call(root: Path, plugins: list[Any], n: int) -> float:
    """ms per tool call of a runtime running CALLS `ls` calls (one a message, each
    reviewed by `plugins` at tool_call) with the test kit's fake provider."""
    from tests.runtime_kit import Fake, World, call, say

    w = World(root / f"rt-{n}")
    fake = Fake(*[call(("ls", {"path": "."})) for _ in range(CALLS)], say("done"))
    start = time.perf_counter()
    w.converse(fake, plugins=plugins)
    took = time.perf_counter() - start
    w.session.close()
    return took * 1e3 / CALLS


def figures(runs: int = 5) -> dict[str, float]:
    from smith.wasm import _cache, wasm_plugin

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.wasm_fixtures import build_guest

    root = Path(tempfile.mkdtemp(prefix="smith-bench-wasm-"))
    saved = os.environ.pop("SMITH_CACHE_HOME", None)
    try:
        module = build_guest(root / "guest")
        view: Any = _View()
        loads: dict[str, list[float]] = {
            "cold": [],
            "cached": [],
            "cold_first": [],
            "cached_first": [],
        }
        for i in range(2):  # compiling is slow: twice is enough for a figure
            home = root / f"home-cold-{i}"
            t = time.perf_counter()
            _cache.precompile(str(module), cache_home=str(home))
            loads["cold"].append(time.perf_counter() - t)
            plugin = wasm_plugin(_package(module, f"cold{i}"), cache_home=str(root / f"home-c{i}"))
            t = time.perf_counter()
            plugin.handlers["tool_call"](EVENT, view)
            loads["cold_first"].append(time.perf_counter() - t)
        warm_home = root / "home-c0"
        for i in range(runs):
            t = time.perf_counter()
            _cache.precompile(str(module), cache_home=str(warm_home))
            loads["cached"].append(time.perf_counter() - t)
            plugin = wasm_plugin(_package(module, f"warm{i}"), cache_home=str(warm_home))
            t = time.perf_counter()
            plugin.handlers["tool_call"](EVENT, view)
            loads["cached_first"].append(time.perf_counter() - t)
        wasm = plugin.handlers["tool_call"]
        rates: dict[str, list[float]] = {"wasm": [], "python": []}
        for _ in range(runs):  # interleaved
            rates["wasm"].append(_rate(wasm, view))
            rates["python"].append(_rate(_python_gate, view))
        from smith.sdk import Plugin

        gate = wasm_plugin(_package(module, "gate"), cache_home=str(warm_home))
        variants = {
            "none": [],
            "python": [Plugin("gate", handlers={"tool_call": _python_gate})],
            "wasm": [gate],
        }
        per_call: dict[str, list[float]] = {k: [] for k in variants}
        n = 0
        for _ in range(3):
            for name, plugins in variants.items():
                n += 1
                per_call[name].append(_runtime_ms_per_call(root, plugins, n))
        runtime = {k: statistics.median(v) for k, v in per_call.items()}
        wasm_rate = statistics.median(rates["wasm"])
        python_rate = statistics.median(rates["python"])
        return {
            "wasm_events_per_s": wasm_rate,
            "python_events_per_s": python_rate,
            "wasm_us_per_event": 1e6 / wasm_rate,
            "python_us_per_event": 1e6 / python_rate,
            "runtime_ms_per_call_none": runtime["none"],
            "runtime_ms_per_call_python": runtime["python"],
            "runtime_ms_per_call_wasm": runtime["wasm"],
            "load_cold_s": statistics.median(loads["cold"]),
            "load_cached_ms": statistics.median(loads["cached"]) * 1e3,
            "first_event_cold_s": statistics.median(loads["cold_first"]),
            "first_event_cached_ms": statistics.median(loads["cached_first"]) * 1e3,
        }
    finally:
        if saved is not None:
            os.environ["SMITH_CACHE_HOME"] = saved
        shutil.rmtree(root, ignore_errors=True)


class WasmPlugin:
    timeout = 900
    number = 1
    repeat = 1

    def setup(self) -> None:
        if (
            shutil.which("componentize-py") is None
            and not (Path(sys.executable).parent / "componentize-py").exists()
        ):
            raise NotImplementedError("componentize-py is not installed")  # asv: skipped
        self.found = figures()

    def track_wasm_events_per_s(self) -> float:
        return self.found["wasm_events_per_s"]

    def track_python_events_per_s(self) -> float:
        return self.found["python_events_per_s"]

    def track_load_cold_s(self) -> float:
        return self.found["load_cold_s"]

    def track_load_cached_ms(self) -> float:
        return self.found["load_cached_ms"]

    def track_first_event_cached_ms(self) -> float:
        return self.found["first_event_cached_ms"]

    def track_runtime_wasm_over_python_ms(self) -> float:
        return self.found["runtime_ms_per_call_wasm"] - self.found["runtime_ms_per_call_python"]

    track_runtime_wasm_over_python_ms.unit = "ms"  # type: ignore[attr-defined]
    track_wasm_events_per_s.unit = "events/s"  # type: ignore[attr-defined]
    track_python_events_per_s.unit = "events/s"  # type: ignore[attr-defined]
    track_load_cold_s.unit = "s"  # type: ignore[attr-defined]
    track_load_cached_ms.unit = "ms"  # type: ignore[attr-defined]
    track_first_event_cached_ms.unit = "ms"  # type: ignore[attr-defined]


if __name__ == "__main__":
    for key, value in figures().items():
        print(f"{key:<24} {value:12.2f}")
