"""Provider credentials never reach the model, and each server gets only its own key.

Proved as a user meets them: `smith eval` with a scripted provider whose requests are
logged, and loopback servers that record the Authorization headers they receive.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import Result, SmithEnv
from tests.http_kit import LoopbackServer, Recorded, Reply, json_reply, sse

ENV_KEY = "sk-ant-api03-ENVKEY-0123456789abcdef"
LOGIN_KEY = "sk-proj-LOGINKEY-0123456789abcdef"
PEEK = 'env; cat "$SMITH_HOME"/auth.json; echo "pass:$ANTHROPIC_API_KEY:"'


def _script(senv: SmithEnv, command: str, log: Path) -> str:
    path = senv.root / "script.json"
    calls = [{"name": "bash", "arguments": {"command": command}}]
    responses = [{"tool_calls": calls, "stop": "tool_use"}, {"text": "looked", "stop": "end"}]
    path.write_text(json.dumps({"responses": responses, "requests_log": str(log)}))
    return f"scripted:{path}"


def _tool_text(out: str) -> str:
    ends = [json.loads(x) for x in out.splitlines() if '"tool_end"' in x]
    return str(ends[0]["result"]["text"])


def _dumps(senv: SmithEnv, smith_process: Callable[..., Result], project: Path) -> str:
    texts = []
    for path in (senv.data_home / "sessions").rglob("*.smith"):
        dump = smith_process("sessions", "dump", path.stem, cwd=project)
        assert dump.code == 0, dump.err
        texts.append(dump.out)
    assert texts
    return "\n".join(texts)


def test_provider_keys_stay_out_of_tool_results_requests_and_the_session(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = senv.make_project()
    # The sandbox hides the auth file from commands (tests/test_sandbox.py); off, a
    # command can read it, and its key must still reach no result, request or record.
    env = {"ANTHROPIC_API_KEY": ENV_KEY, "SMITH_SANDBOX_MODE": "off"}
    login = subprocess_login(senv, smith_process, project)
    assert login.code == 0, login.err
    log = senv.root / "requests.jsonl"
    model = _script(senv, PEEK, log)
    r = smith_process("eval", "--json", "--model", model, "show me", cwd=project, env=env)
    assert r.code == 0, r.err
    seen = _tool_text(r.out)
    # bash did not inherit the provider key, and the auth file's key is shown redacted.
    assert "ANTHROPIC_API_KEY=" not in seen and "pass::" in seen
    assert "{{secret:SMITH_AUTH_OPENAI_KEY}}" in seen
    sent = log.read_text()
    for key in (ENV_KEY, LOGIN_KEY):
        assert key not in sent
        assert key not in r.out + r.err
        assert key not in _dumps(senv, smith_process, project)


def subprocess_login(senv: SmithEnv, smith_process: Callable[..., Result], project: Path) -> Result:
    import subprocess

    from tests.conftest import smith_executable

    proc = subprocess.run(
        [smith_executable(), "auth", "login", "openai"],
        cwd=project,
        env=senv.env,
        input=LOGIN_KEY + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def test_bash_inherits_a_provider_key_only_when_tools_bash_env_passes_it(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = senv.make_project()
    log = senv.root / "requests.jsonl"
    model = _script(senv, 'echo "pass:$ANTHROPIC_API_KEY:"', log)
    env = {"ANTHROPIC_API_KEY": ENV_KEY, "SMITH_TOOLS_BASH_ENV": "ANTHROPIC_API_KEY"}
    r = smith_process("eval", "--json", "--model", model, "use it", cwd=project, env=env)
    assert r.code == 0, r.err
    # Passed through, and still redacted from what the model and the session see.
    assert "pass:{{secret:ANTHROPIC_API_KEY}}:" in _tool_text(r.out)
    assert ENV_KEY not in log.read_text() + r.out + r.err
    assert ENV_KEY not in _dumps(senv, smith_process, project)


def test_a_credential_read_later_is_redacted_by_a_proxy_already_watching() -> None:
    from smith.providers import watch_credentials
    from smith.providers._auth import Credential
    from smith.runtime import SecretProxy

    proxy = SecretProxy()
    watch_credentials(proxy.protect)
    renewed = "renewed-access-token-0123456789"
    Credential("anthropic", renewed, "auth file x", kind="oauth", name="SMITH_AUTH_X_ACCESS")
    assert proxy.redact(f"token {renewed}") == "token {{secret:SMITH_AUTH_X_ACCESS}}"
    # Protected: never restored into a command, never in a process's environment.
    assert proxy.restore("{{secret:SMITH_AUTH_X_ACCESS}}") == "{{secret:SMITH_AUTH_X_ACCESS}}"
    assert "SMITH_AUTH_X_ACCESS" not in proxy.env()


# -- each provider and server gets only its own credential ---------------------------------


def _chat(request: Recorded) -> Reply:
    chunk = {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}
    body = sse(chunk, "[DONE]")
    return Reply(200, {"content-type": "text/event-stream"}, [body])


def _listing(request: Recorded) -> Reply:
    return json_reply(200, {"data": [{"id": "served"}]})


def _auth(srv: LoopbackServer) -> list[Any]:
    return [r.headers.get("authorization") for r in srv.requests]


def test_openai_compatible_never_sends_openai_api_key_to_its_server(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = senv.make_project()
    with LoopbackServer() as local:
        local.script(_chat)
        r = smith_process(
            "eval", "--model", "openai-compatible/served", "--base-url", f"{local.url}/v1",
            "hi", cwd=project, env={"OPENAI_API_KEY": "sk-real-openai-0123456789"},
        )  # fmt: skip
    assert r.code == 0, r.err
    assert local.requests and _auth(local) == [None] * len(local.requests)


def test_models_refresh_sends_each_provider_only_its_own_key(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    openai_key, local_key = "sk-real-openai-0123456789", "local-server-key-0123456789"
    with LoopbackServer() as openai, LoopbackServer() as named, LoopbackServer() as plain:
        for srv in (openai, named, plain):
            srv.script(_listing)
        senv.write_user_config(
            f'providers {{ openai {{ base-url "{openai.url}/v1"; }};'
            f' local {{ base-url "{named.url}/v1"; api-key-env "LOCAL_KEY"; }};'
            f' openai-compatible {{ base-url "{plain.url}/v1"; }}; }}\n'
        )
        r = smith("models", "--refresh", env={"OPENAI_API_KEY": openai_key, "LOCAL_KEY": local_key})
    assert r.code == 0, r.err
    assert _auth(openai) == [f"Bearer {openai_key}"]
    assert _auth(named) == [f"Bearer {local_key}"]
    # openai-compatible has no key configured for it: none is sent (not OpenAI's).
    assert plain.requests and all(
        h.get("authorization") is None and h.get("x-api-key") is None
        for h in (req.headers for req in plain.requests)
    )


def test_a_configured_authorization_header_is_redacted_from_tool_output(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = senv.make_project()
    token = "hdr-token-0123456789abcdef"
    senv.write_user_config(
        f'providers {{ proxy {{ base-url "http://127.0.0.1:9/v1"; '
        f'headers {{ authorization "Bearer {token}"; }}; }}; }}\n'
    )
    log = senv.root / "requests.jsonl"
    model = _script(senv, 'cat "$SMITH_CONFIG_HOME"/config.kdl', log)
    off = {"SMITH_SANDBOX_MODE": "off"}  # a command that can read the file (see above)
    r = smith_process("eval", "--json", "--model", model, "look", cwd=project, env=off)
    assert r.code == 0, r.err
    assert "Bearer {{secret:PROXY_HEADER_AUTHORIZATION}}" in _tool_text(r.out)
    assert token not in log.read_text() + r.out + r.err


def test_smith_mcp_tool_results_carry_no_provider_key(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    import subprocess

    from tests.conftest import smith_executable

    project = senv.make_project()
    assert subprocess_login(senv, smith_process, project).code == 0
    command = 'cat "$SMITH_HOME"/auth.json; echo "[$ANTHROPIC_API_KEY]"'
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "bash", "arguments": {"command": command}}},
    ]  # fmt: skip
    proc = subprocess.Popen(
        [smith_executable(), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=project,
        # Off: a command that can read the auth file (the sandbox hides it).
        env={**senv.env, "ANTHROPIC_API_KEY": ENV_KEY, "SMITH_SANDBOX_MODE": "off"},
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
    proc.stdin.flush()
    replies = [proc.stdout.readline(), proc.stdout.readline()]  # answered before closing
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    reply = next(r for r in map(json.loads, replies) if r.get("id") == 2)
    assert "result" in reply, reply
    text = reply["result"]["content"][0]["text"]
    assert "{{secret:SMITH_AUTH_OPENAI_KEY}}" in text and "[]" in text
    assert LOGIN_KEY not in "".join(replies) + out and ENV_KEY not in "".join(replies) + out


def test_a_library_agent_gives_bash_no_provider_key_and_records_none(
    tmp_path: Path, monkeypatch: Any
) -> None:
    import smith
    from tests.runtime_kit import run

    key = "sk-ant-api03-LIBRARY-0123456789abcdef"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    monkeypatch.setenv("SMITH_HOME", str(tmp_path / "home"))
    log = tmp_path / "requests.jsonl"
    script = tmp_path / "script.json"
    calls = [{"name": "bash", "arguments": {"command": 'echo "[$ANTHROPIC_API_KEY]"; env'}}]
    script.write_text(
        json.dumps({"responses": [{"tool_calls": calls}, {"text": "ok"}], "requests_log": str(log)})
    )

    async def main() -> None:
        async with smith.Agent(
            f"scripted:{script}", store=str(tmp_path / "store"), cwd=str(tmp_path)
        ) as agent:
            await agent.send("look")

    run(main)
    sent = log.read_text()
    assert "[]" in sent and key not in sent
    stored = b"".join(p.read_bytes() for p in (tmp_path / "store").rglob("*") if p.is_file())
    assert key.encode() not in stored
