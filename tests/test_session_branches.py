"""A session written on several branches at once (issue 28, "Branches with their own
cursor"): a Branch cursor appends under its own leaf and never moves the file's selection;
a tool starts a child runtime on a new branch while the parent waits; and kills or
truncation of a file holding interleaved branches leave both branches' prefixes."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import smith
from smith.session import Branch, Session, dump

# -- the cursor --------------------------------------------------------------------------


def test_a_branch_appends_under_its_own_leaf_and_never_moves_the_selection(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "s.smith")
    with Session.create(path) as s:
        root = s.append("message", {"n": 0})
        call = s.append("message", {"n": 1})
        child = Branch(s, call.id)
        c1 = child.append("message", {"c": 1})
        p2 = s.append("message", {"n": 2})  # the parent goes on meanwhile
        c2 = child.append("message", {"c": 2}, durable=True)
        assert (c1.parent, c2.parent, p2.parent) == (call.id, c1.id, call.id)
        assert s.leaf == p2.id and child.leaf == c2.id and child.session is s
        assert [e.id for e in child.branch()] == [root.id, call.id, c1.id, c2.id]
        assert [e.id for e in s.branch()] == [root.id, call.id, p2.id]
        child.close()  # nothing: the session owns the file
        s.append("message", {"n": 3})
    with Session.open(path) as again:  # resume continues the parent's branch
        assert again.entry(again.leaf).content == {"n": 3}
        assert again.children()[call.id] == [c1.id, p2.id]


def test_the_selection_survives_a_branch_written_last(tmp_path: Path) -> None:
    path = str(tmp_path / "s.smith")
    with Session.create(path) as s:
        a = s.append("message", {"n": 0})
        b = s.append("message", {"n": 1})
        s.select(a.id)  # an explicit selection, then a branch written after it
        child = Branch(s, b.id)
        for i in range(3):
            child.append("message", {"c": i})
        assert s.leaf == a.id
    with Session.open(path) as again:
        assert again.leaf == a.id
        # An old-style append with a parent of its own still selects it.
        d = again.append("message", {"n": 2}, parent=b.id)
        assert again.leaf == d.id
    assert Session.load(path).leaf == d.id


def test_an_apart_branch_reads_only_its_own_conversation(tmp_path: Path) -> None:
    with Session.create(str(tmp_path / "s.smith")) as s:
        s.append("message", {"n": 0})
        call = s.append("message", {"n": 1})
        child = Branch(s, call.id, apart=True)
        assert child.branch() == [] and child.compaction_boundary() is None
        c1 = child.append("message", {"c": 1})
        c2 = child.append("compaction", {"summary": "x"})
        assert [e.id for e in child.branch()] == [c1.id, c2.id]
        assert child.compaction_boundary() == c2.id
        assert [e.id for e in child.entries_between(c1.id) or []] == [c2.id]
        nested = Branch(child, c2.id, apart=True)  # a child's child: the same file
        n1 = nested.append("message", {"g": 1})
        assert nested.session is s and [e.id for e in nested.branch()] == [n1.id]
        assert s.entry(n1.id).parent == c2.id and s.leaf == call.id


def test_forks_clones_and_dumps_keep_which_entry_is_selected(tmp_path: Path) -> None:
    with Session.create(str(tmp_path / "s.smith")) as s:
        s.append("message", {"n": 0})
        call = s.append("message", {"n": 1})
        child = Branch(s, call.id)
        c1 = child.append("message", {"c": 1})
        with s.fork(str(tmp_path / "f.smith"), at=c1.id) as forked:
            assert forked.leaf == c1.id
        assert Session.load(str(tmp_path / "f.smith")).leaf == c1.id
        with child.clone(str(tmp_path / "c.smith")) as cloned:
            assert cloned.leaf == call.id
        assert Session.load(str(tmp_path / "c.smith")).leaf == call.id
        header = json.loads(next(iter(dump(s))))
        assert header["leaf"] == call.id


# -- a child runtime from a library caller's tool --------------------------------------------


def _script(path: Path, responses: list[dict[str, Any]]) -> str:
    path.write_text(json.dumps({"responses": responses}))
    return f"scripted:{path}"


def test_a_tool_runs_a_child_on_its_own_branch_while_the_parent_waits(tmp_path: Path) -> None:
    child_model = _script(
        tmp_path / "child.json",
        [
            {"tool_calls": [{"name": "write",
                             "arguments": {"path": "out.txt", "content": "from the child"}}]},
            {"text": "wrote out.txt"},
        ],
    )  # fmt: skip
    parent_model = _script(
        tmp_path / "parent.json",
        [
            {"tool_calls": [{"name": "delegate", "arguments": {"task": "write out.txt"}}]},
            {"text": "the child is done"},
        ],
    )
    seen: dict[str, Any] = {}

    @smith.tool
    async def delegate(ctx: smith.ToolContext, task: str) -> str:
        """Hand a task to a child agent."""
        assert ctx.session is not None
        seen["parent_leaf"] = ctx.session.leaf
        run = await ctx.spawn_child(
            task, tools=smith.builtin_tools(), system_prompt="You are a child.",
            limits=smith.Limits(max_iterations=4), model=child_model,
        )  # fmt: skip
        seen["run"] = run
        seen["parent_leaf_after"] = ctx.session.leaf
        return str(run["text"])

    store = str(tmp_path / "store")
    project = tmp_path / "project"
    project.mkdir()

    async def main() -> str:
        agent = smith.Agent(parent_model, tools=[delegate], store=store, cwd=str(project))
        message = await agent.send("delegate it")
        path = agent.session.path
        await agent.close()
        assert smith.text_of(message) == "the child is done"
        return path

    path = asyncio.run(main())
    assert (project / "out.txt").read_text() == "from the child"
    run = seen["run"]
    assert run["stop"] == "end" and run["text"] == "wrote out.txt"
    assert seen["parent_leaf"] == seen["parent_leaf_after"] == run["at"]

    s = Session.load(path)
    fork = s.entry(run["at"])
    assert fork.kind == "effect_intent"  # the delegate call's own entry
    parent_branch = s.branch()
    child_branch = s.branch(run["leaf"])
    shared = [e.id for e in parent_branch[: len(parent_branch)]]
    assert fork.id in shared and fork.id in [e.id for e in child_branch]
    # The child's branch: its prompt, its write call (with its own effect records),
    # the result and its answer, each under the one before, starting at the fork.
    mine = child_branch[[e.id for e in child_branch].index(fork.id) + 1 :]
    assert mine[0].parent == fork.id
    for before, after in itertools.pairwise(mine):
        assert after.parent == before.id
    kinds = [e.kind for e in mine]
    assert "effect_intent" in kinds and "effect_completion" in kinds
    messages = [e.content for e in mine if e.kind == "message"]
    assert messages[0]["role"] == "user"
    assert any(m.get("role") == "tool_result" for m in messages)
    assert messages[-1]["role"] == "assistant"
    # None of the child's entries is on the parent's branch, and the file's selection is
    # the parent's final answer.
    assert not {e.id for e in mine} & {e.id for e in parent_branch}
    last = parent_branch[-1].content
    assert isinstance(last, dict) and last["role"] == "assistant"
    assert smith.text_of(last) == "the child is done"
    # The parent's tool result came after the fork point, on the parent's branch.
    completion = next(
        e for e in parent_branch if e.kind == "effect_completion" and e.pair == fork.pair
    )
    assert s.entry(completion.parent or "").id in {e.id for e in parent_branch}

    async def resume(model: str) -> str:
        agent = smith.Agent(model, tools=[delegate], session=Session.open(path), cwd=str(project))
        message = await agent.send("and now?")
        await agent.close()
        return smith.text_of(message)

    # A new scripted provider starts its script again: the resumed one has its own.
    again = _script(tmp_path / "parent2.json", [{"text": "resumed on the parent's branch"}])
    assert asyncio.run(resume(again)) == "resumed on the parent's branch"
    s = Session.load(path)
    branch = s.branch()
    assert smith.text_of(branch[-1].content) == "resumed on the parent's branch"  # type: ignore[arg-type]
    assert parent_branch[-1].id in {e.id for e in branch}
    assert not {e.id for e in mine} & {e.id for e in branch}


# -- kills and truncation with interleaved branches --------------------------------------------

_WRITER = r"""
import random, sys
from smith.session import Branch, Session
path, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
s = Session.open(path)
fork = s.leaf
cursors = {"a": s, "b": Branch(s, fork)}
n = {"a": 0, "b": 0}
print("ready", flush=True)
while True:
    name = rng.choice("ab")
    size = rng.choice((10, 200, 3000))  # some compressed, some not
    cursors[name].append("message", {"branch": name, "n": n[name], "pad": "x" * size},
                         durable=rng.random() < 0.3)
    n[name] += 1
"""


def _check_recovered(path: str, fork: str) -> tuple[int, int]:
    """Both branches form valid parent chains from the fork point, numbered without gaps;
    the selection is branch a's last entry. Returns how many entries each kept."""
    s = Session.open(path)  # cuts a torn tail: the file stays appendable
    try:
        counts = {}
        tips: dict[str, str] = {}
        for entry in s.entries("message"):
            content = entry.content
            if not isinstance(content, dict) or "branch" not in content:
                continue
            name = content["branch"]
            expected_parent = tips.get(name, fork)
            assert entry.parent == expected_parent, (name, content["n"])
            assert content["n"] == counts.get(name, 0)
            counts[name] = content["n"] + 1
            tips[name] = entry.id
        assert s.leaf == tips.get("a", fork)
        assert s.damage is None or "unfinished frame" in s.damage
        # Still appendable on both: the next entries land where each branch ended.
        tip_a = s.append("message", {"after": True})
        assert tip_a.parent == tips.get("a", fork)
        if "b" in tips:
            assert Branch(s, tips["b"]).append("message", {}).parent == tips["b"]
        return counts.get("a", 0), counts.get("b", 0)
    finally:
        s.close()


def _new_file(tmp_path: Path, name: str) -> tuple[str, str]:
    path = str(tmp_path / name)
    with Session.create(path) as s:
        fork = s.append("message", {"root": True}).id
    return path, fork


def test_kill_9_while_two_branches_are_written_leaves_both_recoverable(tmp_path: Path) -> None:
    rng = random.Random(28)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    totals = [0, 0]
    for i in range(6):
        path, fork = _new_file(tmp_path, f"k{i}.smith")
        proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER, path, str(rng.randrange(1 << 30))],
            stdout=subprocess.PIPE, env=env,
        )  # fmt: skip
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"ready"
        time.sleep(rng.uniform(0.0, 0.15))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        a, b = _check_recovered(path, fork)
        totals[0] += a
        totals[1] += b
    assert totals[0] > 0 and totals[1] > 0  # the kills did land while both were written


def _interleaved(path: str, fork: str, count: int, seed: int) -> None:
    rng = random.Random(seed)
    with Session.open(path) as s:
        cursors = {"a": s, "b": Branch(s, fork)}
        n = {"a": 0, "b": 0}
        for _ in range(count):
            name = rng.choice("ab")
            pad = "y" * rng.choice((5, 100, 2500))
            cursors[name].append("message", {"branch": name, "n": n[name], "pad": pad})
            n[name] += 1
        Branch(s, fork).append("message", {"not counted": True})  # aside, written last


def _frame_ends(data: bytes) -> list[int]:
    ends, at = [], 16
    while at < len(data):
        at += 16 + int.from_bytes(data[at : at + 4], "little")
        ends.append(at)
    return ends


def test_an_interleaved_file_cut_anywhere_keeps_both_branches_prefixes(tmp_path: Path) -> None:
    path, fork = _new_file(tmp_path, "t.smith")
    _interleaved(path, fork, 24, seed=7)
    data = Path(path).read_bytes()
    ends = _frame_ends(data)
    assert ends[-1] == len(data)
    rng = random.Random(11)
    cuts = sorted({*ends, *(rng.randrange(16, len(data)) for _ in range(40))})
    cut_file = tmp_path / "cut.smith"
    for cut in cuts:
        if cut < ends[1]:  # the session frame and the fork entry stay
            continue
        cut_file.write_bytes(data[:cut])
        for kept in tmp_path.glob("cut.smith.torn-at-*"):
            kept.unlink()
        a, b = _check_recovered(str(cut_file), fork)
        # Every entry wholly before the cut was recovered (the frames: the session
        # info, the fork entry, the 24 numbered ones, one more written aside).
        whole = sum(1 for e in ends if e <= cut)
        assert a + b == min(whole - 2, 24)


@pytest.mark.parametrize("seed", [1, 2])
def test_a_parent_and_a_child_cursor_interleaving_resume_at_the_parent(
    tmp_path: Path, seed: int
) -> None:
    path, fork = _new_file(tmp_path, f"r{seed}.smith")
    _interleaved(path, fork, 30, seed)
    a, b = _check_recovered(path, fork)
    assert a + b == 30


_AGENT = r"""
import asyncio, sys
import smith
store, project, parent_model, child_model = sys.argv[1:5]

@smith.tool
async def delegate(ctx: smith.ToolContext, task: str) -> str:
    '''Hand a task to a child agent.'''
    run = await ctx.spawn_child(task, tools=smith.builtin_tools(), model=child_model)
    return str(run["text"])

async def main() -> None:
    agent = smith.Agent(parent_model, tools=[delegate], store=store, cwd=project, name="k")
    print(agent.session.path, flush=True)
    await agent.send("go")
    await agent.close()
    print("done", flush=True)

asyncio.run(main())
"""


async def _resume(path: str, project: Path, model: str) -> list[str]:
    """Send one more prompt in the session at `path`: the texts of the branch it ends on."""
    agent = smith.Agent(model, session=Session.open(path), cwd=str(project), tools=[])
    message = await agent.send("again")
    branch = agent.session.branch()
    await agent.close()
    assert smith.text_of(message) == "resumed"
    return [smith.text_of(e.content) for e in branch if e.kind == "message"]  # type: ignore[arg-type]


def test_kill_9_of_a_parent_waiting_on_its_child_resumes_the_parent(tmp_path: Path) -> None:
    """A runtime whose tool runs a child (writing files, slowly) is killed at a random
    moment: the file reopens with every entry linked, the selection on the parent's
    branch (never the child's), and a resumed agent continues the parent's branch."""
    writes = [
        {"delay_ms": 4, "tool_calls": [{"name": "write",
                                        "arguments": {"path": f"f{i}.txt", "content": "x"}}]}
        for i in range(6)
    ]  # fmt: skip
    child_model = _script(tmp_path / "child.json", [*writes, {"text": "wrote them"}])
    parent_model = _script(
        tmp_path / "parent.json",
        [{"tool_calls": [{"name": "delegate", "arguments": {"task": "write files"}}]},
         {"text": "the child is done"}],
    )  # fmt: skip
    rng = random.Random(2028)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    children_seen = 0
    for i in range(4):
        project = tmp_path / f"p{i}"
        project.mkdir()
        proc = subprocess.Popen(
            [sys.executable, "-c", _AGENT, str(tmp_path / "store"), str(project),
             parent_model, child_model],
            stdout=subprocess.PIPE, env=env,
        )  # fmt: skip
        assert proc.stdout is not None
        path = proc.stdout.readline().decode().strip()
        time.sleep(rng.uniform(0.05, 0.6))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()

        s = Session.open(path)
        try:
            records = s.records
            assert all(records.parent(k) != -2 for k in range(len(s)))  # none orphaned
            assert s.damage is None or "unfinished frame" in s.damage
            on_parent = s.branch()
            before = [smith.text_of(e.content) for e in on_parent if e.kind == "message"]  # type: ignore[arg-type]
            assert "write files" not in before  # the child's prompt is never selected
            for e in s.entries("message"):
                if smith.text_of(e.content) == "write files":  # type: ignore[arg-type]
                    children_seen += 1
                    fork = s.entry(e.parent or "")
                    while fork.kind != "effect_intent":  # the child's environment note
                        fork = s.entry(fork.parent or "")
                    assert isinstance(fork.content, dict) and fork.content["name"] == "delegate"
        finally:
            s.close()

        again = _script(tmp_path / f"again{i}.json", [{"text": "resumed"}])
        texts = asyncio.run(_resume(path, project, again))
        assert texts[-2:] == ["again", "resumed"] and "write files" not in texts
        assert texts[: len(before)] == before  # the parent's branch, continued
    assert children_seen > 0  # some kills landed while the child was running


def test_a_childs_compaction_starts_its_context_where_it_says(tmp_path: Path) -> None:
    from smith.runtime._context import ContextCache

    def user(text: str) -> dict[str, object]:
        return {"role": "user", "content": [{"type": "text", "text": text}]}

    with Session.create(str(tmp_path / "s.smith")) as s:
        for i in range(5):
            s.append("message", user(f"parent {i}"))
        child = Branch(s, s.leaf, apart=True)
        ids = [child.append("message", user(f"child {i}")).id for i in range(4)]
        child.append("compaction", {"summary": "so far", "first_kept": ids[2]})
        child.append("message", user("child 4"))
        got = [smith.text_of(m) for _, m in ContextCache().get(child)]  # type: ignore[arg-type]
        assert got[1:] == ["child 2", "child 3", "child 4"] and "so far" in got[0]
        assert [smith.text_of(m) for _, m in ContextCache().get(s)][-1] == "parent 4"  # type: ignore[arg-type]
