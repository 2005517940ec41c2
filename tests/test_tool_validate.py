"""Tool arguments are checked without jsonschema for schemas of a few keywords
(smith.effects._validate), with jsonschema's own messages and order; other schemas still
go through jsonschema."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from smith.effects import builtin_tools
from smith.effects._validate import _simple, compiled
from tests.conftest import SmithEnv, smith_executable


def _library(schema: dict[str, Any], args: object) -> list[str]:
    """What validation said before: jsonschema's errors, ordered by path."""
    validator = jsonschema.Draft202012Validator(schema)
    out = []
    for error in sorted(validator.iter_errors(args), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in error.absolute_path)
        out.append(f"{where}: {error.message}" if where else error.message)
    return out


_scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-5, 5) | st.text(max_size=3)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abcx"), inner),
    max_leaves=6,
)
_type = st.sampled_from(["string", "integer", "number", "boolean", "null", "array", "object"])


def _schemas() -> st.SearchStrategy[dict[str, Any]]:
    leaf = st.fixed_dictionaries(
        {},
        optional={
            "type": _type | st.lists(_type, min_size=1, max_size=2, unique=True),
            "minLength": st.integers(0, 3),
            "maxLength": st.integers(0, 3),
            "minimum": st.integers(-3, 3) | st.floats(-3, 3),
            "maximum": st.integers(-3, 3),
            "exclusiveMinimum": st.integers(-3, 3),
            "exclusiveMaximum": st.floats(-3, 3),
            "minItems": st.integers(0, 2),
            "maxItems": st.integers(0, 2),
            "enum": st.lists(_scalars, min_size=1, max_size=3),
            "description": st.text(max_size=5),
        },
    )
    return st.recursive(
        leaf,
        lambda inner: st.fixed_dictionaries(
            {"type": st.just("object")},
            optional={
                "properties": st.dictionaries(st.sampled_from("abc"), inner, max_size=3),
                "required": st.lists(st.sampled_from("abcd"), max_size=3, unique=True),
                "additionalProperties": st.booleans(),
                "items": inner,
                "minItems": st.integers(0, 2),
            },
        ),
        max_leaves=5,
    )


@settings(max_examples=600, deadline=None)
@given(_schemas(), _values)
def test_the_small_validator_says_what_jsonschema_says(schema: dict[str, Any], args: Any) -> None:
    assert _simple(schema)
    assert compiled(schema)(args) == _library(schema, args)


def test_every_built_in_tool_is_checked_without_jsonschema() -> None:
    for spec in builtin_tools().values():
        assert _simple(spec.parameters), spec.name


def test_other_schemas_go_through_jsonschema() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "color": {"anyOf": [{"enum": ["red"]}, {"type": "integer"}]},
            "name": {"type": "string", "pattern": "^[a-z]+$"},
        },
    }
    assert not _simple(schema)
    args = {"color": "green", "name": "Bad"}
    assert compiled(schema)(args) == _library(schema, args)
    assert len(compiled(schema)(args)) == 2


READ = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1},
        "offset": {"type": "integer", "minimum": 1},
        "limit": {"type": "integer", "exclusiveMinimum": 0, "maximum": 2000},
        "paths": {"type": "array", "items": {"type": "string"}, "minItems": 1},
    },
    "required": ["path"],
    "additionalProperties": False,
}


def test_each_kind_of_bad_argument_names_the_argument_and_what_was_expected() -> None:
    check = compiled(READ)
    assert check({"path": "a"}) == []
    assert check({}) == ["'path' is a required property"]
    assert check({"path": 3}) == ["path: 3 is not of type 'string'"]
    assert check({"path": ""}) == ["path: '' should be non-empty"]
    assert check({"path": "a", "offset": 0}) == ["offset: 0 is less than the minimum of 1"]
    assert check({"path": "a", "offset": True}) == ["offset: True is not of type 'integer'"]
    assert check({"path": "a", "offset": 2.0}) == []  # an integral number is an integer
    assert check({"path": "a", "limit": 0}) == [
        "limit: 0 is less than or equal to the minimum of 0"
    ]
    assert check({"path": "a", "limit": 2001}) == [
        "limit: 2001 is greater than the maximum of 2000"
    ]
    assert check({"path": "a", "paths": []}) == ["paths: [] should be non-empty"]
    assert check({"path": "a", "paths": ["x", 1]}) == ["paths/1: 1 is not of type 'string'"]
    assert check({"path": "a", "zz": 1, "aa": 2}) == [
        "Additional properties are not allowed ('aa', 'zz' were unexpected)"
    ]
    assert check([]) == ["[] is not of type 'object'"]


def test_tools_run_refuses_bad_arguments_naming_them(senv: SmithEnv) -> None:
    """Through the command line: the message names the argument and what was expected,
    and validation imported no jsonschema."""
    project = senv.make_project("p")
    code = (
        "import sys; from smith.cli import main\n"
        "try:\n    code = main(sys.argv[1:])\n"
        "finally:\n    print('jsonschema' in sys.modules, file=sys.stderr)\n"
        "sys.exit(code)"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, "tools", "run", "read", '{"path": 7, "bogus": 1}'],
        cwd=project,
        env=senv.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 1, r.stderr
    assert r.stdout.strip() == (
        "invalid arguments for read: Additional properties are not allowed ('bogus' was "
        "unexpected); path: 7 is not of type 'string'"
    )
    assert r.stderr.strip().splitlines()[-1] == "False"  # no jsonschema imported
    ok = subprocess.run(
        [smith_executable(), "tools", "run", "bash", '{"command": "echo hi"}'],
        cwd=project,
        env=senv.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ok.returncode == 0 and ok.stdout.strip() == "hi", ok.stderr
