"""A plugin that speaks to the user through every kind of UI intent a plugin can
produce, for the frontend tests (tests/test_ui*.py):

- at `agent_start` it returns a Notify, a Status and a Progress with its actions;
- at the first `turn_end` it asks a Question (from a coroutine handler) and then tells,
  as a Notify, what became of it;
- its tool `ask_user` shows a Notify and asks a Confirm from the tool's thread, and its
  tool `pick_way` shows a Progress and asks a Question with choices;
- its command `/ask` posts a Notify and asks a Question through the command host.

Subprocesses get it as a built-in through tests/ui_boot (see `with_plugin`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from smith.effects import ToolContext, ToolResult, ToolSpec
from smith.sdk import (
    Command,
    CommandHost,
    Confirm,
    Notify,
    Plugin,
    Progress,
    Question,
    RuntimeView,
    Status,
)

WAYS = [("left", "Go left"), ("right", "Go right")]
FRUIT = [("a", "Apple"), ("b", "Banana")]


def _starting(event: dict[str, Any], view: RuntimeView) -> list[Any]:
    return [Notify("starting", "info"), Status("asker is listening", key="phase"),
            Progress("warming up", 1, 2)]  # fmt: skip


async def _ask_after_turn(event: dict[str, Any], view: RuntimeView) -> Any:
    if event["turn"] != 1:
        return None
    reply = await view.ask(Question("Which way?", WAYS))
    if reply.answered:
        return Notify(f"chose {reply.choice} ({reply.frontend})")
    return Notify(f"refused by {reply.frontend}: {reply.refused}", "warning")


def _ask_user(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
    ctx.ui.show(Notify("checking with you"))
    reply = ctx.ui.ask(Confirm(str(args.get("question") or "Proceed?")))
    return ToolResult(f"confirmed={reply.confirmed} refused={reply.refused}")


def _pick_way(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
    ctx.ui.show(Progress("looking both ways", 1, 2))
    reply = ctx.ui.ask(Question(str(args.get("question") or "Which way?"), WAYS))
    return ToolResult(f"choice={reply.choice} refused={reply.refused}")


async def _ask_command(host: CommandHost, arg: str) -> None:
    host.post(Notify("/ask: asking"))
    reply = await host.ask(Question(arg or "Pick one", FRUIT))
    host.tell(f"/ask: {reply.choice}" if reply.answered else f"/ask: refused ({reply.refused})")


ASK_USER = ToolSpec(
    "ask_user",
    "ask the user to confirm something",
    {
        "type": "object",
        "properties": {"question": {"type": "string"}},
        "additionalProperties": False,
    },
    _ask_user,
    mutating=False,
)
PICK_WAY = ToolSpec(
    "pick_way",
    "ask the user which way to go",
    {
        "type": "object",
        "properties": {"question": {"type": "string"}},
        "additionalProperties": False,
    },
    _pick_way,
    mutating=False,
)
PLUGIN = Plugin(
    "asker",
    handlers={"agent_start": _starting, "turn_end": _ask_after_turn},
    tools=[ASK_USER, PICK_WAY],
    commands=[Command("ask", "ask a question (a test plugin's)", _ask_command)],
)

BOOT = Path(__file__).parent / "ui_boot"


def with_plugin(env: dict[str, str]) -> dict[str, str]:
    """`env` for a smith process that loads this plugin as a built-in."""
    root = str(Path(__file__).parent.parent)
    path = os.pathsep.join(p for p in (str(BOOT), root, env.get("PYTHONPATH")) if p)
    return {**env, "PYTHONPATH": path, "UI_PLUGIN_FOR_TESTS": "1"}
