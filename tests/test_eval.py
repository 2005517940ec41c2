"""`smith eval` as a user runs it: the installed executable, a project, a model."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import Result, SmithEnv, smith_executable


def _project(senv: SmithEnv) -> Path:
    project = senv.make_project()
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("def app():\n    return 'hello'\n")
    return project


def _script(senv: SmithEnv, responses: list[dict[str, Any]], **top: Any) -> str:
    path = senv.root / "script.json"
    path.write_text(json.dumps({"responses": responses, **top}))
    return f"scripted:{path}"


TOOL_TURN = [
    {"text": "Looking.", "tool_calls": [{"name": "read", "arguments": {"path": "src/app.py"}}]},
    {"text": "app returns hello.", "usage": {"input": 10, "output": 5}},
]


def test_json_prints_every_event_then_a_result_record(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = _project(senv)
    model = _script(senv, TOOL_TURN)
    r = smith_process("eval", "--json", "--model", model, "what is app?", cwd=project)
    assert r.code == 0, r.err
    lines = [json.loads(line) for line in r.out.splitlines()]
    assert [x["type"] for x in lines[:2]] == ["session_start", "agent_start"]
    assert [x["type"] for x in lines[-3:]] == ["agent_end", "settled", "result"]
    result = lines[-1]
    assert result["ok"] is True and result["stop"] == "end"
    assert result["text"] == "app returns hello."
    assert result["cost"]["usd"] is None  # usage known, price unknown: cost unknown
    assert "return 'hello'" in json.dumps([x for x in lines if x["type"] == "tool_end"])
    assert result["session"]["id"] in r.err


def test_human_output_streams_the_answer_and_puts_tool_activity_on_stderr(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = _project(senv)
    r = smith_process("eval", "--model", _script(senv, TOOL_TURN), "what is app?", cwd=project)
    assert r.code == 0, r.err
    assert r.out == "Looking.\napp returns hello.\n"
    assert '→ read {"path": "src/app.py"}' in r.err
    assert "✓ read: def app():" in r.err


def test_without_a_model_the_demo_runs_with_a_banner(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = _project(senv)
    r = smith_process("eval", "list the files", cwd=project)
    assert r.code == 0, r.err
    assert "no model is configured" in r.err and "smith config set model" in r.err
    assert "→ ls" in r.err
    assert "src" in r.out and "demo" in r.out


def test_prompt_from_stdin_and_continuing_a_named_session(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = _project(senv)
    log = senv.root / "requests.jsonl"
    model = _script(senv, [{"text": "one"}, {"text": "two"}], requests_log=str(log))
    first = subprocess.run(
        [smith_executable(), "eval", "--model", model, "--session", "work", "-"],
        input="first question\n", cwd=project, env=senv.env, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    # The script's state is per process: the second run gets a fresh script.
    model = _script(senv, [{"text": "two"}], requests_log=str(log))
    second = subprocess.run(
        [smith_executable(), "eval", "--model", model, "--session", "work", "again"],
        cwd=project, env=senv.env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert second.returncode == 0, second.stderr
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    messages = requests[-1]["messages"]
    texts = [m["content"][0]["text"] for m in messages if not m.get("context")]
    assert texts == ["first question\n", "one", "again"]
    # The environment block was recorded by the first run; the second found it unchanged.
    assert [m["context"] for m in messages if m.get("context")] == ["environment"]


def test_an_error_stop_exits_1_and_says_why(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = _project(senv)
    model = _script(senv, [{"stop": "error", "error": "upstream exploded"}])
    r = smith_process("eval", "--model", model, "hi", cwd=project)
    assert r.code == 1
    assert "upstream exploded" in r.err
    r = smith_process("eval", "--json", "--model", model, "hi", cwd=project)
    assert r.code == 1 and json.loads(r.out.splitlines()[-1])["exit_code"] == 1


def test_bad_models_are_usage_errors_with_a_diagnostic(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = _project(senv)
    r = smith_process("eval", "--model", "scriptd:x.json", "hi", cwd=project)
    assert r.code == 2
    assert "no provider is called 'scriptd'" in r.err and "did you mean 'scripted'" in r.err
    r = smith_process("eval", "--model", f"scripted:{senv.root}/missing.json", "hi", cwd=project)
    assert r.code == 2 and "missing.json" in r.err
    assert "Traceback" not in r.err


def test_sigterm_aborts_cleanly_with_exit_130_and_a_consistent_session(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = _project(senv)
    model = _script(senv, [{"text": "a b c d e f g h i j k l m n o p", "delay_ms": 200}])
    proc = subprocess.Popen(
        [smith_executable(), "eval", "--json", "--model", model, "--session", "s", "hi"],
        cwd=project, env=senv.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    streaming = False  # the assistant's message has begun: wait for its first delta
    for line in proc.stdout:
        ev = json.loads(line)
        streaming = streaming or (ev["type"] == "message_start" and ev["role"] == "assistant")
        if streaming and ev["type"] == "message_delta":
            break
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    result = json.loads(out.splitlines()[-1])
    assert result["stop"] == "abort"
    show = smith_process("sessions", "show", result["session"]["id"], "--json", cwd=project)
    assert show.code == 0, show.err
    # The prompt, the environment block the model was told, and the partial answer.
    assert json.loads(show.out)["entry_count"] == 3


def test_an_empty_prompt_is_a_usage_error(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    r = smith_process("eval", "  ", cwd=_project(senv))
    assert r.code == 2 and "the prompt is empty" in r.err and 'smith eval "' in r.err


def test_secrets_from_the_environment_stay_out_of_requests_and_the_session(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = _project(senv)
    token = "ghp_0123456789abcdefABCDEF0123456789abcd"
    log = senv.root / "requests.jsonl"
    command = 'test "$GH_TOKEN" = "{{secret:GH_TOKEN}}" && echo same-value'
    model = _script(
        senv,
        [{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
         {"text": f"pushed with {token}"}],
        requests_log=str(log),
    )  # fmt: skip
    env = {"GH_TOKEN": token, "SMITH_SECRETS_ENV": "GH_TOKEN,NOT_SET"}
    r = smith_process("eval", "--json", "--model", model, f"push using {token}", cwd=project,
                      env=env)  # fmt: skip
    assert r.code == 0, r.err
    assert "NOT_SET" in r.err and "not set" in r.err  # a warning, not a failure
    assert token not in log.read_text() and "{{secret:GH_TOKEN}}" in log.read_text()
    assert token not in r.out and token[:12] not in r.err  # nor in the session's name
    tool_end = next(json.loads(x) for x in r.out.splitlines() if '"tool_end"' in x)
    assert "same-value" in tool_end["result"]["text"]
    for path in (senv.data_home / "sessions").rglob("*.smith"):
        dump = smith_process("sessions", "dump", path.stem, cwd=project)
        assert dump.code == 0 and token not in dump.out


def test_loop_settings_come_from_configuration(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = _project(senv)
    log = senv.root / "requests.jsonl"
    model = _script(senv, [{"text": "one"}])
    r = smith_process("eval", "--model", model, "--session", "w", "first", cwd=project)
    assert r.code == 0, r.err
    model = _script(senv, TOOL_TURN, requests_log=str(log))
    env = {"SMITH_CONTEXT_WINDOW": "1 messages", "SMITH_AGENT_MAX_ITERATIONS": "1"}
    r = smith_process("eval", "--json", "--model", model, "--session", "w", "second",
                      cwd=project, env=env)  # fmt: skip
    assert r.code == 1 and json.loads(r.out.splitlines()[-1])["stop"] == "max_iterations"
    sent = [json.loads(line)["messages"] for line in log.read_text().splitlines()]
    assert [m["content"][0]["text"] for m in sent[-1]] == ["second"]  # a 1-message window


def test_a_bad_context_window_names_its_source(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    env = {"SMITH_CONTEXT_WINDOW": "lots"}
    r = smith_process("eval", "--model", "demo", "hi", cwd=_project(senv), env=env)
    assert r.code == 2
    assert "context.window is 'lots'" in r.err and "SMITH_CONTEXT_WINDOW" in r.err
