"""The agent's todo list pinned above the editor, and plan mode (docs/plan.md).

`TodoPanel` shows the latest todo list, one line per item, while any item is not yet
completed:

    todo 1/3 · [x] write the parser · [~] test the parser · [ ] document it

It is fed the `todo` intents the runtime sends (a call of the plan plugin's todo tool)
and, on opening or resuming a session, the recorded result of the latest such call (a
tool result whose `details` carry `todos`), found among the entries the app syncs.

`PlanMode.action_cycle_mode` is Shift+Tab (the plan plugin's `mode` key): it enters plan
mode, or leaves it with the plan in the editor for the user to confirm or edit (the
runtime's `SetMode` with `prompt=False`: nothing is sent until they do).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from textual.widgets import Static

from smith.runtime import ops
from smith.text import inert

if TYPE_CHECKING:
    from smith.runtime import Runtime
    from smith.session import Entry

    from ._editor import Editor

MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}
PLAN_PROMPT = "Carry out this plan:\n\n"
MAX_LINES = 8  # items shown; the rest are counted


def items_of(value: object) -> list[dict[str, str]] | None:
    """A todo list (`[{content, status}]`) as given; None when it is not one."""
    if not isinstance(value, list):
        return None
    return [
        {"content": str(i.get("content", "")), "status": str(i.get("status", "pending"))}
        for i in value
        if isinstance(i, Mapping)
    ]


def recorded(entries: Iterable[Entry]) -> list[dict[str, str]] | None:
    """The list the latest todo result among `entries` carries (None: none there)."""
    found = None
    for entry in entries:
        content = entry.content
        if entry.kind != "message" or not isinstance(content, Mapping):
            continue
        if content.get("role") != "tool_result" or content.get("is_error"):
            continue
        details = content.get("details")
        items = items_of(details.get("todos")) if isinstance(details, Mapping) else None
        if items is not None:
            found = items
    return found


def lines(items: Sequence[Mapping[str, str]]) -> str:
    done = sum(1 for i in items if i["status"] == "completed")
    out = [f"todo {done}/{len(items)}"]
    for item in items[:MAX_LINES]:
        out.append(f"  {MARKS.get(item['status'], '[ ]')} {inert(item['content'])}")
    if len(items) > MAX_LINES:
        out.append(f"  … {len(items) - MAX_LINES} more")
    return "\n".join(out)


class TodoPanel(Static):
    """The pinned list (see the module doc): hidden while there is none, or every item
    is completed."""

    DEFAULT_CSS = """
    TodoPanel { height: auto; max-height: 10; display: none; color: $text-muted;
                border-top: solid $panel; }
    TodoPanel.shown { display: block; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("", markup=False, **kwargs)
        self.items: list[dict[str, str]] = []

    def show_items(self, items: list[dict[str, str]]) -> None:
        self.items = items
        self.update(lines(items) if items else "")
        self.set_class(any(i["status"] != "completed" for i in items), "shown")

    def take(self, data: Mapping[str, Any]) -> None:
        """A `todo` intent: the whole list as it is now."""
        items = items_of(data.get("items"))
        if items is not None:
            self.show_items(items)

    def take_entries(self, entries: Iterable[Entry]) -> None:
        """Entries the app synced: the latest todo result among them, if any."""
        items = recorded(entries)
        if items is not None:
            self.show_items(items)


class PlanMode:
    """Shift+Tab: plan mode on and off (see the module doc)."""

    runtime: Runtime | None

    if TYPE_CHECKING:  # the app's

        @property
        def editor(self) -> Editor: ...
        def tell(self, text: str, *, error: bool = False) -> None: ...
        def _status(self) -> None: ...

    def action_cycle_mode(self) -> None:
        rt = self.runtime
        if rt is None:
            return
        wanted = "normal" if rt.status().get("mode") == "plan" else "plan"
        found = rt.submit(ops.SetMode(wanted, prompt=False))
        plan = found.get("plan") if isinstance(found, dict) else None
        if plan:
            draft = self.editor.value.strip()
            self.editor.value = PLAN_PROMPT + str(plan) + (f"\n\n{draft}" if draft else "")
            self.tell("plan mode off: the plan is in the editor; Enter sends it")
        else:
            self.tell(
                "plan mode: only read-only tools run" if wanted == "plan" else "plan mode off"
            )
        self._status()


__all__ = ["PlanMode", "TodoPanel", "items_of", "lines", "recorded"]
