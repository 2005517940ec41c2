"""What a call of an MCP server's tool costs over a built-in tool call (plugins/mcp): a
runtime, in process, with a scripted model alternating CALLS calls of an MCPServer's
`echo` tool (a stdio server in the sandbox, as configured by default) and CALLS built-in
`ls` calls; each call's time from its tool_start event to its tool_end (the tool runner's
whole path: review, journal, the call, its result), medians over the runs. The server is
connected before the prompt, so its start is not counted.

    python benchmarks/bench_mcp.py
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CALLS = 20  # calls of each tool per run
SERVER = '''
from mcp.server.mcpserver import MCPServer
mcp = MCPServer("bench")

@mcp.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return "echo:" + text

mcp.run()
'''


def _world() -> tuple[str, dict[str, str]]:
    root = tempfile.mkdtemp(prefix="smith-bench-mcp-")
    os.makedirs(os.path.join(root, "project", ".git"))
    with open(os.path.join(root, "project", "srv.py"), "w") as f:
        f.write(SERVER)
    calls = []
    for i in range(CALLS):
        calls.append({"tool_calls": [{"name": "mcp_b__echo", "arguments": {"text": "hi"},
                                      "id": f"m{i}"}]})  # fmt: skip
        calls.append({"tool_calls": [{"name": "ls", "arguments": {"path": "."}, "id": f"l{i}"}]})
    with open(os.path.join(root, "script.json"), "w") as f:
        json.dump({"responses": [*calls, {"text": "done"}]}, f)
    config = os.path.join(root, "config")
    os.makedirs(config)
    with open(os.path.join(config, "config.kdl"), "w") as f:
        f.write(f'mcp {{ server "b" command="{sys.executable}" args="srv.py"; }}\n')
    env = {"HOME": os.path.join(root, "home"), "SMITH_CONFIG_HOME": config,
           "SMITH_HOME": os.path.join(root, "data"),
           "PATH": os.environ.get("PATH", "/usr/bin:/bin")}  # fmt: skip
    return root, env


def _run(root: str, env: dict[str, str], n: int) -> tuple[list[float], list[float]]:
    """ms of each echo call and each ls call of one prompt."""
    from smith.config import resolve
    from smith.effects import Sandbox, ToolContext, builtin_tools
    from smith.plugins.mcp import running
    from smith.runtime import Limits, Runtime
    from smith.sdk import resolve_plugins
    from smith.session import Session

    project = os.path.join(root, "project")
    config = resolve(env=env, cwd=project)
    plugins = resolve_plugins(config)

    async def main() -> tuple[list[float], list[float]]:
        session = Session.create(os.path.join(root, f"session-{n}.jsonl"), cwd=project)
        ctx = ToolContext(root=project, cwd=project, session=session,
                          sandbox=Sandbox.from_config(config))  # fmt: skip
        rt = Runtime(session, model=f"scripted:{root}/script.json",
                     tools=list(builtin_tools().values()), context=ctx, config=config,
                     plugin_list=plugins, limits=Limits(retry_delay=0.001))  # fmt: skip
        started: dict[str, float] = {}
        took: dict[str, float] = {}

        def seen(event: dict[str, object]) -> None:
            call = str(event.get("tool_call_id"))
            if event.get("type") == "tool_start":
                started[call] = time.perf_counter()
            elif event.get("type") == "tool_end" and call in started:
                took[call] = (time.perf_counter() - started[call]) * 1e3

        rt.on_event(seen)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            managers = running()
            if managers and all(c.state == "ready" for c in managers[-1].connections.values()):
                break
            await asyncio.sleep(0.05)
        rt.prompt("go")
        await rt.wait_idle()
        await rt.close()
        session.close()
        return ([v for k, v in took.items() if k.startswith("m")],
                [v for k, v in took.items() if k.startswith("l")])  # fmt: skip

    return asyncio.run(main())


def figures(runs: int = 5) -> dict[str, float]:
    root, env = _world()
    try:
        mcp: list[float] = []
        ls: list[float] = []
        _run(root, env, 0)  # warm: imports, the sandbox probe
        for n in range(1, runs + 1):
            m, b = _run(root, env, n)
            mcp += m
            ls += b
        return {"mcp_call_ms": statistics.median(mcp), "ls_call_ms": statistics.median(ls),
                "overhead_ms": statistics.median(mcp) - statistics.median(ls),
                "calls": float(len(mcp))}  # fmt: skip
    finally:
        shutil.rmtree(root, ignore_errors=True)


def line(f: dict[str, float]) -> str:
    return (
        f"mcp call         {f['mcp_call_ms']:.2f} ms per MCP echo call (stdio, sandboxed) "
        f"vs {f['ls_call_ms']:.2f} ms per built-in ls: {f['overhead_ms']:.2f} ms over"
    )


class McpCallCost:
    timeout = 600
    number = 1
    repeat = 1

    def setup(self) -> None:
        self.found = figures(runs=3)

    def track_overhead_ms(self) -> float:
        return self.found["overhead_ms"]

    track_overhead_ms.unit = "ms"  # type: ignore[attr-defined]


if __name__ == "__main__":
    print(line(figures()))
