"""The tables of docs/events.md and docs/rpc.md, generated from the declarations
(`python -m smith.protocol` rewrites them; tests/test_protocol.py fails when they drift)."""

from __future__ import annotations

import re
from pathlib import Path

from smith.protocol._events import EVENTS
from smith.protocol._rpc import METHODS

BEGIN = "<!-- events: generated from smith.protocol (python -m smith.protocol) -->"
END = "<!-- /events -->"
RPC_BEGIN = "<!-- methods: {section} (generated from smith.protocol) -->"
RPC_END = "<!-- /methods -->"


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


def methods_table(section: str) -> str:
    """The table of one section of docs/rpc.md's methods."""
    rows = ["| method | params | result |", "|---|---|---|"]
    for m in METHODS:
        if m.section == section:
            rows.append(f"| `{m.name}` | {m.params_doc} | {m.result_doc} |")
    return "\n".join(rows) + "\n"


def with_method_tables(text: str) -> str:
    """`text` (docs/rpc.md) with each section's generated table replaced."""
    for section in dict.fromkeys(m.section for m in METHODS):
        begin = RPC_BEGIN.format(section=section)
        pattern = re.compile(re.escape(begin) + r"\n.*?" + re.escape(RPC_END), re.S)
        if not pattern.search(text):
            raise ValueError(f"docs/rpc.md has no {begin} ... {RPC_END} section")
        replacement = f"{begin}\n{methods_table(section)}{RPC_END}"
        text = pattern.sub(lambda _: replacement, text, count=1)  # noqa: B023 (used at once)
    return text


def update(root: Path) -> bool:
    """Rewrite the generated tables under `root` (a checkout); True if anything changed."""
    changed = False
    for name, rewrite in (("events.md", with_tables), ("rpc.md", with_method_tables)):
        path = root / "docs" / name
        old = path.read_text()
        new = rewrite(old)
        if new != old:
            path.write_text(new)
            changed = True
    return changed
