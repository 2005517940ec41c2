"""Value types of configuration options: checking typed values and parsing text.

A type checks values that arrive typed (from KDL, plugins, Python callers) with `check`,
and values that arrive as text (environment variables, command-line flags, `config set`)
with `parse`. Both raise `Mismatch` with the phrase of what was expected; the caller turns
it into a diagnostic that names the source.
"""

from __future__ import annotations

import math

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


class Mismatch(Exception):
    """A value does not fit its type; `expected` completes 'expected …, got X'."""

    def __init__(self, expected: str) -> None:
        super().__init__(expected)
        self.expected = expected


class ValueType:
    """Base of the option types. `name` appears in help and in `config show --json`."""

    __slots__ = ()
    name = "value"
    metavar = "VALUE"

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self.describe()}>"

    def expected(self) -> str:
        raise NotImplementedError

    def check(self, value: object) -> object:
        raise NotImplementedError

    def parse(self, text: str) -> object:
        return self.check(text)

    def example(self) -> str:
        """A valid value as KDL/command-line text, for fixes in diagnostics."""
        raise NotImplementedError

    def describe(self) -> str:
        """One phrase for help text, e.g. 'an integer between 1 and 3600'."""
        return self.expected()


def _num(x: float) -> str:
    return str(x) if isinstance(x, int) else f"{x:g}"


def _bounds(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f" between {_num(low)} and {_num(high)}"
    if low is not None:
        return f" of at least {_num(low)}"
    if high is not None:
        return f" of at most {_num(high)}"
    return ""


class String(ValueType):
    __slots__ = ("non_empty",)
    name = "string"
    metavar = "TEXT"

    def __init__(self, *, non_empty: bool = True) -> None:
        self.non_empty = non_empty

    def expected(self) -> str:
        return "a non-empty string" if self.non_empty else "a string"

    def example(self) -> str:
        return '"text"'

    def check(self, value: object) -> object:
        if not isinstance(value, str) or (self.non_empty and not value.strip()):
            raise Mismatch(self.expected())
        return value


class Path(String):
    """A filesystem path; `~` is expanded and relative paths are made absolute against the
    working directory smith runs in, once, when configuration is resolved. `absolute`:
    a relative path is refused instead (one that must not land in whatever directory
    smith runs in: the cache of compiled plugins)."""

    __slots__ = ("absolute",)
    name = "path"
    metavar = "PATH"

    def __init__(self, *, absolute: bool = False) -> None:
        super().__init__()
        self.absolute = absolute

    def expected(self) -> str:
        return "an absolute path (or one starting with ~/)" if self.absolute else "a path"

    def example(self) -> str:
        return "~/.cache/smith" if self.absolute else super().example()

    def check(self, value: object) -> object:
        value = super().check(value)
        if self.absolute and isinstance(value, str):
            import os

            if not (os.path.isabs(value) or value == "~" or value.startswith("~/")):
                raise Mismatch(self.expected())
        return value

    def normalize(self, value: str, cwd: str, home: str) -> str:
        import os

        if value == "~" or value.startswith("~/"):
            value = home + value[1:]
        return os.path.normpath(os.path.join(cwd, value))


class Integer(ValueType):
    __slots__ = ("high", "low", "unit")
    name = "integer"
    metavar = "N"

    def __init__(self, low: int | None = None, high: int | None = None, unit: str = "") -> None:
        self.low = low
        self.high = high
        self.unit = unit

    def expected(self) -> str:
        unit = f" ({self.unit})" if self.unit else ""
        return f"an integer{_bounds(self.low, self.high)}{unit}"

    def example(self) -> str:
        return str(self.low if self.low is not None else 1)

    def check(self, value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, int):
            raise Mismatch(self.expected())
        if (self.low is not None and value < self.low) or (
            self.high is not None and value > self.high
        ):
            raise Mismatch(self.expected())
        return value

    def parse(self, text: str) -> object:
        try:
            value = int(text.strip().replace("_", ""), 0)
        except ValueError:
            raise Mismatch(self.expected()) from None
        return self.check(value)


class Number(ValueType):
    __slots__ = ("high", "low")
    name = "number"
    metavar = "X"

    def __init__(self, low: float | None = None, high: float | None = None) -> None:
        self.low = low
        self.high = high

    def expected(self) -> str:
        return f"a number{_bounds(self.low, self.high)}"

    def example(self) -> str:
        if self.low is not None and self.high is not None:
            return f"{round(self.low + (self.high - self.low) * 0.35, 1):g}"
        return f"{self.low if self.low is not None else 1:g}"

    def check(self, value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise Mismatch(self.expected())
        number = float(value)
        if not math.isfinite(number):
            raise Mismatch(self.expected())
        if (self.low is not None and number < self.low) or (
            self.high is not None and number > self.high
        ):
            raise Mismatch(self.expected())
        return number

    def parse(self, text: str) -> object:
        try:
            value = float(text.strip())
        except ValueError:
            raise Mismatch(self.expected()) from None
        return self.check(value)


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


class Boolean(ValueType):
    __slots__ = ()
    name = "boolean"
    metavar = "BOOL"

    def expected(self) -> str:
        return "true or false"

    def example(self) -> str:
        return "true"

    def check(self, value: object) -> object:
        if not isinstance(value, bool):
            raise Mismatch(self.expected())
        return value

    def parse(self, text: str) -> object:
        word = text.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        raise Mismatch("true or false (also 1/0, yes/no, on/off)")


class Choice(ValueType):
    __slots__ = ("choices",)
    name = "choice"
    metavar = "CHOICE"

    def __init__(self, choices: Sequence[str]) -> None:
        self.choices = tuple(choices)

    def expected(self) -> str:
        return "one of " + ", ".join(self.choices)

    def example(self) -> str:
        return f'"{self.choices[0]}"'

    def check(self, value: object) -> object:
        if not isinstance(value, str) or value not in self.choices:
            raise Mismatch(self.expected())
        return value

    def parse(self, text: str) -> object:
        return self.check(text.strip())


class Strings(ValueType):
    """A list of strings. In KDL, one node with several values (`tools.ignore "a" "b"`);
    in the environment and on the command line, comma-separated (`a,b`)."""

    __slots__ = ()
    name = "list"
    metavar = "A,B,..."

    def expected(self) -> str:
        return "a list of strings"

    def example(self) -> str:
        return '"dist/" "*.min.js"'

    def check(self, value: object) -> object:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise Mismatch(self.expected())
        return list(value)

    def parse(self, text: str) -> object:
        return [part.strip() for part in text.split(",") if part.strip()]
