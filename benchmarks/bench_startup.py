"""Start-up: `smith --help` and `--version` against a bare interpreter in the same run.

The product promise is help within 100 ms; the bound is 2x `python -c pass`. Each
ratio is measured twice: with bytecode caches (`_cached`, how an installed smith starts)
and in the environment as it is (on a machine with PYTHONDONTWRITEBYTECODE=1 every
module is compiled on every start, which costs about 8 ms of `smith --help`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from benchmarks._measure import cached_bytecode_env, smith_command, startup_ratio, wall


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


# -- commands that do work: their start against --help's --------------------------------

COMMANDS = {
    "tools_run": ["tools", "run", "bash", '{"command": "true"}'],
    "eval": ["eval", "--model", "demo", "hi"],
}

_WORK = """
import sys, time
from smith.cli import main
args = sys.argv[1:]
main(args)  # the first call imports and warms what the command needs
start = time.perf_counter()
main(args)
sys.stderr.write(f"\\nWORK {time.perf_counter() - start}\\n")
"""


def _place(directory: str) -> tuple[str, dict[str, str]]:
    """A project (a git repository, as most are) and an environment of its own."""
    project = os.path.join(directory, "project")
    os.makedirs(project)
    subprocess.run(["git", "init", "-q", project], check=True)
    env = cached_bytecode_env(os.path.join(directory, "pycache"))
    env |= {
        "HOME": directory,
        "SMITH_HOME": os.path.join(directory, "data"),
        "SMITH_CONFIG_HOME": os.path.join(directory, "config"),
        "XDG_CONFIG_HOME": os.path.join(directory, "config"),
    }
    return project, env


def _work(args: list[str], project: str, env: dict[str, str]) -> float:
    """Seconds the command's own work takes: its second run in a process that has run
    it once (imports done, caches warm)."""
    r = subprocess.run([sys.executable, "-c", _WORK, *args], cwd=project, env=env,
                       capture_output=True, text=True, check=False)  # fmt: skip
    for line in r.stderr.splitlines():
        if line.startswith("WORK "):
            return float(line.split()[1])
    raise RuntimeError(f"smith {' '.join(args)} failed: {r.stderr[-500:]}")


def command_figures(repeat: int = 11) -> dict[str, float]:
    """Median whole-process ms of `smith --help` and of each command in COMMANDS (runs
    interleaved, bytecode cached), each command's in-process work, and its start
    ((whole - work) / help; the bound is 1.5)."""
    import statistics
    import tempfile

    with tempfile.TemporaryDirectory(prefix="smith-bench-start-") as directory:
        project, env = _place(directory)
        whole: dict[str, list[float]] = {"help": [], **{k: [] for k in COMMANDS}}
        argvs = {"help": ["--help"], **COMMANDS}
        for argv in argvs.values():  # write the bytecode caches
            wall([*smith_command(), *argv], 1, env)
        for _ in range(repeat):
            for name, argv in argvs.items():
                start = time.perf_counter()
                subprocess.run([*smith_command(), *argv], cwd=project, env=env,
                               capture_output=True, check=False)  # fmt: skip
                whole[name].append(time.perf_counter() - start)
        out = {f"{k}_ms": statistics.median(v) * 1e3 for k, v in whole.items()}
        for name, argv in COMMANDS.items():
            work = statistics.median(_work(argv, project, env) for _ in range(3)) * 1e3
            out[f"{name}_work_ms"] = work
            out[f"{name}_start_over_help"] = (out[f"{name}_ms"] - work) / out["help_ms"]
        return out


def command_line(f: dict[str, float]) -> str:
    parts = [
        f"{name.replace('_', ' ')} {f[f'{name}_ms']:.0f} ms (work {f[f'{name}_work_ms']:.0f} ms, "
        f"start {f[f'{name}_start_over_help']:.2f}x help)"
        for name in COMMANDS
    ]
    return f"commands         smith --help {f['help_ms']:.0f} ms; " + "; ".join(parts)


class CommandStart:
    """A command's start, (whole process - its own work) / `smith --help`, in the same run
    (lower is better; the bound is 1.5)."""

    timeout = 600
    number = 1
    repeat = 1
    unit = "x smith --help"

    def setup_cache(self) -> dict[str, float]:
        return command_figures()

    def track_tools_run_start_over_help(self, f: dict[str, float]) -> float:
        return f["tools_run_start_over_help"]

    def track_eval_start_over_help(self, f: dict[str, float]) -> float:
        return f["eval_start_over_help"]


if __name__ == "__main__":
    print(command_line(command_figures()))
