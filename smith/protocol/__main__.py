"""`python -m smith.protocol [ROOT]`: rewrite the generated tables of ROOT's docs."""

from __future__ import annotations

import sys
from pathlib import Path

from smith.protocol._docs import update

root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]
print("updated" if update(root) else "up to date")
