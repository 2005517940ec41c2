"""Sub-agents in the app (docs/agents.md): a task call's child shown under the call.

While the call runs, its block shows the child's latest steps (`child_step` of each
`tool_update` whose update is {"child": event}: the calls it makes, the first line of
what it says), the last few as a tail, as a command shows its output. Once the result
is recorded, the result is folded as any tool result is, with a line saying the
sub-agent's conversation is there; expanded (click or Ctrl+O) it shows that
conversation, the child's branch read through the runtime (ops.Entries from the fork
point to the branch's leaf, the call's result details) and drawn indented under the
result, a child's own sub-agents' results expandable the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.padding import Padding
from rich.text import Text

from smith.text import inert

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import RenderableType

    from smith.runtime import Runtime

STEPS = 4  # the child's latest steps a running task call shows


def child_step(event: dict[str, Any]) -> str | None:
    """One line for a child's event worth a line while it runs, else None."""
    kind = event.get("type")
    if kind == "tool_start":
        return f"→ {event.get('name')}"
    if kind == "tool_update" and isinstance(event.get("update"), dict):
        nested = event["update"].get("child")  # its own sub-agent's step, one deeper
        step = child_step(nested) if isinstance(nested, dict) else None
        return None if step is None else f"  {step}"
    if kind == "message_end":
        message = event.get("message")
        if isinstance(message, dict) and message.get("role") == "assistant":
            text = "".join(
                str(p.get("text", "")) for p in message.get("content") or []
                if isinstance(p, dict) and p.get("type") == "text"
            ).strip()  # fmt: skip
            return text.splitlines()[0][:160] if text else None
    return None


def named(name: str, details: object) -> str:
    """A tool result's name as its line shows it: a task's with its description (`task
    find the lock`), one line of at most 80 characters, inert; any other's as it is."""
    said = details.get("description") if isinstance(details, dict) else None
    if not isinstance(said, str) or not said.strip():
        return inert(name)
    said = " ".join(inert(said).split())
    return f"{inert(name)} {said if len(said) <= 80 else said[:79] + '…'}"


def render_child_running(line: str, steps: list[str]) -> RenderableType:
    """A running task call: its line and the child's latest steps."""
    call = Text(f"… {line}", style="yellow")
    if not steps:
        return call
    shown = "\n".join(f"  │ {inert(step)}" for step in steps[-STEPS:])
    return Group(call, Text(shown, style="dim"))


def branch_of(entry: Any) -> tuple[str, str] | None:
    """The (fork point, leaf) of the child a recorded task result names, else None."""
    content = entry.content if getattr(entry, "kind", None) == "message" else None
    if not isinstance(content, dict) or content.get("role") != "tool_result":
        return None
    details = content.get("details")
    branch = details.get("branch") if isinstance(details, dict) else None
    if not isinstance(branch, dict):
        return None
    at, leaf = branch.get("at"), branch.get("leaf")
    return (at, leaf) if isinstance(at, str) and isinstance(leaf, str) else None


def with_children(
    render: Callable[[Any, bool], RenderableType | None], runtime: Callable[[], Runtime | None]
) -> Callable[[Any, bool], RenderableType | None]:
    """`render` (how a recorded entry is drawn) drawing a task result's child under it:
    a line folded, its conversation expanded (see the module)."""
    read: dict[tuple[str, str], list[Any]] = {}  # a finished branch does not change

    def draw(entry: Any, expanded: bool) -> RenderableType | None:
        drawn = render(entry, expanded)
        branch = branch_of(entry)
        if drawn is None or branch is None:
            return drawn
        if not expanded:
            hint = "  ▸ the sub-agent's conversation (click or Ctrl+O)"
            return Group(drawn, Text(hint, style="dim"))
        if branch not in read:
            read[branch] = _entries(runtime(), *branch)
        rows = [r for r in (draw(e, False) for e in read[branch]) if r is not None]
        if not rows:
            return Group(drawn, Text("  (the sub-agent's conversation is not here)", style="dim"))
        return Group(drawn, Padding(Group(*rows), (0, 0, 0, 4)))

    return draw


def _entries(runtime: Runtime | None, at: str, leaf: str) -> list[Any]:
    from smith.diagnostics import SmithError
    from smith.runtime import Shown as EntryBatch
    from smith.runtime import ops

    if runtime is None:
        return []
    try:
        found = runtime.submit(ops.Entries(since=at, leaf=leaf, kinds=("message",)))
    except SmithError:  # not in this session (another file's branch): nothing to show
        return []
    return list(found.entries) if isinstance(found, EntryBatch) else []


__all__ = ["branch_of", "child_step", "named", "render_child_running", "with_children"]
