"""Child runtimes' branches after a crash and with parallel calls (issue 28, "Branches
with their own cursor"; the cursor itself and kills of interleaved branches are in
tests/test_session_branches.py): reconcile records each unfinished effect on the branch
its intent is on, and each call's child forks at that call's own effect intent."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import smith
import smith.sdk
from smith.session import Branch, Session
from tests.test_session_branches import _resume, _script

# -- a parent killed while its child's effect is in flight -----------------------------------

_DIES = r"""
import asyncio, os, signal, sys
import smith
store, project, parent_model, child_model = sys.argv[1:5]

@smith.tool(mutating=True)
def die(ctx: smith.ToolContext, why: str) -> str:
    '''Stop the process while this call runs (its intent recorded, no completion).'''
    os.kill(os.getpid(), signal.SIGKILL)
    return "never"

@smith.tool
async def delegate(ctx: smith.ToolContext, task: str) -> str:
    '''Hand a task to a child agent.'''
    run = await ctx.spawn_child(task, tools=[die], model=child_model)
    return str(run["text"])

async def main() -> None:
    agent = smith.Agent(parent_model, tools=[delegate], store=store, cwd=project, name="d")
    print(agent.session.path, flush=True)
    await agent.send("go")

asyncio.run(main())
"""


def test_a_childs_unfinished_effect_is_reconciled_on_the_childs_branch(tmp_path: Path) -> None:
    """The process dies while the child's call runs: on resume (prepare's reconcile) the
    child's branch has the unknown completion under its intent and its lost call
    answered, the parent's branch has none of the child's records (only its own
    delegate call's unknown completion and result), and the agent goes on there."""
    child_model = _script(
        tmp_path / "child.json",
        [{"tool_calls": [{"name": "die", "arguments": {"why": "now"}}]}, {"text": "never"}],
    )
    parent_model = _script(
        tmp_path / "parent.json",
        [{"tool_calls": [{"name": "delegate", "arguments": {"task": "die"}}]}, {"text": "x"}],
    )
    project = tmp_path / "p"
    project.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", _DIES, str(tmp_path / "store"), str(project),
         parent_model, child_model],
        capture_output=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, timeout=120,
    )  # fmt: skip
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    path = done.stdout.decode().strip()

    s = Session.load(path)
    [w] = [e for e in s.entries("effect_intent") if e.content["name"] == "die"]  # type: ignore[index]
    [d] = [e for e in s.entries("effect_intent") if e.content["name"] == "delegate"]  # type: ignore[index]
    assert not list(s.entries("effect_completion"))  # both in flight when it died
    before = [e.id for e in s.branch()]
    assert before[-1] == d.id  # the parent waited on its call

    again = _script(tmp_path / "again.json", [{"text": "resumed"}])
    texts = asyncio.run(_resume(path, project, again))  # opening it reconciles
    assert texts[-2:] == ["again", "resumed"] and "die" not in texts

    s = Session.load(path)
    parent = s.branch()
    assert [e.id for e in parent[: len(before)]] == before  # the parent's branch, continued
    [cw] = [e for e in s.entries("effect_completion") if e.pair == w.pair]
    [cd] = [e for e in s.entries("effect_completion") if e.pair == d.pair]
    assert cw.content["outcome"] == cd.content["outcome"] == "unknown"  # type: ignore[index]
    assert cw.content["mutation"] == "unknown" and cw.content["recovered"] is True  # type: ignore[index]
    # The child's branch: prompt, the call, its intent, then the unknown completion and
    # the call's answer, each under the one before.
    child = s.branch(s.entry(cw.id).id)
    mine = child[[e.id for e in child].index(d.id) + 1 :]
    assert [e.id for e in mine].index(w.id) < [e.id for e in mine].index(cw.id)
    assert cw.parent == w.id
    answers = [e for e in s.entries("message") if e.parent == cw.id]
    assert len(answers) == 1 and answers[0].content["outcome"] == "unknown"  # type: ignore[index]
    call_id = w.content["cause"]["tool_call"]  # type: ignore[index]
    assert answers[0].content["tool_call_id"] == call_id  # type: ignore[index]
    # The parent's branch holds its own delegate completion and result, not the child's.
    on_parent = {e.id for e in parent}
    assert cd.id in on_parent and d.id in on_parent
    assert not {e.id for e in mine} & on_parent and answers[0].id not in on_parent
    results = [e.content for e in parent if e.kind == "message" and e.pair is not None]
    assert [m["tool_name"] for m in results if m.get("role") == "tool_result"] == ["delegate"]  # type: ignore[index]
    # Its result names the child's branch, as a finished call's does (the app shows it).
    [lost] = [m for m in results if m.get("role") == "tool_result"]
    assert lost["details"]["branch"] == {"at": d.id, "leaf": answers[0].id}  # type: ignore[index]
    # Nothing is left to reconcile on either branch.
    with Session.open(path) as reopened:
        from smith.effects import EffectJournal

        assert EffectJournal(reopened).reconcile() == []
        assert len(reopened) == len(s)


# -- parallel calls fork at their own intents ---------------------------------------------------


def test_parallel_delegate_calls_each_fork_their_child_at_their_own_intent(
    tmp_path: Path,
) -> None:
    child_model = _script(tmp_path / "child.json", [{"text": "done"}, {"text": "done"}])
    parent_model = _script(
        tmp_path / "parent.json",
        [
            {"tool_calls": [{"name": "delegate", "arguments": {"task": "a"}},
                            {"name": "delegate", "arguments": {"task": "b"}}]},
            {"text": "both done"},
        ],
    )  # fmt: skip
    runs: dict[str, dict[str, Any]] = {}
    intents: dict[str, str | None] = {}
    # A plugin's lifecycle is the parent's: started and stopped once, and one session_end
    # (with the parent's session), whatever its children do.
    lifecycle: list[str] = []

    async def start(view: Any) -> None:
        lifecycle.append("start")

    async def stop() -> None:
        lifecycle.append("stop")

    def ended(event: dict[str, Any], view: Any) -> None:
        lifecycle.append(f"session_end {event['session']}")

    counter = smith.sdk.Plugin("counter", start=start, stop=stop, handlers={"session_end": ended})

    @smith.tool
    async def delegate(ctx: smith.ToolContext, task: str) -> str:
        """Hand a task to a child agent."""
        intents[task] = ctx.intent
        runs[task] = await ctx.spawn_child(task, tools=[], model=child_model)
        return str(runs[task]["text"])

    project = tmp_path / "project"
    project.mkdir()

    async def main() -> str:
        agent = smith.Agent(
            parent_model, tools=[delegate], store=str(tmp_path / "store"), cwd=str(project),
            plugins=[counter],
        )  # fmt: skip
        message = await agent.send("delegate both")
        path = agent.session.path
        await agent.close()
        assert smith.text_of(message) == "both done"
        return path

    path = asyncio.run(main())
    s = Session.load(path)
    assert lifecycle == ["start", f"session_end {s.id}", "stop"]
    for task in ("a", "b"):
        fork = s.entry(runs[task]["at"])
        assert fork.id == intents[task] and fork.kind == "effect_intent"
        assert fork.content["name"] == "delegate" and fork.content["input"] == {"task": task}  # type: ignore[index]
        # The child's branch starts right under its own call's intent, and its prompt is
        # its task.
        child = s.entries_between(fork.id, runs[task]["leaf"])
        assert child is not None and child[0].parent == fork.id
        prompts = [smith.text_of(e.content) for e in child if e.kind == "message"]  # type: ignore[arg-type]
        assert prompts[0] == task
    assert runs["a"]["at"] != runs["b"]["at"]


def test_reconcile_puts_each_completion_at_its_own_cursors_end(tmp_path: Path) -> None:
    """A child's intent with a grandchild forked at it: its completion goes on the
    child's own branch (below what the child wrote after it), not the grandchild's nor
    the parent's; the parent's goes at the selection."""
    from smith.effects import EffectJournal
    from smith.session import calls_pair

    def intent(cursor: Session, name: str, call: str) -> str:
        record = {"effect": f"fx-{name}", "name": name, "mutating": True,
                  "cause": {"tool_call": call}, "input": {}}  # fmt: skip
        return cursor.append("effect_intent", record, pair=f"fx-{name}").id

    def call(cursor: Session, cid: str, name: str) -> None:
        content = [{"type": "tool_call", "id": cid, "name": name, "arguments": {}}]
        message = {"role": "assistant", "content": content}
        cursor.append("message", message, pair=calls_pair([cid]))

    path = str(tmp_path / "s.smith")
    with Session.create(path) as s:
        s.append("message", {"role": "user", "content": [{"type": "text", "text": "go"}]})
        call(s, "p1", "delegate")
        d = intent(s, "delegate", "p1")
        child = Branch(s, d, apart=True)
        child.append("environment", {"text": "<environment/>"})
        call(child, "c1", "delegate")
        w = intent(child, "inner", "c1")
        grandchild = Branch(s, w, apart=True)
        grandchild.append("environment", {"text": "<environment/>"})
        g = grandchild.append("message", {"role": "user", "content": []}).id
        progress = child.append("effect_progress", {"effect": "fx-inner"}, pair="fx-inner")
        assert s.leaf == d
    with Session.open(path) as s:
        found = EffectJournal(s).reconcile()
        assert [f["name"] for f in found] == ["delegate", "inner"]
        by_pair = {e.pair: e for e in s.entries("effect_completion")}
        assert by_pair["fx-delegate"].parent == d and s.branch()[-1].kind == "message"
        assert by_pair["fx-inner"].parent == progress.id  # the child's own end
        answered = [e for e in s.entries("message") if e.parent == by_pair["fx-inner"].id]
        assert [a.content["tool_call_id"] for a in answered] == ["c1"]  # type: ignore[index]
        # The parent's call is answered once, on its own branch; the grandchild's branch
        # is as it was.
        results = [e.id for e in s.entries("message") if e.pair == "p1"]
        assert results == [s.branch()[-1].id]  # its call message is paired by calls_pair
        assert not [e for e in s.entries() if e.parent == g]
