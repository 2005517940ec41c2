"""The shell sandbox's cost: bash running `true` in the default sandbox (workspace-write,
bubblewrap, the socket filter, the walk for git repositories before and after) against
the same tool with the sandbox off (its PID namespace from `unshare`, the same reaper),
in the same process and run; and the sandbox without its socket filter, for the filter's
own share. Target: at most 15 ms more than off.

The walk for repositories (smith.effects._repos.scan) costs one lstat per directory once
its listings are known: `scan_ms` measures it over a tree of SCAN_DIRS directories, listed
(the first walk) and known (every walk after it)."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time

from smith.effects import Sandbox, ToolContext, builtin_tools
from smith.effects._repos import scan
from smith.effects._sandbox import Confinement

BASH = builtin_tools()["bash"]
SCAN_DIRS = 10_000  # directories of the tree the walk is measured over (25 x 20 x 20)


class _Unfiltered(Sandbox):
    """The default sandbox without its socket filter (for the filter's share)."""

    def confinement(self, *, roots: list[str], cwd: str,
                    protected: tuple[str, ...]) -> Confinement:  # fmt: skip
        found = super().confinement(roots=roots, cwd=cwd, protected=protected)
        found.started()  # the filter's pipe closed: the command line has no --seccomp
        return found


def _project() -> str:
    root = tempfile.mkdtemp(prefix="smith-bench-sandbox-")
    subprocess.run(["git", "init", "-q", root], check=True)
    return root


def _tree() -> str:
    """A project of SCAN_DIRS directories with a nested repository deep in it."""
    root = _project()
    for a in range(25):
        for b in range(20):
            for c in range(20):
                os.makedirs(os.path.join(root, f"a{a}", f"b{b}", f"c{c}"))
    os.makedirs(os.path.join(root, "a3", "b4", "c5", ".git"))
    past = time.time() - 60  # older than _repos.RACY: its listings may be kept
    for top, dirs, _ in os.walk(root):
        for name in dirs:
            os.utime(os.path.join(top, name), (past, past))
    return root


def _run(ctx: ToolContext) -> float:
    start = time.perf_counter()
    BASH.run(ctx, {"command": "true"})
    return time.perf_counter() - start


def _contexts(root: str) -> dict[str, ToolContext]:
    home = tempfile.mkdtemp(prefix="smith-bench-home-")
    return {
        "sandboxed": ToolContext(root=root, cwd=root, sandbox=Sandbox(hidden=(home,))),
        "unfiltered": ToolContext(root=root, cwd=root, sandbox=_Unfiltered(hidden=(home,))),
        "off": ToolContext(root=root, cwd=root, sandbox=Sandbox(mode="off")),
    }


class Sandboxed:
    timeout = 300
    number = 1
    repeat = (3, 15, 30.0)

    def setup(self) -> None:
        if Sandbox().effective != "workspace-write":
            raise NotImplementedError("bubblewrap cannot run here")  # asv: skipped
        self.root = _project()
        self.contexts = _contexts(self.root)
        self.tree = _tree()
        scan([self.tree], [".smith"])  # its listings known

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        shutil.rmtree(self.tree, ignore_errors=True)

    def time_true_sandboxed(self) -> None:
        _run(self.contexts["sandboxed"])

    def time_true_unfiltered(self) -> None:
        _run(self.contexts["unfiltered"])

    def time_true_off(self) -> None:
        _run(self.contexts["off"])

    def time_scan_known_tree(self) -> None:
        scan([self.tree], [".smith"])

    def track_overhead_ms(self) -> float:
        return figures(self.root)["overhead_ms"]

    track_overhead_ms.unit = "ms"  # type: ignore[attr-defined]


def figures(root: str | None = None, runs: int = 21) -> dict[str, float]:
    """Medians of `runs` interleaved runs each (so drift hits all alike)."""
    made = root is None
    root = root or _project()
    tree = _tree()
    try:
        contexts = _contexts(root)
        times: dict[str, list[float]] = {name: [] for name in contexts}
        for ctx in contexts.values():
            _run(ctx)  # warm: the probe, the filter built, the first exec
        for _ in range(runs):
            for name, ctx in contexts.items():
                times[name].append(_run(ctx))
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        start = time.perf_counter()
        scan([tree], [".smith"])
        listed = time.perf_counter() - start
        known = []
        for _ in range(5):
            start = time.perf_counter()
            scan([tree], [".smith"])
            known.append(time.perf_counter() - start)
        return {"sandboxed_ms": med["sandboxed"], "off_ms": med["off"],
                "unfiltered_ms": med["unfiltered"],
                "overhead_ms": med["sandboxed"] - med["off"],
                "filter_ms": med["sandboxed"] - med["unfiltered"],
                "scan_listed_ms": listed * 1e3,
                "scan_known_ms": statistics.median(known) * 1e3}  # fmt: skip
    finally:
        shutil.rmtree(tree, ignore_errors=True)
        if made:
            shutil.rmtree(root, ignore_errors=True)


def line(f: dict[str, float]) -> str:
    return (f"sandbox          bash true {f['sandboxed_ms']:.1f} ms sandboxed, "
            f"{f['off_ms']:.1f} ms off: {f['overhead_ms']:+.1f} ms (socket filter "
            f"{f['filter_ms']:+.1f} ms); repository walk of {SCAN_DIRS:,} directories "
            f"{f['scan_listed_ms']:.0f} ms listed, {f['scan_known_ms']:.0f} ms known")  # fmt: skip


if __name__ == "__main__":
    print(line(figures()))
