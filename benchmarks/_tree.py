"""Run smith from a given source tree: the baseline of a benchmark, in the same run.

A benchmark that compares this tree with another commit (its parent, say) measures both
in child processes started the same way, one per tree:

    python benchmarks/_tree.py ROOT -m smith eval ...     # smith's CLI from ROOT
    python benchmarks/_tree.py ROOT SCRIPT ARGS...        # a script, smith from ROOT
    python benchmarks/_tree.py ROOT --check               # where smith is loaded from

The editable install maps `smith`, `smith.frontends` and `smith.plugins` to /work/main's
directories (a finder at the end of `sys.meta_path`), so PYTHONPATH alone would load the
other tree's `smith` with this tree's frontends and plugins. The launcher puts a finder
for ROOT's three directories first instead; the rest of each package (and its Cython
extensions, which must be built in ROOT) is found below them as usual.

`baseline(spec)` gives the tree for a commit (extracted with `git archive` into a cache
directory and its extensions built there, once) or takes a directory as it is.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import runpy
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve()
REPO = HERE.parents[1]
PACKAGES = {"smith": "smith", "smith.frontends": "frontends", "smith.plugins": "plugins"}


class _Tree(importlib.abc.MetaPathFinder):
    def __init__(self, root: Path) -> None:
        self.root = root

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        directory = PACKAGES.get(fullname)
        if directory is None:
            return None
        package = self.root / directory
        return importlib.util.spec_from_file_location(
            fullname, package / "__init__.py", submodule_search_locations=[str(package)]
        )


def command(root: Path | str, *args: str) -> list[str]:
    """The argv that runs `args` (`-m smith ...`, a script, `--check`) with smith from `root`."""
    return [sys.executable, str(HERE), str(root), *args]


def check(root: Path | str) -> None:
    """Fail unless smith, its frontends, plugins and extensions load from `root`."""
    out = subprocess.run(command(root, "--check"), capture_output=True, text=True, check=False)
    resolved = str(Path(root).resolve())
    files = out.stdout.split()
    if out.returncode or len(files) != 4 or not all(f.startswith(resolved) for f in files):
        raise RuntimeError(f"smith does not load from {root}: {out.stdout}{out.stderr[-800:]}")


def baseline(spec: str) -> Path:
    """The tree to compare with: `spec` is a directory holding a checkout (used as it is)
    or a commit of this repository (HEAD~1, a hash), extracted into a cache directory and
    built there the first time."""
    if (Path(spec) / "smith" / "__init__.py").is_file():
        return Path(spec).resolve()
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", f"{spec}^{{commit}}"],
                         capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    root = Path(tempfile.gettempdir()) / f"smith-bench-{sha[:12]}"
    if not (root / ".built").exists():
        root.mkdir(exist_ok=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", sha],
                                 capture_output=True, check=True).stdout  # fmt: skip
        subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
        subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=root,
                       capture_output=True, check=True)  # fmt: skip
        (root / ".built").write_text(sha + "\n")
    check(root)
    return root


def _main(argv: list[str]) -> None:
    root = Path(argv[0]).resolve()
    sys.meta_path.insert(0, _Tree(root))
    if argv[1] == "--check":
        import smith
        import smith._fast._arena as fast
        import smith.frontends
        import smith.plugins

        for module in (smith, smith.frontends, smith.plugins, fast):
            print(os.path.realpath(str(module.__file__)))
    elif argv[1] == "-m":
        sys.argv = [argv[2], *argv[3:]]
        runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv[1:]
        sys.path[0] = str(Path(argv[1]).resolve().parent)
        runpy.run_path(argv[1], run_name="__main__")


if __name__ == "__main__":
    _main(sys.argv[1:])
