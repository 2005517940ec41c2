"""No import cycles among smith's modules (issue 28): smith/, frontends/ (installed as
smith.frontends) and plugins/ (smith.plugins), imports inside functions counted; imports
under `if TYPE_CHECKING:` and a module's imports of its own parent packages are exempt.
A cycle makes the order modules load in matter and hides a layer that calls back up."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOPS = {"smith": "smith", "frontends": "smith.frontends", "plugins": "smith.plugins"}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for top, name in TOPS.items():
        for path in (ROOT / top).rglob("*.py"):
            if "__pycache__" in path.parts:
                continue
            parts = [*name.split("."), *path.relative_to(ROOT / top).with_suffix("").parts]
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _type_checking_only(tree: ast.Module) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for sub in node.body for n in ast.walk(sub))
    return skipped


def graph() -> dict[str, set[str]]:
    """Each module's imports of smith's modules (the nearest module an import names)."""
    modules = _modules()
    packages = {m for m, p in modules.items() if p.name == "__init__.py"}
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for me, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = _type_checking_only(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom) or id(node) in skipped:
                continue
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = me.split(".") if me in packages else me.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, *([base] if base else [])])
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                         for a in node.names]  # fmt: skip
            for named in names:
                name = named
                while name and name not in modules:
                    name = name.rpartition(".")[0]
                if name and name != me and not me.startswith(name + "."):
                    edges[me].add(name)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    for root, first in edges.items():
        if root in index:
            continue
        work = [(root, iter(sorted(first)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_smiths_modules_import_each_other_in_no_cycle() -> None:
    assert cycles(graph()) == []


def test_the_scan_finds_a_cycle() -> None:
    planted = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(planted) == [["a", "b", "c"]]
    edges = graph()
    assert "smith.runtime._steps" in edges["smith.runtime._loop"]  # imports are read
