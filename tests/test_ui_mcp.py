"""`smith mcp`'s policy for UI intents (docs/ui.md), through the official MCP client:
a tool of the test plugin (tests/ui_plugin.py) shows a notice and asks a confirmation
while it runs. The notice reaches the client as a log message; the question is refused
at once (nobody here can answer), recorded in the session and told as a warning, and
the tool goes on with the refusal."""

from __future__ import annotations

from typing import Any

import anyio
from mcp import Client, StdioServerParameters

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
