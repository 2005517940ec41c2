"""`python -m smith.wasm`: rewrite docs/plugins.md's generated SDK reference (from the WIT;
tests/test_wasm_sdk_drift.py fails when it drifts)."""

from __future__ import annotations

import sys
from pathlib import Path

from smith.wasm._help import with_reference


def main() -> int:
    path = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"
    old = path.read_text(encoding="utf-8")
    new = with_reference(old)
    if new != old:
        path.write_text(new, encoding="utf-8")
        print(f"rewrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
