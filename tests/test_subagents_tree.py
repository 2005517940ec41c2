"""Sub-agents as a tree (smith.plugins.agents, docs/agents.md): many at once and nested,
the tree's limits per prompt, what a child inherits from the parent while it runs (mode,
approvals, tools), and how its end reaches the parent. Run in-process (smith.Agent) with
the scripted provider, which answers parent and children in the order they ask."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
from pathlib import Path
from typing import Any

import smith
from tests.conftest import SmithEnv


def _task(prompt: str, call: str, **more: str) -> dict[str, Any]:
    return {"name": "task", "arguments": {"prompt": prompt, **more}, "id": call}


def _script(tmp_path: Path, responses: list[dict[str, Any]]) -> str:
    script = tmp_path / "s.json"
    log = tmp_path / "requests.jsonl"
    script.write_text(json.dumps({"responses": responses, "requests_log": str(log)}))
    return f"scripted:{script}"


def _ends(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["tool_call_id"]: e for e in events if e["type"] == "tool_end"}


async def _send(agent: smith.Agent, prompt: str, events: list[dict[str, Any]]) -> str:
    agent.on_event(events.append)
    reply = await asyncio.wait_for(agent.send(prompt), 60)
    return smith.text_of(reply)  # type: ignore[arg-type]


def _run_small_pool(tmp_path: Path, responses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The prompt run by an agent whose loop's shared worker pool has 4 threads (a small
    machine's is 6): what it printed."""
    project = tmp_path / "p"
    project.mkdir(exist_ok=True)
    model = _script(tmp_path, responses)
    events: list[dict[str, Any]] = []
    pool = concurrent.futures.ThreadPoolExecutor(4)

    async def main() -> str:
        asyncio.get_running_loop().set_default_executor(pool)
        agent = smith.Agent(model, store=str(tmp_path / "store"), cwd=str(project))
        try:
            return await _send(agent, "go", events)
        finally:
            await agent.close()

    try:
        assert asyncio.run(main()) == "parent done"
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return events


# -- many at once, and nested: no call holds a shared worker while its child runs -------------


def test_eight_concurrent_task_calls_finish_with_a_pool_of_four(tmp_path: Path) -> None:
    calls = [_task(f"C{i}", f"t{i}", agent="explore") for i in range(8)]
    answers = [{"text": "answer"} for _ in calls]
    events = _run_small_pool(tmp_path, [{"tool_calls": calls}, *answers, {"text": "parent done"}])
    ends = _ends(events)
    assert all(not ends[f"t{i}"]["is_error"] for i in range(8))
    assert {ends[f"t{i}"]["result"]["text"] for i in range(8)} == {"answer"}


def test_four_task_calls_that_each_nest_one_finish_with_a_pool_of_four(tmp_path: Path) -> None:
    calls = [_task(f"C{i}", f"t{i}") for i in range(4)]
    nest = [{"tool_calls": [_task("G", f"g{i}", agent="explore")]} for i in range(4)]
    answers = [{"text": "answer"} for _ in range(8)]  # grandchildren's, then children's
    events = _run_small_pool(tmp_path, [{"tool_calls": calls}, *nest, *answers,
                                        {"text": "parent done"}])  # fmt: skip
    ends = _ends(events)
    assert all(not ends[f"t{i}"]["is_error"] for i in range(4))


def _agent(tmp_path: Path, model: str, **more: Any) -> smith.Agent:
    project = tmp_path / "p"
    project.mkdir(exist_ok=True)
    return smith.Agent(model, store=str(tmp_path / "store"), cwd=str(project), **more)


def _requests(tmp_path: Path) -> list[dict[str, Any]]:
    log = tmp_path / "requests.jsonl"
    return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []


# -- the user's interrupt at a sub-agent's call ends the parent's turn -----------------------


def test_an_interrupt_in_a_nested_sub_agent_ends_every_turn_up_to_the_parent(
    tmp_path: Path,
) -> None:
    from smith.sdk import DenyCall, Plugin

    def stop_writes(event: dict[str, Any], view: Any) -> list[Any] | None:
        return [DenyCall("Escape", interrupt=True)] if event["name"] == "write" else None

    write = {"name": "write", "arguments": {"path": "x.txt", "content": "x"}, "id": "w"}
    model = _script(tmp_path, [
        {"tool_calls": [_task("A", "ta")]},
        {"tool_calls": [_task("B", "tb")]},
        {"tool_calls": [write]},
        {"text": "GRANDCHILD WENT ON"},
        {"text": "CHILD WENT ON"},
        {"text": "PARENT WENT ON"},
    ])  # fmt: skip
    events: list[dict[str, Any]] = []

    async def main() -> str:
        agent = _agent(
            tmp_path, model, plugins=[Plugin("esc", handlers={"tool_call": stop_writes})]
        )
        try:
            await _send(agent, "go", events)
        except smith.AgentStopped as stopped:
            return stopped.stop
        finally:
            await agent.close()
        return "end"

    assert asyncio.run(main()) == "abort"
    assert len(_requests(tmp_path)) == 3  # nobody asked the model again
    end = _ends(events)["ta"]
    assert end["is_error"] and "the user interrupted" in end["result"]["text"]
    details = end["result"]["details"]
    assert details["interrupted"] is True and details["branch"]["leaf"]


# -- every task result of a child that ran names its branch -----------------------------------


def test_a_cancelled_task_call_names_its_childs_branch(tmp_path: Path) -> None:
    sleep = {"name": "bash", "arguments": {"command": "sleep 60"}, "id": "call_sleep"}
    model = _script(tmp_path, [{"tool_calls": [_task("wait", "ta")]}, {"tool_calls": [sleep]},
                               {"text": "never"}])  # fmt: skip
    events: list[dict[str, Any]] = []

    async def main() -> None:
        agent = _agent(tmp_path, model)
        started = asyncio.Event()

        def watch(event: dict[str, Any]) -> None:
            events.append(event)
            child = (
                event.get("update", {}).get("child", {}) if event["type"] == "tool_update" else {}
            )
            if child.get("type") == "tool_start" and child.get("name") == "bash":
                asyncio.get_running_loop().call_later(0.3, started.set)

        agent.on_event(watch)
        sending = asyncio.ensure_future(agent.send("go"))
        await asyncio.wait_for(started.wait(), 30)
        agent.abort()
        with contextlib.suppress(smith.AgentStopped):
            await asyncio.wait_for(sending, 30)
        await agent.close()

    asyncio.run(main())
    end = _ends(events)["ta"]
    assert end["is_error"]
    branch = end["result"]["details"]["branch"]
    assert branch["at"] and branch["leaf"] and branch["at"] != branch["leaf"]


# -- the tree's turn cap: per prompt, and never passed by children running at once -------------


def _configured(senv: SmithEnv, tmp_path: Path, model: str, config: str) -> smith.Agent:
    from smith.config import resolve

    senv.write_user_config(config)
    project = tmp_path / "p"
    project.mkdir(exist_ok=True)
    resolved = resolve(env=senv.env, flags={}, cwd=str(project))
    return smith.Agent(model, store=str(tmp_path / "store"), cwd=str(project), config=resolved)


CAP = "plugins {\n    agents {\n        max-turns %d\n    }\n}\n"


def test_children_at_once_send_no_round_past_the_trees_cap(senv: SmithEnv, tmp_path: Path) -> None:
    calls = [_task(f"CHILD-{i}", f"t{i}", agent="explore") for i in range(6)]
    model = _script(tmp_path, [{"tool_calls": calls}, *[{"text": "answer"}] * 8])
    events: list[dict[str, Any]] = []

    async def main() -> None:
        agent = _configured(senv, tmp_path, model, CAP % 3)
        try:
            await _send(agent, "go", events)
        finally:
            await agent.close()

    asyncio.run(main())
    children = [q for q in _requests(tmp_path) if '"text": "go"' not in json.dumps(q)]
    assert len(children) == 3  # the others were refused, or stopped before their request
    ends = _ends(events)
    stopped = [ends[f"t{i}"] for i in range(6) if ends[f"t{i}"]["is_error"]]
    assert len(stopped) == 3
    for end in stopped:
        text, details = end["result"]["text"], end["result"]["details"]
        assert "no more can start" in text or ("limit of 3 turns" in text and details["branch"])


def test_the_trees_cap_counts_again_from_each_prompt(senv: SmithEnv, tmp_path: Path) -> None:
    ls = {"name": "ls", "arguments": {"path": "."}, "id": "ls"}
    one = [{"tool_calls": [_task("look", "t1")]}, {"tool_calls": [ls]}, {"text": "seen"},
           {"text": "first done"}]  # fmt: skip
    two = [{"tool_calls": [_task("look", "t2")]}, {"tool_calls": [ls]}, {"text": "seen"},
           {"text": "second done"}]  # fmt: skip
    model = _script(tmp_path, [*one, *two])
    events: list[dict[str, Any]] = []

    async def main() -> list[str]:
        agent = _configured(senv, tmp_path, model, CAP % 2)
        try:
            return [await _send(agent, "first", events), await _send(agent, "second", [])]
        finally:
            await agent.close()

    assert asyncio.run(main()) == ["first done", "second done"]
    ends = _ends(events)
    assert not ends["t1"]["is_error"] and not ends["t2"]["is_error"], ends["t2"]["result"]


def test_a_blank_prompt_is_an_error_result_and_starts_no_child(tmp_path: Path) -> None:
    model = _script(tmp_path, [{"tool_calls": [_task("  \n", "ta")]}, {"text": "parent done"}])
    events: list[dict[str, Any]] = []

    async def main() -> str:
        agent = _agent(tmp_path, model)
        try:
            return await _send(agent, "go", events)
        finally:
            await agent.close()

    assert asyncio.run(main()) == "parent done"
    end = _ends(events)["ta"]
    assert end["is_error"] and "prompt is empty" in end["result"]["text"]
    assert len(_requests(tmp_path)) == 2  # the parent's two: no child asked


# -- what a running child takes from its parent ------------------------------------------------


def test_plan_mode_entered_while_a_sub_agent_runs_holds_it_to_read_only_calls(
    tmp_path: Path,
) -> None:
    from smith.runtime import ops

    ls = {"name": "ls", "arguments": {"path": "."}, "id": "ls"}
    write = {"name": "write", "arguments": {"path": "w.txt", "content": "x"}, "id": "w"}
    model = _script(tmp_path, [{"tool_calls": [_task("work", "ta")]}, {"tool_calls": [ls]},
                               {"tool_calls": [write]}, {"text": "child done"},
                               {"text": "parent done"}])  # fmt: skip
    events: list[dict[str, Any]] = []

    async def main() -> str:
        agent = _agent(tmp_path, model)

        def planning(event: dict[str, Any]) -> None:
            child = (
                event.get("update", {}).get("child", {}) if event["type"] == "tool_update" else {}
            )
            if child.get("type") == "tool_start" and child.get("name") == "ls":
                agent.runtime.submit(ops.SetMode(mode="plan", prompt=False))  # Shift+Tab

        agent.on_event(planning)
        try:
            return await _send(agent, "go", events)
        finally:
            await agent.close()

    assert asyncio.run(main()) == "parent done"
    assert not (tmp_path / "p" / "w.txt").exists()
    live = [e["update"]["child"] for e in events
            if e["type"] == "tool_update" and "child" in e["update"]]  # fmt: skip
    [denied] = [e for e in live if e["type"] == "tool_end" and e["name"] == "write"]
    assert denied["is_error"] and "plan mode" in denied["result"]["text"]


def test_a_restricted_sub_agents_own_sub_agents_get_no_tool_it_lacks(
    senv: SmithEnv, tmp_path: Path
) -> None:
    agents = senv.config_home / "agents"
    agents.mkdir(parents=True)
    (agents / "reader.md").write_text(
        "---\nname: reader\ndescription: Reads.\ntools: read, task\n---\n\nYou read.\n"
    )
    model = _script(tmp_path, [
        {"tool_calls": [_task("CHILD", "ta", agent="reader")]},
        {"tool_calls": [_task("GRANDCHILD", "tb")]},  # general: every tool, it would seem
        {"text": "grandchild done"},
        {"text": "child done"},
        {"text": "parent done"},
    ])  # fmt: skip

    async def main() -> str:
        agent = _configured(senv, tmp_path, model, "")
        try:
            return await _send(agent, "go", [])
        finally:
            await agent.close()

    assert asyncio.run(main()) == "parent done"
    sent = _requests(tmp_path)
    tools = [{t["name"] for t in q["tools"]} for q in sent]
    assert "bash" in tools[0] and tools[1] == {"read", "task"}
    assert tools[2] <= {"read", "task"}  # the grandchild's


class _Approver:
    """A frontend that approves every question for the session, keeping their texts."""

    name = "test"

    def __init__(self) -> None:
        from smith.ui import QUESTIONS, Capabilities

        self.capabilities = Capabilities(asks=frozenset(QUESTIONS))
        self.asked: list[str] = []

    def show(self, intent: Any) -> None:
        pass

    async def ask(self, intent: Any) -> Any:
        from smith.ui import Reply

        self.asked.append(str(intent.data.get("text")))
        return Reply("session")


def test_approving_for_the_session_holds_across_parent_and_sub_agents(
    senv: SmithEnv, tmp_path: Path
) -> None:
    def write(path: str) -> dict[str, Any]:
        return {"name": "write", "arguments": {"path": path, "content": "x"}, "id": f"w-{path}"}

    bash = {"name": "bash", "arguments": {"command": "true"}, "id": "b"}
    model = _script(tmp_path, [
        {"tool_calls": [_task("make c", "ta", description="make c")]},
        {"tool_calls": [write("c.txt")]},  # the child asks; approved for the session
        {"text": "c made"},
        {"tool_calls": [write("d.txt")]},  # the parent: not asked again
        {"tool_calls": [bash]},  # the parent asks; approved for the session
        {"tool_calls": [_task("run it", "tb")]},
        {"tool_calls": [bash]},  # the child: not asked again
        {"text": "ran"},
        {"text": "parent done"},
    ])  # fmt: skip
    front = _Approver()

    async def main() -> str:
        agent = _configured(
            senv, tmp_path, model, 'approval "untrusted"\napproval { allow "task"; }\n'
        )
        agent.runtime.attach(front)
        try:
            return await _send(agent, "go", [])
        finally:
            await agent.close()

    assert asyncio.run(main()) == "parent done"
    assert (tmp_path / "p" / "c.txt").exists() and (tmp_path / "p" / "d.txt").exists()
    assert len(front.asked) == 2, front.asked
    assert front.asked[0].startswith("[sub-agent general: make c] smith wants to write")
    assert not front.asked[1].startswith("[sub-agent")


# -- hooks tell a sub-agent from the user's agent ---------------------------------------------


def test_hooks_see_a_sub_agent_as_one_with_its_own_stop_and_no_session_or_prompt(
    senv: SmithEnv, tmp_path: Path
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    log = project / "log.sh"
    log.write_text("#!/bin/sh\ncat >> hooks.jsonl\necho >> hooks.jsonl\n")
    log.chmod(0o755)
    hooks = "".join(
        f'    hook "{on}" on="{on}" command="./log.sh"\n'
        for on in ("session-start", "prompt", "before-tool", "stop", "subagent-stop")
    )
    ls = {"name": "ls", "arguments": {"path": "."}, "id": "ls"}
    model = _script(tmp_path, [{"tool_calls": [_task("look", "ta", description="look")]},
                               {"tool_calls": [ls]}, {"text": "seen"},
                               {"text": "parent done"}])  # fmt: skip

    async def main() -> str:
        agent = _configured(senv, tmp_path, model, "hooks {\n" + hooks + "}\n")
        try:
            return await _send(agent, "go", [])
        finally:
            await agent.close()

    assert asyncio.run(main()) == "parent done"
    told = [json.loads(x) for x in (project / "hooks.jsonl").read_text().splitlines() if x]
    seen = [(t["event"], t.get("subagent"), t.get("tool_name")) for t in told]
    assert seen == [
        ("session-start", None, None),
        ("prompt", None, None),
        ("before-tool", None, "task"),
        ("before-tool", "general: look", "ls"),
        ("subagent-stop", "general: look", None),
        ("stop", None, None),
    ]
    assert told[4]["hook_event_name"] == "SubagentStop"


def test_a_claude_definitions_tools_smith_lacks_are_a_warning(tmp_path: Path) -> None:
    from smith.effects import Reach
    from smith.plugins.agents._definitions import Folder, discover

    folder = tmp_path / "agents"
    folder.mkdir()
    (folder / "web.md").write_text(
        "---\nname: web\ndescription: Fetches.\ntools: Read, WebFetch, Grep, WebSearch\n---\nGo.\n"
    )
    found = discover([Folder(str(folder), "project .claude", Reach.anywhere(), True)])
    assert found.definitions["web"].offered == ("read", "WebFetch", "grep", "WebSearch")
    [warning] = found.warnings
    assert "WebFetch, WebSearch" in warning and "web.md" in warning
