"""The tables of docs/events.md, generated from the declarations (`python -m
smith.protocol` rewrites them; tests/test_protocol.py fails when they drift)."""

from __future__ import annotations

import re
from pathlib import Path

from smith.protocol._events import EVENTS

BEGIN = "<!-- events: generated from smith.protocol (python -m smith.protocol) -->"
END = "<!-- /events -->"


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())


def events_table() -> str:
    """The Types table: each emitted runtime event, its fields and when it comes."""
    rows = ["| type | fields | when |", "| --- | --- | --- |"]
    for tag, cls in EVENTS.items():
        fields = getattr(cls, "fields_doc", None)
        if fields is None:  # a frontend's own record (eval's result), documented there
            continue
        rows.append(f"| `{tag}` | {fields} | {_one_line(cls.__doc__)} |")
    return "\n".join(rows) + "\n"


def with_tables(text: str) -> str:
    """`text` (docs/events.md) with its generated table replaced by the current one."""
    pattern = re.compile(re.escape(BEGIN) + r"\n.*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise ValueError(f"docs/events.md has no {BEGIN} ... {END} section")
    return pattern.sub(lambda _: f"{BEGIN}\n{events_table()}{END}", text, count=1)


def update(root: Path) -> bool:
    """Rewrite the generated tables under `root` (a checkout); True if anything changed."""
    path = root / "docs" / "events.md"
    old = path.read_text()
    new = with_tables(old)
    if new != old:
        path.write_text(new)
    return new != old
