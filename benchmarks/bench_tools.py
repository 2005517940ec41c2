"""find and grep over a large real tree (a copy of CPython's standard library) against
ripgrep run directly on the same tree, in the same run. Target: within 1.5x."""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
import tempfile

from benchmarks._measure import best
from smith.effects import ToolContext, builtin_tools
from smith.effects.tools import _rg

TOOLS = builtin_tools()


class Search:
    timeout = 600
    number = 1
    repeat = (3, 5, 60.0)

    def setup_cache(self) -> str:
        tree = tempfile.mkdtemp(prefix="smith-bench-tree-")
        shutil.copytree(
            sysconfig.get_path("stdlib"),
            os.path.join(tree, "Lib"),
            ignore=shutil.ignore_patterns("__pycache__", "site-packages"),
            symlinks=True,
        )
        return tree

    def setup(self, tree: str) -> None:
        self.tree = tree
        self.ctx = ToolContext(root=tree, cwd=tree)

    def _grep(self) -> None:
        TOOLS["grep"].run(self.ctx, {"pattern": r"def \w+_cache\("})

    # The baselines search exactly what the tools search (hidden files, .gitignore
    # honoured, .git skipped): the same rg, run directly, its output thrown away.
    def _rg_grep(self) -> None:
        subprocess.run(
            [_rg.binary(), *_rg.COMMON, r"def \w+_cache\(", self.tree],
            stdout=subprocess.DEVNULL,
            check=False,
        )

    def _grep_common(self) -> None:
        TOOLS["grep"].run(self.ctx, {"pattern": "self"})

    def _rg_grep_common(self) -> None:
        subprocess.run(
            [_rg.binary(), *_rg.COMMON, "self", self.tree], stdout=subprocess.DEVNULL, check=False
        )

    def _find(self) -> None:
        TOOLS["find"].run(self.ctx, {"pattern": "test_*.py"})

    def _rg_find(self) -> None:
        subprocess.run(
            [_rg.binary(), *_rg.COMMON, "--files", "--glob", "test_*.py", self.tree],
            stdout=subprocess.DEVNULL,
            check=False,
        )

    def time_grep(self, tree: str) -> None:
        self._grep()

    def time_rg_grep_baseline(self, tree: str) -> None:
        self._rg_grep()

    def time_find(self, tree: str) -> None:
        self._find()

    def time_rg_find_baseline(self, tree: str) -> None:
        self._rg_find()

    def track_grep_over_rg(self, tree: str) -> float:
        return best(self._grep) / best(self._rg_grep)

    def track_grep_common_over_rg(self, tree: str) -> float:
        """A pattern on most lines: the bound should make it cheaper than rg's full run."""
        return best(self._grep_common) / best(self._rg_grep_common)

    def track_find_over_rg(self, tree: str) -> float:
        return best(self._find) / best(self._rg_find)

    track_grep_over_rg.unit = "x rg"  # type: ignore[attr-defined]
    track_find_over_rg.unit = "x rg"  # type: ignore[attr-defined]
    track_grep_common_over_rg.unit = "x rg"  # type: ignore[attr-defined]


def figures() -> dict[str, float]:
    bench = Search()
    tree = bench.setup_cache()
    try:
        bench.setup(tree)
        return {
            "grep_over_rg": bench.track_grep_over_rg(tree),
            "grep_common_over_rg": bench.track_grep_common_over_rg(tree),
            "find_over_rg": bench.track_find_over_rg(tree),
            "grep_ms": best(bench._grep) * 1e3,
            "rg_ms": best(bench._rg_grep) * 1e3,
        }
    finally:
        shutil.rmtree(tree, ignore_errors=True)


if __name__ == "__main__":
    print(figures())
