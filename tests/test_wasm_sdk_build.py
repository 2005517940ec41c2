"""`smith plugins build` reads plugin.kdl as smith reads it and never writes over the
package's own files: the `module` it names must be a new .wasm file of the package."""

from __future__ import annotations

from pathlib import Path

import pytest

from smith.diagnostics import SmithError
from smith.wasm import build_package, scaffold
from tests.wasm_sdk_fixtures import have_toolchain

needs_c = pytest.mark.skipif(not have_toolchain("c"), reason="no C toolchain (ziglang)")


def _with_module(root: Path, line: str) -> Path:
    kdl = root / "plugin.kdl"
    kept = [x for x in kdl.read_text().splitlines() if not x.startswith("module ")]
    kdl.write_text("\n".join([*kept, line]) + "\n")
    return kdl


@pytest.mark.parametrize(
    "module",
    ["plugin.c", "plugin.kdl", ".", "sdk", "sdk/x.wasm", "README.md", "./", "out"],
)
def test_build_refuses_a_module_that_would_replace_the_package_s_files(
    tmp_path: Path, module: str
) -> None:
    root = scaffold("clash", "c", tmp_path)
    kdl = _with_module(root, f'module "{module}"')
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    with pytest.raises(SmithError) as caught:
        build_package(root)
    text = caught.value.diagnostic.render()
    assert repr(module) in text and str(kdl) in text
    # Nothing of the package was written over, and nothing was left beside it.
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before
    assert not list(tmp_path.glob(".*.tmp"))


def test_build_reports_what_is_wrong_with_plugin_kdl(tmp_path: Path) -> None:
    root = scaffold("badkdl", "c", tmp_path)
    kdl = _with_module(root, "module plugin.wasm")  # a bare word: no KDL string
    with pytest.raises(SmithError) as caught:
        build_package(root)
    assert str(kdl) in caught.value.diagnostic.render()
    assert kdl.read_text().count("module") == 1  # nothing appended


@needs_c
def test_build_reads_the_module_as_smith_does(tmp_path: Path) -> None:
    from smith.packages import read_package

    root = scaffold("raw", "c", tmp_path)
    kdl = _with_module(root, 'module r"out.wasm" // a KDL raw string')
    out = build_package(root)
    assert out == root / "out.wasm" and not (root / "plugin.wasm").exists()
    assert kdl.read_text().count("module") == 1
    assert read_package(str(root)).module == "out.wasm"  # install reads it too


@needs_c
def test_build_adds_module_once_when_the_manifest_names_none(tmp_path: Path) -> None:
    from smith.packages import read_package

    root = scaffold("nomod2", "c", tmp_path)
    kdl = root / "plugin.kdl"
    kdl.write_text(
        "\n".join(x for x in kdl.read_text().splitlines() if not x.startswith("module "))
        + '\n/* module "plugin.c" */'  # a comment: no module, and not to be read as one
    )
    assert build_package(root) == root / "plugin.wasm"
    build_package(root)
    assert read_package(str(root)).module == "plugin.wasm"
    assert kdl.read_text().count('module "plugin.wasm"') == 1


@needs_c
def test_a_c_handler_s_missing_error_or_null_answer_is_named(tmp_path: Path) -> None:
    from tests.wasm_sdk_fixtures import Guest

    root = scaffold("quiet", "c", tmp_path)
    (root / "plugin.c").write_text(
        '#include "smith_plugin.h"\n'
        "bool smith_command(smith_string_t name, smith_string_t args, smith_string_t *ret,\n"
        "                   smith_string_t *err) {\n"
        "  (void)name; (void)err;\n"
        "  if (args.len == 4) { ret->ptr = NULL; ret->len = 100; return true; }\n"
        "  return false;  /* and no *err */\n"
        "}\n"
    )
    guest = Guest(build_package(root))
    assert guest.call("command", "quiet", "") == (
        "err",
        "smith_command returned false without an error",
    )
    assert guest.call("command", "quiet", "null") == (
        "err",
        "smith_command returned a NULL string with a length",
    )


@pytest.mark.skipif(not have_toolchain("python"), reason="no componentize-py")
def test_a_python_error_is_shown_as_python_shows_it_at_the_package_s_path(tmp_path: Path) -> None:
    root = scaffold("pysyn", "python", tmp_path)
    app = root / "app.py"
    lines = app.read_text().splitlines()
    app.write_text("\n".join([*lines, "def broken(:", "    pass"]) + "\n")
    with pytest.raises(SmithError) as caught:
        build_package(root)
    text = caught.value.diagnostic.render()
    assert f'File "{app}", line {len(lines) + 1}' in text
    assert "def broken(:" in text and "SyntaxError: invalid syntax" in text
    assert "/0/" not in text and "backtrace" not in text.lower() and "<string>" not in text


@needs_c
def test_a_c_build_s_warnings_are_said(tmp_path: Path) -> None:
    root = scaffold("cwarn", "c", tmp_path)
    source = root / "plugin.c"
    source.write_text(source.read_text() + "int g(int x) { if (x = 1) return 2; return 0; }\n")
    said: list[str] = []
    build_package(root, said.append)
    warned = "\n".join(said)
    assert "warning" in warned and f"{source}:" in warned and "-Wparentheses" in warned
