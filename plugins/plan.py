"""The todo tool and plan mode (docs/plan.md).

`todo` keeps the agent's todo list: `{"todos": [{content, status}]}` replaces the whole
list (Claude Code's TodoWrite shape), `{"update": {index, status}}` changes one item's
state (1 is the first). It changes no file (effect `reads`, so it runs in plan mode too).
Its result carries the list (text for the model, `details.todos` for programs): the
session keeps it there, so resume and replay see the list a call left, and the next
update starts from it. Each call also sends the list out as a `todo` event
(smith.ui.Todos), which the app pins above its editor and eval and RPC print.

Plan mode is the runtime's mode `plan` (smith.runtime._mode: recorded in the session,
`set_mode`, `--plan`, Shift+Tab in the app, `/plan`); this plugin gives it its meaning:
only read-only tools run (any other call is denied with a tool error telling the model
it is planning), and the model is told it is planning (a part added to the system prompt
while the mode lasts, taken out when it ends).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from smith.effects import ToolError, ToolResult, ToolSpec
from smith.sdk import Command, Plugin
from smith.ui import Todos

if TYPE_CHECKING:
    from smith.effects import ToolContext
    from smith.sdk import AppendSystemPrompt, CommandHost, DenyCall, RuntimeView, SetSystemPrompt
    from smith.session import Session

NAME = "todo"
STATES = ("pending", "in_progress", "completed")
MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}
MAX_ITEMS = 100  # items a list may have
MAX_TEXT = 500  # characters of one item

_STATUS = {"type": "string", "enum": list(STATES), "description": "Where the item stands."}
PARAMETERS: dict[str, object] = {
    "type": "object",
    "properties": {
        "todos": {
            "type": "array",
            "description": "The whole list, in order; replaces the current one.",
            "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string", "description": "What to do, in one line."},
                    "status": _STATUS,
                },
                "required": ["content", "status"],
                "additionalProperties": False,
            },
        },
        "update": {
            "type": "object",
            "description": "Instead of todos: one item's new status (index 1 is the first).",
            "properties": {
                "index": {"type": "integer", "minimum": 1, "description": "Which item."},
                "status": _STATUS,
            },
            "required": ["index", "status"],
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
}
DESCRIPTION = (
    "Keep a todo list for multi-step work; the user sees it. Write the whole list with "
    "`todos`, or change one item with `update`. Keep one item in_progress while working "
    "and mark each completed as soon as it is done. Not for one- or two-step tasks."
)

PLANNING = (
    "You are in plan mode: research and plan, change nothing. Only read-only tools run "
    "(reading, searching, listing; the todo list); any other call is refused. Explore what "
    "you need, then answer with a concrete, step-by-step plan: that answer is the plan the "
    "user will approve, and it is carried out once they leave plan mode."
)


def rendered(items: Sequence[Mapping[str, str]]) -> str:
    """The list as the model and a transcript read it."""
    if not items:
        return "The todo list is empty."
    done = sum(1 for i in items if i["status"] == "completed")
    lines = [f"Todo list ({done}/{len(items)} completed):"]
    lines += [f"{MARKS[i['status']]} {n}. {i['content']}" for n, i in enumerate(items, 1)]
    return "\n".join(lines)


def current(session: Session | None) -> list[dict[str, str]]:
    """The list the latest successful todo call on the session's selected branch left
    (empty: none yet)."""
    return _recorded(session)[1]


def _recorded(session: Session | None) -> tuple[str | None, list[dict[str, str]]]:
    """The id of the branch's last message (the response whose calls run now) and the
    list the latest recorded todo call left."""
    if session is None:
        return None, []
    messages = session.branch(kind="message")
    last = messages[-1].id if messages else None
    for entry in reversed(messages):
        items = todos_of(entry.content)
        if items is not None:
            return last, items
    return last, []


def one_line(text: str) -> str:
    """An item's content on one line (a newline in it would read as another item)."""
    return " ".join(text.split())


# The list the last todo call of a response left, by session (the response's id with
# it): the calls of one response run in order (the tool is `ordered`) but their results
# are recorded after all of them ran, so the next one starts from this.
_left: dict[str, tuple[str | None, list[dict[str, str]]]] = {}
_left_lock = threading.Lock()


def todos_of(message: object) -> list[dict[str, str]] | None:
    """The list a recorded todo result carries; None for any other message."""
    if not isinstance(message, Mapping) or message.get("role") != "tool_result":
        return None
    if message.get("tool_name") != NAME or message.get("is_error"):
        return None
    details = message.get("details")
    items = details.get("todos") if isinstance(details, Mapping) else None
    if not isinstance(items, list):
        return None
    return [
        {"content": one_line(str(i.get("content", ""))), "status": str(i.get("status", "pending"))}
        for i in items
        if isinstance(i, Mapping)
    ]


def run_todo(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
    given, update = args.get("todos"), args.get("update")
    if (given is None) == (update is None):
        raise ToolError("give either `todos` (the whole list) or `update` (one item), not "
                        f"{'both' if given is not None else 'neither'}")  # fmt: skip
    session = ctx.session
    with _left_lock:
        at, items = _recorded(session)
        left = _left.get(session.id) if session is not None else None
        if left is not None and left[0] == at:  # an earlier call of this response
            items = [dict(i) for i in left[1]]
        items = _replaced(given) if isinstance(given, list) else _updated(items, update)
        if session is not None:
            _left[session.id] = (at, items)
    ctx.ui.show(Todos(tuple((i["content"], i["status"]) for i in items)))
    return ToolResult(rendered(items), details={"todos": items})


def _replaced(given: list[object]) -> list[dict[str, str]]:
    items = [{"content": one_line(str(i["content"])), "status": str(i["status"])}
             for i in given if isinstance(i, dict)]  # fmt: skip
    if any(not i["content"] for i in items):
        raise ToolError("a todo item's content is blank: say what is to be done")
    if len(items) > MAX_ITEMS or any(len(i["content"]) > MAX_TEXT for i in items):
        raise ToolError(f"a todo list holds at most {MAX_ITEMS} items of at most "
                        f"{MAX_TEXT} characters each: keep the items short")  # fmt: skip
    return items


def _updated(items: list[dict[str, str]], update: object) -> list[dict[str, str]]:
    if not isinstance(update, dict):
        raise ToolError("`update` is an object: {index, status}")
    index = update.get("index")
    if isinstance(index, float) and index.is_integer():  # 1.0: JSON's number 1
        index = int(index)
    if not isinstance(index, int) or isinstance(index, bool):
        raise ToolError(f"an update's index is a whole number (1 is the first item), not "
                        f"{json.dumps(index)}")  # fmt: skip
    if not items:
        raise ToolError("there is no todo list to update yet: write one with `todos`")
    if not 1 <= index <= len(items):
        raise ToolError(f"the todo list has items 1 to {len(items)}, not {index}")
    items = [dict(i) for i in items]
    items[index - 1] = {**items[index - 1], "status": str(update.get("status"))}
    return items


# `ordered`: the calls of one response run in their order, each from the list the one
# before it left.
TODO = ToolSpec(NAME, DESCRIPTION, PARAMETERS, run_todo, effect="reads", ordered=True,
                touches=lambda a: [])  # fmt: skip


# -- plan mode --------------------------------------------------------------------------


def guard(event: dict[str, Any], view: RuntimeView) -> DenyCall | None:
    """In plan mode, only a read-only tool's call runs."""
    if view.mode != "plan":
        return None
    from smith.sdk import DenyCall  # (msgspec: loaded when a call is judged)

    name = str(event.get("name"))
    facts = view.tool(name)
    if facts is not None and facts.read_only:
        return None
    what = f"its effect is {facts.effect}" if facts is not None else "it is not a known tool"
    return DenyCall(
        f"plan mode: only read-only tools run while planning, and {name} may change things "
        f"({what}). Read and search what you need, then answer with the plan; the user "
        "leaves plan mode to carry it out."
    )


def planning(
    event: dict[str, Any], view: RuntimeView
) -> AppendSystemPrompt | SetSystemPrompt | None:
    """The model is told it is planning while the mode lasts (and no longer after)."""
    from smith.sdk import AppendSystemPrompt, SetSystemPrompt

    told = PLANNING in view.system_prompt
    if view.mode == "plan" and not told:
        return AppendSystemPrompt(PLANNING)
    if view.mode != "plan" and told:
        return SetSystemPrompt(view.system_prompt.replace("\n\n" + PLANNING, "").replace(
            PLANNING, ""))  # fmt: skip
    return None


def wants(kind: str, view: RuntimeView) -> bool:
    """Whether a handler has anything to do (asked on the loop, so no thread is started
    for a call outside plan mode): a call's review only in plan mode, the system prompt
    only when what it tells the model is not the mode."""
    if kind == "tool_call":
        return view.mode == "plan"
    return (view.mode == "plan") != (PLANNING in view.system_prompt)


def toggle(host: CommandHost, args: str) -> None:
    """/plan: enter plan mode, or leave it with the plan in the editor to confirm."""
    from smith.protocol.ops import SetMode

    wanted = args.strip() or ("normal" if host.runtime.status().get("mode") == "plan" else "plan")
    if wanted not in ("plan", "normal"):
        host.tell(f"/plan takes 'plan', 'normal' or nothing, not {wanted!r}", error=True)
        return
    found = host.runtime.submit(SetMode(wanted, prompt=False))
    plan = found.get("plan") if isinstance(found, dict) else None
    if plan:
        host.edit("Carry out this plan:\n\n" + str(plan))
    host.tell("plan mode: only read-only tools run" if wanted == "plan" else "plan mode off")


PLUGIN = Plugin(
    "plan",
    tools=(TODO,),
    handlers={"tool_call": guard, "agent_start": planning, "turn_start": planning},
    commands=(Command("plan", "enter or leave plan mode (Shift+Tab)", toggle, "[plan|normal]"),),
    keybindings={"mode": "shift+tab"},
    wants=wants,
)
