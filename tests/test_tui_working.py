"""The working indicator (frontends/tui/_working.py): the state machine over the
runtime's intents, the line it draws, and that idle it runs nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from smith.frontends.tui._working import (
    Activity,
    WorkingLine,
    elapsed,
    key_label,
    tool_summary,
)
from tests.runtime_kit import Fake, Gate, call, say
from tests.test_tui import _app, _settle, _type

SIZE = (80, 24)


def _feed(activity: Activity, *intents: tuple[str, dict[str, Any]], now: float = 0.0) -> str:
    for kind, data in intents:
        activity.take(kind, data, now)
    return activity.doing()


def test_a_prompt_from_start_to_settled() -> None:
    a = Activity()
    assert not a.working and a.line(0, 0, "esc", 80) == ""
    assert _feed(a, ("status", {"event": "agent_start"}), now=10.0) == "waiting for the model"
    assert a.working and a.since == 10.0
    _feed(a, ("message_delta", {"start": True, "role": "user", "message_id": "u1"}),
          ("message_delta", {"message_id": "u1", "channel": "text", "delta": "hi"}))  # fmt: skip
    assert a.doing() == "waiting for the model"  # the user's own message says nothing
    _feed(a, ("status", {"event": "turn_start"}),
          ("message_delta", {"start": True, "role": "assistant", "message_id": "m1"}))  # fmt: skip
    assert a.doing() == "waiting for the model"
    think = ("message_delta", {"message_id": "m1", "channel": "thinking", "delta": "hm"})
    assert _feed(a, think) == "thinking"
    write = ("message_delta", {"message_id": "m1", "channel": "text", "delta": "I will"})
    assert _feed(a, write) == "writing"
    start = {"phase": "start", "tool_call_id": "c1", "name": "bash",
             "arguments": {"command": "pytest -q"}}  # fmt: skip
    assert _feed(a, ("tool_activity", start)) == "running bash: pytest -q"
    other = {**start, "tool_call_id": "c2", "name": "read", "arguments": {"path": "a.py"}}
    assert _feed(a, ("tool_activity", other)) == "running read: a.py (+1 more)"
    _feed(a, ("tool_activity", {"phase": "end", "tool_call_id": "c2"}))
    assert a.doing() == "running bash: pytest -q"
    _feed(a, ("tool_activity", {"phase": "end", "tool_call_id": "c1"}))
    assert a.doing() == "waiting for the model"
    _feed(a, ("status", {"event": "turn_end"}), ("status", {"event": "agent_end"}))
    assert a.working  # queued input may start the next run: only settled ends it
    _feed(a, ("status", {"event": "settled"}))
    assert not a.working and a.line(99, 0, "esc", 80) == ""


def test_compacting_and_the_users_own_command_outside_a_prompt() -> None:
    a = Activity()
    _feed(a, ("progress", {"event": "compaction_start", "reason": "manual"}), now=5.0)
    assert a.working and a.doing() == "compacting the context"
    _feed(a, ("progress", {"event": "compaction_end", "ok": True}))
    assert a.doing() == "waiting for the model"
    _feed(a, ("status", {"event": "settled"}))
    command = {"command": "make  test\n&& echo ok"}
    shell = {"phase": "start", "tool_call_id": "s1", "name": "bash", "arguments": command,
             "shell": {"context": True}}  # fmt: skip
    assert _feed(a, ("tool_activity", shell)) == "running bash: make test && echo ok"
    assert a.working
    # a plugin's progress is the status line's, not the indicator's
    b = Activity()
    assert not b.take("progress", {"event": "compaction_start", "origin": "p"}, 0)
    assert not b.working


def test_an_open_question_is_waiting_for_the_user() -> None:
    activity = Activity()
    start = ("status", {"event": "agent_start"})
    tool = ("tool_activity", {"phase": "start", "tool_call_id": "c", "name": "bash",
                              "arguments": {"command": "make"}})  # fmt: skip
    assert _feed(activity, start, tool) == "running bash: make"
    activity.asking += 1  # (WorkingLine.asked, from the app's ask)
    assert activity.doing() == "waiting for your answer"
    activity.asking -= 1
    assert activity.doing() == "running bash: make"


def test_the_line_keeps_the_time_and_the_key_and_cuts_what_it_does() -> None:
    a = Activity()
    a.take("status", {"event": "agent_start"}, 100.0)
    a.take("tool_activity", {"phase": "start", "tool_call_id": "c", "name": "bash",
                             "arguments": {"command": "x" * 200}}, 100.0)  # fmt: skip
    line = a.line(165.0, 2, "esc", 60)
    assert len(line) <= 60 and line.startswith("⠹ running bash: xxx")
    assert line.endswith("… · 1m 05s · esc to interrupt")
    assert a.line(103.0, 0, "", 80).endswith(" · 3s")  # no abort key configured


def test_elapsed_keys_and_summaries() -> None:
    assert [elapsed(s) for s in (0, 3.9, 59, 60, 65, 3599, 3720)] == [
        "0s", "3s", "59s", "1m 00s", "1m 05s", "59m 59s", "1h 02m"
    ]  # fmt: skip
    assert key_label("escape") == "esc" and key_label("ctrl+c, escape") == "ctrl+c"
    assert tool_summary("edit", {"path": "src/calc.py", "old": "a", "new": "b"}) == (
        "edit: src/calc.py"
    )
    assert tool_summary("mcp_thing", {"n": 3, "query": "find it"}) == "mcp_thing: find it"
    assert tool_summary("ls", {}) == "ls"
    assert tool_summary("bash", {"command": "echo \x1b[2J"}) == "bash: echo ␛[2J"
    assert len(tool_summary("bash", {"command": "y" * 300})) == len("bash: ") + 40


def test_the_indicator_shows_while_working_and_idle_runs_no_timer(tmp_path: Path) -> None:
    gate = Gate()
    fake = Fake([gate, *say("done")])

    async def main() -> None:
        app = _app(tmp_path, (fake, "m"))
        async with app.run_test(size=SIZE) as pilot:
            line = app.query_one(WorkingLine)
            assert not line.display and line.timer is None  # idle: hidden, nothing runs
            await _type(pilot, "go")
            await gate.reached.wait()
            await pilot.pause()
            assert line.display and line.timer is not None
            text = str(line.render())
            assert "waiting for the model" in text and "esc to interrupt" in text
            assert "working" in str(app.query_one("#status").render())
            gate.opened.set()
            await _settle(app)
            await pilot.pause()
            assert not line.display and line.timer is None
            assert "ready" in str(app.query_one("#status").render())

    asyncio.run(asyncio.wait_for(main(), 60))


def test_a_running_tool_is_named_with_its_arguments(tmp_path: Path) -> None:
    import threading

    from smith.effects import ToolContext
    from smith.frontends.tui._app import SmithApp
    from smith.runtime import Runtime
    from smith.session import Session
    from tests.runtime_kit import slow_tool

    release, started = threading.Event(), threading.Event()
    tool = slow_tool("slow", release, started=started)
    fake = Fake(call(("slow", {"path": "src/app.py"})), say("ok"))
    session = Session.create(str(tmp_path / "s.smith"), name="tui", cwd=str(tmp_path))

    def factory(session: Session) -> Runtime:
        ctx = ToolContext(root=str(tmp_path), cwd=str(tmp_path), session=session)
        return Runtime(session, model=(fake, "m"), tools=[tool], context=ctx)

    async def main() -> None:
        app = SmithApp(factory, session)
        async with app.run_test(size=SIZE) as pilot:
            await _type(pilot, "go")
            assert await asyncio.to_thread(started.wait, 30)
            await pilot.pause()
            assert "running slow: src/app.py" in str(app.query_one(WorkingLine).render())
            release.set()
            await _settle(app)

    asyncio.run(asyncio.wait_for(main(), 60))
