"""`import smith` as a library: the exported names, Agent, @smith.tool, and the example in
docs/library.md run as written."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import smith
from tests.runtime_kit import run

ROOT = Path(__file__).resolve().parents[1]


def test_the_public_names_are_exactly_these() -> None:
    assert sorted(smith.__all__) == [
        "Agent", "AgentStopped", "ContextPolicy", "Image", "Limits", "SecretProxy", "ToolContext",
        "ToolError", "ToolResult", "ToolSpec", "__version__", "builtin_tools", "text_of",
        "tool",
    ]  # fmt: skip
    for name in smith.__all__:
        assert getattr(smith, name) is not None
    with pytest.raises(AttributeError):
        smith.nothing_here  # noqa: B018


def _script(tmp_path: Path, responses: list[dict[str, Any]]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"responses": responses}))
    return f"scripted:{path}"


def test_send_returns_the_final_message_and_events_can_be_observed(tmp_path: Path) -> None:
    threads: list[str] = []
    loop_thread: list[str] = []

    @smith.tool
    def shout(text: str) -> str:
        """Say it louder."""
        threads.append(threading.current_thread().name)
        return text.upper()

    @smith.tool
    async def whisper(text: str) -> str:
        """Say it quietly."""
        loop_thread.append(threading.current_thread().name)
        return text.lower()

    model = _script(
        tmp_path,
        [
            {"tool_calls": [{"name": "shout", "arguments": {"text": "hi"}},
                            {"name": "whisper", "arguments": {"text": "HO"}}]},
            {"text": "HI and ho"},
        ],
    )  # fmt: skip

    async def main() -> tuple[dict[str, Any], list[str]]:
        seen: list[str] = []
        agent = smith.Agent(model, tools=[shout, whisper], store=str(tmp_path / "store"),
                            cwd=str(tmp_path))  # fmt: skip

        async def observe() -> None:
            async for event in agent.events():
                seen.append(event["type"])

        watcher = asyncio.ensure_future(observe())
        await asyncio.sleep(0)
        message = await agent.send("make noise")
        await agent.close()
        await watcher
        return message, seen

    message, seen = run(main)
    assert smith.text_of(message) == "HI and ho"
    assert seen.count("tool_end") == 2 and seen[-1] == "settled"
    assert threads and threads[0] != threading.main_thread().name  # off the event loop
    assert loop_thread == [threading.main_thread().name]  # async tools run on the loop
    sessions = list((tmp_path / "store" / "sessions").rglob("*.smith"))
    assert len(sessions) == 1


def test_send_raises_when_the_agent_stops_on_an_error(tmp_path: Path) -> None:
    model = _script(tmp_path, [{"stop": "error", "error": "the model broke"}])

    async def main() -> None:
        async with smith.Agent(model, store=str(tmp_path), cwd=str(tmp_path)) as agent:
            with pytest.raises(smith.AgentStopped, match="the model broke") as caught:
                await agent.send("hi")
            assert caught.value.stop == "error"

    run(main)


def test_a_second_send_while_busy_is_refused(tmp_path: Path) -> None:
    model = _script(tmp_path, [{"text": "slow", "delay_ms": 50}, {"text": "x"}])

    async def main() -> None:
        async with smith.Agent(model, store=str(tmp_path), cwd=str(tmp_path)) as agent:
            first = asyncio.ensure_future(agent.send("one"))
            await asyncio.sleep(0)
            with pytest.raises(smith.diagnostics.SmithError, match="still working"):
                await agent.send("two")
            assert smith.text_of(await first) == "slow"

    run(main)


def test_the_example_in_docs_library_md_runs_as_written(tmp_path: Path) -> None:
    doc = (ROOT / "docs" / "library.md").read_text()
    code = re.search(r"```python\n(.*?)```", doc, re.S)
    printed = re.findall(r"It prints:\n\n```\n(.*?)```", doc, re.S)
    assert code and printed
    (tmp_path / "example.py").write_text(code.group(1))
    env = {**os.environ, "SMITH_HOME": str(tmp_path / "home")}
    r = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout == printed[0]


def test_an_agent_over_a_provider_object_expands_templates_and_says_config_warnings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.runtime_kit import Fake, say

    monkeypatch.setenv("SMITH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SMITH_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("SMITH_BOGUS", "1")  # not a setting: the command would warn
    fake = Fake(say("written"))

    async def main() -> None:
        async with smith.Agent((fake, "m"), cwd=str(tmp_path)) as agent:
            await agent.send("/init stress the tests")

    import logging

    seen: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("smith").addHandler(handler)  # (another test may stop propagation)
    try:
        run(main)
    finally:
        logging.getLogger("smith").removeHandler(handler)
    sent = fake.requests[0].messages[-1]["content"][0]["text"]  # type: ignore[index]
    assert sent.startswith("Write an AGENTS.md") and "stress the tests" in sent
    assert any("SMITH_BOGUS" in message for message in seen)
