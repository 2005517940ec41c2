"""The runtime's operations, one declaration each (as codex's protocol declares its Op).

Every frontend asks the runtime for something by submitting one of these:

    runtime.submit(Prompt("fix the failing test"))     # typed, from Python
    runtime.submit({"op": "prompt", "text": "..."})     # the same, as data (RPC, JSON)

Each operation is a frozen dataclass whose fields are its parameters (their types are
checked when it is built from data: a missing or mistyped field is a diagnostic naming
it) and whose `apply` is what it does. `OPERATIONS` maps each name to its class; the
names are the vocabulary of docs/rpc.md's `submit` and of the app's commands.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from smith.diagnostics import DiagnosticKind, Source
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
    what="the operation names no operation: it has no 'op' field (or it is not a string)",
    why="every operation is an object whose 'op' is one of: {known}",
    fix='add "op", e.g. {{"op": "prompt", "text": "..."}}',
)
BAD_OP = DiagnosticKind(
    "runtime.bad-op",
    what="the {op} operation's {name} is {problem}",
    why="{op} takes {signature}",
    fix="send {name} as {kind}",
)

_KINDS = {str: "a string", bool: "true or false", int: "a whole number"}


class Operation:
    """What every operation is: a name, typed fields, and what it does."""

    op: ClassVar[str]

    def apply(self, rt: Runtime) -> object:
        raise NotImplementedError

    def to_dict(self) -> dict[str, object]:
        return {"op": self.op, **dataclasses.asdict(self)}  # type: ignore[call-overload]


class _WithImages(Operation):
    """An input with images attached: as data, each image is `{"media_type", "data"
    (base64)}` or `{"path"}` (smith.runtime._images checks them)."""

    text: str
    images: tuple[Image, ...]

    def to_dict(self) -> dict[str, object]:
        import base64

        shown = [
            {"media_type": i.media_type, "data": base64.b64encode(i.data).decode(), "name": i.name}
            for i in self.images
        ]
        return {"op": self.op, "text": self.text, "images": shown}


@dataclass(frozen=True)
class Prompt(_WithImages):
    """Start on `text` (with `images`); while busy it is queued as a follow-up. Returns
    its submission id (`p-…` started, `q-…` queued: the queue item's id); every event it
    causes carries it as `submission`. Images the model does not take refuse it whole."""

    text: str
    images: tuple[Image, ...] = ()
    op: ClassVar[str] = "prompt"

    def apply(self, rt: Runtime) -> object:
        return rt.prompt(self.text, self.images)


@dataclass(frozen=True)
class Steer(_WithImages):
    """Deliver `text` (with `images`) after the current tool batch, before the next
    request."""

    text: str
    images: tuple[Image, ...] = ()
    op: ClassVar[str] = "steer"

    def apply(self, rt: Runtime) -> object:
        return rt.steer(self.text, self.images)


@dataclass(frozen=True)
class FollowUp(_WithImages):
    """Deliver `text` (with `images`) once the agent would otherwise stop."""

    text: str
    images: tuple[Image, ...] = ()
    op: ClassVar[str] = "follow_up"

    def apply(self, rt: Runtime) -> object:
        return rt.follow_up(self.text, self.images)


@dataclass(frozen=True)
class Shell(Operation):
    """Run `command` in the project's shell as the user's own effect (`!command`): journaled,
    snapshotted (undo takes it back), shown as a bash call; `context`: its output goes
    into the context of the next message (`!!command`: false, the model never sees it).
    Refused while busy. Returns the call id of its tool_start/tool_end events."""

    command: str
    context: bool = True
    op: ClassVar[str] = "shell"

    def apply(self, rt: Runtime) -> object:
        return rt.shell(self.command, context=self.context)


@dataclass(frozen=True)
class Abort(Operation):
    """Cancel the current work; True if there was any."""

    op: ClassVar[str] = "abort"

    def apply(self, rt: Runtime) -> object:
        return rt.abort()


@dataclass(frozen=True)
class Compact(Operation):
    """Compact the context now when idle, else at the next safe point; `focus` says what
    the summary must keep above all (`/compact FOCUS`)."""

    focus: str | None = None
    op: ClassVar[str] = "compact"

    def apply(self, rt: Runtime) -> object:
        rt.compact(self.focus)
        return None


@dataclass(frozen=True)
class SetModel(Operation):
    model: str
    op: ClassVar[str] = "set_model"

    def apply(self, rt: Runtime) -> object:
        rt.set_model(self.model)
        return None


@dataclass(frozen=True)
class SetThinking(Operation):
    level: str
    op: ClassVar[str] = "set_thinking"

    def apply(self, rt: Runtime) -> object:
        rt.set_thinking(self.level)
        return None


@dataclass(frozen=True)
class QueueRemove(Operation):
    """Take a queued input back; False when it is gone (delivered meanwhile)."""

    id: str
    op: ClassVar[str] = "queue_remove"

    def apply(self, rt: Runtime) -> object:
        return rt.queue.remove(self.id)


@dataclass(frozen=True)
class QueueClear(Operation):
    """Take every queued input back; how many there were."""

    op: ClassVar[str] = "queue_clear"

    def apply(self, rt: Runtime) -> object:
        return rt.queue.clear()


@dataclass(frozen=True)
class Undo(Operation):
    force: bool = False
    op: ClassVar[str] = "undo"

    def apply(self, rt: Runtime) -> object:
        return rt.undo(force=self.force)


@dataclass(frozen=True)
class Redo(Operation):
    force: bool = False
    op: ClassVar[str] = "redo"

    def apply(self, rt: Runtime) -> object:
        return rt.redo(force=self.force)


@dataclass(frozen=True)
class Restore(Operation):
    """The files as they were at session entry `target`; `conversation`: continue the
    session from there too."""

    target: str
    conversation: bool = False
    force: bool = False
    op: ClassVar[str] = "restore"

    def apply(self, rt: Runtime) -> object:
        return rt.restore(self.target, conversation=self.conversation, force=self.force)


@dataclass(frozen=True)
class Diff(Operation):
    """What changed between two session entries (`b` unset: the files now)."""

    a: str | None = None
    b: str | None = None
    op: ClassVar[str] = "diff"

    def apply(self, rt: Runtime) -> object:
        return rt.files("diff").diff(self.a, self.b)


@dataclass(frozen=True)
class History(Operation):
    """The turns of this session that changed files."""

    op: ClassVar[str] = "history"

    def apply(self, rt: Runtime) -> object:
        return rt.files("history").history()


@dataclass(frozen=True)
class Context(Operation):
    """What the model is told besides the conversation, part by part, in the order the
    next request sends it: `[{name, source, sent, tokens, text}]` (docs/context.md).
    `upcoming` reads git for the next environment block (up to its timeout): run it off
    the event loop."""

    upcoming: bool = True
    op: ClassVar[str] = "context"

    def apply(self, rt: Runtime) -> object:
        return [part.to_dict() for part in rt.context_parts(upcoming=self.upcoming)]


@dataclass(frozen=True)
class ListFiles(Operation):
    """The project's files as the find tool sees them (smith.effects.list_files under the
    runtime's working directory and tools.ignore): `{"files": [path relative to it],
    "cut": whether there were more than `limit`}`. It runs rg: call it off the event loop."""

    limit: int = 200_000
    op: ClassVar[str] = "list_files"

    def apply(self, rt: Runtime) -> object:
        from smith.effects import list_files

        files, cut = list_files(rt.context, self.limit)
        return {"files": files, "cut": cut}


@dataclass(frozen=True)
class Plugins(Operation):
    """The plugin list the runtime was built with, as `smith plugins list --json` prints
    it (smith.sdk.PluginList.to_dict: each plugin's source, state, contributions,
    settings), with each one's status in this runtime (starting, ready, failed with its
    diagnostic, stopped: smith.runtime._lifecycle)."""

    op: ClassVar[str] = "plugins"

    def apply(self, rt: Runtime) -> object:
        return rt.lifecycle.to_dict(rt.plugin_list.to_dict())


@dataclass(frozen=True)
class SessionInfo(Operation):
    """The runtime's session: `{id, name, path, entries, leaf, cwd}` (frontends read
    the session only through these operations and the `entry` event)."""

    op: ClassVar[str] = "session_info"

    def apply(self, rt: Runtime) -> object:
        from smith.runtime._sessionface import info

        return info(rt.session)


@dataclass(frozen=True)
class Entries(Operation):
    """The entries of `kinds` (unset: every kind) on the branch ending at `leaf` (unset:
    the selected one) after `since` when it is on that branch, else the whole branch:
    a `Shown` (entries, ids, pairs, leaf, whole). What the app draws."""

    since: str | None = None
    leaf: str | None = None
    kinds: tuple[str, ...] | None = None
    op: ClassVar[str] = "entries"

    def apply(self, rt: Runtime) -> object:
        from smith.runtime._sessionface import entries

        if self.leaf is not None:
            rt.session.entry(self.leaf)  # session.unknown-entry, naming it
        return entries(rt.session, self.since, self.leaf, self.kinds)


@dataclass(frozen=True)
class Tree(Operation):
    """Every branch of the session, for a navigator: a `Tree` (the records' parent
    links, the selected leaf; entries made and decoded only as asked)."""

    op: ClassVar[str] = "tree"

    def apply(self, rt: Runtime) -> object:
        from smith.runtime._sessionface import Tree

        return Tree(rt.session)


@dataclass(frozen=True)
class Select(Operation):
    """Select the entry `leaf`: the session continues from there (branch navigation);
    refused while a turn runs. Returns the session's info."""

    leaf: str
    op: ClassVar[str] = "select"

    def apply(self, rt: Runtime) -> object:
        from smith.runtime._sessionface import info

        rt.idle_for("select")
        rt.session.select(self.leaf)
        return info(rt.session)


@dataclass(frozen=True)
class Fork(Operation):
    """A new session beside this one holding its branch up to `at` (unset: the
    selected leaf), named `name` (unset: "fork of" this one's): the new Session, open for
    writing (the caller switches to it). Refused while a turn runs."""

    at: str | None = None
    name: str | None = None
    op: ClassVar[str] = "fork"

    def apply(self, rt: Runtime) -> object:
        from smith.runtime._sessionface import fork

        rt.idle_for("fork")
        return fork(rt.session, self.at, self.name)


OPERATIONS: dict[str, type[Operation]] = {
    cls.op: cls
    for cls in (
        Prompt,
        Steer,
        FollowUp,
        Shell,
        Abort,
        Compact,
        SetModel,
        SetThinking,
        QueueRemove,
        QueueClear,
        Undo,
        Redo,
        Restore,
        Diff,
        History,
        Context,
        ListFiles,
        Plugins,
        SessionInfo,
        Entries,
        Tree,
        Select,
        Fork,
    )
}
ALIASES = {"restore": {"entry": "target"}}  # older spellings of a field


def parse_op(data: Mapping[str, Any], surface: Surface = "library") -> Operation:
    """The operation `data` ({"op": NAME, field: value, ...}) declares; a diagnostic
    naming the operation or the field when it declares none or a malformed one."""
    name = data.get("op")
    cls = OPERATIONS.get(name) if isinstance(name, str) else None
    if not isinstance(name, str):
        raise NO_OP.error(value=str(name), source=Source(surface, "op"),
                          known=", ".join(OPERATIONS))  # fmt: skip
    if cls is None:
        raise UNKNOWN_OP.error(
            value=str(name), source=Source(surface, "op"), op=name, known=", ".join(OPERATIONS)
        )
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
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
            out.append(dataclasses.replace(image, name=name) if isinstance(name, str) else image)
        else:
            assert isinstance(data, str) and isinstance(media_type, str)
            label = name if isinstance(name, str) else f"image {n + 1}"
            out.append(Image.from_base64(data, name=label, media_type=media_type,
                                         max_bytes=bound, where=where, source=here))  # fmt: skip
    return tuple(out)


def _type(field: dataclasses.Field[Any]) -> type:
    declared = str(field.type)
    if declared.startswith("tuple"):
        return tuple
    return bool if declared.startswith("bool") else int if declared.startswith("int") else str


def _kind(field: dataclasses.Field[Any]) -> str:
    if field.name == "images":
        return 'a list of {"media_type", "data"} or {"path"} objects'
    if _type(field) is tuple:
        return "a list of strings"
    return _KINDS[_type(field)]


def _required(field: dataclasses.Field[Any]) -> bool:
    return field.default is dataclasses.MISSING


__all__ = [
    "BAD_OP",
    "NO_OP",
    "OPERATIONS",
    "UNKNOWN_OP",
    "Abort",
    "Compact",
    "Diff",
    "FollowUp",
    "History",
    "ListFiles",
    "Operation",
    "Plugins",
    "Prompt",
    "QueueClear",
    "QueueRemove",
    "Redo",
    "Restore",
    "SetModel",
    "SetThinking",
    "Shell",
    "Steer",
    "Undo",
    "images_from_data",
    "parse_op",
]
