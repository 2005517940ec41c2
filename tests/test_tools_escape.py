"""No process a bash command starts outlives it, nor smith: not one that forks, calls
setsid, forks again and execs with an empty environment (escaping the process group,
the process tree and the environment mark). Each way a command ends is covered: a
normal exit, a timeout, an abort, SIGTERM to smith, kill -9 of `smith eval`; and what
is left after all (recorded as the effect's progress) is ended on the next start."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from smith.effects import EffectJournal, ToolCancelled, ToolContext, builtin_tools, run_tool
from smith.session import Session
from tests.conftest import SmithEnv, smith_executable, tool_world
from tests.process_kit import escapee, kill_tagged, new_tag, tagged, wait_for, wait_gone

BASH = builtin_tools()["bash"]


@pytest.fixture
def tag() -> Iterator[str]:
    name = new_tag()
    yield name
    kill_tagged(name)


def _run(ctx: ToolContext, session: Session, command: str, **args: object) -> object:
    return run_tool(EffectJournal(session), BASH, {"command": command, **args}, ctx)


def test_an_escapee_ends_when_the_command_exits(tmp_path: Path, tag: str) -> None:
    session, ctx, _ = tool_world(tmp_path)
    ready = tmp_path / "ready"
    out = _run(ctx, session, escapee(tag, str(ready)) + "echo done")  # type: ignore[arg-type]
    assert out.result.text == "done\n"  # type: ignore[attr-defined]
    assert ready.exists() and tagged(tag) == []


def test_an_escapee_ends_at_the_timeout(tmp_path: Path, tag: str) -> None:
    session, ctx, _ = tool_world(tmp_path)
    ready = tmp_path / "ready"
    command = escapee(tag, str(ready)) + "echo started; sleep 300"
    out = _run(ctx, session, command, timeout=1)  # type: ignore[arg-type]
    assert "timed out after 1 s" in out.result.text  # type: ignore[attr-defined]
    assert "started" in out.result.text  # type: ignore[attr-defined]
    assert ready.exists() and tagged(tag) == []


def test_an_escapee_ends_on_abort(tmp_path: Path, tag: str) -> None:
    _session, ctx, _ = tool_world(tmp_path)
    ready = tmp_path / "ready"
    command = escapee(tag, str(ready)) + "sleep 300"
    seen: list[BaseException] = []

    def call() -> None:
        try:
            BASH.run(ctx, {"command": command})  # type: ignore[arg-type]
        except ToolCancelled as exc:
            seen.append(exc)

    worker = threading.Thread(target=call)
    worker.start()
    wait_for(lambda: bool(tagged(tag)), "the escapee to start")
    ctx.cancelled.set()  # type: ignore[attr-defined]
    worker.join(30)
    assert seen and tagged(tag) == []


def test_without_a_namespace_a_subreaper_still_finds_the_escapee(
    tmp_path: Path, tag: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from smith.effects import _procs

    monkeypatch.setattr(_procs, "namespace_prefix", lambda: None)
    session, ctx, _ = tool_world(tmp_path)
    ready = tmp_path / "ready"
    command = escapee(tag, str(ready)) + "sleep 300"
    out = _run(ctx, session, command, timeout=1)  # type: ignore[arg-type]
    assert "timed out" in out.result.text  # type: ignore[attr-defined]
    assert ready.exists() and tagged(tag) == []


def _tools_run(senv: SmithEnv, project: Path, command: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [smith_executable(), "tools", "run", "bash", json.dumps({"command": command})],
        cwd=project, env=senv.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def test_an_escapee_ends_when_smith_gets_sigterm(senv: SmithEnv, tag: str) -> None:
    project = senv.make_project()
    ready = senv.root / "ready"
    proc = _tools_run(senv, project, escapee(tag, str(ready)) + "sleep 300")
    wait_for(lambda: bool(tagged(tag)), "the escapee to start")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert tagged(tag) == []


def test_an_escapee_ends_when_smith_eval_is_killed(senv: SmithEnv, tag: str) -> None:
    project = senv.make_project()
    ready = project / "ready"  # written from inside the sandbox: the project is writable
    command = escapee(tag, str(ready)) + f"exec -a {tag} sleep 300"
    script = senv.root / "script.json"
    calls = [{"name": "bash", "arguments": {"command": command}}]
    script.write_text(json.dumps({"responses": [{"tool_calls": calls}, {"text": "done"}]}))
    proc = subprocess.Popen(
        [smith_executable(), "eval", "--model", f"scripted:{script}", "go"],
        cwd=project, env=senv.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    wait_for(lambda: ready.exists() and len(tagged(tag)) == 2, "the command and the escapee")
    proc.kill()
    proc.wait(30)
    wait_gone(tag)  # the kernel ends them once smith is gone: no next start needed


def _leftover_session(senv: SmithEnv, project: Path, target: subprocess.Popen[bytes],
                      start: int | None) -> None:  # fmt: skip
    """The project's `manual` session with a bash effect that never finished and whose
    progress record names `target` (with `start` as its start time, default the real)."""
    from smith.effects._procs import start_time
    from smith.session import SessionStore

    first = subprocess.run(
        [smith_executable(), "tools", "run", "ls", "{}"],
        cwd=project, env=senv.env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    [path] = SessionStore(str(senv.data_home)).paths()
    session = Session.open(path)
    journal = EffectJournal(session)
    effect = journal.begin("bash", {"command": "sleep 300"})
    identity: dict[str, object] = {"pid": target.pid, "how": "pid-namespace", "mark": "x"}
    identity["start"] = start_time(target.pid) if start is None else start
    journal.progress(effect, {"processes": identity})
    session.close()


def test_leftovers_of_an_unknown_effect_are_ended_on_the_next_start(
    senv: SmithEnv, tag: str
) -> None:
    project = senv.make_project()
    # What a smith killed in a way nothing caught would leave: a recorded command, running.
    target = subprocess.Popen(["bash", "-c", f"exec -a {tag} sleep 300"], start_new_session=True)
    _leftover_session(senv, project, target, None)
    r = subprocess.run(
        [smith_executable(), "tools", "run", "ls", "{}"],
        cwd=project, env=senv.env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "outcome is unknown" in r.stderr
    assert target.wait(30) == -signal.SIGKILL


def test_a_reused_pid_is_never_killed(senv: SmithEnv, tag: str) -> None:
    project = senv.make_project()
    other = subprocess.Popen(["bash", "-c", f"exec -a {tag} sleep 300"], start_new_session=True)
    try:
        from smith.effects._procs import start_time

        real = start_time(other.pid)
        assert real is not None
        _leftover_session(senv, project, other, real - 1)  # recorded: an earlier process
        r = subprocess.run(
            [smith_executable(), "tools", "run", "ls", "{}"],
            cwd=project, env=senv.env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        assert other.poll() is None and tagged(tag) == [other.pid]
    finally:
        other.kill()
        other.wait()
