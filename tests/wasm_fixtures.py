"""The test guest of smith's WebAssembly host (tests/wasm_guest/app.py: one behaviour
per command argument, setting or tool), built once per test session with componentize-py,
and packages of it under any name."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from smith.packages import CommandDecl, Grants, OptionDecl, PackageManifest, ToolDecl

MAIN = Path(__file__).resolve().parent.parent
WIT = MAIN / "smith" / "wasm" / "wit"
GUEST_SOURCE = Path(__file__).resolve().parent / "wasm_guest"


def build_guest(out: Path) -> Path:
    """tests/wasm_guest built to `out`/guest.wasm (about 6 s)."""
    tool = shutil.which("componentize-py") or str(Path(sys.executable).parent / "componentize-py")
    if not Path(tool).exists():
        pytest.skip("componentize-py is not installed (the plugins extra)")
    out.mkdir(parents=True, exist_ok=True)
    module = out / "guest.wasm"
    subprocess.run(
        [tool, "-d", str(WIT), "-w", "plugin", "componentize", "-p", str(GUEST_SOURCE),
         "--stub-wasi", "app", "-o", str(module)],
        check=True, capture_output=True, cwd=out,
    )  # fmt: skip
    return module


@pytest.fixture(scope="session")
def guest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built guest: once per session, however many modules import this fixture (each
    import is a fixture of its own to pytest, so the build is kept by path)."""
    out = tmp_path_factory.getbasetemp() / "wasm-guest"
    module = out / "guest.wasm"
    if module.is_file():
        return module
    return build_guest(out)


def package(guest: Path, name: str = "wg", **kw: Any) -> PackageManifest:
    """A package of the test guest named `name`, with its command `/name`."""
    fields: dict[str, Any] = {
        "module": guest.name,
        "sdk": "1",
        "commands": (CommandDecl(name, "Test \x1b[31mcommand\x1b[0m", "[ARGS]"),),
        "grants": Grants(),
    }
    fields.update(kw)
    return PackageManifest(name, "0.1.0", str(guest.parent), **fields)


def settings(**values: str) -> tuple[OptionDecl, ...]:
    """Options whose defaults are `values` (the guest reads them at start)."""
    return tuple(OptionDecl(k, "string", v, f"test {k}") for k, v in values.items())


WC = ToolDecl(
    "wc",
    "Count words",
    {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "reads",
)
BOOM = ToolDecl("boom", "Trap", {"type": "object", "properties": {}}, "reads")


def notices(w: Any) -> list[str]:
    """What the user was told (a runtime_kit World): notices, and why a command failed
    (its input_handled's error)."""
    told = []
    for e in w.events:  # in the order they were said
        if e["type"] == "ui" and e["intent"] == "notify":
            told.append(e["text"])
        elif e["type"] == "input_handled" and e.get("error"):
            told.append(e["error"])
    return told
