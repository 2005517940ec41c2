"""An MCP server built on the official SDK's MCPServer, for the MCP client's tests:
written into a test's directory and started by smith (stdio) or by the test (HTTP).

It marks what happens in files under its MARKS directory (an environment variable, or
the directory the script is in): `starts` (a line per start), `listed` (tools listed),
`slow-started` and `slow-cancelled` (the slow tool ran, and was cancelled), `crashes`.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SERVER = r'''
import asyncio, os, pathlib, sys, time
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

MARKS = pathlib.Path(os.environ.get("MARKS") or pathlib.Path(__file__).parent)
with open(MARKS / "starts", "a") as f:
    f.write("start\n")
time.sleep(float(os.environ.get("SLOW_START", "0")))


class Server(MCPServer):
    async def list_tools(self, *a, **k):
        tools = await super().list_tools(*a, **k)
        (MARKS / "listed").write_text("listed")
        return tools


mcp = Server("kit")


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def echo(text: str) -> str:
    """Echo the text back, prefixed with echo:."""
    return "echo:" + text


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
def remove_everything() -> str:
    """Pretend to remove everything."""
    return "removed"


@mcp.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    (MARKS / "slow-started").write_text("started")
    try:
        await asyncio.sleep(seconds)
    except BaseException:
        (MARKS / "slow-cancelled").write_text("cancelled")
        raise
    return "slept"


@mcp.tool()
def crash() -> str:
    """End the server mid-call."""
    with open(MARKS / "crashes", "a") as f:
        f.write("crash\n")
    os._exit(3)


@mcp.tool()
def fail() -> str:
    """Raise an error."""
    raise ValueError("it went wrong on purpose")


@mcp.resource("notes://readme")
def readme() -> str:
    """The kit's note."""
    return "RESOURCE-CONTENT-4242"


@mcp.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Say hello to {name}"


if len(sys.argv) > 2 and sys.argv[1] == "http":
    mcp.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
else:
    mcp.run()
'''


def write_server(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "kit_server.py"
    path.write_text(SERVER)
    return path


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


def start_http(script: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    """The kit over Streamable HTTP on a free loopback port; (process, its /mcp URL)."""
    port = free_port()
    with open(script.parent / "http.log", "wb") as log:  # the process has its own copy
        argv = [sys.executable, str(script), "http", str(port)]
        proc = subprocess.Popen(
            argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError((script.parent / "http.log").read_text())
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the kit's HTTP server did not listen within 30 s")


def wait_call(marks: Path, name: str = "listed", call_id: str = "call_wait") -> dict[str, Any]:
    """A bash call that returns once the kit wrote `name` in `marks` (then 1 s more)."""
    command = (
        f"for i in $(seq 200); do [ -e {marks / name} ] && break; sleep 0.1; done; sleep 1; "
        "echo waited"
    )
    return {"name": "bash", "arguments": {"command": command}, "id": call_id}


def script(directory: Path, responses: list[dict[str, Any]]) -> tuple[str, Path]:
    log = directory / "requests.jsonl"
    path = directory / "script.json"
    path.write_text(json.dumps({"responses": responses, "requests_log": str(log)}))
    return f"scripted:{path}", log


def requests(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def tool_names(request: dict[str, Any]) -> list[str]:
    return [str(t.get("name")) for t in request.get("tools") or []]


def events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def tool_end(evs: list[dict[str, Any]], call_id: str) -> dict[str, Any]:
    return next(e for e in evs if e.get("type") == "tool_end" and e.get("tool_call_id") == call_id)
