"""Every operation a frontend submits to the runtime (`Runtime.submit`, RPC `submit`, a
command's `RuntimeHandle.submit`), declared once: each is a frozen msgspec `Struct` whose
fields are its parameters, typed as a Python caller builds it (`Prompt("fix the tests")`,
`Diff("a1b2")`). smith.runtime.ops holds what each does and reads one from data with
diagnostics naming the field; the JSON Schema of `smith rpc --schema` and docs/rpc.md's
table are generated from these.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, TypeVar, Union, get_args

import msgspec
from msgspec.structs import FieldInfo


class Image(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """One image an input carries: its bytes (base64 in JSON), media type and the name it
    is shown by. As data a client may instead give `{"path"}` (a file the runtime reads
    and checks; smith.runtime._images)."""

    data: bytes
    media_type: str
    name: str = "image"


AnImage = TypeVar("AnImage", bound=Image)


class Op(msgspec.Struct, tag_field="op", forbid_unknown_fields=True, frozen=True):
    """What every operation is: a name (`op`, its tag) and typed fields."""

    op: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        """As data, as a client sends it: `{"op": NAME, field: value, ...}` (lists for
        tuples, an image's bytes in base64)."""
        found = msgspec.json.decode(msgspec.json.encode(self))
        assert isinstance(found, dict)
        return found


def fields(cls: type[Op]) -> tuple[FieldInfo, ...]:
    """An operation's fields: name, type, whether it is required (smith.runtime.ops
    reads an operation from data by them)."""
    return msgspec.structs.fields(cls)


def renamed(image: AnImage, name: str) -> AnImage:
    """`image` (the protocol's, or a subclass's) shown by another name."""
    return msgspec.structs.replace(image, name=name)


class Prompt(Op, tag="prompt", frozen=True):
    """Start on `text` (with `images`); while busy it is queued as a follow-up (a plugin's
    `/NAME` command is answered at once then: smith.runtime._command). Returns
    its submission id (`p-…` started, `q-…` queued: the queue item's id); every event it
    causes carries it as `submission`. Images the model does not take refuse it whole."""

    text: str
    images: tuple[Image, ...] = ()
    op: ClassVar[str] = "prompt"


class Steer(Op, tag="steer", frozen=True):
    """Deliver `text` (with `images`) after the current tool batch, before the next
    request."""

    text: str
    images: tuple[Image, ...] = ()
    op: ClassVar[str] = "steer"


class FollowUp(Op, tag="follow_up", frozen=True):
    """Deliver `text` (with `images`) once the agent would otherwise stop."""

    text: str
    images: tuple[Image, ...] = ()
    op: ClassVar[str] = "follow_up"


class Shell(Op, tag="shell", frozen=True):
    """Run `command` in the project's shell as the user's own effect (`!command`): journaled,
    snapshotted (undo takes it back), shown as a bash call; `context`: its output goes
    into the context of the next message (`!!command`: false, the model never sees it).
    Refused while busy. Returns the call id of its tool_start/tool_end events."""

    command: str
    context: bool = True
    op: ClassVar[str] = "shell"


class Abort(Op, tag="abort", frozen=True):
    """Cancel the current work; True if there was any."""

    op: ClassVar[str] = "abort"


class Compact(Op, tag="compact", frozen=True):
    """Compact the context now when idle, else at the next safe point; `focus` says what
    the summary must keep above all (`/compact FOCUS`)."""

    focus: str | None = None
    op: ClassVar[str] = "compact"


class SetModel(Op, tag="set_model", frozen=True):
    """The set_model operation."""

    model: str
    op: ClassVar[str] = "set_model"


class SetThinking(Op, tag="set_thinking", frozen=True):
    """The set_thinking operation."""

    level: str
    op: ClassVar[str] = "set_thinking"


class SetMode(Op, tag="set_mode", frozen=True):
    """Enter or leave a mode: `plan` (only read-only tools run; the model is told it is
    planning) or `normal`; recorded in the session, so resume keeps it (docs/plan.md).
    Leaving plan mode takes the plan (the last answer given in it) and, with `prompt`,
    sends it as the next prompt (queued as a follow-up while the agent works). Returns
    `{"mode", "previous", "plan", "submission"}`."""

    mode: str
    prompt: bool = True
    op: ClassVar[str] = "set_mode"


class QueueRemove(Op, tag="queue_remove", frozen=True):
    """Take a queued input back; False when it is gone (delivered meanwhile)."""

    id: str
    op: ClassVar[str] = "queue_remove"


class QueueClear(Op, tag="queue_clear", frozen=True):
    """Take every queued input back; how many there were."""

    op: ClassVar[str] = "queue_clear"


class Undo(Op, tag="undo", frozen=True):
    """The undo operation."""

    force: bool = False
    op: ClassVar[str] = "undo"


class Redo(Op, tag="redo", frozen=True):
    """The redo operation."""

    force: bool = False
    op: ClassVar[str] = "redo"


class Restore(Op, tag="restore", frozen=True):
    """The files as they were at session entry `target`; `conversation`: continue the
    session from there too."""

    target: str
    conversation: bool = False
    force: bool = False
    op: ClassVar[str] = "restore"


class Diff(Op, tag="diff", frozen=True):
    """What changed between two session entries (`b` unset: the files now)."""

    a: str | None = None
    b: str | None = None
    op: ClassVar[str] = "diff"


class History(Op, tag="history", frozen=True):
    """The turns of this session that changed files."""

    op: ClassVar[str] = "history"


class Context(Op, tag="context", frozen=True):
    """What the model is told besides the conversation, part by part, in the order the
    next request sends it: `[{name, source, sent, tokens, text}]` (docs/context.md).
    `upcoming` reads git for the next environment block (up to its timeout): run it off
    the event loop."""

    upcoming: bool = True
    op: ClassVar[str] = "context"


class ListFiles(Op, tag="list_files", frozen=True):
    """The project's files as the find tool sees them (smith.effects.list_files under the
    runtime's working directory and tools.ignore): `{"files": [path relative to it],
    "cut": whether there were more than `limit`}`. It runs rg: call it off the event loop."""

    limit: Annotated[int, msgspec.Meta(ge=0)] = 200_000
    op: ClassVar[str] = "list_files"


class Plugins(Op, tag="plugins", frozen=True):
    """The plugin list the runtime was built with, as `smith plugins list --json` prints
    it (smith.sdk.PluginList.to_dict: each plugin's source, state, contributions,
    settings), with each one's status in this runtime (starting, ready, failed with its
    diagnostic, stopped: smith.runtime._lifecycle)."""

    op: ClassVar[str] = "plugins"


class SessionInfo(Op, tag="session_info", frozen=True):
    """The runtime's session: `{id, name, path, entries, leaf, cwd}` (frontends read
    the session only through these operations and the `entry` event)."""

    op: ClassVar[str] = "session_info"


class Entries(Op, tag="entries", frozen=True):
    """The entries of `kinds` (unset: every kind) on the branch ending at `leaf` (unset:
    the selected one) after `since` when it is on that branch, else the whole branch:
    a `Shown` (entries, ids, pairs, leaf, whole). What the app draws."""

    since: str | None = None
    leaf: str | None = None
    kinds: tuple[str, ...] | None = None
    op: ClassVar[str] = "entries"


class Tree(Op, tag="tree", frozen=True):
    """Every branch of the session, for a navigator: a `Tree` (the records' parent
    links, the selected leaf; entries made and decoded only as asked)."""

    op: ClassVar[str] = "tree"


class Select(Op, tag="select", frozen=True):
    """Select the entry `leaf`: the session continues from there (branch navigation);
    refused while a turn runs. Returns the session's info."""

    leaf: str
    op: ClassVar[str] = "select"


class Fork(Op, tag="fork", frozen=True):
    """A new session beside this one holding its branch up to `at` (unset: the
    selected leaf), named `name` (unset: "fork of" this one's): the new Session, open for
    writing (the caller switches to it). Refused while a turn runs."""

    at: str | None = None
    name: str | None = None
    op: ClassVar[str] = "fork"


Operation = Union[  # noqa: UP007 (a runtime union msgspec and JSON Schema read)
    Prompt, Steer, FollowUp, Shell, Abort, Compact, SetModel, SetThinking, SetMode, QueueRemove,
    QueueClear, Undo, Redo, Restore, Diff, History, Context, ListFiles, Plugins, SessionInfo,
    Entries, Tree, Select, Fork,
]  # fmt: skip

OPERATIONS: dict[str, type[Op]] = {cls.op: cls for cls in get_args(Operation)}
# Older spellings of a field, still taken as data: operation -> {old name: field}.
ALIASES: dict[str, dict[str, str]] = {"restore": {"entry": "target"}}

__all__ = [
    "ALIASES",
    "OPERATIONS",
    "Abort",
    "AnImage",
    "Compact",
    "Context",
    "Diff",
    "Entries",
    "FieldInfo",
    "FollowUp",
    "Fork",
    "History",
    "Image",
    "ListFiles",
    "Op",
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
    "fields",
    "renamed",
]
