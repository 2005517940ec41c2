"""Hooks and an abort (plugins/hooks.py, smith.runtime's call_handler): aborting a turn
while a hook runs ends the hook's process at once (its process group, its sandbox), not
at its timeout, and the next prompt is not held up by it."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from tests.conftest import SmithEnv
from tests.rpc_kit import Rpc, script
from tests.test_hooks import _config, _runs


def _running(command: str) -> list[str]:
    import os

    return [p for p in os.listdir("/proc") if p.isdigit() and _runs(p, command)]


def _gone(pids: list[str], command: str, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while any(_runs(p, command) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(_runs(p, command) for p in pids)


def _wait_for(path: Path, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.exists()


@pytest.mark.parametrize("mode", ["off", "workspace-write"])
def test_an_abort_kills_a_running_before_tool_hook(senv: SmithEnv, mode: str) -> None:
    if mode != "off" and shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is needed")
    project = senv.make_project()
    _config(senv, 'hook "slow" on="before-tool" timeout=300 '
                  'command="echo started > started; sleep 59.911"\n')  # fmt: skip
    model = script(senv, [{"tool_calls": [{"name": "ls", "arguments": {"path": "."}}]},
                          {"text": "done"}])  # fmt: skip
    with Rpc(senv, project, "--sandbox-mode", mode, "--model", model) as rpc:
        rpc.call("prompt", {"text": "go"})
        _wait_for(project / "started")
        sleeping = _running("sleep 59.911")
        assert sleeping
        assert rpc.call("abort") == {"aborted": True}
        assert rpc.event("agent_end")["stop"] == "abort"
        assert _gone(sleeping, "sleep 59.911")  # killed at the abort, smith still running
        assert rpc.proc.poll() is None
        code, err = rpc.close()
        assert code == 0, err


def test_an_aborted_prompt_hook_does_not_hold_up_the_next_prompt(senv: SmithEnv) -> None:
    project = senv.make_project()
    # The first prompt's hook hangs; the next one's answers at once.
    _config(senv, 'hook "once" on="prompt" timeout=300 command="if [ -e started ]; then '
                  'exit 0; fi; echo > started; sleep 59.912"\n')  # fmt: skip
    model = script(senv, [{"text": "first"}, {"text": "second"}])
    with Rpc(senv, project, "--sandbox-mode", "off", "--model", model) as rpc:
        rpc.call("prompt", {"text": "one"})
        _wait_for(project / "started")
        sleeping = _running("sleep 59.912")
        assert sleeping
        assert rpc.call("abort") == {"aborted": True}
        rpc.call("wait_idle")
        assert _gone(sleeping, "sleep 59.912")
        rpc.call("prompt", {"text": "two"})
        rpc.call("wait_idle")
        ends = [e for e in rpc.events if e["type"] == "agent_end"]
        assert ends[-1]["stop"] != "abort"
        code, err = rpc.close()
        assert code == 0, err
