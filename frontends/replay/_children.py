"""Child agents in replay: each child's conversation nested under the call that ran it.

A child runtime (smith.runtime._children: the task tool's sub-agent, any tool's
`spawn_child`) records its conversation on a branch of the session forked at its call's
effect intent. Live, the task tool reports each of the child's events as the call's
progress, a `tool_update` whose update is {"child": event}; `nest` gives replay the same:
the child branch's own timeline (built as any branch's, its children nested in turn),
each event wrapped so, placed before the call's `tool_end` in the order recorded. What
the child spent is added to the replay's totals. Its effects are not re-executed: a
child's files are outside the parent's file history.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smith.diagnostics import SmithError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from smith.session import Entry, Session

    from ._timeline import Item, Timeline


def nest(
    session: Session,
    entries: Sequence[Entry],
    timeline: Timeline,
    build: Callable[[list[Entry]], Timeline],
) -> None:
    """Put into `timeline` (of `entries`) the events of every child branch forked at one
    of their effect intents (see the module); `build` makes a branch part's timeline."""
    children: dict[str | None, list[str]] | None = None
    on_branch: set[str] = set()
    for entry in entries:
        if entry.kind != "effect_intent":
            continue
        if children is None:  # only a session with effects pays for the tree
            children = session.children()
            on_branch = {e.id for e in entries}
        roots = [c for c in children.get(entry.id, []) if c not in on_branch]
        if not roots:
            continue
        try:
            content = entry.content
        except SmithError:
            continue
        cause = content.get("cause") if isinstance(content, dict) else None
        call = cause.get("tool_call") if isinstance(cause, dict) else None
        if not isinstance(call, str):
            continue
        name = str(content.get("name", "")) if isinstance(content, dict) else ""
        for root in roots:
            part = session.entries_between(entry.id, _leaf(children, root))
            if part:
                _insert(timeline, call, name, build(part))


def _leaf(children: dict[str | None, list[str]], root: str) -> str:
    """The end of the branch that starts at `root`: at a fork (a grandchild forked at
    one of its intents) the entry appended last, which continues it."""
    leaf = root
    while children.get(leaf):
        leaf = children[leaf][-1]
    return leaf


def _insert(timeline: Timeline, call: str, name: str, child: Timeline) -> None:
    items = timeline.items
    end = next(
        (i for i, it in enumerate(items) if _is(it, "tool_end", call)),
        next((i + 1 for i, it in enumerate(items) if _is(it, "tool_start", call)), len(items)),
    )
    start = next((it.event for it in items if _is(it, "tool_start", call)), None) or {}
    run = items[end - 1].run if end else 0
    wrapped = []
    for item in child.items:
        if item.event is None:
            continue
        update: dict[str, Any] = {"type": "tool_update", "tool_call_id": call, "name": name,
                                  "update": {"child": item.event}}  # fmt: skip
        if "submission" in start:
            update["submission"] = start["submission"]
        item.event, item.run = update, run  # the child's timeline is ours to take apart
        wrapped.append(item)
    items[end:end] = wrapped
    state, spent = timeline.state, child.state
    for kind, count in spent["usage"].items():
        state["usage"][kind] += count
    state["usage_complete"] = state["usage_complete"] and spent["usage_complete"]
    state["rounds"] += spent["rounds"]
    timeline.unreadable += child.unreadable


def _is(item: Item, kind: str, call: str) -> bool:
    event = item.event
    return event is not None and event["type"] == kind and event.get("tool_call_id") == call


__all__ = ["nest"]
