"""The parts of KDL handling that need no KDL parser: a setting as read from a file, and
values written as KDL literals. Kept free of kdl so that cached reads never import it."""

from __future__ import annotations

from smith.diagnostics import DiagnosticKind, Source

KDL_SHAPE = DiagnosticKind(
    "config.kdl-shape",
    what="this setting {problem}",
    why="each setting is one node with one value (several only for list settings), or a "
    "block of nested settings",
    fix="write it as `{key} VALUE`, or put at least one setting inside its braces, or remove it",
)


class Located:
    """A setting read from a file: dotted key, native value, and where it stands."""

    __slots__ = ("column", "end", "key", "key_at", "line", "path", "start", "value")

    def __init__(
        self,
        key: str,
        value: object,
        path: str,
        line: int,
        column: int,
        start: int,
        end: int,
        key_at: tuple[int, int],
    ) -> None:
        self.key = key
        self.key_at = key_at  # (line, column) of the node that names the key
        self.value = value
        self.path = path
        self.line = line
        self.column = column
        self.start = start  # character offsets of the value's text, for in-place edits
        self.end = end

    @property
    def source(self) -> Source:
        """Where the value stands."""
        return Source("file", f"{self.path}:{self.line}:{self.column}")

    @property
    def key_source(self) -> Source:
        """Where the key is named (for unknown keys)."""
        return Source("file", f"{self.path}:{self.key_at[0]}:{self.key_at[1]}")


def format_value(value: object) -> str:
    """`value` as a KDL 1.0 literal."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):  # a list setting: one KDL value after another
        return " ".join(format_value(v) for v in value) or '""'

    text = str(value)
    escaped = (
        text.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )
    return f'"{escaped}"'
