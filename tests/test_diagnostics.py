"""Every diagnostic smith can raise has what, why and fix, and never leaks a secret."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import smith
from smith.diagnostics import DiagnosticKind, Source, kinds, register_secret

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [ROOT / "smith", ROOT / "frontends", ROOT / "plugins"]


def _import_everything() -> None:
    for package in ("smith", "smith.frontends", "smith.plugins"):
        module = importlib.import_module(package)
        for info in pkgutil.walk_packages(module.__path__, prefix=f"{package}."):
            if not info.name.endswith(".__main__"):  # running it would run smith
                importlib.import_module(info.name)


_import_everything()
ALL_KINDS = kinds()


def test_the_catalogue_is_not_empty() -> None:
    codes = {k.code for k in ALL_KINDS}
    assert {
        "config.unknown-key",
        "config.invalid-value",
        "config.kdl-syntax",
        "config.untrusted-project",
        "cli.not-built",
        "cli.usage",
        "internal",
    } <= codes


@pytest.mark.parametrize("kind", ALL_KINDS, ids=lambda k: k.code)
def test_every_kind_renders_what_why_and_fix(kind: DiagnosticKind) -> None:
    params = {name: f"<{name}>" for name in kind.params()}
    d = kind(source=Source("file", "/x/config.kdl:1:2"), field="a.b", value="v", **params)
    for part in (d.what, d.why, d.fix):
        assert not re.search(r"\{\w*\}", part), f"{kind.code}: unfilled field in '{part}'"
        assert len(part.split()) >= 3, f"{kind.code}: '{part}' is too terse to help"
    text = d.render()
    assert text.startswith(f"{kind.severity}: /x/config.kdl:1:2: a.b: ")
    assert "\n  why: " in text and "\n  fix: " in text
    assert d.to_dict()["what"] == d.what and d.to_dict()["source"] == {
        "surface": "file",
        "location": "/x/config.kdl:1:2",
    }
    assert (not kind.code.isdigit() and "." in kind.code) or kind.code == "internal"


def _calls(tree: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)]


def test_diagnostics_are_only_made_through_declared_kinds() -> None:
    """A Diagnostic built by hand would escape the catalogue walked above."""
    for base in SOURCES:
        for path in base.rglob("*.py"):
            if path.name == "diagnostics.py":
                continue
            tree = ast.parse(path.read_text(), str(path))
            for call in _calls(tree):
                name = getattr(call.func, "id", getattr(call.func, "attr", ""))
                assert name != "Diagnostic", f"{path}:{call.lineno} builds a Diagnostic"
            # Kinds are declared at module level, so importing the module registers them.
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    for call in _calls(node):
                        assert getattr(call.func, "id", "") != "DiagnosticKind", (
                            f"{path}:{call.lineno} declares a DiagnosticKind inside a body"
                        )


def test_secrets_never_appear() -> None:
    secret = "sk-test-0123456789abcdef"
    register_secret(secret)
    kind = next(k for k in ALL_KINDS if k.code == "config.invalid-value")
    d = kind(
        value=secret,
        source=Source("env", "SMITH_X"),
        field="x",
        expected="a number",
        got=f'"{secret}"',
        doc="d",
        remedy=f"not {secret}",
    )
    assert secret not in d.render() and secret not in str(d.to_dict())
    assert "[secret]" in d.render()
    hidden = kind(value="hunter2", secret=True, expected="e", got="hunter2", doc="d", remedy="r")
    assert "hunter2" not in d.render() + hidden.render()


def test_unexpected_errors_keep_to_the_law() -> None:
    from smith.diagnostics import INTERNAL

    d = INTERNAL(error="ValueError: x")
    assert "bug in smith" in d.why and "--debug" in d.fix
    assert smith.__version__
