"""Sub-agents as a tree (smith.plugins.agents, docs/agents.md): many at once and nested,
the tree's limits per prompt, what a child inherits from the parent while it runs (mode,
approvals, tools), and how its end reaches the parent. Run in-process (smith.Agent) with
the scripted provider, which answers parent and children in the order they ask."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from pathlib import Path
from typing import Any

import smith


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
