"""The plan plugin (docs/plan.md): the todo tool and plan mode, through eval, resume,
replay, RPC, the runtime's operation and the app."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from smith.effects import ToolContext, builtin_tools
from smith.protocol import EVENTS
from smith.runtime import Runtime, ops
from smith.session import Session
from tests.conftest import Result, SmithEnv
from tests.rpc_kit import Rpc, script
from tests.runtime_kit import Fake, call, say

TODOS = [
    {"content": "write the parser TODO-ALPHA-11", "status": "pending"},
    {"content": "test the parser TODO-BETA-22", "status": "in_progress"},
]
Smith = Callable[..., Result]


def _events(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _todo(**arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "todo", "arguments": arguments}]}


def _todo_events(events: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    return [ev["items"] for ev in events if ev["type"] == "todo"]


def test_the_todo_tool_emits_the_list_keeps_it_in_the_session_and_replay_shows_it(
    senv: SmithEnv, smith: Smith
) -> None:
    project = senv.make_project()
    model = script(senv, [_todo(todos=TODOS), _todo(update={"index": 1, "status": "completed"}),
                          {"text": "planned"}])  # fmt: skip
    r = smith("eval", "--json", "--session", "work", "--model", model, "plan it", cwd=project)
    assert r.code == 0, r.err
    events = _events(r.out)
    first, second = _todo_events(events)
    assert first == TODOS  # both items, as written
    assert second == [{**TODOS[0], "status": "completed"}, TODOS[1]]  # one item updated
    ends = [ev for ev in events if ev["type"] == "tool_end" and ev["name"] == "todo"]
    assert [e["is_error"] for e in ends] == [False, False]
    assert "[x] 1. write the parser" in ends[1]["result"]["text"]
    for ev in events:  # every line is a declared event
        if ev["type"] != "result":
            assert ev["type"] in EVENTS, ev["type"]

    # Resumed, an update starts from the list the session kept.
    model = script(senv, [_todo(update={"index": 2, "status": "completed"}), {"text": "ok"}])
    r = smith("eval", "--json", "--session", "work", "--model", model, "go on", cwd=project)
    assert r.code == 0, r.err
    assert _todo_events(_events(r.out)) == [[{**t, "status": "completed"} for t in TODOS]]

    r = smith("replay", "work", cwd=project)
    assert r.code == 0, r.err
    assert "  [x] write the parser TODO-ALPHA-11\n  [~] test the parser TODO-BETA-22" in r.out
    r = smith("replay", "work", "--json", cwd=project)
    assert len(_todo_events(_events(r.out))) == 3


def test_the_todo_tool_refuses_what_it_cannot_do(senv: SmithEnv, smith: Smith) -> None:
    project = senv.make_project()
    model = script(senv, [_todo(update={"index": 1, "status": "completed"}), _todo(),
                          _todo(todos=TODOS), _todo(update={"index": 3, "status": "pending"}),
                          {"text": "ok"}])  # fmt: skip
    r = smith("eval", "--json", "--model", model, "go", cwd=project)
    ends = [ev for ev in _events(r.out) if ev["type"] == "tool_end"]
    assert [e["is_error"] for e in ends] == [True, True, False, True]
    assert "no todo list to update" in ends[0]["result"]["text"]
    assert "either `todos`" in ends[1]["result"]["text"]
    assert "items 1 to 2, not 3" in ends[3]["result"]["text"]


def _offered(senv: SmithEnv, responses: list[dict[str, Any]]) -> tuple[str, Path]:
    log = senv.root / f"requests-{len(list(senv.root.glob('requests-*')))}.jsonl"
    return script(senv, responses, requests_log=str(log)), log


def test_plan_mode_runs_only_read_only_tools_tells_the_model_and_survives_resume(
    senv: SmithEnv, smith: Smith
) -> None:
    project = senv.make_project()
    calls = {"tool_calls": [
        {"name": "write", "arguments": {"path": "x.txt", "content": "x"}, "id": "w"},
        {"name": "bash", "arguments": {"command": "touch y.txt"}, "id": "b"},
        {"name": "ls", "arguments": {"path": "."}, "id": "l"},
        {"name": "todo", "arguments": {"todos": TODOS}, "id": "t"},
    ]}  # fmt: skip
    model, log = _offered(senv, [calls, {"text": "PLAN: write x, then y"}])
    r = smith("eval", "--plan", "--json", "--session", "p", "--model", model, "plan", cwd=project)
    assert r.code == 0, r.err
    ends = {ev["tool_call_id"]: ev for ev in _events(r.out) if ev["type"] == "tool_end"}
    assert ends["w"]["is_error"] and ends["b"]["is_error"]
    assert "plan mode" in ends["w"]["result"]["text"] and "plan" in ends["b"]["result"]["text"]
    assert not ends["l"]["is_error"] and not ends["t"]["is_error"]
    assert not (project / "x.txt").exists() and not (project / "y.txt").exists()
    first = json.loads(log.read_text().splitlines()[0])
    assert "You are in plan mode" in json.dumps(first["system"])

    # Resumed without --plan: still planning (the mode is in the session).
    model, log = _offered(senv, [calls, {"text": "still planning"}])
    r = smith("eval", "--json", "--session", "p", "--model", model, "again", cwd=project)
    ends = {ev["tool_call_id"]: ev for ev in _events(r.out) if ev["type"] == "tool_end"}
    assert ends["w"]["is_error"] and not ends["l"]["is_error"]
    assert "You are in plan mode" in json.dumps(json.loads(log.read_text().splitlines()[0]))


def _runtime(tmp_path: Path, fake: Fake, session: Session | None = None) -> Runtime:
    if session is None:
        session = Session.create(str(tmp_path / "s.smith"), name="t", cwd=str(tmp_path))
    ctx = ToolContext(root=str(tmp_path), cwd=str(tmp_path), session=session)
    return Runtime(session, model=(fake, "m"), tools=list(builtin_tools().values()), context=ctx)


def test_leaving_plan_mode_sends_the_plan_and_the_model_is_told_no_longer(tmp_path: Path) -> None:
    fake = Fake(call(("write", {"path": "a.txt", "content": "a"})), say("PLAN-7: write a.txt"),
                call(("write", {"path": "a.txt", "content": "a"})), say("done"))  # fmt: skip
    seen: list[dict[str, Any]] = []

    async def main() -> None:
        rt = _runtime(tmp_path, fake)
        rt.on_event(seen.append)
        assert rt.submit(ops.SetMode("plan"))["mode"] == "plan"  # type: ignore[index]
        assert rt.status()["mode"] == "plan"
        rt.submit(ops.Prompt("plan the change"))
        await rt.wait_idle()
        assert not (tmp_path / "a.txt").exists()
        left = rt.submit(ops.SetMode("normal"))
        assert isinstance(left, dict)
        assert left["plan"] == "PLAN-7: write a.txt" and left["submission"]
        await rt.wait_idle()
        assert (tmp_path / "a.txt").exists()  # the plan ran, out of plan mode
        await rt.close()

    asyncio.run(asyncio.wait_for(main(), 30))
    planned, carried = fake.requests[0], fake.requests[2]
    assert "You are in plan mode" in str(planned.system)
    assert "You are in plan mode" not in str(carried.system)
    last: Any = carried.messages[-1]
    assert last["content"][0]["text"] == "Carry out this plan:\n\nPLAN-7: write a.txt"
    modes = [(ev["previous"], ev["mode"], ev["plan"]) for ev in seen if ev["type"] == "mode"]
    assert modes == [("normal", "plan", None), ("plan", "normal", "PLAN-7: write a.txt")]


def test_the_mode_follows_the_branch_selected(tmp_path: Path) -> None:
    async def main() -> None:
        rt = _runtime(tmp_path, Fake(say("one"), say("two")))
        rt.submit(ops.Prompt("first"))
        await rt.wait_idle()
        before = rt.submit(ops.SessionInfo())["leaf"]  # type: ignore[index]
        rt.submit(ops.SetMode("plan"))
        rt.submit(ops.Prompt("second"))
        await rt.wait_idle()
        planned = rt.submit(ops.SessionInfo())["leaf"]  # type: ignore[index]
        rt.submit(ops.Select(before))
        assert rt.status()["mode"] == "normal"  # that branch was never in plan mode
        rt.submit(ops.Select(planned))
        assert rt.status()["mode"] == "plan"
        await rt.close()

    asyncio.run(asyncio.wait_for(main(), 30))


def test_a_bad_mode_is_refused_naming_the_modes(tmp_path: Path) -> None:
    from smith.diagnostics import SmithError

    async def main() -> None:
        rt = _runtime(tmp_path, Fake())
        try:
            rt.submit({"op": "set_mode", "mode": "yolo"})
        except SmithError as exc:
            assert exc.diagnostic.code == "runtime.bad-mode" and "plan" in exc.diagnostic.why
        else:
            raise AssertionError("set_mode yolo was taken")
        await rt.close()

    asyncio.run(asyncio.wait_for(main(), 30))


def test_rpc_gets_the_todo_event_and_sets_the_mode(senv: SmithEnv) -> None:
    project = senv.make_project()
    model = script(senv, [_todo(todos=TODOS), {"text": "PLAN-RPC"}, {"text": "carried out"}])
    rpc = Rpc(senv, project, "--model", model)
    try:
        assert rpc.call("mode.set", {"mode": "plan"})["mode"] == "plan"
        assert rpc.event("mode", mode="plan")["previous"] == "normal"
        assert rpc.call("get_state")["mode"] == "plan"
        rpc.call("prompt", {"text": "plan"})
        assert rpc.event("todo")["items"] == TODOS
        rpc.call("wait_idle")
        left = rpc.call("mode.set", {"mode": "normal"})
        assert left["plan"] == "PLAN-RPC" and left["submission"]
        rpc.event("agent_end", prompt_id=left["submission"])
        assert rpc.error("mode.set", {"mode": "yolo"})["data"]["code"] == "runtime.bad-mode"
    finally:
        code, err = rpc.close()
    assert code == 0, err


def test_the_app_pins_the_list_and_shift_tab_toggles_plan_mode(tmp_path: Path) -> None:
    from smith.frontends.tui._app import SmithApp
    from smith.frontends.tui._plan import TodoPanel
    from tests.test_tui import SIZE, _settle, _type, status

    fake = Fake(call(("todo", {"todos": TODOS})), say("PLAN-APP: two steps"))
    session = Session.create(str(tmp_path / "s.smith"), name="tui", cwd=str(tmp_path))

    async def main() -> None:
        app = SmithApp(lambda s: _runtime(tmp_path, fake, s), session)
        async with app.run_test(size=SIZE) as pilot:
            panel = app.query_one(TodoPanel)
            assert not panel.display
            await pilot.press("shift+tab")
            await pilot.pause()
            assert "plan mode" in status(app)
            await _type(pilot, "go")
            await _settle(app)
            await pilot.pause()
            assert panel.display and "TODO-ALPHA-11" in str(panel.render())
            assert "[~] test the parser" in str(panel.render())
            await pilot.press("shift+tab")
            await pilot.pause()
            assert "plan mode" not in status(app)
            assert app.editor.value == "Carry out this plan:\n\nPLAN-APP: two steps"
            assert app.runtime is not None and not app.runtime.busy  # the user sends it

        # Opened again: the list and the mode come back from the session.
        again = SmithApp(lambda s: _runtime(tmp_path, Fake(), s), session)
        async with again.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert "TODO-BETA-22" in str(again.query_one(TodoPanel).render())
            assert "plan mode" not in status(again)

    asyncio.run(asyncio.wait_for(main(), 60))


def test_the_app_started_with_plan_is_in_plan_mode_and_says_so_however_narrow(
    senv: SmithEnv,
) -> None:
    from tests.app_kit import assembled_app
    from tests.test_tui import status

    project = senv.make_project()
    senv.env["SMITH_PLAN"] = "true"  # as --plan
    make_app, session = assembled_app(senv, project, script(senv, [{"text": "a plan"}]))

    async def main() -> None:
        app = make_app()
        async with app.run_test(size=(40, 20)) as pilot:
            await pilot.pause()
            assert app.runtime is not None and app.runtime.status()["mode"] == "plan"
            assert "plan" in status(app).split(" · "), status(app)  # never dropped
        session.close()

    asyncio.run(asyncio.wait_for(main(), 60))


def test_the_plan_command_enters_and_leaves_plan_mode(tmp_path: Path) -> None:
    from smith.frontends.tui._app import SmithApp
    from tests.test_tui import SIZE, _settle, _type, status

    fake = Fake(say("PLAN-CMD: one step"))
    session = Session.create(str(tmp_path / "s.smith"), name="tui", cwd=str(tmp_path))

    async def main() -> None:
        app = SmithApp(lambda s: _runtime(tmp_path, fake, s), session)
        async with app.run_test(size=SIZE) as pilot:
            await _type(pilot, "/plan")
            await pilot.pause()
            assert "plan mode" in status(app)
            await _type(pilot, "plan")
            await _settle(app)
            await _type(pilot, "/plan")
            await pilot.pause()
            assert "plan mode" not in status(app)
            assert app.editor.value == "Carry out this plan:\n\nPLAN-CMD: one step"

    asyncio.run(asyncio.wait_for(main(), 60))


def test_a_call_plan_mode_refuses_is_never_put_to_the_user_for_approval(
    senv: SmithEnv, smith: Smith
) -> None:
    """Plan mode reviews before approval (smith.plugins.BUILTIN), and the first deny ends
    the review: under `--approval untrusted` a write in plan mode is refused by plan
    mode, not asked about (eval cannot ask, so approval's refusal would name approval)."""
    project = senv.make_project()
    write = {"name": "write", "arguments": {"path": "x.txt", "content": "x"}, "id": "w"}
    model, _ = _offered(senv, [{"tool_calls": [write]}, {"text": "planned"}])
    r = smith("eval", "--plan", "--approval", "untrusted", "--json", "--model", model, "plan",
              cwd=project)  # fmt: skip
    assert r.code == 0, r.err
    (end,) = [ev for ev in _events(r.out) if ev["type"] == "tool_end"]
    assert end["is_error"] and "plugin 'plan' denied it" in end["result"]["text"]
    assert not any(ev["type"] == "ui" and ev.get("kind") == "question" for ev in _events(r.out))
    assert not (project / "x.txt").exists()
