"""Reading file history out of a session: the `vcs` entries, the turns they group into,
and what is undone.

Every snapshot and every operation is one session entry of kind `vcs`; its content has
`op` and `tree` (the state of the files after it), and:

- `op: snapshot`: `phase` — `before` (taken before a batch of mutating tool calls, or
  the user's own command, `!cmd`, whose snapshots' `cause` has `shell` and `command`, when
  the files differ from the last recorded state: changes made outside smith), `after`
  (after that batch, when it changed something; `base` is the tree before it), or `user`
  (before an operation, recording changes made since) — and `prompt`, the user message
  entry the turn answers;
- `op: undo | redo | restore`: `before` (the files just before), `from`/`to` (the
  snapshots whose difference was applied), `paths`, `unit` (undo/redo: the turn or
  restore they act on), `effect` (its effect record), `forced`.

A *unit* is what one undo takes back: the `after` snapshots of one prompt's run taken
together (from the first one's base to the last one's tree), or one restore. A `before`
snapshot between them (files changed outside smith while the turn ran) ends the unit, so
that an undo takes back only what smith did. Units form an editor's undo stack: undo
moves the newest done unit to the redo stack, redo moves it back, and any new unit
empties the redo stack.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.session import Entry, Session

VCS = "vcs"
Record = tuple["Entry", dict[str, object]]


class Unit:
    """One undoable change: from `base` to `tree`. `id` is its first record's entry id,
    `last` its latest record's."""

    __slots__ = ("base", "id", "kind", "last", "prompt", "tree", "ts", "undone")

    def __init__(
        self, kind: str, id: str, base: str, tree: str, prompt: str | None, ts: int
    ) -> None:
        self.kind = kind  # turn | restore
        self.id = id
        self.last = id
        self.base = base
        self.tree = tree
        self.prompt = prompt
        self.ts = ts
        self.undone = False

    def __repr__(self) -> str:
        return f"<Unit {self.kind} {self.id} {self.base[:7]}..{self.tree[:7]}>"


def records(session: Session, leaf: str | None = None) -> list[Record]:
    """The `vcs` entries on the branch to `leaf` (default: the selected one), oldest
    first; only they are decoded."""
    found: list[Record] = []
    for entry in session.branch(leaf):
        if entry.kind == VCS:
            content = entry.content
            if isinstance(content, dict) and isinstance(content.get("tree"), str):
                found.append((entry, content))
    return found


def last_tree(session: Session) -> str | None:
    """The state of the files the selected branch last recorded (None: nothing yet)."""
    target = session.leaf
    while target is not None:
        entry = session.entry(target)
        if entry.kind == VCS:
            content = entry.content
            tree = content.get("tree") if isinstance(content, dict) else None
            if isinstance(tree, str):
                return tree
        target = entry.parent
    return None


def entering(content: dict[str, object]) -> str:
    """The state of the files just before a record: what it was taken against."""
    for key in ("before", "base"):
        value = content.get(key)
        if isinstance(value, str):
            return value
    return str(content["tree"])


class Stacks:
    """The units of a branch in order, which are done (newest last) and which undone
    (the next redo last)."""

    def __init__(self, found: list[Record]) -> None:
        self.units: list[Unit] = []
        self.done: list[Unit] = []
        self.undone: list[Unit] = []
        running: Unit | None = None  # the turn the next `after` snapshot may extend
        for entry, content in found:
            op = content.get("op")
            tree = str(content["tree"])
            if op == "snapshot" and content.get("phase") == "after":
                prompt = content.get("prompt")
                prompt = prompt if isinstance(prompt, str) else None
                # The user's own command (`!cmd`, cause `shell`) is a unit of its own,
                # never part of the turn before or after it.
                cause = content.get("cause")
                alone = isinstance(cause, dict) and "shell" in cause
                extends = running is not None and prompt is not None and running.prompt == prompt
                if extends and not alone:
                    assert running is not None
                    running.tree, running.last = tree, entry.id
                    continue
                running = Unit("turn", entry.id, entering(content), tree, prompt, entry.ts)
                self._push(running)
                if alone:
                    running = None
            elif op == "snapshot" and content.get("phase") == "before":
                # Files changed outside smith between two batches of a turn (the user
                # typing while it ran): the turn's later batches are a unit of their own,
                # so that undoing the turn never takes those changes back with it.
                running = None
            elif op == "restore":
                running = None
                self._push(Unit("restore", entry.id, entering(content), tree, None, entry.ts))
            elif op in ("undo", "redo"):
                running = None
                source, target = (
                    (self.done, self.undone) if op == "undo" else (self.undone, self.done)
                )
                unit = next((u for u in source if u.id == content.get("unit")), None)
                if unit is not None:
                    source.remove(unit)
                    target.append(unit)
                    unit.undone = op == "undo"

    def _push(self, unit: Unit) -> None:
        self.units.append(unit)
        self.done.append(unit)
        self.undone.clear()  # what was undone stays undone; it can no longer be redone


def prompt_of(session: Session) -> str | None:
    """The id of the user message the selected branch's current turn answers."""
    target = session.leaf
    while target is not None:
        entry = session.entry(target)
        if entry.kind == "message":
            content = entry.content
            if isinstance(content, dict) and content.get("role") == "user":
                return entry.id
        target = entry.parent
    return None


ATTACHED = '<attached path="'


def prompt_text(session: Session, prompt: str | None, width: int = 60) -> str:
    """The start of a user message's text, on one line."""
    if prompt is None:
        return ""
    from smith.diagnostics import SmithError

    try:
        message = session.entry(prompt).content
    except SmithError:
        return ""
    parts = message.get("content") if isinstance(message, dict) else None
    texts = [str(p.get("text", "")) for p in parts or []
             if isinstance(p, dict) and p.get("type") == "text"]  # fmt: skip
    # As typed: the files its @paths attached (text parts after the first, each an
    # `<attached path=...>` block: smith.runtime._attach) are not what the user wrote.
    text = " ".join(texts[:1] + [t for t in texts[1:] if not t.startswith(ATTACHED)])
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def state_at(session: Session, entry_id: str) -> tuple[str, str] | None:
    """The files as they were at session entry `entry_id`: (tree, the entry of the record
    that says so). That is the latest record on the path to it; before the first one, the
    state the first record after it was taken against."""
    found = records(session, entry_id)
    if found:
        entry, content = found[-1]
        return str(content["tree"]), entry.id
    for entry in session.entries():
        if entry.kind != VCS or session.entries_between(entry_id, entry.id) is None:
            continue
        later = entry.content
        if isinstance(later, dict) and isinstance(later.get("tree"), str):
            return entering(later), entry.id
    return None
