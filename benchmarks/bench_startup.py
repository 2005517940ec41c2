"""Start-up: `smith --help` and `--version` against a bare interpreter in the same run.

The product promise is help within 100 ms; the bound is 2x `python -c pass`. Each
ratio is measured twice: with bytecode caches (`_cached`, how an installed smith starts)
and in the environment as it is (on a machine with PYTHONDONTWRITEBYTECODE=1 every
module is compiled on every start, which costs about 8 ms of `smith --help`).
"""

from __future__ import annotations

import sys

from benchmarks._measure import smith_command, startup_ratio, wall


class Startup:
    timeout = 300
    repeat = (3, 10, 20.0)
    number = 1

    def time_bare_interpreter(self) -> None:
        wall([sys.executable, "-c", "pass"], 1)

    def time_smith_help(self) -> None:
        wall([*smith_command(), "--help"], 1)

    def time_smith_version(self) -> None:
        wall([*smith_command(), "--version"], 1)


class StartupRatio:
    """Median whole-process time of smith over a bare interpreter (lower is better)."""

    timeout = 300
    number = 1
    repeat = 1
    unit = "x bare python"

    def track_help_ratio(self) -> float:
        return startup_ratio(["--help"])[2]

    def track_version_ratio(self) -> float:
        return startup_ratio(["--version"])[2]

    def track_help_ratio_cached(self) -> float:
        return startup_ratio(["--help"], cached=True)[2]

    def track_version_ratio_cached(self) -> float:
        return startup_ratio(["--version"], cached=True)[2]
