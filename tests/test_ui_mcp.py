"""`smith mcp`'s policy for UI intents (docs/ui.md), through the official MCP client:
the tools of the test plugin (tests/ui_plugin.py) show a notice or a progress and ask a
confirmation or a question with choices while they run. The notice reaches the client
as a log message and the progress as a progress notification; a question of either kind
is refused at once (nobody here can answer), recorded in the session and told as a
warning, and the tool goes on with the refusal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from smith.frontends.mcp._server import CANNOT_ASK
from tests.conftest import SmithEnv, smith_executable
from tests.test_mcp import _records
from tests.ui_plugin import with_plugin


def test_a_tools_notice_is_a_log_message_and_its_question_is_refused(senv: SmithEnv) -> None:
    project = senv.make_project()
    params = StdioServerParameters(command=smith_executable(), args=["mcp"], cwd=str(project),
                                   env=with_plugin(senv.env))  # fmt: skip
    logged: list[Any] = []
    seen: dict[str, Any] = {}

    async def on_log(params: Any) -> None:
        logged.append((params.level, params.logger, params.data))

    async def main() -> None:
        with anyio.fail_after(60):
            async with Client(params, logging_callback=on_log, log_level="info") as client:
                seen["tools"] = [t.name for t in (await client.list_tools()).tools]
                seen["call"] = await client.call_tool("ask_user", {"question": "Delete it?"})

    anyio.run(main)
    assert "ask_user" in seen["tools"]  # a plugin's tool is served like a built-in
    result = seen["call"]
    assert not result.is_error
    assert result.content[0].text == f"confirmed=False refused={CANNOT_ASK}"
    assert ("info", "smith", {"origin": "asker", "text": "checking with you"}) in logged
    warning = next(data for level, _, data in logged if level == "warning")
    assert warning["origin"] == "asker"
    assert warning["text"] == f"refused the question 'Delete it?': {CANNOT_ASK}"
    # Recorded in the session of the call, beside the call's effect.
    records = _records(senv, result.structured_content["session"])
    (question,) = [e.content for e in records if e.kind == "question"]
    assert question["intent"] == "request_confirm" and question["text"] == "Delete it?"
    assert question["refused"] == CANNOT_ASK and question["frontend"] == "mcp"
    assert question["origin"] == "asker" and question["choice"] is None


def test_a_tools_progress_is_a_progress_notification_and_its_choice_is_refused(
    senv: SmithEnv, tmp_path: Path
) -> None:
    project = senv.make_project()
    params = StdioServerParameters(command=smith_executable(), args=["mcp"], cwd=str(project),
                                   env=with_plugin(senv.env))  # fmt: skip
    logged: list[Any] = []
    progress: list[tuple[float, float | None, str | None]] = []
    seen: dict[str, Any] = {}

    async def on_log(params: Any) -> None:
        logged.append((params.level, params.data))

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    errors = tmp_path / "mcp.err"

    async def main() -> None:
        with anyio.fail_after(60), errors.open("w") as errlog:
            transport = stdio_client(params, errlog=errlog)
            async with Client(transport, logging_callback=on_log, log_level="info") as client:
                seen["call"] = await client.call_tool(
                    "pick_way", {"question": "Left or right?"}, progress_callback=on_progress
                )

    anyio.run(main)
    result = seen["call"]
    assert not result.is_error
    assert result.content[0].text == f"choice=None refused={CANNOT_ASK}"
    assert progress == [(1.0, 2.0, "looking both ways")]  # the tool's own Progress
    warning = next(data for level, data in logged if level == "warning")
    assert warning == {"origin": "asker",
                       "text": f"refused the question 'Left or right?': {CANNOT_ASK}"}  # fmt: skip
    # As docs/ui.md's table says: logged on stderr, and recorded in the call's session.
    assert "refused request_choice from asker: 'Left or right?'" in errors.read_text()
    records = _records(senv, result.structured_content["session"])
    (question,) = [e.content for e in records if e.kind == "question"]
    assert question["intent"] == "request_choice" and question["text"] == "Left or right?"
    assert [c["key"] for c in question["choices"]] == ["left", "right"]
    assert question["refused"] == CANNOT_ASK and question["frontend"] == "mcp"
    assert question["origin"] == "asker" and question["choice"] is None
