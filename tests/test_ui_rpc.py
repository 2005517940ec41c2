"""`smith rpc`'s policy for UI intents (docs/ui.md, docs/rpc.md), driven as a client
drives it (tests/rpc_kit.py) with the test plugin (tests/ui_plugin.py): a plugin's
notice, status and progress arrive as `ui` events; its question is a `ui.ask` request
from the server, which the client answers (or refuses) with a response on stdin; a
question the client leaves unanswered is refused after its timeout and withdrawn with
`ui.cancel`."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from smith.frontends.rpc._protocol import Response, parse_line
from smith.frontends.rpc._ui import RpcFrontend
from smith.ui import Intent, Reply, ask
from tests.conftest import SmithEnv
from tests.rpc_kit import Rpc, script
from tests.ui_plugin import with_plugin


def _asked(rpc: Rpc) -> dict[str, Any]:
    record: dict[str, Any] = rpc.pump(lambda r: isinstance(r, dict) and r.get("method") == "ui.ask")
    return record


def _notices(rpc: Rpc) -> list[str]:
    return [e["text"] for e in rpc.events if e["type"] == "ui" and e["intent"] == "notify"]


def _respond(rpc: Rpc, id: str, **answer: Any) -> None:
    rpc.send_raw(json.dumps({"jsonrpc": "2.0", "id": id, **answer}) + "\n")


def test_a_question_is_a_request_to_the_client_and_its_answer_is_awaited(
    senv: SmithEnv,
) -> None:
    project = senv.make_project()
    model = script(senv, [{"text": "Done."}, {"text": "Again."}])
    rpc = Rpc(senv, project, "--model", model, env=with_plugin(senv.env))
    try:
        assert rpc.call("prompt", {"text": "go"})["status"] == "started"
        request = _asked(rpc)
        assert request["jsonrpc"] == "2.0" and request["id"] == "smith-1"
        params = request["params"]
        assert params["intent"] == "request_choice" and params["text"] == "Which way?"
        assert params["origin"] == "asker" and params["timeout"] == 300
        assert params["choices"] == [{"key": "left", "label": "Go left"},
                                     {"key": "right", "label": "Go right"}]  # fmt: skip
        ui = [e for e in rpc.events if e["type"] == "ui"]
        assert [(e["intent"], e["text"] if "text" in e else e["label"]) for e in ui] == [
            ("notify", "starting"), ("status", "asker is listening"), ("progress", "warming up"),
        ]  # fmt: skip
        _respond(rpc, "smith-1", result={"choice": "right"})
        rpc.call("wait_idle")
        answered = rpc.event("intent_answered")
        assert answered["choice"] == "right" and answered["frontend"] == "rpc"
        assert answered["ask_id"] == params["ask_id"]
        assert _notices(rpc)[-1] == "chose right (rpc)"
        # The client refuses the next one: the plugin is told why.
        rpc.call("prompt", {"text": "again"})
        _respond(rpc, _asked(rpc)["id"], result={"refused": "not now"})
        rpc.call("wait_idle")
        refused = rpc.event("intent_refused")
        assert refused["reason"] == "not now" and refused["frontend"] == "rpc"
        assert _notices(rpc)[-1] == "refused by rpc: not now"
        # A response is never answered: the only records with these ids are the requests.
        ids = [r.get("id") for r in rpc.records if isinstance(r, dict)]
        assert ids.count("smith-1") == 1 and ids.count("smith-2") == 1
    finally:
        code, err = rpc.close()
    assert code == 0, err


def test_a_response_line_is_told_apart_from_a_request() -> None:
    line = b'{"jsonrpc": "2.0", "id": "smith-3", "result": {"choice": "a"}}'
    (items, batch, _) = parse_line(line, 1)  # type: ignore[misc]
    assert items == [Response("smith-3", {"choice": "a"}, None)] and not batch
    errored = parse_line(b'{"jsonrpc": "2.0", "id": "smith-4", "error": {"code": 1}}', 2)
    assert errored[0] == [Response("smith-4", None, {"code": 1})]  # type: ignore[index]


def _choice() -> Intent:
    choices = [{"key": "a", "label": "A"}, {"key": "b", "label": "B"}]
    return Intent("request_choice", {"ask_id": "q", "text": "Pick", "choices": choices,
                                     "timeout": None})  # fmt: skip


def test_an_unanswered_question_is_refused_and_withdrawn_and_a_late_answer_ignored() -> None:
    sent: list[Any] = []
    frontend = RpcFrontend(sent.append, timeout=0.05)

    async def main() -> tuple[Reply, Reply, Reply]:
        late = await ask(frontend, _choice())
        frontend.answer(Response("smith-1", {"choice": "a"}))  # too late: ignored
        asking = asyncio.ensure_future(ask(frontend, _choice()))
        await asyncio.sleep(0.01)
        frontend.answer(Response("smith-2", {"choice": "c"}))  # no such choice
        odd = await asking
        asking = asyncio.ensure_future(ask(frontend, _choice()))
        await asyncio.sleep(0.01)
        frontend.answer(Response("smith-3", None, {"code": -1, "message": "no user here"}))
        return late, odd, await asking

    late, odd, errored = asyncio.run(main())
    assert late == Reply(None, "the client did not answer within 0.05 s", "rpc")
    assert [m.get("method") for m in sent] == ["ui.ask", "ui.cancel", "ui.ask", "ui.ask"]
    assert sent[1] == {"jsonrpc": "2.0", "method": "ui.cancel", "params": {"id": "smith-1"}}
    assert odd == Reply(None, "the answer 'c' is not one of a, b", "rpc")
    assert errored == Reply(None, "the client answered with an error: no user here", "rpc")


def test_a_refusal_from_the_client_is_recorded_and_said_with_secrets_redacted(
    senv: SmithEnv,
) -> None:
    """What a client sends back is outside text: a registered secret in its refusal
    reason never reaches the session or the event stream in clear."""
    secret = "s3cr3t-refusal-value-for-the-test"
    senv.write_user_config('secrets {\n    env "UI_SECRET"\n}\n')
    project = senv.make_project()
    model = script(senv, [{"text": "Done."}])
    env = {**with_plugin(senv.env), "UI_SECRET": secret}
    rpc = Rpc(senv, project, "--model", model, env=env)
    try:
        rpc.call("prompt", {"text": "go"})
        _respond(rpc, _asked(rpc)["id"], result={"refused": f"no: {secret}"})
        rpc.call("wait_idle")
        assert rpc.event("intent_refused")["reason"] == "no: {{secret:UI_SECRET}}"
    finally:
        code, err = rpc.close()
    assert code == 0, err
    records = b"".join(p.read_bytes() for p in senv.data_home.rglob("*.smith"))
    assert secret.encode() not in records and b"{{secret:UI_SECRET}}" in records


def test_a_response_with_neither_result_nor_error_refuses_the_question() -> None:
    (items, _, _) = parse_line(b'{"jsonrpc": "2.0", "id": "smith-5"}', 1)  # type: ignore[misc]
    (response,) = items
    assert isinstance(response, Response) and response.error is not None
    assert "neither result nor error" in response.error["message"]
