"""Helpers shared by the asv suite and benchmarks/compare.py."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time


def smith_command() -> list[str]:
    """The installed console script, as a user runs it (falls back to python -m smith)."""
    script = shutil.which("smith", path=os.path.dirname(sys.executable))
    return [script] if script else [sys.executable, "-m", "smith"]


def wall(argv: list[str], repeat: int, env: dict[str, str] | None = None) -> list[float]:
    """Whole-process wall times of `argv`, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env
        )
        times.append(time.perf_counter() - start)
    return times


def cached_bytecode_env(prefix: str) -> dict[str, str]:
    """The environment with bytecode caching on, into `prefix`: how an installed smith
    starts (pip writes .pyc files; a machine with PYTHONDONTWRITEBYTECODE=1, such as
    this one's sandbox, compiles every module on every start instead)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = prefix
    return env


def startup_ratio(
    args: list[str], repeat: int = 15, *, cached: bool = False
) -> tuple[float, float, float]:
    """(median smith ms, median bare interpreter ms, ratio), runs interleaved so that
    machine noise hits both alike. `cached`: with bytecode caches (warmed first), as
    an installed smith runs; else in the environment as it is."""
    import tempfile

    with tempfile.TemporaryDirectory() as prefix:
        env = cached_bytecode_env(prefix) if cached else None
        if cached:  # write the caches
            wall([sys.executable, "-c", "pass"], 1, env)
            wall([*smith_command(), *args], 1, env)
        bare: list[float] = []
        ours: list[float] = []
        for _ in range(repeat):
            bare += wall([sys.executable, "-c", "pass"], 1, env)
            ours += wall([*smith_command(), *args], 1, env)
    b, s = statistics.median(bare), statistics.median(ours)
    return s * 1e3, b * 1e3, s / b


def best(fn: object, repeat: int = 7) -> float:
    """The fastest of `repeat` calls of `fn`, in seconds (in-process timing)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)
