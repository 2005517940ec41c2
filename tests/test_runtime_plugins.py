"""The plugin event boundary: handlers at safe points, validated action batches, one
published generation per event, and handlers that misbehave."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from smith.diagnostics import SmithError
from smith.effects import ToolContext, ToolResult, ToolSpec
from smith.runtime._generation import Generation
from smith.sdk import (
    AddTool,
    AppendSystemPrompt,
    Enqueue,
    Plugin,
    RemoveTool,
    SetModel,
    SetSetting,
    SetThinking,
)
from tests.runtime_kit import Fake, World, call, run, say


def _echo_tool() -> ToolSpec:
    def echo(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
        return ToolResult(str(args.get("text", "")))

    return ToolSpec("echo", "echo text", {"type": "object"}, echo, mutating=False)


def test_handler_actions_form_the_generation_the_next_request_uses(tmp_path: Path) -> None:
    w = World(tmp_path)
    seen: list[tuple[str, int]] = []

    def on_turn_start(event: dict[str, Any], view: Any) -> list[Any] | None:
        seen.append((event["type"], view.generation))
        if event["turn"] == 1:
            return [
                AppendSystemPrompt("Be brief."),
                AddTool(_echo_tool()),
                RemoveTool("bash"),
                SetSetting("temperature", 0.2),
                SetThinking("high"),
            ]
        return None

    fake = Fake(call(("echo", {"text": "hi"})), say("done"))
    rt = w.converse(fake, plugins=[Plugin("style", handlers={"turn_start": on_turn_start})])
    first = fake.requests[0]
    assert first.system.endswith("Be brief.")
    names = [t["name"] for t in first.tools]
    assert "echo" in names and "bash" not in names
    assert first.settings == {"temperature": 0.2, "thinking": "high"}
    assert rt.generation == 1 and rt.journal.generation == 1
    assert fake.requests[1].messages[-1]["content"][0]["text"] == "hi"  # type: ignore[index]
    assert seen == [("turn_start", 0), ("turn_start", 1)]
    kinds = [e.kind for e in w.session.entries()]
    assert "thinking_level" in kinds
    intent = next(e.content for e in w.session.entries() if e.kind == "effect_intent")
    assert intent["generation"] == 1  # type: ignore[index]


def test_conflicting_actions_are_rejected_with_a_diagnostic(tmp_path: Path) -> None:
    w = World(tmp_path)
    plugins = [
        Plugin("a", handlers={"agent_start": lambda e, v: [SetThinking("low")]}),
        Plugin(
            "b",
            handlers={"agent_start": lambda e, v: [SetThinking("high"), AppendSystemPrompt("B")]},
        ),
    ]
    fake = Fake(say("ok"))
    rt = w.converse(fake, plugins=plugins)
    errors = [e["diagnostic"] for e in w.of("error")]
    assert len(errors) == 1 and errors[0]["code"] == "plugin.conflict"
    assert "a, b" in errors[0]["what"] and "thinking" in errors[0]["what"]
    assert rt.generation == 0 and rt.thinking == "off"
    assert not fake.requests[0].system.endswith("B")  # nothing of the batch applied


@pytest.mark.parametrize(
    ("actions", "code"),
    [
        (["not an action"], "plugin.bad-action"),
        ([RemoveTool("nope")], "plugin.invalid-action"),
        ([SetThinking("enormous")], "plugin.invalid-action"),
        ([SetModel("nonsense:model")], "plugin.invalid-action"),
        ([Enqueue("later", "x")], "plugin.invalid-action"),
    ],
)
def test_invalid_batches_are_reported_and_ignored(
    tmp_path: Path, actions: list[Any], code: str
) -> None:
    w = World(tmp_path)
    rt = w.converse(
        Fake(say("ok")), plugins=[Plugin("p", handlers={"agent_start": lambda e, v: actions})]
    )
    assert [e["diagnostic"]["code"] for e in w.of("error")] == [code]
    assert rt.generation == 0
    assert w.of("agent_end")[-1]["stop"] == "end"


def test_a_handler_can_enqueue_follow_up_input(tmp_path: Path) -> None:
    w = World(tmp_path)
    once: list[int] = []

    def on_agent_start(event: dict[str, Any], view: Any) -> list[Any] | None:
        if once:
            return None
        once.append(1)
        return [Enqueue("follow_up", "and also check the tests")]

    fake = Fake(say("first"), say("second"))
    w.converse(fake, plugins=[Plugin("p", handlers={"agent_start": on_agent_start})])
    assert fake.requests[1].messages[-1]["content"][0]["text"] == "and also check the tests"  # type: ignore[index]


def test_a_failing_or_hanging_handler_is_abandoned_and_the_loop_goes_on(tmp_path: Path) -> None:
    w = World(tmp_path)

    def broken(event: dict[str, Any], view: Any) -> None:
        raise RuntimeError("plugin bug")

    async def stubborn(event: dict[str, Any], view: Any) -> None:
        while True:  # ignores cancellation
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                continue

    from smith.runtime import Limits

    rt = w.converse(
        Fake(say("ok")),
        plugins=[
            Plugin("broken", handlers={"turn_start": broken}),
            Plugin("stubborn", handlers={"turn_end": stubborn}),
        ],
        limits=Limits(handler_deadline=0.5),
    )
    codes = [(e["diagnostic"]["code"], e["diagnostic"]["value"]) for e in w.of("error")]
    assert codes == [("plugin.handler-failed", '"broken"'), ("plugin.handler-failed", '"stubborn"')]
    assert w.of("agent_end")[-1]["stop"] == "end"
    assert rt.busy is False


def test_model_and_thinking_changes_are_recorded_and_validated(tmp_path: Path) -> None:
    w = World(tmp_path)

    async def main() -> None:
        rt = w.runtime(Fake(say("ok")))
        rt.set_thinking("medium")
        with pytest.raises(SmithError, match="not a thinking level"):
            rt.set_thinking("max")
        with pytest.raises(SmithError, match="no provider is called 'nope'"):
            rt.set_model("nope:thing")
        with pytest.raises(SmithError, match="file history is off"):
            rt.submit({"op": "undo"})  # this runtime was made without file history
        with pytest.raises(SmithError, match="not an operation"):
            rt.submit({"op": "explode"})
        assert rt.thinking == "medium" and rt.generation == 1

    run(main)
    levels = [e.content for e in w.session.entries() if e.kind == "thinking_level"]
    assert levels == [{"level": "medium"}]


def test_generation_equality_ignores_nothing() -> None:
    fake = Fake()
    a = Generation(0, "fake:m", "m", fake, "off", "s", ())
    assert a == Generation(0, "fake:m", "m", fake, "off", "s", ())
    assert a != Generation(0, "fake:m", "m", fake, "low", "s", ())


@pytest.mark.parametrize("bad", [["x"], "str", None, 5])
def test_a_rewrite_whose_arguments_are_no_object_decides_nothing_and_the_call_is_denied(
    tmp_path: Path, bad: Any
) -> None:
    """A Struct built in Python is not checked as decoded data is: an ill-typed rewrite is
    refused with the plugin named, never a failure of the loop."""
    from smith.sdk import Plugin, RewriteArguments

    w = World(tmp_path)
    rewriting = Plugin("r", handlers={"tool_call": lambda e, v: [RewriteArguments(bad)]})
    w.converse(Fake(call(("ls", {"path": "."})), say("done")), plugins=(rewriting,))
    (end,) = w.of("tool_end")
    assert end["result"]["ok"] is False
    assert "plugin 'r' denied it" in end["result"]["text"]
    assert "which decides nothing" in end["result"]["text"]
    assert w.of("agent_end")[0]["stop"] == "end"


def test_a_queue_policy_delivers_in_its_own_order_and_only_what_was_queued() -> None:
    """The items a policy chooses are delivered in the order it gives them (the WIT's
    `choose`: "the ids to deliver, in order"); one it names twice, or that is not queued
    in this mode, is not delivered twice or made up, and what it leaves stays queued."""
    from smith.runtime._queue import InputQueue
    from smith.sdk import QueuedItem

    def newest_two(items: Sequence[QueuedItem]) -> list[QueuedItem]:
        stray = QueuedItem("q-none", "steer", "never queued")
        return [items[-1], items[-2], items[-1], stray]

    queue = InputQueue({"newest-two": newest_two, "one-at-a-time": lambda i: i[:1]},
                       steer="newest-two")  # fmt: skip
    for text in ("a", "b", "c"):
        queue.add("steer", text)
    queue.add("follow_up", "later")
    assert [i.text for i in queue.take("steer")] == ["c", "b"]
    assert [(i.mode, i.text) for i in queue.items()] == [("steer", "a"), ("follow_up", "later")]
