"""docs/configuration.md's table of settings is generated from the schema and must match.

Regenerate after changing an option:  python tests/test_docs.py
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
BEGIN, END = "<!-- settings:begin -->", "<!-- settings:end -->"


def settings_table() -> str:
    from smith.config import SCHEMA

    rows = ["| key | type | default | flag / environment | description |", "|---|---|---|---|---|"]
    for o in SCHEMA:
        default = (
            "computed"
            if callable(o.default)
            else (
                "unset"
                if o.default is None
                else str(o.default).lower()
                if isinstance(o.default, bool)
                else f"`{o.default}`"
            )
        )
        where = f"`{o.flag}`<br>`{o.env}`"
        note = " Environment or flag only." if o.bootstrap else ""
        rows.append(f"| `{o.key}` | {o.type.describe()} | {default} | {where} | {o.doc}{note} |")
    return "\n".join(rows)


_BLOCK = re.compile(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END), re.S)


def _current() -> str:
    match = _BLOCK.search(DOC.read_text())
    assert match, f"{DOC} lacks the {BEGIN} ... {END} block"
    return match.group(1).rstrip("\n")


def test_settings_table_matches_the_schema() -> None:
    assert _current() == settings_table(), "run: python tests/test_docs.py"


if __name__ == "__main__":
    sys.path.insert(0, str(DOC.parents[1]))
    block = f"{BEGIN}\n{settings_table()}\n{END}"
    DOC.write_text(_BLOCK.sub(lambda _: block, DOC.read_text()))
    print(f"updated {DOC}")
