"""Reading KDL configuration files into located settings. The only module importing kdl.

A file maps onto dotted keys:

    model "claude-sonnet-4" {        # model = "claude-sonnet-4"
        temperature 0.3              # model.temperature = 0.3
    }
    tools.bash.timeout 300           # a dotted node name is the same as nesting
    tools { read max-lines=4000; }   # properties are keys too: tools.read.max-lines

kdl-py (KDL 1.0) turns every number into a float and keeps no positions, so we take
every value raw through a catch-all value converter: integers stay integers, and each
value keeps its line, column and character span (the span lets `config set` rewrite it
in place without disturbing comments or layout).
"""

from __future__ import annotations

from kdl.errors import ParseError, ParseFragment
from kdl.parsefuncs import parse as kdl_parse
from kdl.parsing import ParseConfig
from kdl.types import Binary, Decimal, Hex, Node, Null, Octal, Value

from smith.config._located import KDL_SHAPE, Located
from smith.diagnostics import DiagnosticKind, Source

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.diagnostics import Diagnostic

KDL_SYNTAX = DiagnosticKind(
    "config.kdl-syntax",
    what="this is not valid KDL: {detail}",
    why="smith reads configuration as KDL 1.0 and cannot guess what a malformed line means",
    fix="correct the file at that position. A setting is a node name then one value, e.g. "
    'model "claude-sonnet-4" or tools.bash.timeout 300; strings take double quotes; in KDL '
    "1.0 a block written on one line needs `;` after each setting: model {{ temperature 0.3; }}",
)


class _Value:
    __slots__ = ("column", "end", "line", "start", "value")

    def __init__(self, value: object, line: int, column: int, start: int, end: int) -> None:
        self.value = value
        self.line = line
        self.column = column
        self.start = start
        self.end = end


class _Node:
    __slots__ = ("args", "children", "column", "line", "name", "props")

    def __init__(
        self,
        name: str,
        args: list[_Value],
        props: dict[str, _Value],
        children: list[_Node],
        line: int,
        column: int,
    ) -> None:
        self.name = name
        self.args = args
        self.props = props
        self.children = children
        self.line = line
        self.column = column


def _native(value: Value, raw: str) -> object:
    if isinstance(value, Decimal):
        # kdl-py keeps "300" as mantissa 300.0; the source text tells an integer apart.
        digits = raw.replace("_", "")
        if not any(c in raw for c in ".eE"):
            return int(digits.lstrip("+"))
        return float(digits)  # from the text: kdl-py's mantissa*10**exp loses precision
    if isinstance(value, Hex | Octal | Binary):
        return int(value.value)
    if isinstance(value, Null):
        return None
    return value.value


class _Reader:
    """Parses one file, recording a position for every node and value."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.line_starts = [0]
        for i, ch in enumerate(text):
            if ch == "\n":
                self.line_starts.append(i + 1)

    def _offset(self, line: int, column: int) -> int:
        return self.line_starts[line - 1] + column - 1

    def _position(self, offset: int) -> tuple[int, int]:
        import bisect

        index = bisect.bisect_right(self.line_starts, offset) - 1
        return index + 1, offset - self.line_starts[index] + 1

    def value(self, value: Value, fragment: ParseFragment) -> _Value:
        # The fragment's position (via the public error()) is where the value ends.
        at = fragment.error("")
        end = self._offset(at.line, at.col)
        start = end - len(fragment.fragment)
        line, column = self._position(start)
        return _Value(_native(value, fragment.fragment), line, column, start, end)

    def node(self, node: Node, fragment: ParseFragment) -> _Node:
        at = fragment.error("")
        # Children were converted first, so every arg, prop and child is already ours.
        children: list[_Node] = [c for c in node.nodes if isinstance(c, _Node)]
        return _Node(node.name, list(node.args), dict(node.props), children, at.line, at.col)

    def parse(self) -> list[_Node]:
        config = ParseConfig(
            nativeUntaggedValues=False,
            nativeTaggedValues=False,
            valueConverters={...: self.value},
            nodeConverters={...: self.node},
        )
        # The node converter replaced every kdl Node with a _Node.
        return [node for node in kdl_parse(self.text, config).nodes if isinstance(node, _Node)]


def read_settings(path: str, text: str) -> tuple[list[Located], list[Diagnostic]]:
    """Every setting in `text` in file order, and what is wrong with the file's shape."""
    reader = _Reader(text)
    try:
        nodes = reader.parse()
    except ParseError as exc:
        detail = str(exc.msg).split("parse error:", 1)[-1].strip()
        return [], [
            KDL_SYNTAX(source=Source("file", f"{path}:{exc.line}:{exc.col}"), detail=detail)
        ]
    except RecursionError:  # kdl-py parses recursively: a file of nodes nested thousands deep
        detail = "nodes are nested too deeply to read (settings nest a few levels at most)"
        return [], [KDL_SYNTAX(source=Source("file", f"{path}:1:1"), detail=detail)]
    settings: list[Located] = []
    problems: list[Diagnostic] = []

    def walk(node: _Node, prefix: str) -> None:
        key = prefix + node.name
        where = Source("file", f"{path}:{node.line}:{node.column}")
        if not node.args and not node.props and not node.children:
            problems.append(KDL_SHAPE(source=where, field=key, key=key, problem="has no value"))
        if node.args:
            # Several values make a list; whether the setting takes one is the schema's call.
            first, last = node.args[0], node.args[-1]
            value = first.value if len(node.args) == 1 else [a.value for a in node.args]
            settings.append(
                Located(
                    key,
                    value,
                    path,
                    first.line,
                    first.column,
                    first.start,
                    last.end,
                    (node.line, node.column),
                )
            )
        for name, prop in node.props.items():
            settings.append(
                Located(
                    f"{key}.{name}",
                    prop.value,
                    path,
                    prop.line,
                    prop.column,
                    prop.start,
                    prop.end,
                    (node.line, node.column),
                )
            )
        for child in node.children:
            walk(child, key + ".")

    for node in nodes:
        walk(node, "")
    return settings, problems
