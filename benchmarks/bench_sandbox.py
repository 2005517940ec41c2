"""The shell sandbox's cost: bash running `true` in the default sandbox (workspace-write,
bubblewrap) against the same tool with the sandbox off (its PID namespace from
`unshare`, the same reaper), in the same process and run. Target: at most 15 ms more."""

from __future__ import annotations

import shutil
import statistics
import subprocess
import tempfile
import time

from smith.effects import Sandbox, ToolContext, builtin_tools

BASH = builtin_tools()["bash"]


def _project() -> str:
    root = tempfile.mkdtemp(prefix="smith-bench-sandbox-")
    subprocess.run(["git", "init", "-q", root], check=True)
    return root


def _run(ctx: ToolContext) -> float:
    start = time.perf_counter()
    BASH.run(ctx, {"command": "true"})
    return time.perf_counter() - start


def _contexts(root: str) -> tuple[ToolContext, ToolContext]:
    home = tempfile.mkdtemp(prefix="smith-bench-home-")
    sandboxed = ToolContext(root=root, cwd=root, sandbox=Sandbox(hidden=(home,)))
    return sandboxed, ToolContext(root=root, cwd=root, sandbox=Sandbox(mode="off"))


class Sandboxed:
    timeout = 300
    number = 1
    repeat = (3, 15, 30.0)

    def setup(self) -> None:
        self.root = _project()
        self.sandboxed, self.off = _contexts(self.root)
        if Sandbox().effective != "workspace-write":
            raise NotImplementedError("bubblewrap cannot run here")  # asv: skipped

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def time_true_sandboxed(self) -> None:
        _run(self.sandboxed)

    def time_true_off(self) -> None:
        _run(self.off)

    def track_overhead_ms(self) -> float:
        return figures(self.root)["overhead_ms"]

    track_overhead_ms.unit = "ms"  # type: ignore[attr-defined]


def figures(root: str | None = None, runs: int = 21) -> dict[str, float]:
    """Medians of `runs` interleaved runs each (so drift hits both alike)."""
    made = root is None
    root = root or _project()
    try:
        sandboxed, off = _contexts(root)
        times: dict[str, list[float]] = {"sandboxed": [], "off": []}
        _run(sandboxed), _run(off)  # warm: the probe, the first exec
        for _ in range(runs):
            times["sandboxed"].append(_run(sandboxed))
            times["off"].append(_run(off))
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        return {"sandboxed_ms": med["sandboxed"], "off_ms": med["off"],
                "overhead_ms": med["sandboxed"] - med["off"]}  # fmt: skip
    finally:
        if made:
            shutil.rmtree(root, ignore_errors=True)


def line(f: dict[str, float]) -> str:
    return (f"sandbox          bash true {f['sandboxed_ms']:.1f} ms sandboxed, "
            f"{f['off_ms']:.1f} ms off: {f['overhead_ms']:+.1f} ms")  # fmt: skip


if __name__ == "__main__":
    print(line(figures()))
