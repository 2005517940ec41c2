"""The agent loop: events in order, what is recorded, tool calls, queued input, stops."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from smith.effects import ToolContext, ToolResult, ToolSpec
from smith.providers import End, TextDelta, ThinkingDelta, ToolCall, Usage
from smith.runtime import EVENT_TYPES, Limits, truncate
from tests.runtime_kit import Fake, Gate, World, call, messages, run, say, slow_tool


def test_a_tool_using_turn_emits_the_documented_events_and_records_the_same(
    tmp_path: Path,
) -> None:
    w = World(tmp_path)
    fake = Fake(
        [
            ThinkingDelta("look "),
            ThinkingDelta("first"),
            *call(("read", {"path": "src/app.py"}), text="Reading."),
        ],
        say("It returns hello."),
    )

    w.converse(fake, prompts=["what does app do?"])
    assert set(w.types()) <= set(EVENT_TYPES)
    # Every entry appended is an `entry` event, in the order they were appended.
    appended = [e for e in w.events if e["type"] == "entry"]
    recorded = list(w.session.entries())
    assert [(e["id"], e["parent"], e["kind"]) for e in appended] == [
        (r.id, r.parent, r.kind) for r in recorded[-len(appended) :]
    ]
    assert {e["kind"] for e in appended} >= {"message", "effect_intent", "effect_completion"}
    assert [t for t in w.types() if t != "entry"] == [
        "session_start",  # the runtime's first run on this session
        "agent_start",
        "message_start",
        "message_delta",
        "message_end",  # the user's message
        "turn_start",
        "message_start",
        "message_delta",
        "message_delta",
        "message_delta",
        "message_end",
        "tool_start",
        "tool_end",
        "turn_end",
        "turn_start",
        "message_start",
        "message_delta",
        "message_delta",
        "message_delta",
        "message_end",
        "turn_end",
        "agent_end",
        "settled",
    ]
    # Deltas between start and end assemble to exactly the authoritative message.
    for start in [i for i, e in enumerate(w.events) if e["type"] == "message_start"]:
        end = next(e for e in w.events[start:] if e["type"] == "message_end")
        for channel in ("text", "thinking"):
            deltas = "".join(
                e["delta"]
                for e in w.events[start : w.events.index(end)]
                if e["type"] == "message_delta" and e["channel"] == channel
            )
            parts = "".join(p["text"] for p in end["message"]["content"] if p["type"] == channel)
            assert deltas == parts
    tool_end = w.of("tool_end")[0]
    assert tool_end["tool_call_id"] == "call_0" and tool_end["name"] == "read"
    assert "return 'hello'" in tool_end["result"]["text"]
    assert w.of("agent_end")[0]["stop"] == "end"
    # The session file holds the same conversation, in order, with the effect records.
    recorded = w.reopened()
    kinds = [
        (e.kind, e.content.get("role") if isinstance(e.content, dict) else None)
        for e in recorded.branch()
    ]
    assert kinds == [
        ("message", "user"),
        ("message", "assistant"),
        ("effect_intent", None),
        ("effect_completion", None),
        ("message", "tool_result"),
        ("message", "assistant"),
    ]
    ends = [e["message"] for e in w.of("message_end")]
    assert messages(recorded) == [*ends[:2], messages(recorded)[2], *ends[2:]]
    assert messages(recorded)[2]["tool_call_id"] == "call_0"
    # The second request carried the call and its result, paired.
    roles = [m["role"] for m in fake.requests[1].messages]
    assert roles == ["user", "assistant", "tool_result"]


def test_calls_run_concurrently_and_results_are_recorded_in_call_order(tmp_path: Path) -> None:
    w = World(tmp_path)
    first, second = threading.Event(), threading.Event()
    log: list[str] = []
    a, b = threading.Event(), threading.Event()
    tools = [
        slow_tool("alpha", first, log=log, started=a),
        slow_tool("beta", second, log=log, started=b),
    ]
    fake = Fake(call(("alpha", {}), ("beta", {})), say("both done"))

    async def main() -> None:
        rt = w.runtime(fake, tools=tools)
        rt.prompt("go")
        # beta finishes first; alpha was already running alongside it.
        await asyncio.to_thread(lambda: a.wait(10) and b.wait(10))
        second.set()
        await w.until("tool_end")
        first.set()
        await rt.wait_idle()

    run(main)
    assert log[:2] == ["start alpha ", "start beta "] or log[:2] == ["start beta ", "start alpha "]
    assert [e["name"] for e in w.of("tool_end")] == ["beta", "alpha"]  # as they finished
    results = [m for m in messages(w.session) if m["role"] == "tool_result"]
    assert [r["tool_name"] for r in results] == ["alpha", "beta"]  # in call order


def test_mutating_calls_on_overlapping_paths_run_in_order(tmp_path: Path) -> None:
    w = World(tmp_path)
    release = threading.Event()
    release.set()
    log: list[str] = []
    probe = threading.Condition()
    tools = [
        slow_tool("put", release, mutating=True, log=log, probe=probe),
        slow_tool("look", release, log=log, probe=probe),
    ]
    fake = Fake(
        call(
            ("put", {"path": "src/a.py"}), ("look", {"path": "src"}), ("put", {"path": "src/a.py"})
        ),
        say("ok"),
    )

    w.converse(fake, tools=tools, prompts=["go"])
    # Each call touching src/a.py waited for the one before it.
    assert log == [
        "start put src/a.py",
        "end put src/a.py",
        "start look src",
        "end look src",
        "start put src/a.py",
        "end put src/a.py",
    ]


def test_an_exclusive_tool_runs_alone(tmp_path: Path) -> None:
    w = World(tmp_path)
    release = threading.Event()
    release.set()
    log: list[str] = []
    probe = threading.Condition()
    tools = [
        slow_tool("solo", release, exclusive=True, log=log, probe=probe),
        slow_tool("look", release, log=log, probe=probe),
    ]
    fake = Fake(call(("look", {"path": "a"}), ("solo", {}), ("look", {"path": "b"})), say("ok"))

    w.converse(fake, tools=tools, prompts=["go"])
    assert log.index("end look a") < log.index("start solo ") < log.index("end solo ")
    assert log.index("end solo ") < log.index("start look b")


def test_invalid_arguments_and_unknown_tools_become_errors_the_model_sees(tmp_path: Path) -> None:
    w = World(tmp_path)
    fake = Fake(
        [
            ToolCall("c1", "read", {"path": 42}),
            ToolCall("c2", "deploy", {}),
            ToolCall("c3", "read", None, error="Expecting ',' at 1:9"),
            End("tool_use"),
        ],
        say("sorry"),
    )

    w.converse(fake, prompts=["go"])
    results = {r["tool_call_id"]: r for r in messages(w.session) if r["role"] == "tool_result"}
    assert all(r["is_error"] for r in results.values())
    assert "invalid arguments for read" in results["c1"]["content"][0]["text"]
    assert "no tool named 'deploy'" in results["c2"]["content"][0]["text"]
    assert "read" in results["c2"]["content"][0]["text"]  # names the tools there are
    assert "not valid JSON" in results["c3"]["content"][0]["text"]
    # None of them reached an effect.
    assert not [e for e in w.session.entries() if e.kind == "effect_intent"]
    assert [m["role"] for m in fake.requests[1].messages][-3:] == ["tool_result"] * 3


def test_steer_is_delivered_after_the_tool_batch_before_the_next_request(tmp_path: Path) -> None:
    w = World(tmp_path)
    release = threading.Event()
    fake = Fake(call(("hold", {})), say("steered"), say("done"))

    async def main() -> None:
        rt = w.runtime(fake, tools=[slow_tool("hold", release)])
        rt.prompt("start")
        await w.until("tool_start")
        rt.steer("use tabs")
        assert [i.text for i in rt.queue.items()] == ["use tabs"]
        release.set()
        await rt.wait_idle()

    run(main)
    second = [m["role"] for m in fake.requests[1].messages]
    assert second == ["user", "assistant", "tool_result", "user"]
    assert fake.requests[1].messages[-1]["content"][0]["text"] == "use tabs"
    assert len(fake.requests) == 2  # no follow-up round
    assert w.of("queue_changed")[-1]["queue"] == []


def test_follow_up_waits_until_the_agent_would_stop(tmp_path: Path) -> None:
    w = World(tmp_path)
    release = threading.Event()
    fake = Fake(call(("hold", {})), say("first answer"), say("second answer"))

    async def main() -> None:
        rt = w.runtime(fake, tools=[slow_tool("hold", release)])
        rt.prompt("start")
        await w.until("tool_start")
        rt.follow_up("and then this")
        release.set()
        await rt.wait_idle()

    run(main)
    # Not delivered after the tool batch (the model still had work), but after its answer.
    assert [m["role"] for m in fake.requests[1].messages][-1] == "tool_result"
    last = fake.requests[2].messages
    assert [m["role"] for m in last][-2:] == ["assistant", "user"]
    assert last[-1]["content"][0]["text"] == "and then this"
    assert [e["stop"] for e in w.of("agent_end")] == ["end"]


def test_queued_items_can_be_listed_and_removed(tmp_path: Path) -> None:
    w = World(tmp_path)
    gate = Gate()
    fake = Fake([gate, *say("x")], say("y"))

    async def main() -> None:
        rt = w.runtime(fake)
        rt.prompt("start")
        await gate.reached.wait()
        a = rt.steer("one")
        rt.follow_up("two")
        assert [i.mode for i in rt.queue.items()] == ["steer", "follow_up"]
        assert rt.submit({"op": "queue_remove", "id": a}) is True
        assert rt.submit({"op": "queue_remove", "id": a}) is False
        assert [i.text for i in rt.queue.items()] == ["two"]
        gate.opened.set()
        await rt.wait_idle()

    run(main)
    assert fake.requests[1].messages[-1]["content"][0]["text"] == "two"


def _user_texts(request: object) -> list[str]:
    messages = request.messages  # type: ignore[attr-defined]
    return [m["content"][0]["text"] for m in messages if m["role"] == "user"]


def test_one_at_a_time_delivers_each_queued_steer_at_its_own_safe_point(tmp_path: Path) -> None:
    w = World(tmp_path)
    release = threading.Event()
    fake = Fake(call(("hold", {})), say("took a"), say("took b"))

    async def main() -> None:
        rt = w.runtime(fake, tools=[slow_tool("hold", release)])  # the default policies
        rt.prompt("start")
        await w.until("tool_start")
        rt.steer("a")
        rt.steer("b")
        release.set()
        await rt.wait_idle()

    run(main)
    # The oldest after the tool batch; the next at the safe point after its answer.
    assert [_user_texts(r) for r in fake.requests] == [
        ["start"],
        ["start", "a"],
        ["start", "a", "b"],
    ]
    assert [m["role"] for m in fake.requests[2].messages][-3:] == ["user", "assistant", "user"]
    queues = [[i["text"] for i in ev["queue"]] for ev in w.of("queue_changed")]
    assert queues == [["a"], ["a", "b"], ["b"], []]


def test_one_at_a_time_delivers_each_follow_up_in_a_round_of_its_own(tmp_path: Path) -> None:
    w = World(tmp_path)
    release = threading.Event()
    fake = Fake(call(("hold", {})), say("answer"), say("did x"), say("did y"))

    async def main() -> None:
        rt = w.runtime(fake, tools=[slow_tool("hold", release)])
        rt.prompt("start")
        await w.until("tool_start")
        rt.follow_up("x")
        rt.follow_up("y")
        release.set()
        await rt.wait_idle()

    run(main)
    assert [_user_texts(r)[1:] for r in fake.requests] == [[], [], ["x"], ["x", "y"]]
    assert [m["role"] for m in fake.requests[3].messages][-2:] == ["assistant", "user"]


def test_all_at_once_policy_delivers_every_queued_steer_together(tmp_path: Path) -> None:
    w = World(tmp_path)
    gate = Gate()
    fake = Fake([gate, *call(("ls", {}))], say("x"))

    async def main() -> None:
        rt = w.runtime(fake, queue_policy=("all", "one-at-a-time"))
        rt.prompt("start")
        await gate.reached.wait()
        rt.steer("a")
        rt.steer("b")
        gate.opened.set()
        await rt.wait_idle()

    run(main)
    texts = [m["content"][0]["text"] for m in fake.requests[1].messages if m["role"] == "user"]
    assert texts == ["start", "a", "b"]


@pytest.mark.parametrize(
    ("limits", "responses", "stop"),
    [
        (Limits(max_iterations=2), [call(("ls", {}))] * 3, "max_iterations"),
        (
            Limits(token_budget=150),
            [[*call(("ls", {}))[:-1], Usage(100, 60), End("tool_use")]] * 3,
            "token_budget",
        ),
        (Limits(), [[TextDelta("cut"), End("limit")]], "limit"),
        (Limits(), [[TextDelta("half")]], "error"),  # no terminal event: malformed
    ],
    ids=["iterations", "token-budget", "output-limit", "no-terminal-event"],
)
def test_explicit_stops(tmp_path: Path, limits: Limits, responses: list[Any], stop: str) -> None:
    w = World(tmp_path)
    fake = Fake(*responses)

    w.converse(fake, limits=limits, prompts=["go"])
    end = w.of("agent_end")[-1]
    assert end["stop"] == stop
    if stop == "error":
        assert "without a terminal event" in end["error"]
        assert messages(w.session)[-1]["stop"] == "error"


def test_a_tool_can_say_the_agent_is_done(tmp_path: Path) -> None:
    w = World(tmp_path)

    def finish(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
        return ToolResult("finished", details={"done": True})

    spec = ToolSpec("finish", "end the task", {"type": "object"}, finish, mutating=False)
    fake = Fake(call(("finish", {})), say("never asked"))

    w.converse(fake, tools=[spec], prompts=["go"])
    assert w.of("agent_end")[-1]["stop"] == "done"
    assert len(fake.requests) == 1


def test_a_deadline_stops_the_prompt(tmp_path: Path) -> None:
    w = World(tmp_path)
    gate = Gate()  # never opened: only the deadline can end this
    fake = Fake([TextDelta("thinking about it"), gate])

    w.converse(fake, limits=Limits(deadline=0.2), prompts=["go"])
    assert w.of("agent_end")[-1]["stop"] == "deadline"
    assert messages(w.session)[-1]["stop"] == "abort"


def test_retryable_errors_are_retried_with_a_retry_event(tmp_path: Path) -> None:
    w = World(tmp_path)
    fake = Fake(
        [End("error", error="overloaded", retryable=True, retry_after=0.001)], say("fine now")
    )

    w.converse(fake, prompts=["go"])
    assert [(e["attempt"], e["error"]) for e in w.of("retry")] == [(1, "overloaded")]
    assert w.of("agent_end")[-1]["stop"] == "end"


def test_a_failing_observer_never_breaks_the_loop(tmp_path: Path) -> None:
    w = World(tmp_path)

    def broken(event: dict[str, Any]) -> None:
        raise RuntimeError("observer bug")

    async def main() -> None:
        rt = w.runtime(Fake(say("still fine")))
        rt.on_event(broken)
        rt.prompt("go")
        await rt.wait_idle()

    run(main)
    assert w.of("agent_end")[-1]["stop"] == "end"


def test_tool_results_are_truncated_at_a_utf8_boundary_with_the_size() -> None:
    text = "é" * 100  # 200 bytes
    cut = truncate(text, 51)
    assert cut.startswith("é" * 25 + "\n")
    assert "200 bytes" in cut and "first 50" in cut
    assert truncate("short", 51) == "short"


def test_long_results_reach_the_model_truncated(tmp_path: Path) -> None:
    w = World(tmp_path)
    (w.project / "big.txt").write_text("→" * 5000 + "\n")
    fake = Fake(call(("read", {"path": "big.txt"})), say("ok"))

    w.converse(fake, limits=Limits(result_bytes=1000), prompts=["go"])
    result = fake.requests[1].messages[-1]["content"][0]["text"]  # type: ignore[index]
    assert "[truncated: the result was" in result
    assert len(result.encode()) < 1200


def test_a_tool_past_its_timeout_is_cancelled_and_reported(tmp_path: Path) -> None:
    w = World(tmp_path)
    never = threading.Event()
    spec = slow_tool("stuck", never)
    spec.timeout = 0.2
    fake = Fake(call(("stuck", {})), say("ok"))

    w.converse(fake, tools=[spec], prompts=["go"])
    result = messages(w.session)[-2]
    assert result["role"] == "tool_result" and result["is_error"]
    assert result["content"][0]["text"].startswith("[timed out after 0.2 s]")
    completion = next(e.content for e in w.session.entries() if e.kind == "effect_completion")
    assert completion["outcome"] == "cancelled"  # type: ignore[index]


def test_usage_a_tool_reports_is_counted(tmp_path: Path) -> None:
    w = World(tmp_path)

    def helper(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
        return ToolResult("asked a model", details={"usage": {"input": 7, "output": 3}})

    spec = ToolSpec("helper", "asks a model", {"type": "object"}, helper, mutating=False)
    fake = Fake(call(("helper", {})), say("ok", usage=Usage(10, 2, 0, 0)))

    async def main() -> Any:
        rt = w.runtime(fake, tools=[spec])
        rt.prompt("go")
        await rt.wait_idle()
        return rt

    rt = run(main)
    by_source = rt.cost.to_dict()["by_source"]
    assert by_source["tool"]["tokens"]["input"] == 7
    assert rt.cost.tokens("input") == 17
    assert rt.cost.complete is False  # the first response reported no usage


def test_a_prompt_during_an_idle_compaction_runs_after_it(tmp_path: Path) -> None:
    w = World(tmp_path)
    gate = Gate()
    fake = Fake(say("a " * 40), say("b " * 40), [TextDelta("SUMMARY"), gate, End("success")],
                say("answered"))  # fmt: skip

    async def main() -> None:
        rt = w.runtime(fake, limits=Limits(keep_recent=10))
        for text in ("one", "two"):
            rt.prompt(text)
            await rt.wait_idle()
        rt.compact()
        await gate.reached.wait()
        rt.prompt("while compacting")
        gate.opened.set()
        await rt.wait_idle()
        assert len(rt.queue) == 0

    run(main)
    assert w.of("compaction_end")[0]["ok"] is True
    assert fake.requests[-1].messages[-1]["content"][0]["text"] == "while compacting"  # type: ignore[index]
    assert w.types().count("settled") == 3  # after each prompt and after the last run


def test_a_follow_up_queued_before_a_non_end_stop_starts_the_next_run(tmp_path: Path) -> None:
    w = World(tmp_path)
    gate = Gate()
    fake = Fake([TextDelta("cut"), gate, End("limit")], say("follow-up answered"))

    async def main() -> None:
        rt = w.runtime(fake)
        rt.prompt("start")
        await gate.reached.wait()
        rt.follow_up("then this")
        gate.opened.set()
        await rt.wait_idle()

    run(main)
    assert [e["stop"] for e in w.of("agent_end")] == ["limit", "end"]
    assert fake.requests[1].messages[-1]["content"][0]["text"] == "then this"  # type: ignore[index]


def test_with_secrets_deltas_keep_their_channel_and_assemble_exactly(tmp_path: Path) -> None:
    from smith.runtime import SecretProxy

    w = World(tmp_path)
    proxy = SecretProxy()
    proxy.register("KEY", "hunter2-secret", source="test")
    fake = Fake(
        [ThinkingDelta("think hunter2-"), ThinkingDelta("secret ok"), TextDelta("Let me look"),
         TextDelta(" at hunter2-sec"), TextDelta("ret now"), ToolCall("c1", "ls", {}),
         End("tool_use")],
        say("done"),
    )  # fmt: skip

    async def main() -> None:
        rt = w.runtime(fake, secrets=proxy)
        rt.steer("steer with hunter2-secret")  # idle: runs as a prompt
        await rt.wait_idle()

    run(main)
    deltas = [(e["channel"], e["delta"]) for e in w.of("message_delta")]
    assert {c for c, _ in deltas} == {"text", "thinking"}
    end = w.of("message_end")[1]
    mine = [(e["channel"], e["delta"]) for e in w.of("message_delta")
            if e["message_id"] == end["message_id"]]  # fmt: skip
    for channel in ("text", "thinking"):
        assembled = "".join(d for c, d in mine if c == channel)
        parts = "".join(p["text"] for p in end["message"]["content"] if p["type"] == channel)
        assert assembled == parts
        assert "{{secret:KEY}}" in parts
    import json

    assert "hunter2-secret" not in json.dumps(w.events)


def test_queued_text_in_events_is_redacted(tmp_path: Path) -> None:
    from smith.runtime import SecretProxy

    w = World(tmp_path)
    proxy = SecretProxy()
    proxy.register("KEY", "hunter2-secret", source="test")
    gate = Gate()

    async def main() -> None:
        rt = w.runtime(Fake([gate, *say("x")], say("y")), secrets=proxy)
        rt.prompt("go")
        await gate.reached.wait()
        rt.steer("use hunter2-secret")
        assert "hunter2-secret" not in str(rt.state())
        gate.opened.set()
        await rt.wait_idle()

    run(main)
    assert w.of("queue_changed") and "hunter2-secret" not in str(w.events)


def test_a_running_command_reports_progress(tmp_path: Path) -> None:
    w = World(tmp_path)
    command = "for i in 1 2 3 4; do echo line $i; sleep 0.3; done"
    fake = Fake(call(("bash", {"command": command})), say("ok"))

    w.converse(fake, prompts=["go"])
    updates = w.of("tool_update")
    assert updates and updates[0]["name"] == "bash" and updates[0]["tool_call_id"] == "call_0"
    assert "line" in updates[-1]["update"]["tail"]
    order = w.types()
    assert order.index("tool_start") < order.index("tool_update") < order.index("tool_end")


def test_the_scripted_provider_drives_the_same_loop(tmp_path: Path) -> None:
    import json

    from smith.effects import ToolContext as Ctx
    from smith.effects import builtin_tools
    from smith.runtime import Runtime

    w = World(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": [
        {"text": "Looking.", "tool_calls": [{"name": "read", "arguments": {"path": "src/app.py"}}],
         "usage": {"input": 5, "output": 2}},
        {"text": "It returns hello."},
    ]}))  # fmt: skip

    async def main() -> None:
        ctx = Ctx(root=str(w.project), cwd=str(w.project), session=w.session)
        rt = Runtime(w.session, model=f"scripted:{script}",
                     tools=list(builtin_tools().values()), context=ctx)  # fmt: skip
        rt.on_event(w.events.append)
        rt.prompt("what does app do?")
        await rt.wait_idle()

    run(main)
    assert [e["stop"] for e in w.of("agent_end")] == ["end"]
    assert "return 'hello'" in w.of("tool_end")[0]["result"]["text"]
    recorded = messages(w.reopened())
    assert [m["role"] for m in recorded] == ["user", "assistant", "tool_result", "assistant"]
    assert recorded[1]["usage"]["input"] == 5 and recorded[3]["usage"] is None


def test_tool_calls_of_a_response_that_failed_are_recorded_not_run(tmp_path: Path) -> None:
    """A call that arrived before the connection broke is not run: the response is
    incomplete, so what else the model meant to do is unknown."""
    broken = [
        ToolCall("call_0", "write", {"path": "x.txt", "content": "half"}),
        End("error", error="connection reset", retryable=False, kind="connect"),
    ]
    w = World(tmp_path)
    w.converse(Fake(broken))
    assert not (w.project / "x.txt").exists()
    assert w.of("tool_start") == []
    results = [m for m in messages(w.reopened()) if m["role"] == "tool_result"]
    assert [(r["tool_call_id"], r["outcome"]) for r in results] == [("call_0", "cancelled")]
    assert "failed before it was complete" in results[0]["content"][0]["text"]
    assert w.of("agent_end")[-1]["stop"] == "error"


def test_one_file_spelled_differently_is_one_file_to_the_scheduler(tmp_path: Path) -> None:
    w = World(tmp_path)
    (w.project / "link").symlink_to("src")
    release = threading.Event()
    release.set()
    log: list[str] = []
    probe = threading.Condition()
    tools = [slow_tool("put", release, mutating=True, log=log, probe=probe)]
    spellings = [str(w.project / "src" / "a.py"), "src/a.py", "src/../src/a.py", "link/a.py"]
    fake = Fake(call(*[("put", {"path": p}) for p in spellings]), say("ok"))

    w.converse(fake, tools=tools, prompts=["go"])
    # Each call waited for the one before it: the four spellings name one file.
    assert log == [f"{step} put {p}" for p in spellings for step in ("start", "end")]
