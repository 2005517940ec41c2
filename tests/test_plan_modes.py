"""Plan mode as the command line and programs see it (smith.runtime._mode, docs/plan.md):
`--no-plan` leaves a session's plan mode, eval says when it runs in plan mode, and every
change of mode is a `mode` event wherever it happens."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from smith.runtime import ops
from tests.conftest import Result, SmithEnv
from tests.rpc_kit import Rpc, script
from tests.runtime_kit import Fake, say
from tests.test_plan import _events, _runtime

Smith = Callable[..., Result]
WRITE = {"tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "A"}}]}
PLAN_NOTE = "smith: plan mode: only read-only tools run"


def test_no_plan_leaves_a_sessions_plan_mode_and_eval_says_when_it_plans(
    senv: SmithEnv, smith: Smith
) -> None:
    project = senv.make_project()
    model = script(senv, [WRITE, {"text": "planned"}])
    r = smith("--plan", "eval", "--json", "--session", "s", "--model", model, "plan", cwd=project)
    assert r.code == 0, r.err
    assert PLAN_NOTE in r.err and not (project / "a.txt").exists()

    # Resumed without a word about the mode: still planning, and eval says so.
    model = script(senv, [WRITE, {"text": "still planning"}])
    r = smith("eval", "--session", "s", "--model", model, "go on", cwd=project)
    assert r.code == 0, r.err
    assert PLAN_NOTE in r.err and not (project / "a.txt").exists()

    # --no-plan leaves it: the write runs, and nothing says plan mode.
    model = script(senv, [WRITE, {"text": "done"}])
    r = smith("--no-plan", "eval", "--json", "--session", "s", "--model", model, "do it",
              cwd=project)  # fmt: skip
    assert r.code == 0, r.err
    assert PLAN_NOTE not in r.err
    assert (project / "a.txt").read_text() == "A"
    ends = [e for e in _events(r.out) if e["type"] == "tool_end"]
    assert [e["is_error"] for e in ends] == [False]


def test_selecting_a_branch_in_another_mode_is_a_mode_event(tmp_path: Path) -> None:
    async def main() -> None:
        rt = _runtime(tmp_path, Fake(say("one"), say("two")))
        seen: list[dict[str, Any]] = []
        rt.on_event(seen.append)
        rt.submit(ops.Prompt("first"))
        await rt.wait_idle()
        before = rt.submit(ops.SessionInfo())["leaf"]  # type: ignore[index]
        rt.submit(ops.SetMode("plan"))
        rt.submit(ops.Prompt("second"))
        await rt.wait_idle()
        planned = rt.submit(ops.SessionInfo())["leaf"]  # type: ignore[index]
        rt.submit(ops.Select(before))
        rt.submit(ops.Select(planned))
        rt.submit(ops.Select(planned))  # no change: no event
        modes = [(e["previous"], e["mode"]) for e in seen if e["type"] == "mode"]
        assert modes == [("normal", "plan"), ("plan", "normal"), ("normal", "plan")]
        await rt.close()

    asyncio.run(asyncio.wait_for(main(), 30))


def test_eval_replay_and_rpc_emit_the_mode_they_start_or_switch_in(
    senv: SmithEnv, smith: Smith
) -> None:
    project = senv.make_project()
    model = script(senv, [{"text": "planned"}])
    r = smith("--plan", "eval", "--json", "--session", "p", "--model", model, "plan", cwd=project)
    assert r.code == 0, r.err
    assert [e["mode"] for e in _events(r.out) if e["type"] == "mode"] == ["plan"]
    r = smith("replay", "p", "--json", cwd=project)
    assert r.code == 0, r.err
    assert [(e["previous"], e["mode"]) for e in _events(r.out) if e["type"] == "mode"] == [
        ("normal", "plan")
    ]
    model = script(senv, [{"text": "normal"}])
    r = smith("eval", "--session", "n", "--model", model, "hello", cwd=project)
    assert r.code == 0, r.err

    with Rpc(senv, project, "--session", "p", "--model", model) as rpc:
        assert rpc.event("mode")["mode"] == "plan"  # resumed in plan mode: said at start
        rpc.call("session.switch", {"session": "n"})
        assert [e["mode"] for e in rpc.events if e["type"] == "mode"][-1] == "normal"
        rpc.call("session.switch", {"session": "p"})
        assert [e["mode"] for e in rpc.events if e["type"] == "mode"][-1] == "plan"
        code, err = rpc.close()
        assert code == 0, err
