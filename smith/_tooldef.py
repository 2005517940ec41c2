"""`@tool`: a typed Python function (sync or async) as a tool the model can call.

The JSON Schema of the arguments comes from the signature, the descriptions from the
docstring (first paragraph; Google-style "Args:" for the parameters) or from
`Annotated[T, "description"]`. A parameter annotated `ToolContext` gets the call's
context and is not shown to the model.

    import smith
    from smith.effects import ToolContext

    @smith.tool
    def grep_todo(ctx: ToolContext, pattern: str = "TODO", limit: int = 20) -> list[str]:
        '''Find TODO comments in the project.

        Args:
            pattern: text that marks a comment as a TODO
            limit: most matches to return
        '''
        ...

`grep_todo` is then a ToolSpec (a `FunctionTool`; the function is `grep_todo.function`).
Options: `@smith.tool(name=..., description=..., effect=..., mutating=True, exclusive=...,
timeout=...)`. `effect` says what a call may do ("reads", "writes", "runs", "network"; by
default "unknown", which approval asks about under `untrusted`: smith.effects.ToolFacts);
a writing or running tool is mutating unless it says otherwise.
Returned text is shown as is, other JSON values as JSON; exceptions become ToolErrors.
"""

from __future__ import annotations

import enum
import functools
import inspect
import json
import re
import sys
import types
import typing
from collections.abc import Callable, Coroutine

from smith.diagnostics import SmithError
from smith.effects import ToolCancelled, ToolContext, ToolEffect, ToolError, ToolResult, ToolSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    import asyncio

__all__ = ["FunctionTool", "tool"]

Converter = Callable[[object], object]
_Node = tuple[dict[str, object], Converter | None]  # schema, and how to convert a valid value

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # what every provider accepts as a tool name
_SECTION = re.compile(r"^[A-Z][A-Za-z ]*:\s*$")  # "Args:", "Returns:", ...
_ARG = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")  # "name (type): text"
_POLL = 0.05  # seconds between looks at ctx.cancelled while a coroutine runs
_PRETTY_LIMIT = 8000  # longer JSON results stay compact: indentation costs the model tokens
_SUPPORTED = (
    "str, int, float, bool, None, Any, list[T], tuple[T, ...], dict[str, T], Literal[...], "
    "Enum, T | None, unions, TypedDict, Annotated[T, 'description']"
)
_EMPTY = inspect.Parameter.empty
_KINDS = {str: "string", int: "integer", bool: "boolean", float: "number"}


class FunctionTool(ToolSpec):
    """A ToolSpec made by `@tool`; `function` is the decorated function, unchanged."""

    __slots__ = ("function",)

    def __init__(self, function: Callable[..., object], *args: typing.Any, **kw: typing.Any):
        super().__init__(*args, **kw)
        self.function = function

    def __repr__(self) -> str:
        return f"<FunctionTool {self.name}>"


@typing.overload
def tool(fn: Callable[..., object], /) -> FunctionTool: ...
@typing.overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    mutating: bool | None = None,
    effect: ToolEffect = "unknown",
    exclusive: bool = False,
    timeout: float | None = None,
) -> Callable[[Callable[..., object]], FunctionTool]: ...
def tool(
    fn: Callable[..., object] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    mutating: bool | None = None,
    effect: ToolEffect = "unknown",
    exclusive: bool = False,
    timeout: float | None = None,
) -> FunctionTool | Callable[[Callable[..., object]], FunctionTool]:
    """Make `fn` a tool; usable bare (`@tool`) or with options (`@tool(mutating=True)`)."""
    # Types defined inside the function that applies @tool are only in its frame; they
    # resolve string annotations (`from __future__ import annotations`) as a fallback.
    localns = dict(sys._getframe(1).f_locals)
    if fn is not None and not callable(fn):  # @tool("name") instead of @tool(name="name")
        raise TypeError(f"@tool takes a function, not {fn!r}; options are keywords")

    def decorate(f: Callable[..., object]) -> FunctionTool:
        # What may change files: a tool that writes or runs commands, or one that does not
        # say what it does (unknown): after a crash or an abort its changes are unknown.
        changes = effect in ("writes", "runs", "unknown") if mutating is None else mutating
        return _build(f, name, description, changes, effect, exclusive, timeout, localns)

    return decorate if fn is None else decorate(fn)


class _Param:
    __slots__ = ("context", "convert", "name", "required")

    def __init__(self, p: inspect.Parameter, convert: Converter | None, context: bool) -> None:
        self.name = p.name
        self.required = p.default is _EMPTY
        self.convert = convert
        self.context = context


def _build(
    fn: Callable[..., object],
    name: str | None,
    description: str | None,
    mutating: bool,
    effect: ToolEffect,
    exclusive: bool,
    timeout: float | None,
    localns: dict[str, object],
) -> FunctionTool:
    fn_name = getattr(fn, "__name__", repr(fn))
    summary, arg_docs = _parse_doc(getattr(fn, "__doc__", None))
    description = description or summary
    if not description:
        raise TypeError(
            f"@tool {fn_name}: a tool needs a description for the model; "
            "give the function a docstring or pass description=..."
        )
    name = name or fn_name
    if not _NAME.match(name):
        raise ValueError(f"@tool {fn_name}: tool name {name!r} must match {_NAME.pattern}")
    parameters, plan = _signature(fn, fn_name, localns, arg_docs)
    is_async = inspect.iscoroutinefunction(fn)
    done = "applied" if mutating else "not-applied"
    unsure = "unknown" if mutating else "not-applied"  # stopped part-way: changes unknown

    def run(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
        try:
            keywords = _bind(plan, ctx, args)
        except Exception as exc:  # only when run without the runtime's validation
            raise ToolError(f"invalid arguments for {name}: {exc}") from None
        # Where a coroutine will run; a host error (RuntimeError) before anything runs.
        loop = _loop_for(ctx) if is_async else None
        try:
            value = fn(**keywords)
            if inspect.iscoroutine(value):
                value = _await(value, ctx, loop, unsure)
        except (ToolError, ToolCancelled, SmithError):
            raise  # already say what the model or the user should see
        except Exception as exc:
            message = f"{name} failed: {type(exc).__name__}: {exc}"
            raise ToolError(message, mutation=unsure) from exc
        return _result(value, name, done)

    return FunctionTool(
        fn,
        name,
        description,
        parameters,
        run,
        mutating=mutating,
        effect=effect,
        exclusive=exclusive,
        timeout=timeout,
    )


def _signature(
    fn: Callable[..., object], fn_name: str, localns: dict[str, object], docs: dict[str, str]
) -> tuple[dict[str, object], list[_Param]]:
    """The JSON Schema of `fn`'s arguments, and how to bind arguments to a call."""
    try:  # the caller's locals only as a fallback: they might shadow module names
        hints = typing.get_type_hints(fn, include_extras=True)
    except NameError:
        try:
            hints = typing.get_type_hints(fn, localns=localns, include_extras=True)
        except NameError as exc:
            raise TypeError(f"@tool {fn_name}: cannot resolve an annotation: {exc}") from None
    properties: dict[str, object] = {}
    required: list[str] = []
    plan: list[_Param] = []
    for p in inspect.signature(fn).parameters.values():
        where = f"@tool {fn_name}: parameter {p.name!r}"
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):  # *args, **kw, x, /
            raise TypeError(f"{where} is {p.kind.description}; a model passes arguments by name")
        hint = hints.get(p.name, _EMPTY)
        if hint is _EMPTY:
            raise TypeError(f"{where} has no type annotation; the schema is made from it")
        if isinstance(hint, type) and issubclass(hint, ToolContext):
            plan.append(_Param(p, None, context=True))
            continue
        try:
            schema, convert = _node(hint, ())
        except TypeError as exc:
            shown = inspect.formatannotation(hint)
            raise TypeError(
                f"{where}: annotation {shown}: {exc}; supported: {_SUPPORTED}"
            ) from None
        if "description" not in schema and p.name in docs:
            schema["description"] = docs[p.name]
        if p.default is _EMPTY:
            required.append(p.name)
        elif (default := _plain(p.default)) is not _EMPTY:
            schema["default"] = default  # tells the model what leaving it out means
        properties[p.name] = schema
        plan.append(_Param(p, convert, context=False))
    parameters: dict[str, object] = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    return parameters, plan


def _parse_doc(doc: str | None) -> tuple[str, dict[str, str]]:
    """The first paragraph, and the parameter descriptions of a Google-style Args: section."""
    lines = inspect.cleandoc(doc).splitlines() if doc else []
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line):
            break
        summary.append(line.strip())
    args: dict[str, str] = {}
    in_args, indent, current = False, -1, ""
    for line in lines:
        depth = len(line) - len(line.lstrip())
        if line.strip() and depth == 0:  # a section header or text: Args ends here
            in_args, indent = line.strip() in ("Args:", "Arguments:"), -1
            continue
        if not in_args or not line.strip():
            continue
        indent = depth if indent < 0 else indent
        match = _ARG.match(line.strip()) if depth == indent else None
        if match:
            current = match[1]
            args[current] = match[2].strip()
        elif current:  # a continuation line of the current parameter
            args[current] = f"{args[current]} {line.strip()}".strip()
    return " ".join(summary), args


def _node(tp: object, seen: tuple[object, ...]) -> _Node:
    """The schema of values of type `tp`, and how to turn a valid value into one of `tp`."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        schema, convert = _node(args[0], seen)
        notes = [a for a in args[1:] if isinstance(a, str)]
        return ({**schema, "description": notes[0]} if notes else schema), convert
    if origin in (typing.Required, typing.NotRequired):  # TypedDict keys
        return _node(args[0], seen)
    if tp is str:
        return {"type": "string"}, None
    if tp is bool:
        return {"type": "boolean"}, None
    if tp is int:  # JSON may spell a whole number 2.0, which the schema admits
        return {
            "type": "integer"
        }, lambda v: int(v) if isinstance(v, float) and v.is_integer() else v
    if tp is float:
        return {"type": "number"}, lambda v: float(v) if type(v) is int else v
    if tp is None or tp is type(None):
        return {"type": "null"}, None
    if tp is typing.Any:
        return {}, None
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum([m.value for m in tp], tp), tp  # by value; tp(value) is the member
    if typing.is_typeddict(tp):
        return _typeddict(tp, seen)
    if origin is typing.Literal:
        return _enum(list(args), tp), None
    if origin in (typing.Union, types.UnionType):
        return _union([_node(a, seen) for a in args])
    if tp is list or tp is tuple or tp is dict:
        return {"type": "object" if tp is dict else "array"}, (_as_tuple if tp is tuple else None)
    if origin is list or (origin is tuple and args[1:] == (Ellipsis,)):
        item, c = _node(args[0], seen)
        into = tuple if origin is tuple else list  # tuples come as JSON arrays

        def items(v: object) -> object:
            return into(c(x) if c else x for x in typing.cast(list[object], v))

        return {"type": "array", "items": item}, items if c or into is tuple else None
    if origin is dict:
        if args[0] is not str:
            raise TypeError("dict keys must be str (JSON object keys are strings)")
        value, c = _node(args[1], seen)

        def values(v: object) -> object:
            return {k: c(x) if c else x for k, x in typing.cast(dict[str, object], v).items()}

        return {"type": "object", "additionalProperties": value}, values if c else None
    raise TypeError(f"{inspect.formatannotation(tp)} is not supported")


def _as_tuple(v: object) -> object:
    return tuple(typing.cast(list[object], v))


def _enum(values: list[object], tp: object) -> dict[str, object]:
    if not all(v is None or isinstance(v, str | int | float | bool) for v in values):
        raise TypeError(f"{inspect.formatannotation(tp)}: values must be str, int, float or bool")
    kinds = {type(v) for v in values}  # a type too, for providers that insist on one
    kind = _KINDS.get(kinds.pop()) if len(kinds) == 1 else None
    return {"type": kind, "enum": values} if kind else {"enum": values}


def _typeddict(tp: typing.Any, seen: tuple[object, ...]) -> _Node:
    if tp in seen:
        raise TypeError(f"recursive TypedDict {tp.__name__} is not supported")
    try:
        hints = typing.get_type_hints(tp, include_extras=True)
    except NameError as exc:  # its module cannot see it: defined inside a function
        raise TypeError(f"cannot resolve {tp.__name__}: {exc}; define it at module level") from None
    nodes = {k: _node(h, (*seen, tp)) for k, h in hints.items()}
    # __required_keys__ misses NotRequired[...] written as a string annotation (3.11).
    marks = {k: typing.get_origin(h) for k, h in hints.items()}
    required = [
        k
        for k in nodes
        if marks[k] is typing.Required
        or (k in tp.__required_keys__ and marks[k] is not typing.NotRequired)
    ]
    schema: dict[str, object] = {
        "type": "object",
        "properties": {k: s for k, (s, _) in nodes.items()},
        "required": required,
        "additionalProperties": False,
    }
    converters = {k: c for k, (_, c) in nodes.items() if c}
    if not converters:
        return schema, None

    def keys(v: object) -> object:
        items = typing.cast(dict[str, object], v).items()
        return {k: converters[k](x) if k in converters else x for k, x in items}

    return schema, keys


def _union(nodes: list[_Node]) -> _Node:
    schema: dict[str, object] = {"anyOf": [s for s, _ in nodes]}
    if not any(c for _, c in nodes):
        return schema, None

    @functools.cache
    def validators() -> list[typing.Any]:
        import jsonschema  # only for a union with a conversion (validation imports none)

        return [jsonschema.Draft202012Validator(s) for s, _ in nodes]

    def convert(value: object) -> object:
        # The first alternative that accepts the value decides its conversion.
        for validator, (_, c) in zip(validators(), nodes, strict=True):
            if validator.is_valid(value):
                return c(value) if c else value
        return value

    return schema, convert


def _plain(value: object) -> object:
    """`value` as plain JSON (enum members by value), or _EMPTY when it has no JSON form."""

    def member(o: object) -> object:
        if isinstance(o, enum.Enum):
            return o.value
        raise TypeError

    try:
        return json.loads(json.dumps(value, default=member, allow_nan=False))
    except (TypeError, ValueError):
        return _EMPTY


def _bind(plan: list[_Param], ctx: ToolContext, args: dict[str, object]) -> dict[str, object]:
    unknown = set(args) - {p.name for p in plan if not p.context}
    if unknown:
        raise TypeError(f"unexpected argument(s): {', '.join(sorted(unknown))}")
    keywords: dict[str, object] = {}
    for p in plan:
        if p.context:
            keywords[p.name] = ctx
        elif p.name in args:
            keywords[p.name] = p.convert(args[p.name]) if p.convert else args[p.name]
        elif p.required:
            raise TypeError(f"missing required argument {p.name!r}")
    return keywords


def _loop_for(ctx: ToolContext) -> asyncio.AbstractEventLoop | None:
    """The loop to run a coroutine on (None: a new one here via asyncio.run)."""
    import asyncio

    try:
        current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        current = None
    loop = ctx.loop
    if loop is not None and loop.is_running() and current is not loop:
        return loop
    if current is None:
        return None
    # Blocking this thread would stall the loop the coroutine needs (or nests asyncio.run).
    raise RuntimeError(
        "an async tool's run() was called on a thread running an event loop; "
        "call it from a worker thread (asyncio.to_thread)"
    )


def _await(
    coro: Coroutine[typing.Any, typing.Any, object],
    ctx: ToolContext,
    loop: asyncio.AbstractEventLoop | None,
    unsure: str,
) -> object:
    import asyncio
    import concurrent.futures

    if loop is None:
        return asyncio.run(_watched(coro, ctx, unsure))
    future = asyncio.run_coroutine_threadsafe(coro, loop)
    while True:
        done, _ = concurrent.futures.wait([future], timeout=_POLL)
        if done:
            try:
                return future.result()
            except concurrent.futures.CancelledError:  # cancelled on the loop's side
                raise ToolCancelled(unsure) from None
        if ctx.cancelled.is_set() or loop.is_closed():
            future.cancel()  # cancels the task on the loop; we do not wait for it
            raise ToolCancelled(unsure)


async def _watched(
    coro: Coroutine[typing.Any, typing.Any, object], ctx: ToolContext, unsure: str
) -> object:
    """Run `coro` on this thread's own loop, cancelling it when ctx.cancelled is set."""
    import asyncio

    task = asyncio.ensure_future(coro)
    while not task.done():
        await asyncio.wait([task], timeout=_POLL)
        if not task.done() and ctx.cancelled.is_set():
            task.cancel()  # asyncio.run then waits for it to unwind
            raise ToolCancelled(unsure)
    return task.result()


def _result(value: object, name: str, mutation: str) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult("(no output)", mutation=mutation)
    if isinstance(value, str):
        return ToolResult(str(value), mutation=mutation)
    try:
        compact = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ToolError(
            f"{name} returned a {type(value).__name__}, which is neither text nor JSON ({exc})",
            mutation=mutation,
        ) from None
    plain = json.loads(compact)  # tuples as lists, keys as strings: what the journal stores
    pretty = json.dumps(plain, ensure_ascii=False, indent=2)
    text = pretty if len(pretty) <= _PRETTY_LIMIT else compact
    return ToolResult(text, details={"value": plain}, mutation=mutation)
