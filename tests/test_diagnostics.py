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


def _kinds_by_name() -> dict[str, DiagnosticKind]:
    """Every module-level DiagnosticKind by the name it is declared under (names are unique
    across smith, so a call site can be matched to its kind wherever it was imported)."""
    import sys

    found: dict[str, DiagnosticKind] = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("smith"):
            continue
        for attr, value in vars(module).items():
            if isinstance(value, DiagnosticKind):
                assert found.setdefault(attr, value) is value, f"two kinds named {attr}"
    return found


def test_every_call_site_supplies_every_template_field() -> None:
    """A missing field would turn a diagnostic into a KeyError at the worst moment."""
    kinds_by_name = _kinds_by_name()
    checked = 0
    for base in SOURCES:
        for path in base.rglob("*.py"):
            for call in _calls(ast.parse(path.read_text(), str(path))):
                func = call.func
                if isinstance(func, ast.Attribute) and func.attr == "error":
                    func = func.value
                if not isinstance(func, ast.Name) or func.id not in kinds_by_name:
                    continue
                if any(k.arg is None for k in call.keywords):
                    continue  # **params: checked where they are built
                kind = kinds_by_name[func.id]
                missing = kind.params() - {k.arg for k in call.keywords}
                assert not missing, f"{path}:{call.lineno}: {kind.code} lacks {missing}"
                checked += 1
    assert checked >= len(ALL_KINDS) - 3  # nearly every kind is raised somewhere


def test_credentials_in_a_diagnostic_are_masked_even_when_not_registered() -> None:
    kind = next(k for k in ALL_KINDS if k.code == "runtime.internal")
    d = kind(
        value="Authorization: Bearer abcdef123456",
        problem='HTTPError 401 for {"api_key": "sk-live-0123456789abcdef0123"}',
    )
    text = d.render()
    assert "abcdef123456" not in text and "0123456789abcdef" not in text
    assert "[redacted]" in text and "HTTPError 401" in text
