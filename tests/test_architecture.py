"""The map's rules (docs/architecture.md) hold in the code."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ["asyncio", "textual", "httpx", "pygit2", "wasmtime", "cbor2", "kdl", "zstandard"]
# Where each heavy dependency may be imported (directories or files, relative to the root).
ALLOWED = {
    "textual": ["frontends/tui", "frontends/web"],
    "textual_serve": ["frontends/web"],
    "pygit2": ["smith/vcs"],
    "wasmtime": ["smith/plugins_host"],
    "httpx": ["smith/providers/_http"],
    "kdl": ["smith/config/_kdl.py"],
    "cbor2": ["smith/session", "smith/_fast"],
    "zstandard": ["smith/session", "smith/_fast"],
}


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def _python_files(*dirs: str) -> list[Path]:
    return [p for d in dirs for p in (ROOT / d).rglob("*.py")]


def test_core_never_imports_frontends_or_textual() -> None:
    for path in _python_files("smith"):
        for line, name in _imports(path):
            top = name.split(".")[0]
            assert top not in ("textual", "textual_serve"), f"{path}:{line} imports {name}"
            assert not name.startswith("smith.frontends"), f"{path}:{line} imports {name}"


def test_heavy_dependencies_are_imported_in_one_place_each() -> None:
    for path in _python_files("smith", "frontends", "plugins"):
        rel = path.relative_to(ROOT).as_posix()
        for line, name in _imports(path):
            top = name.split(".")[0]
            if top in ALLOWED:
                assert any(rel == a or rel.startswith(a + "/") for a in ALLOWED[top]), (
                    f"{rel}:{line} imports {name}; only {ALLOWED[top]} may"
                )


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_import_nothing_heavy(flag: str) -> None:
    code = f"import sys; from smith.cli import main; sys.exit(main([{flag!r}]))"
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    order = re.findall(r"\|\s+([\w.]+)\s*$", r.stderr, re.M)
    assert "smith.cli._main" in order  # the measurement saw smith itself
    heavy = sorted(m for m in order if m.split(".")[0] in HEAVY)
    assert heavy == []
    # Costly standard modules stay off smith's own path too (each is several ms here);
    # what the interpreter's site hooks imported before smith is not smith's doing.
    ours = set(order[next(i for i, m in enumerate(order) if m.startswith("smith")) :])
    assert not ours & {"typing", "dataclasses", "inspect", "json", "difflib", "pathlib"}


def test_public_names_of_smith_config_are_exactly_these() -> None:
    import smith.config

    assert sorted(smith.config.__all__) == sorted(
        [
            "LAYERS",
            "SCHEMA",
            "Boolean",
            "Choice",
            "Config",
            "Contribution",
            "Integer",
            "Mismatch",
            "Number",
            "Option",
            "Path",
            "Schema",
            "Section",
            "Setting",
            "String",
            "Strings",
            "ValueType",
            "resolve",
        ]
    )
    for name in smith.config.__all__:
        assert getattr(smith.config, name) is not None
