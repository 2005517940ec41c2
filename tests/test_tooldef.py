"""@tool: schemas from signatures, docstrings, calls (sync and async), results and errors."""

from __future__ import annotations

import asyncio
import enum
import json
import threading
import time
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import jsonschema
import pytest

from smith._tooldef import FunctionTool, tool
from smith.effects import (
    EffectJournal,
    ToolCancelled,
    ToolContext,
    ToolError,
    ToolResult,
    ToolSpec,
    run_tool,
)
from smith.session import Session


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Point(TypedDict):
    x: int
    y: NotRequired[float]


class Shape(TypedDict):
    name: str
    color: Color
    points: list[Point]


def _ctx(tmp_path: Path | None = None) -> ToolContext:
    root = str(tmp_path or Path.cwd())
    return ToolContext(root=root, cwd=root)


def _recording(annotation: object, **options: Any) -> tuple[FunctionTool, list[object]]:
    """A tool with one parameter `x` of type `annotation`, and the values it was called with."""
    got: list[object] = []

    def f(x: object) -> None:
        got.append(x)

    f.__annotations__ = {"x": annotation, "return": None}
    f.__doc__ = "Take x."
    return tool(**options)(f), got


def _props(spec: ToolSpec) -> dict[str, dict[str, Any]]:
    return typing.cast(dict[str, dict[str, Any]], spec.parameters["properties"])


def _one(annotation: object, **options: Any) -> FunctionTool:
    return _recording(annotation, **options)[0]


# -- schemas --------------------------------------------------------------------------

CASES: list[tuple[object, list[object], list[object]]] = [
    (str, ["", "a"], [1, None, ["a"]]),
    (int, [0, -3, 2.0], [1.5, "1", True, None]),
    (float, [1, 1.5, -2.0], ["1", True, None]),
    (bool, [True, False], [1, "true", None]),
    (None, [None], [0, "", False]),
    (list[int], [[], [1, 2]], [[1, "a"], "x", {"a": 1}]),
    (tuple[str, ...], [[], ["a", "b"]], [[1], "ab"]),
    (dict[str, int], [{}, {"a": 1}], [{"a": "b"}, [], "x"]),
    (Literal["a", "b"], ["a", "b"], ["c", None, 1]),
    (Literal[1, 2], [1, 2], [3, True, "1"]),
    (Color, ["red", "blue"], ["RED", "green", 1]),
    (Level, [1, 2], [3, "LOW"]),
    (int | None, [1, None], ["x", 1.5]),
    (typing.Optional[str], ["a", None], [1]),  # noqa: UP045 (the old spelling works too)
    (int | str, [1, "x"], [1.5, None, []]),
    (Point, [{"x": 1}, {"x": 1, "y": 2.5}], [{"y": 1.0}, {"x": 1, "z": 0}, {"x": "1"}, []]),
    (Annotated[str, "a name"], ["a"], [1]),
    (Any, [1, "a", None, [], {}], []),
    (list[Shape], [[{"name": "s", "color": "red", "points": []}]], [[{"name": "s"}]]),
]


@pytest.mark.parametrize(("annotation", "good", "bad"), CASES, ids=lambda c: repr(c)[:40])
def test_schema_of_every_supported_type(
    annotation: object, good: list[object], bad: list[object]
) -> None:
    spec = _one(annotation)
    jsonschema.Draft202012Validator.check_schema(spec.parameters)
    validator = jsonschema.Draft202012Validator(spec.parameters)
    for value in good:
        assert validator.is_valid({"x": value}), value
    for value in bad:
        assert not validator.is_valid({"x": value}), value
    assert not validator.is_valid({})  # x is required
    assert not validator.is_valid({"x": good[0] if good else 1, "y": 1})  # nothing else


def test_schema_shapes() -> None:
    assert _props(_one(float)) == {"x": {"type": "number"}}
    assert _props(_one(Color)) == {"x": {"type": "string", "enum": ["red", "blue"]}}
    assert _props(_one(Annotated[int, "how many"])) == {
        "x": {"type": "integer", "description": "how many"}
    }
    point = _props(_one(Point))["x"]
    assert point["required"] == ["x"] and point["additionalProperties"] is False
    assert _props(_one(int | None)) == {"x": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}


def test_descriptions_come_from_the_docstring() -> None:
    @tool
    def grep_todo(pattern: str, path: str = ".", limit: int = 20) -> str:
        """Find TODO comments
        in the project.

        Longer text the model does not need.

        Args:
            pattern: text that marks
                a comment as a TODO
            path (str): where to look
        Returns:
            the matches
        """
        return ""

    assert grep_todo.description == "Find TODO comments in the project."
    props = _props(grep_todo)
    assert props["pattern"]["description"] == "text that marks a comment as a TODO"
    assert props["path"]["description"] == "where to look"
    assert "description" not in props["limit"]


def test_annotated_and_explicit_descriptions_win() -> None:
    @tool(description="Count things.")
    def count(n: Annotated[int, "from Annotated"]) -> None:
        """Ignored.

        Args:
            n: from the docstring
        """

    assert count.description == "Count things."
    assert _props(count)["n"]["description"] == "from Annotated"


def test_a_tool_needs_a_description() -> None:
    def silent(x: int) -> None:
        pass

    with pytest.raises(TypeError, match=r"silent.*needs a description"):
        tool(silent)
    assert tool(description="Say nothing.")(silent).description == "Say nothing."


def test_required_and_defaults() -> None:
    @tool
    def f(a: str, b: int = 3, *, c: Color = Color.BLUE, d: list[str] | None = None) -> None:
        """F."""

    assert f.parameters["required"] == ["a"]
    assert f.parameters["additionalProperties"] is False
    props = _props(f)
    assert props["b"]["default"] == 3 and props["c"]["default"] == "blue"
    assert props["d"]["default"] is None
    validator = jsonschema.Draft202012Validator(f.parameters)
    assert validator.is_valid({"a": "x"})
    assert not validator.is_valid({"b": 1})


class Opaque:
    pass


@pytest.mark.parametrize(
    ("define", "match"),
    [
        ("def f(x): ...", r"f: parameter 'x' has no type annotation"),
        ("def f(*args: int): ...", r"parameter 'args' is variadic positional"),
        ("def f(**kw: int): ...", r"parameter 'kw' is variadic keyword"),
        ("def f(x: int, /): ...", r"parameter 'x' is positional-only"),
        ("def f(x: Opaque): ...", r"parameter 'x': annotation .*Opaque: .*Opaque is not supp"),
        ("def f(x: list[Opaque]): ...", r"parameter 'x': annotation list\[.*Opaque\]"),
        ("def f(x: dict[int, str]): ...", r"parameter 'x': .*dict keys must be str"),
        ("def f(x: set[int]): ...", r"parameter 'x': annotation set\[int\]"),
        ("def f(x: Literal[Opaque]): ...", r"parameter 'x': .*values must be"),
    ],
)
def test_unsupported_annotations_are_refused_when_decorated(define: str, match: str) -> None:
    scope: dict[str, Any] = {"Opaque": Opaque, "Literal": Literal}
    exec(define.replace("...", '"""Doc."""'), scope)
    with pytest.raises(TypeError, match=match):
        tool(scope["f"])


class Node(TypedDict):
    children: list[Node]


def test_recursive_typeddicts_and_bad_names_are_refused() -> None:
    with pytest.raises(TypeError, match=r"parameter 'x': .*recursive TypedDict Node"):
        _one(Node)
    with pytest.raises(ValueError, match="tool name 'no spaces'"):
        _one(int, name="no spaces")
    with pytest.raises(TypeError, match="options are keywords"):
        tool("name")  # type: ignore[call-overload]


def test_types_local_to_a_function_resolve_under_future_annotations() -> None:
    class Mode(enum.Enum):
        FAST = "fast"

    @tool
    def go(mode: Mode) -> str:
        """Go."""
        return repr(mode)

    assert _props(go) == {"mode": {"type": "string", "enum": ["fast"]}}
    assert go.run(_ctx(), {"mode": "fast"}).text == "<Mode.FAST: 'fast'>"


# -- the spec and calls -----------------------------------------------------------------


def test_options_and_the_function_stay_reachable() -> None:
    def raw(x: int) -> int:
        """Double x."""
        return 2 * x

    spec = tool(name="double", mutating=True, exclusive=True, timeout=5.0)(raw)
    assert isinstance(spec, ToolSpec) and spec.function is raw
    assert (spec.name, spec.mutating, spec.exclusive, spec.timeout) == ("double", True, True, 5.0)
    assert spec.definition()["name"] == "double"
    bare = tool(raw)
    # Declaring nothing, it may change files: mutating (its changes unknown after a crash).
    assert (bare.name, bare.mutating, bare.exclusive, bare.timeout) == ("raw", True, False, None)
    assert bare.function(4) == 8


def test_the_context_is_injected_and_not_in_the_schema() -> None:
    seen: list[object] = []

    @tool
    def where(here: ToolContext, name: str) -> str:
        """Where."""
        seen.append(here)
        return here.cwd + "/" + name

    assert _props(where) == {"name": {"type": "string"}}
    assert where.parameters["required"] == ["name"]
    ctx = _ctx()
    assert where.run(ctx, {"name": "a"}).text == ctx.cwd + "/a"
    assert seen == [ctx]


def test_arguments_are_converted_to_the_annotated_types() -> None:
    got: dict[str, object] = {}

    @tool
    def f(
        color: Color,
        pair: tuple[int, ...],
        count: int,
        ratio: float,
        either: Color | int,
        levels: list[Level],
        shape: Shape,
        by_name: dict[str, Color] | None = None,
    ) -> None:
        """F."""
        got.update(color=color, pair=pair, count=count, ratio=ratio, either=either)
        got.update(levels=levels, shape=shape, by_name=by_name)

    f.run(
        _ctx(),
        {
            "color": "red",
            "pair": [1, 2],
            "count": 2.0,
            "ratio": 1,
            "either": "blue",
            "levels": [2, 1],
            "shape": {"name": "s", "color": "blue", "points": [{"x": 1}]},
            "by_name": {"a": "red"},
        },
    )
    assert got["color"] is Color.RED and got["pair"] == (1, 2)
    assert got["count"] == 2 and type(got["count"]) is int
    assert got["ratio"] == 1.0 and type(got["ratio"]) is float
    assert got.pop("either") is Color.BLUE and got["levels"] == [Level.HIGH, Level.LOW]
    assert got["shape"] == {"name": "s", "color": Color.BLUE, "points": [{"x": 1}]}
    assert got["by_name"] == {"a": Color.RED}
    shape = {"name": "t", "color": "red", "points": []}
    rest = {"color": "blue", "pair": [], "count": 1, "ratio": 0.5, "levels": [], "shape": shape}
    f.run(_ctx(), {**rest, "either": 3})
    after = dict(got)
    assert after["either"] == 3 and after["by_name"] is None and after["ratio"] == 0.5


def test_sync_tools_run_in_the_calling_thread() -> None:
    @tool
    def who() -> int:
        """Who."""
        return threading.get_ident()

    assert who.run(_ctx(), {}).details == {"value": threading.get_ident()}


def test_arguments_the_runtime_would_refuse_are_a_tool_error() -> None:
    spec, got = _recording(Color)
    with pytest.raises(ToolError, match=r"invalid arguments for f: .*'green' is not a valid"):
        spec.run(_ctx(), {"x": "green"})
    with pytest.raises(ToolError, match="missing required argument 'x'"):
        spec.run(_ctx(), {})
    with pytest.raises(ToolError, match="unexpected argument"):
        spec.run(_ctx(), {"x": "red", "y": 1})
    assert got == []


# -- async tools -------------------------------------------------------------------------


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop running in another thread, as the runtime's is to its workers."""
    loop = asyncio.new_event_loop()
    running = threading.Event()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    loop.call_soon(running.set)
    thread.start()
    assert running.wait(10)
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()


def _async_tool(**options: Any) -> tuple[FunctionTool, dict[str, object]]:
    seen: dict[str, object] = {}

    async def fetch(n: int) -> dict[str, object]:
        """Fetch."""
        await asyncio.sleep(0)  # really suspends: needs a running loop
        seen["thread"] = threading.get_ident()
        seen["loop"] = asyncio.get_running_loop()
        return {"n": n}

    return tool(**options)(fetch), seen


def test_async_tool_without_a_loop_runs_here_with_asyncio_run() -> None:
    spec, seen = _async_tool()
    result = spec.run(_ctx(), {"n": 3})
    assert result.details == {"value": {"n": 3}} and result.ok
    assert seen["thread"] == threading.get_ident()


def test_async_tool_runs_on_the_runtime_loop(loop: asyncio.AbstractEventLoop) -> None:
    spec, seen = _async_tool()
    ctx = _ctx()
    ctx.loop = loop
    assert spec.run(ctx, {"n": 4}).details == {"value": {"n": 4}}
    assert seen["loop"] is loop and seen["thread"] != threading.get_ident()


def test_async_tool_called_on_the_loop_thread_is_a_host_error() -> None:
    spec, seen = _async_tool()

    async def misuse() -> None:
        ctx = _ctx()
        ctx.loop = asyncio.get_running_loop()
        spec.run(ctx, {"n": 1})

    with pytest.raises(RuntimeError, match="worker thread"):
        asyncio.run(misuse())
    assert seen == {}


@pytest.mark.parametrize("on_loop", [False, True])
@pytest.mark.parametrize("mutating", [False, True])
def test_cancelling_an_async_tool(
    loop: asyncio.AbstractEventLoop, on_loop: bool, mutating: bool
) -> None:
    stopped = threading.Event()
    ctx = _ctx()
    ctx.loop = loop if on_loop else None

    @tool(mutating=mutating)
    async def wait_forever() -> None:
        """Wait."""
        ctx.cancelled.set()  # as the runtime would, once this is under way
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            stopped.set()
            raise

    started = time.monotonic()
    with pytest.raises(ToolCancelled) as info:
        wait_forever.run(ctx, {})
    assert time.monotonic() - started < 5  # polled every 50 ms, not waiting forever
    assert info.value.mutation == ("unknown" if mutating else "not-applied")
    assert stopped.wait(10)  # the coroutine itself was cancelled


# -- results and errors --------------------------------------------------------------------


def _returning(value: object, *, mutating: bool = False) -> ToolResult:
    def give() -> object:
        """Give."""
        return value

    return tool(mutating=mutating)(give).run(_ctx(), {})


def test_return_values_become_results() -> None:
    assert _returning("hi").text == "hi" and _returning("hi").details == {}
    assert _returning(None).text == "(no output)"
    own = ToolResult("own", mutation="unknown", ok=False)
    assert _returning(own) is own
    result = _returning({"a": [1, 2], "é": True})
    assert result.text == json.dumps({"a": [1, 2], "é": True}, ensure_ascii=False, indent=2)
    assert result.details == {"value": {"a": [1, 2], "é": True}}
    assert _returning(3).text == "3" and _returning(3).details == {"value": 3}
    assert _returning(False).text == "false"
    assert _returning((1, "a")).details == {"value": [1, "a"]}  # stored as JSON would be
    big = list(range(5000))
    assert _returning(big).text == json.dumps(big)  # too long to indent
    assert _returning("x").mutation == _returning(1).mutation == "not-applied"
    assert _returning("x", mutating=True).mutation == "applied"
    assert _returning(None, mutating=True).mutation == "applied"


def test_values_that_are_not_json_are_a_tool_error() -> None:
    with pytest.raises(ToolError, match="give returned a set, which is neither text nor JSON"):
        _returning({1})


def _raising(exc: BaseException, *, mutating: bool = False) -> Callable[[], ToolResult]:
    @tool(mutating=mutating)
    def boom() -> None:
        """Boom."""
        raise exc

    return lambda: boom.run(_ctx(), {})


def test_exceptions_become_tool_errors_the_model_sees() -> None:
    with pytest.raises(ToolError) as info:
        _raising(ValueError("bad value"))()
    assert info.value.message == "boom failed: ValueError: bad value"
    assert info.value.mutation == "not-applied"
    assert isinstance(info.value.__cause__, ValueError)
    with pytest.raises(ToolError) as info:
        _raising(KeyError("k"), mutating=True)()
    assert (info.value.message, info.value.mutation) == ("boom failed: KeyError: 'k'", "unknown")


def test_async_exceptions_become_tool_errors_too() -> None:
    @tool(mutating=True)
    async def aboom() -> None:
        """Async boom."""
        raise OSError("disk")

    with pytest.raises(ToolError) as info:
        aboom.run(_ctx(), {})
    assert (info.value.message, info.value.mutation) == ("aboom failed: OSError: disk", "unknown")


def test_tool_errors_and_cancellations_pass_through() -> None:
    own = ToolError("use x instead", mutation="applied")
    with pytest.raises(ToolError) as info:
        _raising(own)()
    assert info.value is own
    with pytest.raises(ToolCancelled) as cancelled:
        _raising(ToolCancelled("applied"))()
    assert cancelled.value.mutation == "applied"


# -- through the effect boundary ------------------------------------------------------------


def test_end_to_end_through_run_tool(tmp_path: Path) -> None:
    calls: list[tuple[str, Color]] = []

    @tool(mutating=True)
    def paint(ctx: ToolContext, path: str, color: Color = Color.RED) -> str:
        """Paint a file.

        Args:
            path: the file to paint
            color: the paint
        """
        calls.append((path, color))
        Path(ctx.path(path)).write_text(color.value)
        return f"painted {path}"

    ctx = _ctx(tmp_path)
    with Session.create(str(tmp_path / "s.smith")) as session:
        journal = EffectJournal(session)
        refused = run_tool(journal, paint, {"path": "a.txt", "color": "green"}, ctx)
        assert not refused.result.ok and refused.effect_id is None
        assert refused.result.text.startswith("invalid arguments for paint: color: ")
        assert calls == [] and list(session.entries()) == []

        done = run_tool(journal, paint, {"path": "a.txt", "color": "blue"}, ctx)
        assert (done.result.ok, done.result.text, done.outcome) == (True, "painted a.txt", "ok")
        assert calls == [("a.txt", Color.BLUE)] and (tmp_path / "a.txt").read_text() == "blue"
        kinds = [(e.kind, e.content) for e in session.entries()]
        assert [k for k, _ in kinds] == ["effect_intent", "effect_completion"]
        completion = kinds[1][1]
        assert isinstance(completion, dict) and completion["mutation"] == "applied"

        failed = run_tool(journal, paint, {"path": "missing/b.txt"}, ctx)
        assert (failed.result.ok, failed.outcome) == (False, "error")
        assert failed.result.text.startswith("paint failed: FileNotFoundError")
        assert failed.result.mutation == "unknown"
