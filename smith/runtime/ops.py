"""What each operation does, and reading one from data.

Every frontend asks the runtime for something by submitting an operation:

    runtime.submit(Prompt("fix the failing test"))     # typed, from Python
    runtime.submit({"op": "prompt", "text": "..."})     # the same, as data (RPC, JSON)

The operations are declared once, in smith.protocol.ops (frozen msgspec Structs whose
fields are their parameters; this module re-exports them); here is what each does
(`APPLY`, what `Runtime.submit` runs) and `parse_op`, which builds one from data with a
diagnostic naming the field that is missing or mistyped. `OPERATIONS` maps each name to
its class: the vocabulary of docs/rpc.md's `submit` and of the app's commands.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from smith.diagnostics import DiagnosticKind, Source
from smith.protocol import ops as protocol
from smith.protocol.ops import (
    ALIASES,
    OPERATIONS,
    Abort,
    Compact,
    Context,
    Diff,
    Entries,
    FollowUp,
    Fork,
    History,
    ListFiles,
    Plugins,
    Prompt,
    QueueClear,
    QueueRemove,
    Redo,
    Restore,
    Select,
    SessionInfo,
    SetMode,
    SetModel,
    SetThinking,
    Shell,
    Steer,
    Tree,
    Undo,
)
from smith.protocol.ops import Op as Operation
from smith.runtime._images import Image

if TYPE_CHECKING:
    from smith.diagnostics import Surface
    from smith.runtime._runtime import Runtime

UNKNOWN_OP = DiagnosticKind(
    "runtime.unknown-op",
    what="'{op}' is not an operation the runtime knows",
    why="operations are: {known}",
    fix="send one of those operations",
)
NO_OP = DiagnosticKind(
    "runtime.no-op",
    what="the operation names no operation: it is not an object with an 'op' string",
    why="every operation is an object whose 'op' is one of: {known}",
    fix='add "op", e.g. {{"op": "prompt", "text": "..."}}',
)
BAD_OP = DiagnosticKind(
    "runtime.bad-op",
    what="the {op} operation's {name} is {problem}",
    why="{op} takes {signature}",
    fix="send {name} as {kind}",
)

EMPTY_INPUT = DiagnosticKind(
    "runtime.empty-input",
    what="the {op} operation's text is blank and it carries no image",
    why="an input is what the model is told: it needs text (or an image)",
    fix="send the text to say",
)

_KINDS = {str: "a string", bool: "true or false", int: "a whole number"}


# -- what each does ------------------------------------------------------------


def _images(given: tuple[protocol.Image, ...]) -> tuple[Image, ...]:
    """The images an input carries, as the runtime's (a Python caller may give the
    protocol's own: their bytes are checked as any image's are)."""
    return tuple(
        i
        if isinstance(i, Image)
        else Image.from_bytes(i.data, name=i.name, media_type=i.media_type)
        for i in given
    )


def _given(rt: Runtime, op: Prompt | Steer | FollowUp) -> tuple[str, tuple[Image, ...]]:
    """An input's text and images; a diagnostic for one with neither (blank text)."""
    if not op.text.strip() and not op.images:
        raise EMPTY_INPUT.error(value=op.text, source=Source(rt.surface, f"{op.op}.text"),
                                op=op.op)  # fmt: skip
    return op.text, _images(op.images)


def _prompt(rt: Runtime, op: Prompt) -> object:
    text, images = _given(rt, op)
    if rt.busy and not images:  # a plugin's command is answered at once (_command)
        from smith.runtime._command import at_once

        if (submission := at_once(rt, text)) is not None:
            return submission
    return rt.prompt(text, images)


def _steer(rt: Runtime, op: Steer) -> object:
    return rt.steer(*_given(rt, op))


def _follow_up(rt: Runtime, op: FollowUp) -> object:
    return rt.follow_up(*_given(rt, op))


def _entry(rt: Runtime, id: str, where: str) -> None:
    """`id` names an entry of the session; else session.unknown-entry, naming the field
    that gave it."""
    from smith.diagnostics import SmithError
    from smith.session import UNKNOWN_ENTRY

    try:
        rt.session.entry(id)
    except SmithError:
        raise UNKNOWN_ENTRY.error(value=id, source=Source(rt.surface, where), entry=id,
                                  id=rt.session.id) from None  # fmt: skip


def _shell(rt: Runtime, op: Shell) -> object:
    return rt.shell(op.command, context=op.context)


def _abort(rt: Runtime, op: Abort) -> object:
    return rt.abort()


def _compact(rt: Runtime, op: Compact) -> object:
    rt.compact(op.focus)
    return None


def _set_model(rt: Runtime, op: SetModel) -> object:
    rt.set_model(op.model)
    return None


def _set_thinking(rt: Runtime, op: SetThinking) -> object:
    rt.set_thinking(op.level)
    return None


def _set_mode(rt: Runtime, op: SetMode) -> object:
    from smith.runtime._mode import set_mode

    return set_mode(rt, op.mode, prompt=op.prompt)


def _queue_remove(rt: Runtime, op: QueueRemove) -> object:
    return rt.queue.remove(op.id)


def _queue_clear(rt: Runtime, op: QueueClear) -> object:
    return rt.queue.clear()


def _undo(rt: Runtime, op: Undo) -> object:
    return rt.undo(force=op.force)


def _redo(rt: Runtime, op: Redo) -> object:
    return rt.redo(force=op.force)


def _restore(rt: Runtime, op: Restore) -> object:
    return rt.restore(op.target, conversation=op.conversation, force=op.force)


def _diff(rt: Runtime, op: Diff) -> object:
    return rt.files("diff").diff(op.a, op.b)


def _history(rt: Runtime, op: History) -> object:
    return rt.files("history").history()


def _context(rt: Runtime, op: Context) -> object:
    return [part.to_dict() for part in rt.context_parts(upcoming=op.upcoming)]


def _list_files(rt: Runtime, op: ListFiles) -> object:
    from smith.effects import list_files

    files, cut = list_files(rt.context, op.limit)
    return {"files": files, "cut": cut}


def _plugins(rt: Runtime, op: Plugins) -> object:
    return rt.lifecycle.to_dict(rt.plugin_list.to_dict())


def _session_info(rt: Runtime, op: SessionInfo) -> object:
    from smith.runtime._sessionface import info

    return info(rt.session)


def _entries(rt: Runtime, op: Entries) -> object:
    from smith.runtime._sessionface import entries

    if op.leaf is not None:
        _entry(rt, op.leaf, "entries.leaf")
    return entries(rt.session, op.since, op.leaf, op.kinds)


def _tree(rt: Runtime, op: Tree) -> object:
    from smith.runtime._sessionface import Tree

    return Tree(rt.session)


def _select(rt: Runtime, op: Select) -> object:
    from smith.runtime._mode import announce, mode
    from smith.runtime._sessionface import info

    rt.idle_for("select")
    _entry(rt, op.leaf, "select.leaf")
    before = mode(rt)
    rt.session.select(op.leaf)
    announce(rt, before)  # the branch selected may be in another mode
    return info(rt.session)


def _fork(rt: Runtime, op: Fork) -> object:
    from smith.runtime._sessionface import fork

    rt.idle_for("fork")
    if op.at is not None:
        _entry(rt, op.at, "fork.at")
    return fork(rt.session, op.at, op.name)


APPLY: dict[type[Operation], Callable[[Runtime, Any], object]] = {
    Prompt: _prompt,
    Steer: _steer,
    FollowUp: _follow_up,
    Shell: _shell,
    Abort: _abort,
    Compact: _compact,
    SetModel: _set_model,
    SetThinking: _set_thinking,
    SetMode: _set_mode,
    QueueRemove: _queue_remove,
    QueueClear: _queue_clear,
    Undo: _undo,
    Redo: _redo,
    Restore: _restore,
    Diff: _diff,
    History: _history,
    Context: _context,
    ListFiles: _list_files,
    Plugins: _plugins,
    SessionInfo: _session_info,
    Entries: _entries,
    Tree: _tree,
    Select: _select,
    Fork: _fork,
}


def parse_op(data: Mapping[str, Any], surface: Surface = "library") -> Operation:
    """The operation `data` ({"op": NAME, field: value, ...}) declares; a diagnostic
    naming the operation or the field when it declares none or a malformed one."""
    if not isinstance(data, Mapping):
        raise NO_OP.error(value=str(data)[:80], source=Source(surface, "op"),
                          known=", ".join(OPERATIONS))  # fmt: skip
    name = data.get("op")
    cls = OPERATIONS.get(name) if isinstance(name, str) else None
    if not isinstance(name, str):
        raise NO_OP.error(value=str(name), source=Source(surface, "op"),
                          known=", ".join(OPERATIONS))  # fmt: skip
    if cls is None:
        raise UNKNOWN_OP.error(
            value=str(name), source=Source(surface, "op"), op=name, known=", ".join(OPERATIONS)
        )
    fields = {f.name: f for f in protocol.fields(cls)}
    given = {ALIASES.get(cls.op, {}).get(k, k): v for k, v in data.items() if k != "op"}
    signature = (
        ", ".join(
            f"{f.name} ({_kind(f)}{'' if _required(f) else ', optional'})" for f in fields.values()
        )
        or "no fields"
    )
    values: dict[str, object] = {}
    for key, value in given.items():
        field = fields.get(key)
        if field is None:
            raise BAD_OP.error(value=key, source=Source(surface, f"{cls.op}.{key}"), op=cls.op,
                               name=key, problem="not one of its fields",
                               signature=signature, kind="one of its fields")  # fmt: skip
        if value is None and not _required(field):
            continue
        if key == "images":
            values[key] = images_from_data(value, Source(surface, f"{cls.op}.images"))
            continue
        if _type(field) is tuple:
            if not (isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)):
                raise BAD_OP.error(value=str(value)[:80], source=Source(surface, f"{cls.op}.{key}"),
                                   op=cls.op, name=key, problem=f"{type(value).__name__}, "
                                   f"not {_kind(field)}", signature=signature,
                                   kind=_kind(field))  # fmt: skip
            values[key] = tuple(value)
            continue
        kind = _type(field)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise BAD_OP.error(value=str(value)[:80], source=Source(surface, f"{cls.op}.{key}"),
                               op=cls.op, name=key, problem=f"{type(value).__name__}, "
                               f"not {_kind(field)}", signature=signature,
                               kind=_kind(field))  # fmt: skip
        if isinstance(value, int) and value < 0:  # counts and limits: never below nothing
            raise BAD_OP.error(value=str(value), source=Source(surface, f"{cls.op}.{key}"),
                               op=cls.op, name=key, problem="below 0", signature=signature,
                               kind="a whole number, 0 or more")  # fmt: skip
        values[key] = value
    for key, field in fields.items():
        if _required(field) and key not in values:
            raise BAD_OP.error(value=cls.op, source=Source(surface, f"{cls.op}.{key}"),
                               op=cls.op, name=key, problem="missing",
                               signature=signature, kind=_kind(field))  # fmt: skip
    return cls(**values)


def checked(op: Operation, surface: Surface = "library") -> Operation:
    """A typed operation, checked as the same operation given as data is (a Struct built
    in Python is not checked): the same diagnostic naming a field of the wrong type, a
    missing one, a count below 0. Its images are the caller's own, checked where they
    were made (Image.from_bytes, load_image)."""
    try:
        data = op.to_dict()
    except TypeError:  # a value JSON cannot hold: named by parse_op's signature
        data = {"op": op.op, **{f: getattr(op, f) for f in op.__struct_fields__}}
    data.pop("images", None)
    parse_op(data, surface)
    return op


def images_from_data(
    value: object,
    source: Source,
    *,
    max_bytes: int | None = None,
    where: str = "the default",
    cwd: str | None = None,
) -> tuple[Image, ...]:
    """The images of an operation given as data: a list of `{"media_type", "data"
    (base64), "name"?}` or `{"path", "name"?}` objects; a diagnostic naming the first
    that is not one, is not an image, or is too large."""
    from smith.runtime._images import IMAGE_SHAPE, MAX_BYTES, load_image

    bound = MAX_BYTES if max_bytes is None else max_bytes
    if not isinstance(value, list):
        raise IMAGE_SHAPE.error(value=str(value)[:80], source=source, where=source.location,
                                problem=f"{type(value).__name__}, not a list")  # fmt: skip
    out: list[Image] = []
    for n, item in enumerate(value):
        at = f"{source.location}[{n}]"
        here = Source(source.surface, at)
        if not isinstance(item, dict):
            raise IMAGE_SHAPE.error(value=str(item)[:80], source=here, where=at,
                                    problem=f"{type(item).__name__}, not an object")  # fmt: skip
        name, path, data = item.get("name"), item.get("path"), item.get("data")
        media_type = item.get("media_type")
        unknown = sorted(set(item) - {"name", "path", "data", "media_type"})
        problem = None
        if unknown:
            problem = f"it has {', '.join(map(repr, unknown))}"
        elif (path is None) == (data is None):
            problem = "it needs exactly one of 'path' and 'data'"
        elif path is not None and not isinstance(path, str):
            problem = "its 'path' is not a string"
        elif data is not None and not (isinstance(data, str) and isinstance(media_type, str)):
            problem = "'data' needs to be a base64 string, with 'media_type' a string"
        elif name is not None and not isinstance(name, str):
            problem = "its 'name' is not a string"
        if problem is not None:
            raise IMAGE_SHAPE.error(value=str(item)[:80], source=here, where=at, problem=problem)
        if isinstance(path, str):
            image = load_image(path, max_bytes=bound, where=where, surface=source.surface, cwd=cwd)
            out.append(protocol.renamed(image, name) if isinstance(name, str) else image)
        else:
            assert isinstance(data, str) and isinstance(media_type, str)
            label = name if isinstance(name, str) else f"image {n + 1}"
            out.append(Image.from_base64(data, name=label, media_type=media_type,
                                         max_bytes=bound, where=where, source=here))  # fmt: skip
    return tuple(out)


def _type(field: protocol.FieldInfo) -> type:
    """The field's type, less None: str, bool, int, or tuple (of strings, or images)."""
    import types
    import typing

    declared = field.type
    if typing.get_origin(declared) is typing.Annotated:  # a bound on it (Meta(ge=0))
        declared = typing.get_args(declared)[0]
    if isinstance(declared, types.UnionType) or typing.get_origin(declared) is typing.Union:
        declared = next(a for a in typing.get_args(declared) if a is not type(None))
    found = typing.get_origin(declared) or declared
    assert found in (str, bool, int, tuple), field
    return found  # type: ignore[no-any-return]


def _kind(field: protocol.FieldInfo) -> str:
    if field.name == "images":
        return 'a list of {"media_type", "data"} or {"path"} objects'
    if _type(field) is tuple:
        return "a list of strings"
    return _KINDS[_type(field)]


def _required(field: protocol.FieldInfo) -> bool:
    return field.required


__all__ = [
    "APPLY",
    "BAD_OP",
    "EMPTY_INPUT",
    "NO_OP",
    "OPERATIONS",
    "UNKNOWN_OP",
    "Abort",
    "Compact",
    "Context",
    "Diff",
    "Entries",
    "FollowUp",
    "Fork",
    "History",
    "Image",
    "ListFiles",
    "Operation",
    "Plugins",
    "Prompt",
    "QueueClear",
    "QueueRemove",
    "Redo",
    "Restore",
    "Select",
    "SessionInfo",
    "SetMode",
    "SetModel",
    "SetThinking",
    "Shell",
    "Steer",
    "Tree",
    "Undo",
    "checked",
    "images_from_data",
    "parse_op",
]
