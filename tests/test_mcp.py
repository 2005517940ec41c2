"""`smith mcp` driven by the official MCP client over stdio, and its intent policy."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from tests.conftest import SmithEnv, smith_executable


def _project(senv: SmithEnv) -> Path:
    project = senv.make_project()
    (project / "README.md").write_text("# demo project\n")
    return project


def _serve(senv: SmithEnv, project: Path, *args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=smith_executable(), args=["mcp", *args], cwd=str(project), env=senv.env
    )


def _with_client(
    params: StdioServerParameters, body: Callable[[Client], Awaitable[None]], **options: Any
) -> None:
    async def main() -> None:
        with anyio.fail_after(60):
            async with Client(params, **options) as client:
                await body(client)

    anyio.run(main)


def _records(senv: SmithEnv, session_id: str) -> list[Any]:
    from smith.session import Session, SessionStore

    session = Session.load(SessionStore(str(senv.data_home)).find(session_id))
    return list(session.entries())


def test_the_official_client_lists_and_calls_tools_and_reads_a_session(senv: SmithEnv) -> None:
    from smith.effects import builtin_tools

    project = _project(senv)
    seen: dict[str, Any] = {}

    async def body(client: Client) -> None:
        listed = (await client.list_tools()).tools
        seen["tools"] = {t.name: t for t in listed}
        written = await client.call_tool("write", {"path": "out.txt", "content": "from mcp\n"})
        seen["write"] = written
        progress: list[tuple[float, str | None]] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append((value, message))

        command = "echo one; sleep 0.7; echo two; sleep 0.7; echo three"
        seen["bash"] = await client.call_tool(
            "bash", {"command": command}, progress_callback=on_progress
        )
        seen["progress"] = progress
        seen["invalid"] = await client.call_tool("read", {"no_path": 1})
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("wirte", {})
        seen["unknown"] = unknown.value
        sid = written.structured_content["session"] if written.structured_content else ""
        seen["resources"] = [str(r.uri) for r in (await client.list_resources()).resources]
        seen["jsonl"] = (await client.read_resource(f"smith://session/{sid}.jsonl")).contents
        seen["md"] = (await client.read_resource(f"smith://session/{sid}.md")).contents
        with pytest.raises(MCPError) as missing:
            await client.read_resource("smith://session/no-such-session.md")
        seen["missing"] = missing.value

    _with_client(_serve(senv, project), body)

    tools = builtin_tools()
    assert list(seen["tools"])[: len(tools)] == list(tools)
    # Then what the plugins declare (smith mcp starts none): agents' task, plan's todo.
    assert sorted(list(seen["tools"])[len(tools) :]) == ["task", "todo"]
    for name, spec in tools.items():
        assert seen["tools"][name].input_schema == spec.parameters
        assert seen["tools"][name].annotations.read_only_hint is (not spec.mutating)
    written = seen["write"]
    assert not written.is_error and written.content[0].text == "created out.txt (9 bytes)"
    assert (project / "out.txt").read_text() == "from mcp\n"
    info = written.structured_content
    assert info["mutation"] == "applied" and info["effect"].startswith("fx-")
    # The write is recorded durably in the session like any other effect.
    records = _records(senv, info["session"])
    intent = next(e for e in records if e.kind == "effect_intent" and e.pair == info["effect"])
    done = next(e for e in records if e.kind == "effect_completion" and e.pair == info["effect"])
    assert intent.content["name"] == "write" and intent.content["input"]["path"] == "out.txt"
    assert intent.content["cause"]["mcp"].startswith("mcp-")
    assert (done.content["outcome"], done.content["mutation"]) == ("ok", "applied")
    # Progress notifications while the command ran: output bytes so far, the last line.
    assert seen["bash"].content[0].text == "one\ntwo\nthree\n"
    values = [v for v, _ in seen["progress"]]
    assert values and values == sorted(set(values))
    assert all(m and m.startswith("bash: ") for _, m in seen["progress"])
    # Invalid arguments are a tool error the model can correct; nothing was recorded.
    assert (
        seen["invalid"].is_error and "invalid arguments for read" in seen["invalid"].content[0].text
    )
    assert seen["invalid"].structured_content["effect"] is None
    assert "there is no tool 'wirte'" in str(seen["unknown"]) and "write" in str(seen["unknown"])
    # Sessions are resources, as JSON lines and as markdown.
    sid = info["session"]
    assert f"smith://session/{sid}.jsonl" in seen["resources"]
    assert f"smith://session/{sid}.md" in seen["resources"]
    lines = [json.loads(x) for x in seen["jsonl"][0].text.splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["name"] == "mcp"
    assert any(x.get("pair") == info["effect"] and x["kind"] == "effect_completion" for x in lines)
    markdown = seen["md"][0].text
    assert (
        markdown.startswith(f"# mcp ({sid})") and "`write`" in markdown and "from mcp" in markdown
    )
    assert "no-such-session" in str(seen["missing"])


def _completion(senv: SmithEnv, session_id: str, effect_name: str) -> dict[str, Any] | None:
    records = _records(senv, session_id)
    intents = {
        e.pair for e in records if e.kind == "effect_intent" and e.content["name"] == effect_name
    }
    return next(
        (e.content for e in records if e.kind == "effect_completion" and e.pair in intents), None
    )


def test_a_cancelled_call_stops_its_tool_and_records_how_it_ended(senv: SmithEnv) -> None:
    project = _project(senv)
    got: dict[str, Any] = {}

    async def body(client: Client) -> None:
        got["ls"] = await client.call_tool("ls", {"path": "."})
        sid = got["ls"].structured_content["session"]
        started = anyio.Event()

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            started.set()

        with anyio.CancelScope() as scope:

            async def cancel_once_started() -> None:
                await started.wait()
                scope.cancel()

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(cancel_once_started)
                await client.call_tool(
                    "bash", {"command": "echo started; sleep 30"}, progress_callback=on_progress
                )
        with anyio.fail_after(20):  # the server records the end once the command stopped
            while _completion(senv, sid, "bash") is None:
                await anyio.sleep(0.05)
        got["after"] = await client.call_tool("read", {"path": "README.md"})

    # An older client: the initialize handshake of protocol versions before 2026-07-28.
    _with_client(_serve(senv, project, "--session", "tools by mcp"), body, mode="legacy")
    sid = got["ls"].structured_content["session"]
    from smith.session import Session, SessionStore

    assert Session.load(SessionStore(str(senv.data_home)).find(sid)).name == "tools by mcp"
    bash = _completion(senv, sid, "bash")
    assert bash is not None
    assert (bash["outcome"], bash["mutation"]) == ("cancelled", "unknown")
    assert not got["after"].is_error and "demo project" in got["after"].content[0].text
    intents = [e.content["name"] for e in _records(senv, sid) if e.kind == "effect_intent"]
    assert intents == ["ls", "bash", "read"]


def test_stdout_carries_only_the_protocol(senv: SmithEnv) -> None:
    project = _project(senv)
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "bash", "arguments": {"command": "echo to-stdout; echo to-err >&2"}},
        },
    ]
    proc = subprocess.Popen(
        [smith_executable(), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=project,
        env=senv.env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
    proc.stdin.flush()
    first, second = proc.stdout.readline(), proc.stdout.readline()  # the two replies
    out, err = proc.communicate(timeout=60)  # closing stdin ends the server
    assert proc.returncode == 0, err
    replies = [json.loads(line) for line in (first + second + out).splitlines()]
    assert [r.get("id") for r in replies] == [1, 2]
    assert all(r["jsonrpc"] == "2.0" for r in replies)
    assert replies[1]["result"]["content"][0]["text"] == "to-stdout\nto-err\n"
    assert "serving MCP on stdio" in err


class _Session:
    def __init__(self) -> None:
        self.sent: list[tuple[float, float | None, str | None]] = []

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        self.sent.append((progress, total, message))


class _Request:
    def __init__(self) -> None:
        self.session = _Session()


def test_intents_are_translated_or_degrade_by_their_policy(tmp_path: Path) -> None:
    from smith.effects import ToolContext, builtin_tools
    from smith.frontends.mcp._server import CANNOT_ASK, CallFrontend, SmithMcp
    from smith.runtime import SecretProxy, ToolHost
    from smith.session import Session
    from smith.ui import Intent, Reply, ask, deliver

    session = Session.create(str(tmp_path / "s.smith"), name="mcp", cwd=str(tmp_path))
    with session:
        context = ToolContext(root=str(tmp_path), cwd=str(tmp_path))
        host = ToolHost(session, builtin_tools(), context, SecretProxy(), history=None,
                        warn=lambda d: None)  # fmt: skip
        server = SmithMcp(
            host=host,
            home=str(tmp_path),
            project=str(tmp_path),
            version="0",
        )
        request = _Request()
        frontend = CallFrontend(server, request, "smith")  # type: ignore[arg-type]
        update = {
            "type": "tool_update",
            "tool_call_id": "x",
            "name": "bash",
            "update": {"output_bytes": 12, "tail": "a\nlast line\n"},
        }
        delivered: list[object] = []
        replies: list[Reply] = []

        async def show_all() -> None:
            def in_thread() -> None:  # as the tool's thread does
                delivered.append(deliver(frontend, update))  # a progress notification
                delivered.append(deliver(frontend, {"type": "turn_start", "turn": 1}))
                end = {"type": "message_end", "message_id": "m", "message": {}}
                delivered.append(deliver(frontend, end))

            await anyio.to_thread.run_sync(in_thread)
            question = Intent("request_confirm", {"text": "sure?", "choices": []})
            replies.append(await ask(frontend, question))

        anyio.run(show_all)
    assert request.session.sent == [(12.0, None, "bash: last line")]
    # Drop and persist intents send nothing (the session already holds what persists);
    # a question nobody here can answer is refused at once, never left hanging.
    assert delivered == ["shown", "drop", "persist"]
    assert replies == [Reply(None, CANNOT_ASK, "mcp")]


class _Stalled:
    """A client that never takes its progress notifications (its output pipe is full)."""

    request_id = 7

    def __init__(self) -> None:
        self.session = self

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        await anyio.sleep_forever()


def test_progress_nobody_takes_does_not_hold_up_the_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from smith.effects import ToolContext, ToolResult, ToolSpec
    from smith.frontends.mcp import _server
    from smith.runtime import SecretProxy, ToolHost
    from smith.session import Session

    monkeypatch.setattr(_server, "PROGRESS_WAIT", 0.2)

    def chatty(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
        for size in (10, 20, 30):
            ctx.progress({"output_bytes": size, "tail": f"line {size}"})
        return ToolResult("finished")

    spec = ToolSpec("chatty", "reports progress", {"type": "object"}, chatty, mutating=False)
    session = Session.create(str(tmp_path / "s.smith"), name="mcp", cwd=str(tmp_path))
    with session:
        context = ToolContext(root=str(tmp_path), cwd=str(tmp_path))
        host = ToolHost(session, {"chatty": spec}, context, SecretProxy(), history=None,
                        warn=lambda d: None)  # fmt: skip
        server = _server.SmithMcp(
            host=host,
            home=str(tmp_path),
            project=str(tmp_path),
            version="0",
        )

        async def main() -> Any:
            with anyio.fail_after(10):
                return await server.run(_Stalled(), spec, {})  # type: ignore[arg-type]

        outcome = anyio.run(main)
    assert outcome.outcome == "ok" and outcome.result.text == "finished"


def test_a_tool_that_crashes_is_a_tool_error_and_its_end_is_recorded(tmp_path: Path) -> None:
    """A tool failing unexpectedly is a tool execution error (isError, the text saying
    what failed) the caller's model can read, not a protocol error."""
    import mcp_types as types

    from smith.effects import ToolContext, ToolResult, ToolSpec
    from smith.frontends.mcp._server import SmithMcp
    from smith.runtime import SecretProxy, ToolHost
    from smith.session import Session

    def broken(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
        raise KeyError("surprise")

    spec = ToolSpec("broken", "always fails", {"type": "object"}, broken, mutating=True)
    session = Session.create(str(tmp_path / "s.smith"), name="mcp", cwd=str(tmp_path))
    with session:
        context = ToolContext(root=str(tmp_path), cwd=str(tmp_path))
        host = ToolHost(session, {"broken": spec}, context, SecretProxy(), history=None,
                        warn=lambda d: None)  # fmt: skip
        server = SmithMcp(
            host=host,
            home=str(tmp_path),
            project=str(tmp_path),
            version="0",
        )
        request = _Request()
        request.request_id = 3  # type: ignore[attr-defined]
        params = types.CallToolRequestParams(name="broken", arguments={})
        result = anyio.run(server.call_tool, request, params)  # type: ignore[arg-type]
        completions = [e.content for e in session.entries() if e.kind == "effect_completion"]
    assert result.is_error
    assert "broken" in result.content[0].text and "KeyError" in result.content[0].text
    assert [(c["outcome"], c["mutation"]) for c in completions] == [("error", "unknown")]


def test_sigterm_ends_the_server_while_the_client_keeps_its_end_open(senv: SmithEnv) -> None:
    """A supervisor's SIGTERM ends `smith mcp` even though the client has not closed
    stdin: the running tool is stopped and its end recorded first."""
    import signal

    project = _project(senv)
    proc = subprocess.Popen(
        [smith_executable(), "mcp", "--session", "ended"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=project,
        env=senv.env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        }
        call = {
            "name": "bash",
            "arguments": {"command": "echo started; sleep 30"},
            "_meta": {"progressToken": "p"},
        }
        for request in [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
        ]:
            proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
        assert json.loads(proc.stdout.readline())["method"] == "notifications/progress"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0  # stdin is still open
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    from smith.session import Session, SessionStore

    found = SessionStore(str(senv.data_home)).paths_for_project(str(project))
    ended = next(s for s in map(Session.load, found) if s.name == "ended")
    completions = [e.content for e in ended.entries() if e.kind == "effect_completion"]
    assert [c["outcome"] for c in completions] == ["cancelled"]
