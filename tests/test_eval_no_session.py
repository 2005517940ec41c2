"""`smith eval --no-session`: effects recorded in a temporary session store that goes
away on a clean exit and stays, with its path already printed, when smith is killed."""

from __future__ import annotations

import json
import re
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from smith.session import Session
from tests.conftest import Result, SmithEnv, smith_executable

WRITE = {"name": "write", "arguments": {"path": "out.txt", "content": "written\n"}}


def _script(senv: SmithEnv, responses: list[dict[str, Any]]) -> str:
    path = senv.root / "script.json"
    path.write_text(json.dumps({"responses": responses}))
    return f"scripted:{path}"


def _store(err: str) -> Path:
    found = re.search(r"no session: recording in (\S+) until this run ends", err)
    assert found, err
    return Path(found.group(1))


def _sessions(smith_process: Callable[..., Result], cwd: Path) -> list[Any]:
    r = smith_process("sessions", "list", "--json", cwd=cwd)
    assert r.code == 0, r.err
    data = json.loads(r.out)
    return list(data if isinstance(data, list) else data["sessions"])


@pytest.mark.parametrize(
    ("last", "code"),
    [({"text": "Wrote it."}, 0), ({"stop": "error", "error": "upstream exploded"}, 1)],
)
def test_a_clean_exit_removes_the_temporary_store(
    senv: SmithEnv, smith_process: Callable[..., Result], last: dict[str, Any], code: int
) -> None:
    project = senv.make_project()
    model = _script(senv, [{"text": "Writing.", "tool_calls": [WRITE]}, last])
    r = smith_process("eval", "--no-session", "--json", "--model", model, "write it", cwd=project)
    assert r.code == code, r.err
    events = [json.loads(line) for line in r.out.splitlines()]
    assert [e["outcome"] for e in events if e["type"] == "tool_end"] == ["ok"]  # it ran
    assert (project / "out.txt").read_text() == "written\n"
    result = events[-1]
    assert result["type"] == "result" and result["session"]["temporary"] is True
    store = _store(r.err)
    assert store.is_relative_to(senv.data_home)  # smith's own disk, not a tmpfs
    assert not store.exists()
    assert _sessions(smith_process, project) == []  # nothing left in the real store


def test_a_killed_run_keeps_the_store_with_every_effect_recorded(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = senv.make_project()
    slow = {"text": " ".join(["slowly"] * 50), "delay_ms": 50}
    model = _script(senv, [{"text": "Writing.", "tool_calls": [WRITE]}, slow])
    proc = subprocess.Popen(
        [smith_executable(), "eval", "--no-session", "--json", "--model", model, "write it"],
        cwd=project, env=senv.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:  # mid-turn: the write is done, the answer is streaming
        event = json.loads(line)
        if event["type"] == "message_delta" and event["delta"].startswith("slowly"):
            break
    proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    store = _store(err)
    assert store.is_dir()
    files = list(store.glob("sessions/*/*.smith"))
    assert len(files) == 1
    session = Session.load(str(files[0]))
    kinds = [e.kind for e in session.entries()]
    assert kinds.count("effect_intent") == kinds.count("effect_completion") >= 1
    user = next(e.content for e in session.entries() if e.kind == "message")
    assert isinstance(user, dict) and user["content"][0]["text"] == "write it"
    assert _sessions(smith_process, project) == []


def test_no_session_and_a_named_session_exclude_each_other(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = senv.make_project()
    r = smith_process("eval", "--no-session", "--session", "x", "hi", cwd=project)
    assert r.code == 2 and "not allowed with argument" in r.err
    r = smith_process("eval", "--model", "demo", "list the files", cwd=project)
    assert r.code == 0 and re.search(r"smith: session eval .* list the files \(", r.err)
