"""Plan mode as the command line and programs see it (smith.runtime._mode, docs/plan.md):
`--no-plan` leaves a session's plan mode, eval says when it runs in plan mode, and every
change of mode is a `mode` event wherever it happens."""

from __future__ import annotations

from collections.abc import Callable

from tests.conftest import Result, SmithEnv
from tests.rpc_kit import script
from tests.test_plan import _events

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
