"""Tool arguments checked against their JSON Schema without importing a schema library.

Importing jsonschema (with referencing, attrs, rpds and its format checkers) costs about
60-100 ms, a fifth of `smith tools run bash true`, for schemas that use a handful of
keywords. `compiled(schema)` checks a schema made only of the keywords in KEYWORDS (every
built-in tool's and each `@tool`'s without unions) with a small validator of its own that
gives jsonschema's own messages, in jsonschema's order; any other schema (a plugin's or an
MCP server's with `anyOf`, `$ref`, `pattern`, `format`...) is checked by jsonschema's
Draft 2020-12 validator, as before. tests/test_tool_validate.py compares the two on
generated schemas and arguments.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    Path = list[str | int]
    Check = Callable[[object, Path], Iterator[tuple[Path, str]]]

# Annotations only: they check nothing.
_NOTES = frozenset({"description", "title", "default", "examples", "$comment"})
KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "enum",
    }
    | _NOTES
)


def _is_number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


_TYPES: dict[str, Callable[[object], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": _is_number,
    "integer": lambda v: _is_number(v) and (isinstance(v, int) or float(v).is_integer()),  # type: ignore[arg-type]
}
_SCALAR = (str, int, float, bool, type(None))


def _simple(schema: object) -> bool:
    """Whether this validator checks `schema` exactly as jsonschema does."""
    if not isinstance(schema, dict) or not set(schema) <= KEYWORDS:
        return False
    types = schema.get("type", "object")
    names = [types] if isinstance(types, str) else types
    if not isinstance(names, list) or not all(n in _TYPES for n in names):
        return False
    for key in ("minItems", "maxItems", "minLength", "maxLength"):
        if key in schema and not (type(schema[key]) is int and schema[key] >= 0):
            return False
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if key in schema and not _is_number(schema[key]):
            return False
    if "enum" in schema:
        values = schema["enum"]
        if not isinstance(values, list) or not all(isinstance(v, _SCALAR) for v in values):
            return False
    props = schema.get("properties", {})
    required = schema.get("required", [])
    return (
        isinstance(props, dict)
        and all(_simple(s) for s in props.values())
        and isinstance(required, list)
        and all(isinstance(r, str) for r in required)
        and isinstance(schema.get("additionalProperties", True), bool)
        and ("items" not in schema or _simple(schema["items"]))
    )


def _equal(a: object, b: object) -> bool:
    """jsonschema's equality for a scalar `b`: booleans equal only booleans."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if a is None or b is None:
        return a is b
    return _is_number(a) and _is_number(b) and a == b


def _check(schema: dict[str, object]) -> Check:
    """A checker for a `_simple` schema: keywords in the schema's own order, as jsonschema
    takes them, each with jsonschema's message."""
    steps: list[Check] = []
    for key, value in schema.items():
        step = _step(key, value, schema)
        if step is not None:
            steps.append(step)

    def check(v: object, path: Path) -> Iterator[tuple[Path, str]]:
        for step in steps:
            yield from step(v, path)

    return check


def _step(key: str, value: object, schema: dict[str, object]) -> Check | None:
    if key == "type":
        names = [value] if isinstance(value, str) else list(value)  # type: ignore[call-overload]
        tests = [_TYPES[n] for n in names]
        shown = ", ".join(repr(n) for n in names)

        def type_(v: object, path: Path) -> Iterator[tuple[Path, str]]:
            if not any(t(v) for t in tests):
                yield path, f"{v!r} is not of type {shown}"

        return type_
    if key == "properties":
        subs = {k: _check(s) for k, s in value.items()}  # type: ignore[attr-defined]

        def properties(v: object, path: Path) -> Iterator[tuple[Path, str]]:
            if isinstance(v, dict):
                for k, sub in subs.items():
                    if k in v:
                        yield from sub(v[k], [*path, k])

        return properties
    if key == "required":
        names = list(value)  # type: ignore[call-overload]

        def required(v: object, path: Path) -> Iterator[tuple[Path, str]]:
            if isinstance(v, dict):
                for k in names:
                    if k not in v:
                        yield path, f"{k!r} is a required property"

        return required
    if key == "additionalProperties":
        known = set(schema.get("properties", {}))  # type: ignore[call-overload]

        def additional(v: object, path: Path) -> Iterator[tuple[Path, str]]:
            if value is False and isinstance(v, dict):
                extras = sorted((k for k in v if k not in known), key=str)
                if extras:
                    verb = "was" if len(extras) == 1 else "were"
                    names = ", ".join(repr(e) for e in extras)
                    yield path, f"Additional properties are not allowed ({names} {verb} unexpected)"

        return additional
    if key == "items":
        sub = _check(value)  # type: ignore[arg-type]

        def items(v: object, path: Path) -> Iterator[tuple[Path, str]]:
            if isinstance(v, list):
                for i, x in enumerate(v):
                    yield from sub(x, [*path, i])

        return items
    if key in ("minItems", "maxItems", "minLength", "maxLength"):
        return _size(key, value)  # type: ignore[arg-type]
    if key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return _bound(key, value)  # type: ignore[arg-type]
    if key == "enum":
        values = list(value)  # type: ignore[call-overload]

        def enum(v: object, path: Path) -> Iterator[tuple[Path, str]]:
            if not any(_equal(v, e) for e in values):
                yield path, f"{v!r} is not one of {values!r}"

        return enum
    return None  # an annotation


def _size(key: str, n: int) -> Check:
    kind = list if key.endswith("Items") else str
    least = key.startswith("min")
    if least:
        words = "should be non-empty" if n == 1 else "is too short"
    else:
        words = "is expected to be empty" if n == 0 else "is too long"

    def size(v: object, path: Path) -> Iterator[tuple[Path, str]]:
        if isinstance(v, kind) and (len(v) < n if least else len(v) > n):
            yield path, f"{v!r} {words}"

    return size


def _bound(key: str, b: float) -> Check:
    fails: Callable[[float], bool] = {
        "minimum": lambda x: x < b,
        "maximum": lambda x: x > b,
        "exclusiveMinimum": lambda x: x <= b,
        "exclusiveMaximum": lambda x: x >= b,
    }[key]
    words = {
        "minimum": "is less than the minimum of",
        "maximum": "is greater than the maximum of",
        "exclusiveMinimum": "is less than or equal to the minimum of",
        "exclusiveMaximum": "is greater than or equal to the maximum of",
    }[key]

    def bound(v: object, path: Path) -> Iterator[tuple[Path, str]]:
        if _is_number(v) and fails(v):  # type: ignore[arg-type]
            yield path, f"{v!r} {words} {b!r}"

    return bound


def _library(schema: object) -> Check:
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)  # type: ignore[arg-type]

    def check(v: object, path: Path) -> Iterator[tuple[Path, str]]:
        for error in validator.iter_errors(v):
            yield [*path, *error.absolute_path], error.message

    return check


def compiled(schema: object) -> Callable[[object], list[str]]:
    """A checker of arguments against `schema`: readable problems ("where: message",
    ordered by where, as jsonschema's errors were), or []. Compile once per schema."""
    check = _check(schema) if _simple(schema) else _library(schema)  # type: ignore[arg-type]

    def problems(args: object) -> list[str]:
        found = sorted(check(args, []), key=lambda item: item[0])
        return [
            f"{'/'.join(str(p) for p in where)}: {message}" if where else message
            for where, message in found
        ]

    return problems
