"""Abort during streaming, during a tool and during compaction leaves a consistent session
that a new process can resume."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from smith.effects import ToolContext, builtin_tools
from smith.providers import End, TextDelta, ToolCall
from smith.runtime import Runtime
from smith.session import Session
from tests.runtime_kit import Fake, Gate, World, messages, run, say


def _paired(msgs: list[dict[str, Any]]) -> bool:
    """Every tool call is answered by a result before the next user or assistant turn."""
    open_calls: list[str] = []
    for m in msgs:
        if m["role"] == "tool_result":
            if m["tool_call_id"] not in open_calls:
                return False
            open_calls.remove(m["tool_call_id"])
        else:
            if open_calls:
                return False
            open_calls = [p["id"] for p in m["content"] if p["type"] == "tool_call"]
    return not open_calls


def _resume(w: World) -> Fake:
    """Open the session as a new process would and run one more prompt on it."""
    w.session.close()
    fake = Fake(say("resumed"))
    session = Session.open(w.path)

    async def main() -> None:
        ctx = ToolContext(root=str(w.project), cwd=str(w.project), session=session)
        rt = Runtime(session, model=(fake, "m"), tools=list(builtin_tools().values()), context=ctx)
        rt.prompt("carry on")
        await rt.wait_idle()
        await rt.close()

    run(main)
    session.close()
    assert _paired(fake.requests[0].messages)  # type: ignore[arg-type]
    return fake


def test_abort_during_streaming(tmp_path: Path) -> None:
    w = World(tmp_path)
    gate = Gate()
    fake = Fake([TextDelta("I will "), TextDelta("start by"), ToolCall("c1", "ls", {}), gate])

    async def main() -> None:
        rt = w.runtime(fake)
        rt.prompt("go")
        await gate.reached.wait()
        assert rt.abort() is True
        await rt.wait_idle()
        assert rt.abort() is False  # nothing left to abort

    run(main)
    assert w.of("agent_end")[-1]["stop"] == "abort"
    assert w.types()[-1] == "settled"
    recorded = messages(w.reopened())
    assistant = recorded[1]
    assert assistant["stop"] == "abort"
    assert assistant["content"][0]["text"] == "I will start by"
    # The call streamed before the abort did not run, and says so, so calls stay paired.
    assert recorded[2]["role"] == "tool_result" and "not run" in recorded[2]["content"][0]["text"]
    assert not [e for e in w.session.entries() if e.kind == "effect_intent"]
    resumed = _resume(w)
    assert [m["role"] for m in resumed.requests[0].messages] == [
        "user",
        "assistant",
        "tool_result",
        "user",
    ]


def test_abort_during_a_tool_ends_the_command_and_records_it_cancelled(tmp_path: Path) -> None:
    w = World(tmp_path)
    marker = w.project / "finished"
    command = f"echo started; sleep 30; touch {marker}"
    fake = Fake([ToolCall("c1", "bash", {"command": command}), End("tool_use")])

    async def main() -> None:
        rt = w.runtime(fake)
        rt.prompt("go")
        await w.until("tool_update")  # the command is running: it has said so
        rt.abort()
        await rt.wait_idle()

    run(main)
    assert w.of("agent_end")[-1]["stop"] == "abort"
    completions = [e.content for e in w.reopened().entries() if e.kind == "effect_completion"]
    assert len(completions) == 1
    assert completions[0]["outcome"] == "cancelled"  # type: ignore[index]
    assert completions[0]["mutation"] == "unknown"  # type: ignore[index]
    result = messages(w.session)[-1]
    assert result["role"] == "tool_result" and result["is_error"]
    assert w.of("tool_end")[0]["outcome"] == "cancelled"
    assert not marker.exists()
    _resume(w)


def test_abort_during_compaction_keeps_history_as_it_was(tmp_path: Path) -> None:
    w = World(tmp_path)
    gate = Gate()
    fake = Fake(say("one " * 50), say("two " * 50), [TextDelta("Summary so"), gate])

    async def main() -> None:
        rt = w.runtime(fake)
        for text in ("first", "second"):
            rt.prompt(text)
            await rt.wait_idle()
        rt.compact()
        await gate.reached.wait()
        rt.abort()
        await rt.wait_idle()

    run(main)
    end = w.of("compaction_end")[-1]
    assert end["ok"] is False and "aborted" in end["error"]
    assert not [e for e in w.reopened().entries() if e.kind == "compaction"]
    assert w.types()[-1] == "settled"
    resumed = _resume(w)
    assert len(resumed.requests[0].messages) == 5  # everything, uncompacted


def test_abort_when_idle_does_nothing(tmp_path: Path) -> None:
    w = World(tmp_path)

    async def main() -> None:
        rt = w.runtime(Fake())
        assert rt.abort() is False

    run(main)
    assert w.events == []


def test_abort_right_after_prompt_records_the_prompt_and_settles(tmp_path: Path) -> None:
    w = World(tmp_path)

    async def main() -> None:
        rt = w.runtime(Fake(say("never")))
        rt.prompt("first")
        assert rt.abort() is True  # before the task has taken a step
        await rt.wait_idle()

    run(main)
    assert w.types()[0] == "agent_start" and w.types()[-1] == "settled"
    assert w.of("agent_end")[0]["stop"] == "abort"
    assert [m["role"] for m in messages(w.reopened())] == ["user"]


def test_a_second_abort_does_not_lose_how_the_running_tool_ended(tmp_path: Path) -> None:
    import threading

    from smith.effects import ToolResult, ToolSpec

    w = World(tmp_path)
    started, finish = threading.Event(), threading.Event()

    def stubborn(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
        started.set()
        ctx.cancelled.wait()
        finish.wait(5)  # finishes its work after the abort, then reports
        (w.project / "written.txt").write_text("done")
        return ToolResult("wrote it", mutation="applied")

    spec = ToolSpec("stubborn", "writes", {"type": "object"}, stubborn, mutating=True)
    fake = Fake([ToolCall("c1", "stubborn", {}), End("tool_use")])

    async def main() -> None:
        rt = w.runtime(fake, tools=[spec])
        rt.prompt("go")
        await asyncio.to_thread(started.wait, 10)
        rt.abort()
        await asyncio.sleep(0)  # the cancellation reaches the waiting call
        rt.abort()  # impatient: ignored while the first is being handled
        finish.set()
        await rt.wait_idle()

    run(main)
    result = messages(w.session)[-1]
    assert result["role"] == "tool_result" and result["content"][0]["text"] == "wrote it"
    assert result["outcome"] == "ok"
    assert w.of("tool_end")[0]["result"]["mutation"] == "applied"
    kinds = [e.kind for e in w.session.entries()]
    assert kinds.index("effect_completion") < len(kinds) - 1  # before the result


def test_queued_input_survives_an_abort_and_goes_first_in_the_next_run(tmp_path: Path) -> None:
    w = World(tmp_path)
    gate = Gate()
    fake = Fake([TextDelta("working"), gate], say("next"))

    async def main() -> None:
        rt = w.runtime(fake)
        rt.prompt("start")
        await gate.reached.wait()
        rt.follow_up("queued before the abort")
        rt.abort()
        await rt.wait_idle()
        assert [i.text for i in rt.queue.items()] == ["queued before the abort"]
        assert w.of("settled")[-1]["queue"] == 1
        rt.prompt("new prompt")
        await rt.wait_idle()

    run(main)
    texts = [m["content"][0]["text"] for m in fake.requests[-1].messages if m["role"] == "user"]
    assert texts[-2:] == ["queued before the abort", "new prompt"]


def test_abort_while_a_plugin_handles_agent_start_keeps_the_prompt(tmp_path: Path) -> None:
    from smith.sdk import Plugin

    w = World(tmp_path)
    entered = asyncio.Event()

    async def slow(event: dict[str, Any], view: Any) -> None:
        await asyncio.sleep(5)

    async def main() -> None:
        plugin = Plugin("slow", handlers={"agent_start": slow})
        rt = w.runtime(Fake(say("x")), plugins=[plugin])
        rt.on_event(lambda e: entered.set() if e["type"] == "agent_start" else None)
        rt.prompt("keep me")
        await entered.wait()  # the handler is now running in its thread
        rt.abort()
        await rt.wait_idle()

    run(main)
    assert w.of("agent_end")[0]["stop"] == "abort"
    assert messages(w.reopened())[0]["content"][0]["text"] == "keep me"


class _SlowToClose(Fake):
    """A provider whose stream, once it has ended, takes a moment to close (an HTTP
    provider releasing its connection): the abort lands while it closes."""

    def __init__(self, events: list[Any], closing: Gate) -> None:
        super().__init__(events)
        self.closing = closing

    async def stream(self, request: Any) -> Any:
        try:
            async for event in super().stream(request):
                yield event
        finally:
            await self.closing.wait()


def test_an_abort_while_the_stream_closes_is_not_lost(tmp_path: Path) -> None:
    """stream_assistant closed the stream under suppress(CancelledError): an abort that
    landed then was swallowed, and the calls of the response ran anyway."""
    w = World(tmp_path)
    closing = Gate()
    fake = _SlowToClose([ToolCall("c1", "ls", {}), End("tool_use")], closing)

    async def main() -> None:
        rt = w.runtime(fake)
        rt.prompt("go")
        await closing.reached.wait()
        assert rt.abort() is True
        await rt.wait_idle()

    run(main)
    assert w.of("tool_start") == []  # the call did not run
    assert w.of("agent_end")[-1]["stop"] == "abort"
    recorded = messages(w.reopened())
    assert recorded[2]["role"] == "tool_result" and "not run" in recorded[2]["content"][0]["text"]


def test_abort_while_the_files_are_snapshotted_ends_every_call_as_not_run(
    tmp_path: Path,
) -> None:
    """The snapshot before a mutating batch runs off the loop; an abort while it is taken
    still gives every call its tool_end and its result, after the snapshot's record."""
    import threading

    from smith.vcs import HistorySettings

    w = World(tmp_path)
    calls = [ToolCall("c1", "write", {"path": "a.txt", "content": "x"}), ToolCall("c2", "ls", {})]
    fake = Fake([*calls, End("tool_use")])
    entered, release = threading.Event(), threading.Event()

    async def main() -> None:
        history = HistorySettings(str(tmp_path / "home"), user_home=str(tmp_path / "user"))
        rt = w.runtime(fake, history=history)
        assert rt.history is not None
        snapshot = rt.history.snapshot

        def slow_snapshot(*args: Any, **kw: Any) -> Any:
            entered.set()
            release.wait(10)
            return snapshot(*args, **kw)

        rt.history.snapshot = slow_snapshot  # type: ignore[method-assign]
        rt.prompt("go")
        while not entered.is_set():
            await asyncio.sleep(0.01)
        assert rt.abort() is True
        release.set()
        await rt.wait_idle()
        await rt.close()

    run(main)
    assert [e["tool_call_id"] for e in w.of("tool_end")] == ["c1", "c2"]
    assert all(e["outcome"] == "cancelled" for e in w.of("tool_end"))
    assert w.of("agent_end")[-1]["stop"] == "abort"
    recorded = messages(w.reopened())
    assert [m["role"] for m in recorded] == ["user", "assistant", "tool_result", "tool_result"]
    assert "not run" in recorded[2]["content"][0]["text"]
    assert not (w.project / "a.txt").exists()
    assert not [e for e in w.reopened().entries() if e.kind == "effect_intent"]
    kinds = [e.kind for e in w.reopened().branch()]
    assert kinds.index("vcs") < kinds.index("message", 2)  # the snapshot's record first
    _resume(w)


def test_abort_ends_calls_still_waiting_for_an_earlier_one_with_a_tool_end(
    tmp_path: Path,
) -> None:
    """A call ordered behind another (both exclusive) has not started when the abort
    comes: it still gets its tool_end, as every call does, and a not-run result."""
    import threading

    from tests.runtime_kit import slow_tool

    w = World(tmp_path)
    release, started = threading.Event(), threading.Event()
    first = slow_tool("first", release, exclusive=True, started=started)
    second = slow_tool("second", release, exclusive=True)
    fake = Fake([ToolCall("c1", "first", {}), ToolCall("c2", "second", {}), End("tool_use")])

    async def main() -> None:
        rt = w.runtime(fake, tools=[first, second])
        rt.prompt("go")
        while not started.is_set():
            await asyncio.sleep(0.01)
        rt.abort()
        await rt.wait_idle()
        await rt.close()

    run(main)
    ends = {e["tool_call_id"]: e["outcome"] for e in w.of("tool_end")}
    assert ends == {"c1": "cancelled", "c2": "cancelled"}
    recorded = messages(w.reopened())
    assert [m.get("tool_call_id") for m in recorded[2:]] == ["c1", "c2"]
    assert "not run" in recorded[3]["content"][0]["text"]


def test_abort_while_the_files_are_snapshotted_after_the_batch_keeps_its_results(
    tmp_path: Path,
) -> None:
    """The calls of a batch have all ended when the snapshot after it is taken: an abort
    then must not lose their results (the next request would carry calls with no result,
    which vendors refuse, and the model would not know the file was written)."""
    import threading

    from smith.vcs import HistorySettings

    w = World(tmp_path)
    calls = [ToolCall("c1", "write", {"path": "a.txt", "content": "x"}), ToolCall("c2", "ls", {})]
    fake = Fake([*calls, End("tool_use")], say("again"))
    entered, release = threading.Event(), threading.Event()

    async def main() -> None:
        history = HistorySettings(str(tmp_path / "home"), user_home=str(tmp_path / "user"))
        rt = w.runtime(fake, history=history)
        assert rt.history is not None
        snapshot = rt.history.snapshot

        def slow_after(phase: str, *args: Any, **kw: Any) -> Any:
            if phase == "after":
                entered.set()
                release.wait(10)
            return snapshot(phase, *args, **kw)

        rt.history.snapshot = slow_after  # type: ignore[method-assign]
        rt.prompt("go")
        while not entered.is_set():
            await asyncio.sleep(0.01)
        assert rt.abort() is True
        assert rt.abort() is True  # a second abort while it is still taken changes nothing
        release.set()
        await rt.wait_idle()
        rt.prompt("next")
        await rt.wait_idle()
        await rt.close()

    run(main)
    assert w.of("agent_end")[0]["stop"] == "abort"
    recorded = messages(w.reopened())
    assert [(m["role"], m.get("tool_call_id")) for m in recorded[:4]] == [
        ("user", None), ("assistant", None), ("tool_result", "c1"), ("tool_result", "c2"),
    ]  # fmt: skip
    assert recorded[2]["outcome"] == "ok" and (w.project / "a.txt").read_text() == "x"
    kinds = [e.kind for e in w.reopened().branch()]
    assert kinds.index("vcs", kinds.index("effect_completion")) < kinds.index("message", 2)
    assert _paired(fake.requests[-1].messages)  # type: ignore[arg-type]
    _resume(w)
