"""A plugin's per-session state (RuntimeView.state, set_state: entry kind `plugin_state`),
approval's remembered approvals kept in it, and two runtimes in one process sharing
nothing by accident (issue 28, "State")."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

import smith
from smith.effects import ToolContext, ToolResult, ToolSpec
from smith.runtime import PluginState
from smith.session import Session, SessionStore
from smith.ui import Intent, Reply
from tests.conftest import Result, SmithEnv
from tests.rpc_kit import Rpc, script
from tests.test_ui import Recorder
from tests.test_ui_rpc import _asked, _respond


def test_state_is_folded_from_the_branch_and_survives_reopening(tmp_path: Path) -> None:
    store = SessionStore(str(tmp_path))
    with store.create(name="s", cwd=str(tmp_path)) as session:
        state = PluginState(session)
        assert dict(state.of("p")) == {}
        state.set("p", "rules", ["a"])
        state.set("q", "n", 1)
        fork_at = session.leaf
        state.set("p", "rules", ["a", "b"])
        state.set("q", "n", None)  # removed
        tip = session.leaf
        assert tip is not None
        assert dict(state.of("p")) == {"rules": ["a", "b"]} and dict(state.of("q")) == {}
        path = session.path
        assert fork_at is not None
        session.select(fork_at)  # the branch as it was there
        assert dict(state.of("p")) == {"rules": ["a"]} and dict(state.of("q")) == {"n": 1}
        session.select(tip)
        with pytest.raises(TypeError, match=r"value\[0\] is a set"):
            state.set("p", "bad", [{1, 2}])
    with Session.open(path) as again:
        kept = [e.content for e in again.entries() if e.kind == "plugin_state"]
        assert kept[0] == {"plugin": "p", "key": "rules", "value": ["a"]}
        assert dict(PluginState(again).of("p")) == {"rules": ["a", "b"]}


def _write(senv: SmithEnv, *names: str) -> str:
    calls = [{"tool_calls": [{"name": "write", "arguments": {"path": f"{n}.txt",
                                                             "content": "x\n"}}]}
             for n in names]  # fmt: skip
    return script(senv, [*calls, {"text": "done", "stop": "end"}])


def test_an_approval_for_the_session_holds_when_it_is_resumed_and_nowhere_else(
    senv: SmithEnv, smith: Any
) -> None:
    project = senv.make_project()
    rpc = Rpc(senv, project, "--session", "work", "--model", _write(senv, "one"),
              "--approval", "untrusted")  # fmt: skip
    try:
        rpc.call("prompt", {"text": "go"})
        asked = _asked(rpc)
        _respond(rpc, asked["id"], result={"choice": "session"})
        rpc.call("wait_idle")
    finally:
        code, err = rpc.close()
    assert code == 0, err and (project / "one.txt").exists()

    # Resumed (another process): the write is not asked about; eval could not ask.
    again: Result = smith("eval", "--json", "--session", "work", "--model", _write(senv, "two"),
                          "--approval", "untrusted", "go", cwd=project)  # fmt: skip
    ends = [e for e in map(json.loads, again.out.splitlines()) if e["type"] == "tool_end"]
    assert [e["is_error"] for e in ends] == [False], again.err
    assert (project / "two.txt").exists()

    # Replay reads a session holding plugin_state entries as any other.
    replayed: Result = smith("replay", "--json", "--instant", "work", cwd=project)
    assert replayed.code == 0, replayed.err

    # Another session: asked (and refused, in eval).
    other: Result = smith("eval", "--json", "--session", "other", "--model",
                          _write(senv, "three"), "--approval", "untrusted", "go",
                          cwd=project)  # fmt: skip
    ends = [e for e in map(json.loads, other.out.splitlines()) if e["type"] == "tool_end"]
    assert [e["is_error"] for e in ends] == [True]
    assert "needs the user's approval" in ends[0]["result"]["text"]
    assert not (project / "three.txt").exists()


A_SECRET, B_SECRET = "tok-aaaa-31415926", "tok-bbbb-27182818"


def _deploy(ran: list[tuple[str, str]]) -> ToolSpec:
    """A command tool (asked about under untrusted) that gets restored secrets, logs and
    returns its command, and says both runtimes' secret values in its result."""

    def run_(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
        command = str(args["command"])
        ran.append((command, ctx.env.get("A_TOKEN", "") + ctx.env.get("B_TOKEN", "")))
        logging.getLogger("smith.test.deploy").warning("ran %s with %s %s", command,
                                                       A_SECRET, B_SECRET)  # fmt: skip
        return ToolResult(f"{command}: {A_SECRET} {B_SECRET}")

    schema = {"type": "object", "properties": {"command": {"type": "string"}},
              "required": ["command"]}  # fmt: skip
    return ToolSpec("deploy", "run a deploy command", schema, run_, effect="runs",
                    secrets=True, command_argument="command")  # fmt: skip


class _Logs(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_two_runtimes_in_one_process_share_no_approvals_or_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SMITH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SMITH_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("SMITH_APPROVAL", "untrusted")
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config").mkdir()  # where the user file would be: unwritable
    logs = _Logs()
    logging.getLogger("smith").addHandler(logs)

    def agent(name: str, token: str, value: str, calls: list[str], ran: list[tuple[str, str]],
              answers: list[str]) -> tuple[Any, Recorder]:  # fmt: skip
        project = tmp_path / name
        project.mkdir()
        responses = [{"tool_calls": [{"id": f"{name}{i}", "name": "deploy",
                                      "arguments": {"command": c}}]}
                     for i, c in enumerate(calls)]  # fmt: skip
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"responses": [*responses, {"text": "done"}]}))
        proxy = smith.SecretProxy()
        proxy.register(token, value, source="test")
        remaining = list(answers)

        async def answer(intent: Intent) -> Reply:
            await asyncio.sleep(0.01)  # let the other runtime run meanwhile
            return Reply(remaining.pop(0))

        recorder = Recorder(answer, name=name)
        made = smith.Agent(f"scripted:{path}", tools=[_deploy(ran)], cwd=str(project),
                           store=str(tmp_path / "store"), secrets=proxy)  # fmt: skip
        made.runtime.attach(recorder)
        return made, recorder

    ran_a: list[tuple[str, str]] = []
    ran_b: list[tuple[str, str]] = []
    # A approves `make test` always (the user file cannot take it: for its session) and
    # then runs it again, unasked; B runs it twice and is asked each time.
    cmd = "make test"
    a, asked_a = agent("a", "A_TOKEN", A_SECRET, [cmd, cmd, "{{secret:B_TOKEN}}"], ran_a,
                       ["always", "once"])  # fmt: skip
    b, asked_b = agent("b", "B_TOKEN", B_SECRET, [cmd, cmd, "{{secret:A_TOKEN}}"], ran_b,
                       ["once", "once", "once"])  # fmt: skip
    seen: dict[str, list[dict[str, Any]]] = {"a": [], "b": []}
    a.on_event(seen["a"].append)
    b.on_event(seen["b"].append)

    async def main() -> None:
        async with a, b:
            await asyncio.gather(a.send("go"), b.send("go"))

    try:
        asyncio.run(main())
    finally:
        logging.getLogger("smith").removeHandler(logs)

    assert len(asked_a.asked) == 2 and len(asked_b.asked) == 3  # A's approval stayed in A
    assert [c for c, _ in ran_a] == [cmd, cmd, "{{secret:B_TOKEN}}"]  # B's is not restored
    assert [c for c, _ in ran_b] == [cmd, cmd, "{{secret:A_TOKEN}}"]
    assert {env for _, env in ran_a} == {A_SECRET} and {env for _, env in ran_b} == {B_SECRET}
    for name, own, other in (("a", A_SECRET, B_SECRET), ("b", B_SECRET, A_SECRET)):
        ends = [e for e in seen[name] if e["type"] == "tool_end"]
        texts = [e["result"]["text"] for e in ends]
        assert all(own not in t and other in t for t in texts), texts
    # Each runtime's log records have its secrets masked. (Masking is process-wide on
    # purpose: a record never shows any live runtime's secret, whichever made it.)
    ran_logs = [m for m in logs.messages if m.startswith("ran ")]
    assert len(ran_logs) == 6 and not any(A_SECRET in m or B_SECRET in m for m in ran_logs)
    with Session.open(SessionStore(str(tmp_path / "store")).find(a.session.id)) as kept:
        approved = [e.content for e in kept.entries() if e.kind == "plugin_state"]
    assert approved == [{"plugin": "approval", "key": "approved", "value": [cmd]}]
