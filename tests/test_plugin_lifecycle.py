"""A plugin's lifecycle and its tools at run time (issue 28): `start` when a runtime is
built, in the background (a slow one never delays a prompt; its handlers are called once
it is ready; one that fails is listed failed with its diagnostic), `session_end` and
`stop` when the runtime closes (a stop past its deadline is abandoned, never hanging
close), and a tool set a plugin changes while the runtime runs: the next request offers
it, and the tool host (`smith tools`, MCP's tools/list) serves the same set."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import smith
from smith.effects import ToolContext, ToolResult, ToolSpec
from smith.sdk import Plugin, RuntimeView
from tests.runtime_kit import Fake, say


@pytest.fixture(autouse=True)
def _homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SMITH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SMITH_CONFIG_HOME", str(tmp_path / "config"))


def _agent(tmp_path: Path, fake: Fake, *plugins: Plugin) -> smith.Agent:
    return smith.Agent((fake, "m"), cwd=str(tmp_path), plugins=plugins, tools=[])


def _listed(agent: smith.Agent) -> dict[str, dict[str, Any]]:
    data = agent.runtime.submit({"op": "plugins"})
    assert isinstance(data, dict)
    return {p["name"]: p for p in data["plugins"]}


def _echo(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
    return ToolResult(str(args.get("text", "")))


ECHO = ToolSpec("echo", "say the text back", {"type": "object", "properties": {
    "text": {"type": "string"}}}, _echo)  # fmt: skip


def test_a_slow_start_does_not_delay_the_first_prompt(tmp_path: Path) -> None:
    """start sleeps 2 s: the prompt completes meanwhile, with the plugin listed as
    starting and its handlers not called; once it is ready they are."""
    seen: list[str] = []

    async def start(view: RuntimeView) -> None:
        await asyncio.sleep(2)

    def on_turn_start(event: dict[str, Any], view: RuntimeView) -> None:
        seen.append(event["type"])

    slow = Plugin("slow", start=start, handlers={"turn_start": on_turn_start})

    async def main() -> tuple[float, str, str]:
        async with _agent(tmp_path, Fake(say("one"), say("two")), slow) as agent:
            began = time.monotonic()
            await agent.send("hi")
            took = time.monotonic() - began
            during = _listed(agent)["slow"]["status"]
            while _listed(agent)["slow"]["status"] == "starting":
                await asyncio.sleep(0.05)
            await agent.send("again")
            return took, during, _listed(agent)["slow"]["status"]

    took, during, after = asyncio.run(main())
    assert during == "starting" and after == "ready"
    assert took < 1.5  # the prompt did not wait for the 2 s start
    assert seen == ["turn_start"]  # only the prompt after it was ready


def test_a_failing_start_is_listed_failed_with_its_diagnostic(tmp_path: Path) -> None:
    async def start(view: RuntimeView) -> None:
        raise ConnectionError("the server refused")

    broken = Plugin("broken", start=start)

    async def main() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        errors: list[dict[str, Any]] = []
        async with _agent(tmp_path, Fake(say("ok")), broken) as agent:
            agent.on_event(lambda ev: errors.append(ev) if ev["type"] == "error" else None)
            await agent.send("hi")
            return _listed(agent)["broken"], errors

    listed, errors = asyncio.run(main())
    assert listed["status"] == "failed"
    diagnostic = listed["diagnostic"]
    assert diagnostic["code"] == "plugin.start-failed"
    assert "ConnectionError: the server refused" in diagnostic["what"]
    assert diagnostic["fix"]
    assert [e["diagnostic"]["code"] for e in errors] == ["plugin.start-failed"]


def test_session_end_and_stop_are_called_on_close(tmp_path: Path) -> None:
    calls: list[str] = []

    async def start(view: RuntimeView) -> None:
        calls.append("start")

    async def stop() -> None:
        calls.append("stop")

    def on_end(event: dict[str, Any], view: RuntimeView) -> None:
        calls.append(f"session_end {event['session'] == view.session_id}")

    plugin = Plugin("tidy", start=start, stop=stop, handlers={"session_end": on_end})

    async def main() -> str:
        agent = _agent(tmp_path, Fake(say("ok")), plugin)
        await agent.send("hi")
        await agent.close()
        return str(_listed(agent)["tidy"]["status"])

    assert asyncio.run(main()) == "stopped"
    assert calls == ["start", "session_end True", "stop"]


def test_a_stop_past_its_deadline_does_not_hang_close(tmp_path: Path) -> None:
    async def stop() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            await asyncio.sleep(60)  # ignores the cancellation too

    stuck = Plugin("stuck", stop=stop)

    async def main() -> tuple[float, dict[str, Any]]:
        agent = _agent(tmp_path, Fake(say("ok")), stuck)
        agent.runtime.lifecycle.stop_deadline = 0.3
        await agent.send("hi")
        began = time.monotonic()
        await agent.close()
        return time.monotonic() - began, _listed(agent)["stuck"]

    # Its own handler, not caplog: another test may have stopped smith's propagation.
    logged: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: logged.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger("smith")
    logger.addHandler(handler)
    try:
        took, listed = asyncio.run(main())
    finally:
        logger.removeHandler(handler)
    assert took < 5
    assert listed["status"] == "stopped"
    assert listed["diagnostic"]["code"] == "plugin.stop-abandoned"
    assert "did not return within 0.3 s" in listed["diagnostic"]["what"]
    assert any("plugin 'stuck' did not stop cleanly" in line for line in logged), logged


def test_a_tool_added_at_run_time_reaches_the_next_request_tools_list_and_mcp(
    tmp_path: Path,
) -> None:
    """A caller's plugin adds a tool in a handler after the first turn: the next
    request offers it, the assembly's tool host (what `smith tools list` and `tools run`
    use) lists it and runs it, and MCP's tools/list includes it; removing it takes it
    out of all three."""
    import anyio

    from smith.frontends.mcp._server import SmithMcp

    ends: list[int] = []

    def on_agent_end(event: dict[str, Any], view: RuntimeView) -> None:
        ends.append(1)
        if len(ends) <= 2:  # added after the first prompt, removed after the second
            view.set_tools([ECHO] if len(ends) == 1 else [])

    adder = Plugin("adder", handlers={"agent_end": on_agent_end})
    fake = Fake(say("one"), say("two"), say("three"))

    def offered(request: Any) -> list[object]:
        return [t["name"] for t in request.tools]

    async def mcp_names(agent: smith.Agent) -> list[str]:
        host = agent.assembly.tool_host(agent.session)
        server = SmithMcp(host=host, home=str(tmp_path), project=str(tmp_path), version="0")
        listed = await server.list_tools(None, None)  # type: ignore[arg-type]
        return [t.name for t in listed.tools]

    async def main() -> tuple[Mapping[str, ToolSpec], list[str], list[str], str, list[str]]:
        async with _agent(tmp_path, fake, adder) as agent:
            await agent.send("first")
            host_tools, origins = agent.assembly.host_tools()
            names = await mcp_names(agent)
            host = agent.assembly.tool_host(agent.session)
            ran = await anyio.to_thread.run_sync(
                lambda: host.run(host.tools["echo"], {"text": "x"}, review=None)
            )
            await agent.send("second")  # offers echo; its agent_end removes it again
            await agent.send("third")
            after = await mcp_names(agent)
            return host_tools, names, [str(origins["echo"])], ran.result.text, after

    host_tools, names, origin, ran, after = asyncio.run(main())
    assert "echo" not in offered(fake.requests[0])
    assert "echo" in offered(fake.requests[1])
    assert "echo" not in offered(fake.requests[2])  # removed at the second agent_end
    assert "echo" in host_tools and origin == ["adder"] and "echo" in names
    assert ran == "x"
    assert "echo" not in after


def test_a_tool_set_at_start_is_offered_once_ready(tmp_path: Path) -> None:
    """A plugin that connects in start and then offers its tools (an MCP client's way):
    the tools reach the first request after it is ready."""
    ready = asyncio.Event()

    async def start(view: RuntimeView) -> None:
        await asyncio.sleep(0.2)
        view.set_tools([ECHO])
        ready.set()

    fake = Fake(say("one"), say("two"))
    remote = Plugin("remote", start=start)

    async def main() -> list[int]:
        async with _agent(tmp_path, fake, remote) as agent:
            await agent.send("first")
            await ready.wait()
            gen = agent.runtime.generation
            await agent.send("second")
            return [gen, agent.runtime.generation]

    before, after = asyncio.run(main())
    assert "echo" not in [t["name"] for t in fake.requests[0].tools]
    assert "echo" in [t["name"] for t in fake.requests[1].tools]
    assert after > before  # published as a new generation


def test_a_tool_set_cannot_take_another_plugins_tool_name(tmp_path: Path) -> None:
    from smith.runtime._toolsets import ToolSets

    sets = ToolSets([Plugin("a", tools=[ECHO]), Plugin("b")])
    with pytest.raises(ValueError, match="the a plugin offers a tool named echo"):
        sets.set("b", [ECHO])
    with pytest.raises(ValueError, match="two tools of one name"):
        sets.set("a", [ECHO, ECHO])
    sets.set("a", [])
    sets.set("b", [ECHO])
    assert sets.origins() == {"echo": "b"}
    # Nor a built-in tool's: it would be shadowed by it everywhere, silently.
    shadowing = ToolSets([Plugin("c")], builtin=["echo", "read"])
    with pytest.raises(ValueError, match="smith's own echo tool has that name"):
        shadowing.set("c", [ECHO])


def test_start_reads_the_configuration_and_the_tools_context(tmp_path: Path) -> None:
    """A plugin's start reads the resolved configuration (an open section the user wrote
    in named blocks, as the MCP client and hooks do) and where the tools run."""
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.kdl").write_text(
        'mcp {\n    server "files" command="python3" args="srv.py"\n'
        '    server "web" { url "http://127.0.0.1:1/mcp"; args "a" "b"; }\n}\n'
    )
    seen: dict[str, object] = {}

    async def start(view: RuntimeView) -> None:
        assert view.config is not None and view.context is not None
        seen.update({k: s.value for k, s in view.config.subtree("mcp").items()})
        seen["root"] = view.context.root

    fake = Fake(say("one"))

    async def main() -> None:
        async with _agent(tmp_path, fake, Plugin("reader", start=start)) as agent:
            await agent.send("first")

    asyncio.run(main())
    assert seen == {
        "server.files.command": "python3",
        "server.files.args": "srv.py",
        "server.web.url": "http://127.0.0.1:1/mcp",
        "server.web.args": ["a", "b"],
        "root": str(tmp_path),
    }
