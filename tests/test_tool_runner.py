"""One runner runs every tool call (smith.runtime._runner, issue 28): a call in a turn,
through the tool host (`smith tools run`, MCP) and the user's `!command` ends the same
way: the same result, the same journal records, the same mutation state after a crash
(in the process and, after a process death, on resume: reconcile), the same timeout, the
same restored secrets and the same truncation. Each case runs through every path and is
checked against one expectation, so a path that drifts (or a change of the one crash
rule) fails here."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from smith.effects import EffectJournal, ToolCancelled, ToolContext, ToolResult, ToolSpec
from smith.runtime import Limits, SecretProxy, ToolHost, ToolRunner, truncate
from smith.session import Session
from tests.runtime_kit import Fake, World, call, say

PATHS = ("turn", "host", "shell")
SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}},
          "required": ["command"]}  # fmt: skip
SECRET = "tok-3141592653"


def _tool(run: Any, *, effect: str = "runs", secrets: bool = False) -> ToolSpec:
    # Named bash: the user's `!command` runs the bash tool (replaced here by this one).
    return ToolSpec("bash", "a test tool", SCHEMA, run, effect=effect,  # type: ignore[arg-type]
                    secrets=secrets)  # fmt: skip


def _through(
    path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: ToolSpec, command: str,
    *, limits: Limits | None = None, secrets: SecretProxy | None = None,
    world: World | None = None,
) -> tuple[dict[str, Any], Session]:  # fmt: skip
    """The call's result as the caller gets it, and the session it was recorded in."""
    limits = limits or Limits(retry_delay=0.001)
    secrets = secrets or SecretProxy()
    w = world or World(tmp_path)
    if path == "host":
        ctx = ToolContext(root=str(w.project), cwd=str(w.project), session=w.session)
        host = ToolHost(w.session, {spec.name: spec}, ctx, secrets, history=None,
                        warn=lambda d: None, limits=limits)  # fmt: skip
        out = host.run(spec, {"command": command}, cause={"manual": True}, review=None)
        result = {**out.result.to_dict(), "outcome": out.outcome}
        return result, w.session
    from smith.effects.tools import bash

    monkeypatch.setattr(bash, "SPEC", spec)  # what `!command` runs

    async def main() -> None:
        if path == "turn":
            rt = w.runtime(Fake(call(("bash", {"command": command})), say("done")),
                           tools=[spec], limits=limits, secrets=secrets)  # fmt: skip
            rt.prompt("go")
        else:
            rt = w.runtime(Fake(), tools=[spec], limits=limits, secrets=secrets)
            rt.shell(command)
        await rt.wait_idle()
        await rt.close()

    asyncio.run(asyncio.wait_for(main(), 30))
    (end,) = w.of("tool_end")
    return dict(end["result"]), w.session


def _records(session: Session) -> list[tuple[str, dict[str, Any]]]:
    """The journal's records without what differs by path (ids, the cause)."""
    out = []
    for e in session.entries():
        if e.kind in ("effect_intent", "effect_completion"):
            content = dict(e.content)  # type: ignore[call-overload]
            for key in ("effect", "cause"):
                content.pop(key, None)
            out.append((e.kind, content))
    return out


def _seen(result: dict[str, Any]) -> dict[str, Any]:
    return {k: result[k] for k in ("text", "ok", "outcome", "mutation")}


# -- a crash ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("effect", "mutation"), [("reads", "not-applied"), ("runs", "unknown")])
def test_a_tool_that_crashes_ends_by_the_one_rule_on_every_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str, effect: str, mutation: str
) -> None:
    def crash(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
        raise KeyError("surprise")

    result, session = _through(path, tmp_path, monkeypatch, _tool(crash, effect=effect), "x")
    assert _seen(result) == {
        "text": "the bash tool failed: KeyError: 'surprise'",
        "ok": False,
        "outcome": "error",
        "mutation": mutation,
    }
    intent = {"kind": "tool", "name": "bash", "mutating": effect == "runs", "generation": 0,
              "input": {"command": "x"}}  # fmt: skip
    completion = {"outcome": "error", "mutation": mutation,
                  "output": {"error": "KeyError: 'surprise'"}}  # fmt: skip
    assert _records(session) == [("effect_intent", intent), ("effect_completion", completion)]


@pytest.mark.parametrize(("effect", "mutation"), [("reads", "not-applied"), ("runs", "unknown")])
def test_replay_re_executes_a_call_through_the_same_runner(
    tmp_path: Path, effect: str, mutation: str
) -> None:
    """`smith replay --reexecute` runs a recorded effect again through the runner: a
    crash ends as it ends live (the one rule), secrets restored as they are live."""
    from types import SimpleNamespace

    from smith.frontends.replay._reexecute import Reexecutor

    def crash(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
        raise KeyError("surprise")

    spec = _tool(crash, effect=effect)
    again = Reexecutor({"bash": spec}, project=str(tmp_path), snapshots=None)
    try:
        effect_ = SimpleNamespace(input={"command": "x"}, id="fx-1")
        got = again.run(spec, effect_, str(tmp_path), {})  # type: ignore[arg-type]
    finally:
        again.close()
    assert {k: got[k] for k in ("text", "ok", "outcome", "mutation")} == {
        "text": "the bash tool failed: KeyError: 'surprise'",
        "ok": False,
        "outcome": "error",
        "mutation": mutation,
    }


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("effect", "mutation"), [("reads", "not-applied"), ("runs", "unknown")])
def test_a_process_that_dies_between_intent_and_completion_leaves_one_state_on_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str, effect: str, mutation: str
) -> None:
    """The completion is never written (the process died while the tool ran: here the
    session refuses it); on resume reconcile records what the one rule says."""
    dying = threading.Event()
    append = Session.append

    def refusing(self: Session, kind: str, *args: Any, **kw: Any) -> Any:
        if kind == "effect_completion" and dying.is_set():
            raise OSError("the process died")
        return append(self, kind, *args, **kw)

    monkeypatch.setattr(Session, "append", refusing)

    def dies(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
        dying.set()
        return ToolResult("changed it")

    from smith.effects import JournalError

    spec = _tool(dies, effect=effect)
    w = World(tmp_path)
    try:
        result, _ = _through(path, tmp_path, monkeypatch, spec, "x", world=w)
    except JournalError:  # the host says so as its callers do (`tools run`, MCP)
        assert path == "host"
    else:
        assert result["ok"] is False and "its result could not be recorded" in result["text"]
    w.session.close()
    dying.clear()
    resumed = Session.open(str(tmp_path / "session.smith"))
    with resumed:
        found = EffectJournal(resumed).reconcile()
        assert [f["name"] for f in found] == ["bash"]
        (completion,) = [e.content for e in resumed.entries("effect_completion")]
    assert completion["mutation"] == mutation  # type: ignore[index]
    assert completion["outcome"] == "unknown"  # type: ignore[index]


# -- a timeout ---------------------------------------------------------------------------------


def _waits(started: threading.Event | None = None) -> Any:
    def wait(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
        if started is not None:
            started.set()
        if ctx.cancelled.wait(20):
            raise ToolCancelled("not-applied", text="partial")
        return ToolResult("never told")

    return wait


@pytest.mark.parametrize("path", PATHS)
def test_a_call_past_its_timeout_is_told_to_stop_and_says_so_on_every_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    limits = Limits(retry_delay=0.001, tool_timeout=0.5)
    result, session = _through(path, tmp_path, monkeypatch, _tool(_waits()), "x", limits=limits)
    assert _seen(result) == {
        "text": "[timed out after 0.5 s] partial\n[cancelled: the call was aborted]",
        "ok": False,
        "outcome": "cancelled",
        "mutation": "not-applied",
    }
    [(_, completion)] = [r for r in _records(session) if r[0] == "effect_completion"]
    assert (completion["outcome"], completion["mutation"]) == ("cancelled", "not-applied")


@pytest.mark.parametrize("path", PATHS)
def test_a_call_that_ignores_its_timeout_is_given_up_after_the_grace_on_every_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """A tool that never looks at its cancellation: every path waits its timeout and the
    abort grace, then says its effect is unknown (the host's used to wait for it)."""
    release = threading.Event()

    def stubborn(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
        release.wait(20)
        return ToolResult("done at last")

    limits = Limits(retry_delay=0.001, tool_timeout=0.3, abort_grace=0.3)
    later = threading.Timer(2.0, release.set)  # long after it was given up: it ends then
    later.start()
    try:
        result, _ = _through(path, tmp_path, monkeypatch, _tool(stubborn), "x", limits=limits)
    finally:
        later.cancel()
        release.set()
    assert _seen(result) == {
        "text": "[timed out after 0.3 s] [the call did not stop in time; its effect is unknown]",
        "ok": False,
        "outcome": "unknown",
        "mutation": "unknown",
    }


def test_a_calls_own_limit_raises_its_timeout_by_the_margin(tmp_path: Path) -> None:
    spec = ToolSpec("t", "", {"type": "object"}, lambda c, a: ToolResult(""),
                    timeout_argument="timeout")  # fmt: skip
    session = Session.create(str(tmp_path / "s"), name="t", cwd=str(tmp_path))
    runner = ToolRunner(EffectJournal(session), SecretProxy(), Limits(tool_timeout=60))
    assert runner.timeout(spec, {}) == 60
    assert runner.timeout(spec, {"timeout": 100}) == 130
    assert runner.timeout(spec, {"timeout": True}) == 60  # not a number of seconds


# -- secrets and truncation -------------------------------------------------------------------


@pytest.mark.parametrize("path", PATHS)
def test_a_secret_placeholder_is_restored_for_the_tool_and_masked_in_what_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    proxy = SecretProxy()
    placeholder = proxy.register("DEPLOY_TOKEN", SECRET, source="test")
    seen: list[tuple[str, str]] = []

    def echo(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
        seen.append((ctx.env.get("DEPLOY_TOKEN", ""), str(args["command"])))
        return ToolResult(f"got {args['command']}")

    spec = _tool(echo, secrets=True)
    result, session = _through(path, tmp_path, monkeypatch, spec, placeholder, secrets=proxy)
    assert seen == [(SECRET, SECRET)]
    assert _seen(result) == {"text": f"got {placeholder}", "ok": True, "outcome": "ok",
                             "mutation": "not-applied"}  # fmt: skip
    assert SECRET not in str(_records(session))


@pytest.mark.parametrize("path", PATHS)
def test_an_over_long_result_is_cut_the_same_way_on_every_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    long = "é" * 2000  # 4000 bytes

    def talk(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
        return ToolResult(long)

    limits = Limits(retry_delay=0.001, result_bytes=1001)
    result, session = _through(path, tmp_path, monkeypatch, _tool(talk), "x", limits=limits)
    assert result["text"] == truncate(long, 1001)
    assert result["text"].startswith("é" * 500 + "\n[truncated: the result was 4000 bytes")
    [(_, completion)] = [r for r in _records(session) if r[0] == "effect_completion"]
    assert completion["output"]["text"] == long  # the journal keeps what the tool said


# -- the caller's submission ------------------------------------------------------------------


def test_every_event_of_a_command_of_the_user_carries_its_id(tmp_path: Path) -> None:
    """The runner runs a call's work in the caller's context: the records the user's
    `!command` appends (its effect's intent, progress and completion) announce themselves
    with its `sh-` id, not with the prompt before it."""
    w = World(tmp_path)

    async def main() -> str:
        rt = w.runtime(Fake(say("one")))
        rt.prompt("first")
        await rt.wait_idle()
        call_id = rt.shell("echo hi")
        await rt.wait_idle()
        await rt.close()
        return call_id

    call_id = asyncio.run(asyncio.wait_for(main(), 30))
    assert call_id.startswith("sh-")
    start = next(i for i, e in enumerate(w.events) if e.get("tool_call_id") == call_id)
    end = next(i for i, e in enumerate(w.events) if e.get("kind") == "shell")
    ran = w.events[start : end + 1]
    kinds = [e["kind"] for e in ran if e["type"] == "entry"]
    assert {"effect_intent", "effect_completion"} <= set(kinds)
    assert {(e["type"], e.get("submission")) for e in ran} == {(e["type"], call_id) for e in ran}
