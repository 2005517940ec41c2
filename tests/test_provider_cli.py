"""Real providers from the command line: `smith eval --model openai-compatible/NAME
--base-url URL` against a loopback server speaking streamed Chat Completions, a group
failing over on a rate limit, and the diagnostics a user sees when a provider is
unreachable or unconfigured."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import Result, SmithEnv
from tests.http_kit import LoopbackServer, Recorded, Reply, sse

KEY = "sk-local-5e6f7a8b9c0d"
SSE = {"content-type": "text/event-stream"}


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return sse(
        {
            "id": "c1",
            "object": "chat.completion.chunk",
            "model": "bar",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
    )


def _turns(request: Recorded) -> Reply:
    """A tool call first; once the tool result is in the request, the answer."""
    messages = request.json["messages"]
    if not any(m["role"] == "tool" for m in messages):
        call = {"index": 0, "id": "call_1", "type": "function"}
        return Reply(
            200,
            SSE,
            [
                _chunk(
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                **call,
                                "function": {"name": "read", "arguments": '{"path": "src/app.py"}'},
                            }
                        ],
                    }
                ),
                _chunk({}, "tool_calls"),
                sse({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 9}}),
                b"data: [DONE]\n\n",
            ],
        )
    return Reply(
        200,
        SSE,
        [
            _chunk({"content": "It returns "}),
            _chunk({"content": "hello."}),
            _chunk({}, "stop"),
            b"data: [DONE]\n\n",
        ],
    )


def _project(senv: SmithEnv) -> Path:
    project = senv.make_project()
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("def app():\n    return 'hello'\n")
    return project


def test_a_tool_turn_against_an_openai_compatible_server(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = _project(senv)
    # A server's key is the one configured for it (never OpenAI's OPENAI_API_KEY).
    senv.write_user_config('providers { openai-compatible { api-key-env "LOCAL_KEY"; }; }\n')
    with LoopbackServer() as srv:
        srv.script(_turns)
        r = smith_process(
            "eval",
            "--json",
            "--model",
            "openai-compatible/bar",
            "--base-url",
            srv.url + "/v1",
            "what does app.py return?",
            cwd=project,
            env={"LOCAL_KEY": KEY, "OPENAI_API_KEY": "sk-not-for-this-server-0123"},
        )
        requests = list(srv.requests)
    assert r.code == 0, r.err
    result = json.loads(r.out.splitlines()[-1])
    assert result["text"] == "It returns hello." and result["stop"] == "end"
    assert [q.target for q in requests] == ["/v1/chat/completions"] * 2
    assert requests[0].headers["authorization"] == f"Bearer {KEY}"
    tool = [m for m in requests[1].json["messages"] if m["role"] == "tool"]
    assert tool[0]["tool_call_id"] == "call_1" and "hello" in tool[0]["content"]
    stored = b"".join(p.read_bytes() for p in senv.data_home.rglob("*") if p.is_file())
    assert KEY.encode() not in stored and KEY not in r.out + r.err


def test_a_group_fails_over_when_its_first_model_is_rate_limited(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = _project(senv)
    with LoopbackServer() as busy, LoopbackServer() as free:
        busy.script(
            [
                Reply(
                    429,
                    {"retry-after": "30", "content-type": "application/json"},
                    [b'{"error": {"message": "slow down", "type": "rate_limit"}}'],
                )
            ]
        )
        free.script(
            [
                Reply(
                    200,
                    SSE,
                    [
                        _chunk({"content": "from the spare"}),
                        _chunk({}, "stop"),
                        b"data: [DONE]\n\n",
                    ],
                )
            ]
        )
        senv.write_user_config(
            f'providers {{ busy {{ base-url "{busy.url}/v1"; }}; '
            f'spare {{ base-url "{free.url}/v1"; }}; }}\n'
            'models { group { local "busy/m" "spare/m"; }; }\n'
        )
        r = smith_process("eval", "--json", "--model", "local", "hi", cwd=project)
    assert r.code == 0, r.err
    events = [json.loads(line) for line in r.out.splitlines()]
    [failover] = [e for e in events if e["type"] == "failover"]
    assert (failover["from_model"], failover["to_model"]) == ("busy/m", "spare/m")
    assert not [e for e in events if e["type"] == "retry"]  # no 30 s wait on a rate limit
    assert events[-1]["text"] == "from the spare"


def test_an_unreachable_server_is_an_error_that_says_where(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = _project(senv)
    senv.write_user_config("agent { max-iterations 1; }\n")
    with LoopbackServer() as srv:
        url = srv.url  # the port is free again once the server is gone
    r = smith_process(
        "eval",
        "--model",
        "openai-compatible/bar",
        "--base-url",
        url + "/v1",
        "hi",
        cwd=project,
        env={"SMITH_AGENT_DEADLINE": "30"},
    )
    assert r.code == 1
    assert url.split("//")[1] in r.err and "Traceback" not in r.err


def test_a_provider_without_a_key_is_a_usage_error_before_anything_runs(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = _project(senv)
    r = smith_process("eval", "--model", "anthropic/claude-sonnet-4-5", "hi", cwd=project)
    assert r.code == 2, r.err
    assert "ANTHROPIC_API_KEY" in r.err and "smith auth login" in r.err
    assert not list(senv.data_home.rglob("*.smith"))  # no session was created
