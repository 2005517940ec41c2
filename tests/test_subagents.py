"""Sub-agents (smith.plugins.agents, docs/agents.md): the task tool runs a child agent on
a fresh context, on a branch of the session forked at the call; definitions from every
folder; the depth and tree limits as error results; cancellation; concurrent children;
the branch in the session, in replay and in the app; the child's cost in the parent's.
Seen as a model sees it: `smith eval --json` with the scripted provider (one response per
request, parent and child alike, in the order they ask) and its requests log."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import smith
from smith.session import Session
from tests.conftest import Result, SmithEnv

Eval = tuple[list[dict[str, Any]], list[dict[str, Any]], Result]


def _eval(
    senv: SmithEnv,
    smith_process: Callable[..., Result],
    cwd: Path,
    responses: list[dict[str, Any]],
    prompt: str = "PARENT-PROMPT delegate",
    *,
    pricing: dict[str, float] | None = None,
    name: str = "run",
) -> Eval:
    """The requests the model got, the events printed, and the result."""
    log = senv.root / f"{name}.jsonl"
    script = senv.root / f"{name}.json"
    data: dict[str, Any] = {"responses": responses, "requests_log": str(log)}
    if pricing is not None:
        data["pricing"] = pricing
    script.write_text(json.dumps(data))
    r = smith_process("eval", "--json", "--model", f"scripted:{script}", prompt, cwd=cwd)
    sent = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    events = [json.loads(x) for x in r.out.splitlines() if x.startswith("{")]
    return sent, events, r


def _task(prompt: str, call: str = "call_task", **more: str) -> dict[str, Any]:
    return {"name": "task", "arguments": {"prompt": prompt, **more}, "id": call}


def _end(events: list[dict[str, Any]], call: str) -> dict[str, Any]:
    [end] = [e for e in events if e["type"] == "tool_end" and e["tool_call_id"] == call]
    return end


def _child_events(events: list[dict[str, Any]], call: str) -> list[dict[str, Any]]:
    """The child's events, as the task call reported them live."""
    return [
        e["update"]["child"]
        for e in events
        if e["type"] == "tool_update" and e["tool_call_id"] == call and "child" in e["update"]
    ]


def _said(request: dict[str, Any]) -> str:
    return json.dumps(request["messages"])


def _tools(request: dict[str, Any]) -> list[str]:
    return [t["name"] for t in request["tools"]]


def _result(events: list[dict[str, Any]]) -> dict[str, Any]:
    return next(e for e in reversed(events) if e["type"] == "result")


@pytest.fixture
def project(senv: SmithEnv) -> Path:
    path = senv.make_project()
    (path / "a.txt").write_text("alpha\n")
    return path


def _session(senv: SmithEnv, events: list[dict[str, Any]]) -> Session:
    sid = _result(events)["session"]["id"]
    [path] = (senv.data_home / "sessions").glob(f"*/{sid}.smith")
    return Session.load(str(path))


# -- a child that uses tools, on a fresh context, on its own branch ---------------------------


def test_a_child_uses_tools_on_a_fresh_context_and_its_branch_hangs_under_the_call(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    sent, events, r = _eval(senv, smith_process, project, [
        {"tool_calls": [_task("list the files", agent="explore", description="look around")]},
        {"tool_calls": [{"name": "ls", "arguments": {"path": "."}, "id": "call_ls"}]},
        {"text": "CHILD-ANSWER: a.txt is here"},
        {"text": "parent done"},
    ])  # fmt: skip
    assert r.code == 0, r.err
    end = _end(events, "call_task")
    assert not end["is_error"] and end["result"]["text"] == "CHILD-ANSWER: a.txt is here"
    assert end["result"]["details"]["agent"] == "explore"
    assert _result(events)["text"] == "parent done"
    # Requests 2 and 3 are the child's: its prompt, never the parent's; explore's tools.
    child = sent[1:3]
    assert all("list the files" in _said(q) and "PARENT-PROMPT" not in _said(q) for q in child)
    assert set(_tools(child[0])) == {"read", "grep", "find", "ls"}
    assert "exploring a codebase" in json.dumps(child[0]["system"])
    assert "task" in _tools(sent[0]) and "CHILD-ANSWER" in _said(sent[3])
    # Live progress: the child's own events under the call, its ls among them.
    live = _child_events(events, "call_task")
    ls_end = [e for e in live if e["type"] == "tool_end" and e["name"] == "ls"]
    assert ls_end and "a.txt" in ls_end[0]["result"]["text"]
    # The child's conversation is a branch forked at the task call's effect intent.
    s = _session(senv, events)
    [intent] = [e for e in s.entries("effect_intent") if e.content["name"] == "task"]  # type: ignore[index]
    parent = {e.id for e in s.branch()}
    leaf = end["result"]["details"]["branch"]["leaf"]
    assert end["result"]["details"]["branch"]["at"] == intent.id
    mine = s.entries_between(intent.id, leaf)
    assert mine and not {e.id for e in mine} & parent
    assert mine[0].parent == intent.id
    texts = [smith.text_of(e.content) for e in mine if e.kind == "message"]  # type: ignore[arg-type]
    assert "list the files" in texts and "CHILD-ANSWER: a.txt is here" in texts
    # `smith sessions show` draws it under the call.
    shown = smith_process("sessions", "show", s.id, cwd=project)
    lines = shown.out.splitlines()
    at = next(i for i, line in enumerate(lines) if "effect_intent: task" in line)
    assert lines[at + 1].startswith("    ")  # the child's first entry, indented under it


def test_replay_plays_the_childs_branch_nested_under_the_call(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    _, events, r = _eval(senv, smith_process, project, [
        {"tool_calls": [_task("list the files")]},
        {"tool_calls": [{"name": "ls", "arguments": {"path": "."}, "id": "call_ls"}]},
        {"text": "CHILD-ANSWER-55"},
        {"text": "parent done"},
    ])  # fmt: skip
    assert r.code == 0, r.err
    sid = _result(events)["session"]["id"]
    text = smith_process("replay", "--instant", sid, cwd=project)
    assert text.code == 0, text.err
    out = text.out.splitlines()
    nested = [line for line in out if line.startswith("  │ ")]
    assert any("> list the files" in line for line in nested)
    assert any("→ ls" in line for line in nested) and any("CHILD-ANSWER-55" in x for x in nested)
    assert out.index(next(x for x in out if x.startswith("→ task"))) < out.index(nested[0])
    assert out.index(nested[-1]) < out.index(next(x for x in out if x.startswith("✓ task")))
    played = smith_process("replay", "--instant", "--json", sid, cwd=project)
    replayed = [json.loads(x) for x in played.out.splitlines() if x.startswith("{")]
    # The same child events, in the same order, as the live run reported them.
    kinds = ("message_end", "tool_start", "tool_end", "agent_end")

    def seen(evs: list[dict[str, Any]]) -> list[tuple[str, str]]:
        return [(e["type"], smith.text_of(e["message"]) if "message" in e and e["type"] ==
                 "message_end" else str(e.get("name") or e.get("stop")))
                for e in _child_events(evs, "call_task") if e["type"] in kinds]  # fmt: skip

    assert seen(replayed) == seen(events) and len(seen(events)) >= 5


# -- limits ------------------------------------------------------------------------------------


def test_the_depth_limit_is_an_error_result_the_child_reads(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    """Default max-depth 3: the parent's child is level 1, its grandchild 2, then 3; a
    task call at level 3 is refused and that child goes on."""
    sent, events, r = _eval(senv, smith_process, project, [
        {"tool_calls": [_task("level one", "t1")]},
        {"tool_calls": [_task("level two", "t2")]},
        {"tool_calls": [_task("level three", "t3")]},
        {"tool_calls": [_task("level four", "t4")]},
        {"text": "three saw the limit"},
        {"text": "two done"},
        {"text": "one done"},
        {"text": "parent done"},
    ])  # fmt: skip
    assert r.code == 0, r.err
    assert len(sent) == 8 and not any("level four" in _said(q) for q in sent[:4])
    refused = [m for m in sent[4]["messages"] if m.get("role") == "tool_result"]
    assert refused[-1]["is_error"] and "the limit is 3" in json.dumps(refused[-1])
    assert _end(events, "t1")["result"]["text"] == "one done"
    assert _result(events)["text"] == "parent done"


def test_the_tree_turn_limit_stops_the_running_child_and_refuses_the_next(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    senv.write_user_config("plugins {\n    agents {\n        max-turns 2\n    }\n}\n")
    ls = {"name": "ls", "arguments": {"path": "."}}
    sent, events, r = _eval(senv, smith_process, project, [
        {"tool_calls": [_task("loop")]},
        {"tool_calls": [{**ls, "id": "c1"}]},
        {"tool_calls": [{**ls, "id": "c2"}]},
        {"tool_calls": [_task("again", "call_again")]},
        {"text": "parent done"},
    ])  # fmt: skip
    assert r.code == 0, r.err
    stopped = _end(events, "call_task")
    assert stopped["is_error"] and "limit of 2 turns" in stopped["result"]["text"]
    refused = _end(events, "call_again")
    assert refused["is_error"] and "no more can start" in refused["result"]["text"]
    children = [q for q in sent if "PARENT-PROMPT" not in _said(q)]
    assert len(children) == 2 and all("loop" in _said(q) for q in children)  # none for "again"
    assert _result(events)["text"] == "parent done"


# -- concurrency and cancellation -------------------------------------------------------------

# Each child's command leaves a flag and waits for a second one: only children that run at
# the same time both see 2 (run one after the other, the first would give up and see 1).
_BOTH = (
    "mkdir -p flags && mktemp -p flags >/dev/null && for i in $(seq 600); do "
    '[ "$(ls flags | wc -l)" -ge 2 ] && break; sleep 0.05; done; echo "flags=$(ls flags | wc -l)"'
)


def test_two_task_calls_of_one_response_run_their_children_at_once(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    bash = {"name": "bash", "arguments": {"command": _BOTH}}
    _, events, r = _eval(senv, smith_process, project, [
        {"tool_calls": [_task("first", "ta"), _task("second", "tb")]},
        {"tool_calls": [bash]},
        {"tool_calls": [bash]},
        {"text": "child finished"},
        {"text": "child finished"},
        {"text": "parent done"},
    ])  # fmt: skip
    assert r.code == 0, r.err
    for call in ("ta", "tb"):
        assert _end(events, call)["result"]["text"] == "child finished"
        [out] = [e for e in _child_events(events, call) if e["type"] == "tool_end"]
        assert "flags=2" in out["result"]["text"]
    s = _session(senv, events)
    intents = {e.content["cause"]["tool_call"]: e.id for e in s.entries("effect_intent")  # type: ignore[index]
               if e.content["name"] == "task"}  # type: ignore[index]  # fmt: skip
    forks = {_end(events, c)["result"]["details"]["branch"]["at"] for c in ("ta", "tb")}
    assert forks == set(intents.values())  # each child at its own call's intent


def test_aborting_the_parent_aborts_its_running_child(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"responses": [
        {"tool_calls": [_task("wait")]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 60; echo never"},
                         "id": "call_sleep"}]},
        {"text": "never"},
    ]}))  # fmt: skip

    async def main() -> tuple[str, Session]:
        agent = smith.Agent(f"scripted:{script}", store=str(tmp_path / "store"),
                            cwd=str(project))  # fmt: skip
        started = asyncio.Event()

        def watch(event: dict[str, Any]) -> None:
            child = (
                event.get("update", {}).get("child", {}) if event["type"] == "tool_update" else {}
            )
            if child.get("type") == "tool_update":  # bash has begun (it reports its output)
                started.set()
            if child.get("type") == "tool_start" and child.get("name") == "bash":
                asyncio.get_running_loop().call_later(0.3, started.set)

        agent.on_event(watch)
        sending = asyncio.ensure_future(agent.send("go"))
        await asyncio.wait_for(started.wait(), 30)
        agent.abort()
        with pytest.raises(smith.AgentStopped) as stopped:
            await asyncio.wait_for(sending, 30)
        await agent.close()
        return stopped.value.stop, agent.session

    stop, session = asyncio.run(main())
    assert stop == "abort"
    s = Session.load(session.path)
    [sleep] = [e for e in s.entries("effect_intent") if e.content["name"] == "bash"]  # type: ignore[index]
    [done] = [e for e in s.entries("effect_completion") if e.pair == sleep.pair]
    assert done.content["outcome"] == "cancelled"  # type: ignore[index]
    child_ends = [smith.text_of(e.content) for e in s.entries("message")]  # type: ignore[arg-type]
    assert "never" not in child_ends
    assert sleep.id not in {e.id for e in s.branch()}  # on the child's branch only


# -- definitions -------------------------------------------------------------------------------


def _definition(folder: Path, name: str, body: str, extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(f"---\nname: {name}\ndescription: The {name} agent.\n{extra}---\n\n{body}\n")
    return path


def test_definitions_from_each_folder_give_the_child_its_prompt_and_tools(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    _definition(senv.config_home / "agents", "user-one", "USER-BODY", "tools: [read, ls]\n")
    _definition(project / ".smith" / "agents", "proj-one", "PROJ-BODY", "tools: grep, find\n")
    _definition(project / ".claude" / "agents", "claude-one", "CLAUDE-BODY",
                "tools: Read, Glob\nmodel: sonnet\n")  # fmt: skip
    assert smith_process("trust", cwd=project).code == 0
    sent, events, r = _eval(senv, smith_process, project, [
        {"tool_calls": [_task("u", "tu", agent="user-one")]},
        {"text": "from user-one"},
        {"tool_calls": [_task("p", "tp", agent="proj-one")]},
        {"text": "from proj-one"},
        {"tool_calls": [_task("c", "tc", agent="claude-one")]},
        {"text": "from claude-one"},
        {"text": "parent done"},
    ])  # fmt: skip
    assert r.code == 0, r.err
    task = next(t for t in sent[0]["tools"] if t["name"] == "task")
    for name in ("general", "explore", "user-one", "proj-one", "claude-one"):
        assert f"- {name}: " in task["description"]
    for i, body, tools in ((1, "USER-BODY", {"read", "ls"}), (3, "PROJ-BODY", {"grep", "find"}),
                           (5, "CLAUDE-BODY", {"read", "find"})):  # fmt: skip
        assert body in json.dumps(sent[i]["system"]) and set(_tools(sent[i])) == tools
        assert "PARENT-PROMPT" not in _said(sent[i])
    assert [_end(events, c)["result"]["text"] for c in ("tu", "tp", "tc")] == [
        "from user-one", "from proj-one", "from claude-one"]  # fmt: skip


def test_an_untrusted_projects_definitions_are_not_read(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    _definition(project / ".smith" / "agents", "proj-one", "PROJ-BODY")
    _, events, r = _eval(senv, smith_process, project, [
        {"tool_calls": [_task("p", agent="proj-one")]},
        {"text": "parent done"},
    ])  # fmt: skip
    assert r.code == 0, r.err
    end = _end(events, "call_task")
    assert end["is_error"] and "no agent named 'proj-one'" in end["result"]["text"]
    assert "general, explore" in end["result"]["text"]


def test_a_project_definition_changed_since_trust_is_not_used_until_trusted_again(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    """Trust approves a project's definitions as they are (smith.trust.approved_file):
    one rewritten after `smith trust` (a git pull) is left out, with a warning."""
    path = _definition(project / ".smith" / "agents", "proj-one", "PROJ-BODY")
    assert smith_process("trust", cwd=project).code == 0
    path.write_text("---\nname: proj-one\ndescription: rewritten.\n---\n\nEVIL-BODY\n")
    sent, events, r = _eval(senv, smith_process, project, [
        {"tool_calls": [_task("p", agent="proj-one")]},
        {"text": "parent done"},
    ])  # fmt: skip
    assert r.code == 0, r.err
    end = _end(events, "call_task")
    assert end["is_error"] and "no agent named 'proj-one'" in end["result"]["text"]
    assert "EVIL-BODY" not in json.dumps(sent)
    warned = json.dumps([e for e in events if e.get("type") == "ui"])
    assert "changed since you trusted the project" in warned
    assert smith_process("trust", cwd=project).code == 0
    _, events, r = _eval(senv, smith_process, project, [
        {"tool_calls": [_task("p", "again", agent="proj-one")]},
        {"text": "from proj-one"},
        {"text": "parent done"},
    ])  # fmt: skip
    assert _end(events, "again")["result"]["text"] == "from proj-one"


def test_bad_definitions_are_left_out_with_a_warning_naming_each(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    folder = senv.config_home / "agents"
    folder.mkdir(parents=True)
    (folder / "broken.md").write_text("---\nname: broken\ndescription: [unclosed\n---\nbody\n")
    (folder / "nodesc.md").write_text("---\nname: nodesc\n---\nbody\n")
    (folder / "badtools.md").write_text("---\nname: badtools\ndescription: x\ntools: 5\n---\n")
    (folder / "plain.md").write_text("just a prompt, no front matter\n")
    _definition(folder, "explore", "MY-EXPLORE")  # a user's own shadows the built-in
    _definition(folder / "nested", "ignored", "x")  # only the folder's own files
    sent, events, r = _eval(senv, smith_process, project, [
        {"tool_calls": [_task("x", agent="broken")]},
        {"tool_calls": [_task("y", "call_explore", agent="explore")]},
        {"text": "explored"},
        {"text": "parent done"},
    ])  # fmt: skip
    assert r.code == 0, r.err
    warned = [e["text"] for e in events if e.get("type") == "ui" and e.get("level") == "warning"]
    for name, why in (("broken.md", "not YAML"), ("nodesc.md", "no description"),
                      ("badtools.md", "tools are not a list"),
                      ("plain.md", "no front matter")):  # fmt: skip
        assert any(name in w and why in w for w in warned), (name, warned)
    assert "broken.md" in r.err  # smith's log too
    end = _end(events, "call_task")
    assert end["is_error"] and "no agent named 'broken'" in end["result"]["text"]
    assert "broken.md is not used" in end["result"]["text"]
    assert "MY-EXPLORE" in json.dumps(sent[2]["system"])
    assert "ignored" not in json.dumps(sent[0]["tools"])


# -- cost --------------------------------------------------------------------------------------


def _usage(i: int, o: int) -> dict[str, int]:
    return {"input": i, "output": o, "cache_read": 0, "cache_write": 0}


def test_the_childs_cost_is_summed_into_the_parents_and_unknown_stays_unknown(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    pricing = {"input": 1.0, "output": 10.0, "cache_read": 0.0, "cache_write": 0.0}
    _, events, r = _eval(senv, smith_process, project, [
        {"tool_calls": [_task("x")], "usage": _usage(1000, 10)},
        {"text": "child", "usage": _usage(200, 20)},
        {"text": "parent done", "usage": _usage(3000, 30)},
    ], pricing=pricing)  # fmt: skip
    assert r.code == 0, r.err
    cost = _result(events)["cost"]
    assert cost["tokens"]["input"] == 4200 and cost["tokens"]["output"] == 60
    assert cost["complete"] and cost["usd"] == pytest.approx(0.0048)
    _, events, r = _eval(senv, smith_process, project, [
        {"tool_calls": [_task("x")], "usage": _usage(1000, 10)},
        {"text": "child"},  # no usage reported: unknown, never 0
        {"text": "parent done", "usage": _usage(3000, 30)},
    ], pricing=pricing, name="unknown")  # fmt: skip
    cost = _result(events)["cost"]
    assert not cost["complete"] and cost["unknown"]["input"] == 1
    assert cost["tokens"]["input"] == 4000


# -- the app -----------------------------------------------------------------------------------


def test_the_app_shows_the_child_live_under_the_call_then_folded_and_expandable(
    senv: SmithEnv, project: Path
) -> None:
    from smith.frontends.tui._transcript import Transcript
    from tests.app_kit import assembled_app
    from tests.test_tui import _settle, _type, visible

    wait = "while [ ! -e go ]; do sleep 0.05; done; echo CHILD-SAW-GO"
    script = senv.root / "app.json"
    script.write_text(json.dumps({"responses": [
        {"tool_calls": [_task("do the job", description="the job")]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": wait}, "id": "call_wait"}]},
        {"text": "CHILD-FINAL answer"},
        {"text": "parent done"},
    ]}))  # fmt: skip
    make, _ = assembled_app(senv, project, f"scripted:{script}")

    async def until(pilot: Any, what: str, app: Any) -> None:
        for _ in range(1500):
            if what in visible(app):
                return
            await pilot.pause(0.02)
        raise AssertionError(f"{what!r} not shown:\n{visible(app)}")

    async def main() -> None:
        app = make()
        async with app.run_test(size=(110, 50)) as pilot:
            await _type(pilot, "delegate")
            await until(pilot, "│ → bash", app)  # live: the child's step under the call
            assert "… task the job" in visible(app)
            (project / "go").write_text("")
            await _settle(app)
            await until(pilot, "parent done", app)
            shown = visible(app)
            assert "the sub-agent's conversation" in shown and "CHILD-SAW-GO" not in shown
            assert "✓ task the job" in shown  # its finished line names the task
            await pilot.press("ctrl+o")
            await pilot.pause()
            t = app.query_one(Transcript)
            t.scroll_to(y=0, animate=False, immediate=True)
            await pilot.pause()
            shown = visible(app)
            assert "CHILD-SAW-GO" in shown and "you do the job" in shown, shown  # the child's

    asyncio.run(asyncio.wait_for(main(), 60))


def test_a_childs_question_goes_to_the_parents_frontend(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    """Under `approval untrusted` (task allowed by a rule) the child's write asks: eval,
    the frontend attached to the parent, refuses it, so the write is denied."""
    senv.write_user_config('approval "untrusted"\napproval { allow "task"; }\n')
    write = {"name": "write", "arguments": {"path": "out.txt", "content": "x"}, "id": "w"}
    _, events, r = _eval(senv, smith_process, project, [
        {"tool_calls": [_task("write it")]},
        {"tool_calls": [write]},
        {"text": "could not write"},
        {"text": "parent done"},
    ])  # fmt: skip
    assert r.code == 0, r.err
    live = _child_events(events, "call_task")
    [refused] = [e for e in live if e["type"] == "intent_refused"]
    assert refused["frontend"] == "eval"
    [denied] = [e for e in live if e["type"] == "tool_end" and e["name"] == "write"]
    assert denied["is_error"] and not (project / "out.txt").exists()
