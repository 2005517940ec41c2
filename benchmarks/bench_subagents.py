"""What running a prompt as a sub-agent costs (plugins/agents, docs/agents.md): the same
one-response prompt run directly (an agent's `send`, a scripted model) and as a `task`
call's child (the call's wall time, tool_start to tool_end, in a parent whose model
delegates it), in process, runs interleaved, medians. The child's overhead is the task
call's time less the direct run's: the branch, the child runtime's assembly, its
session_start, its events reported as the call's progress, closing it.

    python benchmarks/bench_subagents.py
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RUNS = 15
ANSWER = {"text": "the answer, in a few words", "stop": "end"}


def _script(root: str, name: str, responses: list[dict[str, Any]]) -> str:
    path = os.path.join(root, f"{name}.json")
    with open(path, "w") as f:
        json.dump({"responses": responses}, f)
    return f"scripted:{path}"


async def _direct(root: str, project: str) -> float:
    import smith

    model = _script(root, "direct", [ANSWER])
    agent = smith.Agent(model, store=os.path.join(root, "store"), cwd=project)
    start = time.perf_counter()
    await agent.send("say the answer")
    took = time.perf_counter() - start
    await agent.close()
    return took


async def _child(root: str, project: str) -> float:
    import smith

    call = {"name": "task", "arguments": {"prompt": "say the answer"}, "id": "t"}
    model = _script(root, "parent", [{"tool_calls": [call]}, ANSWER, {"text": "done"}])
    agent = smith.Agent(model, store=os.path.join(root, "store"), cwd=project)
    marks: dict[str, float] = {}

    def watch(event: dict[str, Any]) -> None:
        if event["type"] in ("tool_start", "tool_end") and event.get("tool_call_id") == "t":
            marks[event["type"]] = time.perf_counter()

    agent.on_event(watch)
    await agent.send("delegate it")
    await agent.close()
    return marks["tool_end"] - marks["tool_start"]


def main() -> None:
    root = tempfile.mkdtemp(prefix="smith-bench-subagents-")
    project = os.path.join(root, "project")
    os.makedirs(os.path.join(project, ".git"))
    os.environ.update(SMITH_CONFIG_HOME=os.path.join(root, "config"),
                      SMITH_HOME=os.path.join(root, "data"))  # fmt: skip
    direct, child = [], []
    asyncio.run(_direct(root, project))  # imports and caches warm
    asyncio.run(_child(root, project))
    for _ in range(RUNS):
        direct.append(asyncio.run(_direct(root, project)))
        child.append(asyncio.run(_child(root, project)))
    d, c = statistics.median(direct) * 1000, statistics.median(child) * 1000
    print(f"direct prompt: {d:.1f} ms  as a task call's child: {c:.1f} ms  "
          f"overhead: {c - d:+.1f} ms (medians of {RUNS}, interleaved)")  # fmt: skip


if __name__ == "__main__":
    main()
