"""Every operation a frontend submits to the runtime (`Runtime.submit({"op": ...})`, RPC
`submit`), declared once; smith.runtime.ops holds what each does and checks its fields
with the same names and types (a test keeps the two equal)."""

from __future__ import annotations

from typing import Union, get_args

import msgspec


class _Op(msgspec.Struct, tag_field="op", forbid_unknown_fields=True, kw_only=True,
          frozen=True):  # fmt: skip
    pass


class ImageData(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """An image given as data: `media_type` and base64 `data`, or a `path`; `name` to show."""

    media_type: str | None = None
    data: str | None = None
    path: str | None = None
    name: str | None = None


class Prompt(_Op, tag="prompt", frozen=True):
    """Start on `text` (with `images`); while busy it is queued as a follow-up."""

    text: str
    images: list[ImageData] | None = None


class Steer(_Op, tag="steer", frozen=True):
    """Deliver `text` after the current tool batch, before the next request."""

    text: str
    images: list[ImageData] | None = None


class FollowUp(_Op, tag="follow_up", frozen=True):
    """Deliver `text` once the agent would otherwise stop."""

    text: str
    images: list[ImageData] | None = None


class Shell(_Op, tag="shell", frozen=True):
    """Run the user's own command (`!command`; context false: `!!command`)."""

    command: str
    context: bool | None = None


class Abort(_Op, tag="abort", frozen=True):
    """Cancel the current work."""


class Compact(_Op, tag="compact", frozen=True):
    """Compact now when idle, else at the next safe point."""

    focus: str | None = None


class SetModel(_Op, tag="set_model", frozen=True):
    """Switch the model (a reference or an alias)."""

    model: str


class SetThinking(_Op, tag="set_thinking", frozen=True):
    """Set the thinking level."""

    level: str


class QueueRemove(_Op, tag="queue_remove", frozen=True):
    """Remove a queued item by its id."""

    id: str


class QueueClear(_Op, tag="queue_clear", frozen=True):
    """Remove every queued item."""


class Undo(_Op, tag="undo", frozen=True):
    """Take back the last turn's file changes."""

    force: bool | None = None


class Redo(_Op, tag="redo", frozen=True):
    """Put back what the last undo took back."""

    force: bool | None = None


class Restore(_Op, tag="restore", frozen=True):
    """Return the files (and with `conversation`, the conversation) to an entry."""

    target: str | None = None
    entry: str | None = None  # the older spelling of target
    conversation: bool | None = None
    force: bool | None = None


class Diff(_Op, tag="diff", frozen=True):
    """What changed between two points of file history."""

    a: str | None = None
    b: str | None = None


class History(_Op, tag="history", frozen=True):
    """The turns of file history."""


class Context(_Op, tag="context", frozen=True):
    """What the model is told besides the conversation."""

    upcoming: bool | None = None


class ListFiles(_Op, tag="list_files", frozen=True):
    """The project's file list."""

    limit: int | None = None


class Plugins(_Op, tag="plugins", frozen=True):
    """The plugins running in the runtime."""


class SessionInfo(_Op, tag="session_info", frozen=True):
    """The runtime's session: id, name, file, entry count, selected leaf."""


class Entries(_Op, tag="entries", frozen=True):
    """Entries of a branch (what a frontend shows), since one already shown."""

    since: str | None = None
    leaf: str | None = None
    kinds: list[str] | None = None


class Tree(_Op, tag="tree", frozen=True):
    """Every branch of the session, for a navigator."""


class Select(_Op, tag="select", frozen=True):
    """Select an entry: the session continues from there."""

    leaf: str


class Fork(_Op, tag="fork", frozen=True):
    """A new session holding this one's branch up to an entry."""

    at: str | None = None
    name: str | None = None


Operation = Union[  # noqa: UP007 (a runtime union msgspec and JSON Schema read)
    Prompt, Steer, FollowUp, Shell, Abort, Compact, SetModel, SetThinking, QueueRemove,
    QueueClear, Undo, Redo, Restore, Diff, History, Context, ListFiles, Plugins, SessionInfo,
    Entries, Tree, Select, Fork,
]  # fmt: skip

OPERATIONS: dict[str, type[_Op]] = {
    str(cls.__struct_config__.tag): cls for cls in get_args(Operation)
}
