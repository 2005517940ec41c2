"""Reading KDL configuration files into located settings. The only module importing kdl.

A file maps onto dotted keys:

    model "claude-sonnet-4" {        # model = "claude-sonnet-4"
        temperature 0.3              # model.temperature = 0.3
    }
    tools.bash.timeout 300           # a dotted node name is the same as nesting
    tools { read max-lines=4000; }   # properties are keys too: tools.read.max-lines
    mcp { server "files" command="python3"; }   # a named block (NAMED_BLOCKS): the
                                     # argument names an entry, mcp.server.files.command

kdl-py (KDL 1.0) turns every number into a float and keeps no positions, so we take
every value raw through a catch-all value converter: integers stay integers, and each
value keeps its line, column and character span (the span lets `config set` rewrite it
in place without disturbing comments or layout).
"""

from __future__ import annotations

import bisect
import math
import re

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

TOO_BIG = DiagnosticKind(
    "config.number-too-large",
    what="cannot read this number: {problem}",
    why="settings hold integers between -2**63 and 2**63-1 and finite numbers; a number "
    "beyond them is a typo (or a file made to make smith spend its time converting it)",
    fix="correct the number at that position, or remove the setting",
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
    __slots__ = ("args", "children", "column", "line", "name", "props", "start")

    def __init__(
        self,
        name: str,
        args: list[_Value],
        props: dict[str, _Value],
        children: list[_Node],
        line: int,
        column: int,
        start: int = 0,
    ) -> None:
        self.name = name
        self.args = args
        self.props = props
        self.children = children
        self.line = line
        self.column = column
        self.start = start  # where its text starts (its tag, or its name)


class _TooBig(ValueError):
    """A number no setting can hold; raised from a converter, at the value."""

    def __init__(self, offset: int, problem: str) -> None:
        super().__init__(problem)
        self.offset = offset
        self.problem = problem


# Integers a setting may hold: what a 64-bit signed integer holds (a timeout, a count, a
# byte size). Larger ones are typos or attacks: Python would need quadratic time to turn
# thousands of digits into an int, and refuses past 4,300 (sys.get_int_max_str_digits).
_INT_BOUND = 1 << 63
_MAX_DIGITS = 40  # more (after signs and underscores) is past the bound whatever they are


def _native(value: Value, raw: str, offset: int) -> object:
    if isinstance(value, Decimal):
        # kdl-py keeps "300" as mantissa 300.0; the source text tells an integer apart.
        digits = raw.replace("_", "")
        if not any(c in raw for c in ".eE"):
            number = int(digits.lstrip("+")) if len(digits) <= _MAX_DIGITS else None
            if number is None or not -_INT_BOUND <= number < _INT_BOUND:
                raise _TooBig(offset, f"the integer {_short(raw)} is too large")
            return number
        result = float(digits)  # from the text: kdl-py's mantissa*10**exp loses precision
        if not math.isfinite(result):
            raise _TooBig(offset, f"the number {_short(raw)} is too large")
        return result
    if isinstance(value, Hex | Octal | Binary):
        number = value.value
        if not -_INT_BOUND <= number < _INT_BOUND:
            raise _TooBig(offset, f"the integer {_short(raw)} is too large")
        return number
    if isinstance(value, Null):
        return None
    return value.value


def _short(raw: str) -> str:
    """A number's text as a diagnostic quotes it: long ones by their ends and length."""
    return raw if len(raw) <= 24 else f"{raw[:10]}...{raw[-6:]} ({len(raw):,} characters)"


class _Reader:
    """Parses one file, recording a position for every node and value.

    Positions come from each value's offset, which kdl-py hands its converters inside a
    ParseFragment, turned into line and column by bisecting the line starts: linear in
    the file. (The fragment's public `error()` computes them by scanning the text from
    its start on every call, which made a file of 8,000 lines take a minute.)
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.line_starts = [0, *(m.end() for m in re.finditer("\n", text))]
        self.last = 0  # where the last value or node converted ends: the parse got that far

    def _position(self, offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(self.line_starts, offset) - 1
        return index + 1, offset - self.line_starts[index] + 1

    def _offset(self, fragment: ParseFragment) -> int:
        """The fragment's offset in the text: kdl-py keeps it as `_i`; if a later version
        does not, the public (slow) way, from line and column."""
        at = getattr(fragment, "_i", None)
        if isinstance(at, int):
            return at
        error = fragment.error("")
        return self.line_starts[error.line - 1] + error.col - 1

    def value(self, value: Value, fragment: ParseFragment) -> _Value:
        end = self._offset(fragment)  # a value's fragment is at its end
        start = end - len(fragment.fragment)
        self.last = end
        line, column = self._position(start)
        return _Value(_native(value, fragment.fragment, start), line, column, start, end)

    def node(self, node: Node, fragment: ParseFragment) -> _Node:
        start = self._offset(fragment)  # a node's fragment starts where its text does
        line, column = self._position(start)
        # Children were converted first, so every arg, prop and child is already ours.
        children: list[_Node] = [c for c in node.nodes if isinstance(c, _Node)]
        return _Node(node.name, list(node.args), dict(node.props), children, line, column, start)

    def parse(self) -> list[_Node]:
        config = ParseConfig(
            nativeUntaggedValues=False,
            nativeTaggedValues=False,
            valueConverters={...: self.value},
            nodeConverters={...: self.node},
        )
        # The node converter replaced every kdl Node with a _Node.
        return [node for node in kdl_parse(self.text, config).nodes if isinstance(node, _Node)]

    def unreadable_number(self) -> int:
        """Where the number kdl-py itself could not read starts (an exponent of thousands
        of digits): the first run of digits past what was read."""
        found = _LONG_DIGITS.search(self.text, self.last)
        return found.start() if found else self.last


_LONG_DIGITS = re.compile(rf"[+-]?[0-9][0-9_.]*(?:[eE][+-]?)?[0-9_]{{{_MAX_DIGITS},}}")


# Nodes whose one argument names an entry of a block the user makes several of: every
# server of `mcp { server "files" command="python3"; server "web" url="..."; }` and every
# hook of `hooks { hook "lint" on="after-tool" command="ruff check ."; }`.
NAMED_BLOCKS = frozenset({"mcp.server", "hooks.hook"})


def _entry(key: str, node: _Node) -> str | None:
    """The name a named block's node gives its entry (`server "files"` under mcp:
    files), or None when the node is no named block."""
    if key in NAMED_BLOCKS and len(node.args) == 1 and isinstance(node.args[0].value, str):
        return node.args[0].value
    return None


class Block:
    """A node as the file writes it: its key (a named block's with its name:
    mcp.server.files), where its text starts and ends (past its terminator: the `;`,
    the end of its line or its trailing comment), whether it holds values of its own
    (arguments or properties), and the nodes in its braces."""

    __slots__ = ("children", "end", "key", "start", "valued")

    def __init__(self, key: str, start: int, end: int, valued: bool, children: list[Block]) -> None:
        self.key = key
        self.start = start
        self.end = end
        self.valued = valued
        self.children = children


def blocks(text: str) -> list[Block]:
    """The nodes of a file that reads (read_settings found no problem), as blocks with
    their spans: what an edit takes out or keeps, by the file's structure rather than by
    its braces (a `}` in a string or a comment is no brace). ValueError when it does not
    parse."""
    from kdl.parsefuncs import parseNode
    from kdl.stream import Stream

    reader = _Reader(text)
    try:
        nodes = reader.parse()
    except (ParseError, RecursionError, ValueError) as exc:
        raise ValueError(f"not valid KDL: {exc}") from None
    # kdl-py tells a converter where a node starts, not where it ends: parse each node
    # again from its start, values kept raw, to learn where kdl-py's parse of it ends.
    raw = Stream(text, ParseConfig(nativeUntaggedValues=False, nativeTaggedValues=False))

    def block(node: _Node, prefix: str) -> Block:
        key = prefix + node.name
        entry = _entry(key, node)
        valued = bool(node.props) or (bool(node.args) and entry is None)
        if entry is not None:
            key = f"{key}.{entry}"
        end = parseNode(raw, node.start)[1]
        return Block(key, node.start, end, valued, [block(c, key + ".") for c in node.children])

    return [block(node, "") for node in nodes]


# The parsed nodes of a KDL file, each with its line and column and those of its values
# (`node.args[i].value`, `.line`, `.column`; `node.props[name]`; `node.children`): what a
# reader of another KDL file (plugin.kdl: smith.packages) walks.
KdlNode = _Node
KdlValue = _Value


def read_nodes(path: str, text: str) -> tuple[list[KdlNode], list[Diagnostic]]:
    """The nodes of `text` (the file at `path`), positions kept, integers as integers; or
    no nodes and the diagnostic of why it is no KDL (naming path:line:column)."""
    reader = _Reader(text)
    try:
        return reader.parse(), []
    except ParseError as exc:
        detail = str(exc.msg).split("parse error:", 1)[-1].strip()
        return [], [
            KDL_SYNTAX(source=Source("file", f"{path}:{exc.line}:{exc.col}"), detail=detail)
        ]
    except RecursionError:  # kdl-py parses recursively: a file of nodes nested thousands deep
        detail = "nodes are nested too deeply to read (settings nest a few levels at most)"
        return [], [KDL_SYNTAX(source=Source("file", f"{path}:1:1"), detail=detail)]
    except _TooBig as exc:
        line, column = reader._position(exc.offset)
        return [], [TOO_BIG(source=Source("file", f"{path}:{line}:{column}"), problem=exc.problem)]
    except ValueError:  # kdl-py's own int() of an exponent past Python's digit limit
        line, column = reader._position(reader.unreadable_number())
        problem = "a number has too many digits to read"
        return [], [TOO_BIG(source=Source("file", f"{path}:{line}:{column}"), problem=problem)]


def read_settings(path: str, text: str) -> tuple[list[Located], list[Diagnostic]]:
    """Every setting in `text` in file order, and what is wrong with the file's shape."""
    nodes, failed = read_nodes(path, text)
    if failed:
        return [], failed
    settings: list[Located] = []
    problems: list[Diagnostic] = []

    def walk(node: _Node, prefix: str) -> None:
        key = prefix + node.name
        where = Source("file", f"{path}:{node.line}:{node.column}")
        entry = _entry(key, node)
        if entry is not None:
            # `server "files" command="x"` under mcp: the name is a key of its own
            # (mcp.server.files.command), as `server { files { command "x"; }; }` reads.
            if "." in entry:
                # A dot would split the name: "my.server" read as server my, key server.*
                problem = f"names {entry!r}: a {node.name}'s name has no '.' in it"
                problems.append(KDL_SHAPE(source=where, field=key, key=key, problem=problem))
                return
            node = _Node(entry, [], node.props, node.children, node.line, node.column)
            key = f"{key}.{node.name}"
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
