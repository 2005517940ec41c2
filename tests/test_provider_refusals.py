"""A provider that refuses the key says how to fix it, whichever provider it is; a retry
notice says its delay as a person reads it. Against loopback servers, from the command
line and through each vendor's wire format."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from smith.plugins.providers import anthropic, google, openai, openai_compatible
from smith.plugins.providers._openai_chat import ChatCompletions
from smith.providers import End, Request
from smith.providers._http import HttpEngine, HttpLimits
from smith.providers._http_provider import HttpProvider
from smith.providers._model import ModelInfo
from smith.providers._wire import ProviderSettings, WireFormat
from tests.conftest import Result, SmithEnv
from tests.http_kit import LoopbackServer, Reply, json_reply, sse
from tests.openai_kit import GPT4O, GPT5, PLAIN

KEY = "sk-local-refused-0123456789"
SSE = {"content-type": "text/event-stream"}


def _project(senv: SmithEnv) -> Path:
    return senv.make_project()


def _eval(
    smith_process: Callable[..., Result], srv: LoopbackServer, project: Path, *args: str, **env: str
) -> Result:
    model = ("--model", "openai-compatible/bar", "--base-url", srv.url + "/v1")
    return smith_process("eval", *args, *model, "hi", cwd=project, env=env)


def _refusal(status: int) -> Reply:
    body = {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}
    return json_reply(status, body)


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_names_where_it_came_from_and_the_fix(
    senv: SmithEnv, smith_process: Callable[..., Result], status: int
) -> None:
    project = _project(senv)
    senv.write_user_config('providers { openai-compatible { api-key-env "LOCAL_KEY"; }; }\n')
    with LoopbackServer() as srv:
        srv.script([_refusal(status)])
        r = _eval(smith_process, srv, project, LOCAL_KEY=KEY)
    assert r.code == 1
    assert f"returned HTTP {status}: Incorrect API key provided (invalid_api_key)" in r.err
    assert "; the key from env LOCAL_KEY (named at " in r.err and "was refused" in r.err
    assert "`smith auth login openai-compatible` stores a key for it" in r.err
    assert "providers.openai-compatible.api-key-env names the environment variable" in r.err
    assert KEY not in r.err + r.out


def test_a_server_that_wants_a_key_when_none_was_sent(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = _project(senv)
    with LoopbackServer() as srv:
        srv.script([_refusal(401)])
        r = _eval(smith_process, srv, project)
    assert r.code == 1 and "returned HTTP 401" in r.err
    assert "smith sent openai-compatible no key: `smith auth login openai-compatible`" in r.err


def test_a_retry_notice_rounds_its_delay(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = _project(senv)
    choice = {"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}
    chunk = {"id": "c", "object": "chat.completion.chunk", "model": "bar", "choices": [choice]}
    answer = Reply(200, SSE, [sse(chunk), b"data: [DONE]\n\n"])
    busy = json_reply(500, {"error": {"message": "boom"}}, {"retry-after-ms": "123.456"})
    with LoopbackServer() as srv:
        srv.script([busy, answer])
        r = _eval(smith_process, srv, project)
        srv.script([busy, answer])
        j = _eval(smith_process, srv, project, "--json")
    assert r.code == 0, r.err
    assert re.search(r"smith: retrying in 0\.1 s: the OpenAI-compatible server at \S+ returned "
                     "HTTP 500: boom", r.err), r.err  # fmt: skip
    [retry] = [e for e in map(json.loads, j.out.splitlines()) if e["type"] == "retry"]
    assert retry["delay"] == 0.12


# -- every vendor's refusal ----------------------------------------------------------------

ANTHROPIC = ModelInfo("anthropic", "claude-sonnet-4-5", "anthropic-messages", 200_000, 64_000)
GEMINI = ModelInfo("google", "gemini-2.5-pro", "google-gemini", 1_048_576, 65_536)
VENDORS: list[tuple[str, Callable[[], WireFormat], ModelInfo, dict[str, Any], str]] = [
    ("openai", openai.Responses, GPT5,
     {"error": {"message": "Incorrect API key", "code": "invalid_api_key"}}, "OPENAI_API_KEY"),
    ("openai", ChatCompletions, GPT4O,
     {"error": {"message": "Incorrect API key", "code": "invalid_api_key"}}, "OPENAI_API_KEY"),
    ("openai-compatible", openai_compatible.wire, PLAIN, {"error": "bad key"}, "LAB_KEY"),
    ("anthropic", anthropic.Messages,
     ANTHROPIC, {"type": "error", "error": {"type": "authentication_error",
                                              "message": "invalid x-api-key"}},
     "ANTHROPIC_API_KEY"),
    ("google", google.Gemini, GEMINI,
     {"error": {"code": 403, "message": "API key not valid", "status": "PERMISSION_DENIED"}},
     "GEMINI_API_KEY"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "wire", "model", "body", "variable"),
    VENDORS,
    ids=["openai-responses", "openai-chat", "openai-compatible", "anthropic", "google"],
)
@pytest.mark.parametrize("status", [401, 403])
def test_every_provider_says_how_to_fix_a_refused_key(
    name: str,
    wire: Callable[[], WireFormat],
    model: ModelInfo,
    body: dict[str, Any],
    variable: str,
    status: int,
) -> None:
    with LoopbackServer() as srv:
        srv.script([json_reply(status, body)])
        settings = ProviderSettings(name, srv.url + "/v1", KEY, credential_source=f"env {variable}")
        provider = HttpProvider(name, wire(), model, settings, HttpEngine(HttpLimits()))
        request = Request(model.id, [{"role": "user", "content": [{"type": "text", "text": "hi"}]}])

        async def main() -> list[object]:
            return [e async for e in provider.stream(request)]

        events = asyncio.run(asyncio.wait_for(main(), 20))
    [end] = [e for e in events if isinstance(e, End)]
    assert end.kind == "auth" and not end.retryable
    error = end.error or ""
    assert f"HTTP {status}" in error and KEY not in error
    assert f"the key from env {variable} was refused" in error
    assert f"`smith auth login {name}` stores a key for it, or providers.{name}.api-key-env" in (
        error
    )
