"""The hook events of the plugin contract (smith.sdk HOOKS) and session_start, through
the runtime with the scripted provider: what each decision does to the files, to what
the model is sent next, and to what the session records."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from smith.effects import ToolContext, builtin_tools
from smith.runtime import Limits, Runtime
from smith.sdk import (
    Allow,
    AppendSystemPrompt,
    DenyCall,
    Enqueue,
    HandleInput,
    Plugin,
    Question,
    ReplaceResult,
    RewriteArguments,
    TransformInput,
)
from smith.session import Session
from tests.conftest import Result, SmithEnv
from tests.runtime_kit import World, messages, run

WRITE_A = {"tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "A"}}]}
READ_APP = {"tool_calls": [{"name": "read", "arguments": {"path": "src/app.py"}}]}
DONE = {"text": "done"}


class Scripted:
    """A scripted model (docs/scripted.md) whose requests are logged."""

    def __init__(self, root: Path, name: str, responses: Sequence[dict[str, Any]]) -> None:
        self.script = root / f"{name}.json"
        self.log = root / f"{name}.requests.jsonl"
        self.script.write_text(
            json.dumps({"responses": list(responses), "requests_log": self.log.name})
        )
        self.model = f"scripted:{self.script}"

    def requests(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def results(self, request: int) -> list[dict[str, Any]]:
        """The tool results the model was sent in request `request`."""
        sent = self.requests()[request]["messages"]
        return [m for m in sent if m["role"] == "tool_result"]


def converse(
    w: World,
    model: Scripted,
    plugins: Sequence[Plugin],
    *,
    prompts: Sequence[str] = ("go",),
    session: Session | None = None,
) -> Runtime:
    async def main() -> Runtime:
        on = session or w.session
        ctx = ToolContext(root=str(w.project), cwd=str(w.project), session=on,
                          spill_dir=str(w.root / "out"))  # fmt: skip
        rt = Runtime(on, model=model.model, tools=list(builtin_tools().values()), context=ctx,
                     plugins=plugins, limits=Limits(retry_delay=0.001))  # fmt: skip
        rt.on_event(w._seen)
        for text in prompts:
            rt.prompt(text)
            await rt.wait_idle()
        await rt.close()
        return rt

    result: Runtime = run(main)
    return result


def on(event: str, handler: Any, name: str = "guard") -> Plugin:
    return Plugin(name, handlers={event: handler})


def errors(w: World) -> list[dict[str, Any]]:
    return [e["diagnostic"] for e in w.of("error")]


def resumed(w: World) -> Session:
    """The session as a later process opens it to go on (the first one closed)."""
    w.session.close()
    return Session.open(w.path)


def kinds(w: World, kind: str) -> list[Any]:
    return [e.content for e in w.reopened().entries(kind)]


def results(w: World) -> list[dict[str, Any]]:
    return [m for m in messages(w.reopened()) if m["role"] == "tool_result"]


# -- tool_call ---------------------------------------------------------------------------


def test_a_denied_call_does_not_run_and_the_model_is_told_why(tmp_path: Path) -> None:
    w = World(tmp_path)
    model = Scripted(tmp_path, "s", [WRITE_A, DONE])
    seen: list[dict[str, Any]] = []

    def guard(event: dict[str, Any], view: Any) -> list[Any]:
        seen.append(event)
        return [DenyCall("writing is switched off here")]

    converse(w, model, [on("tool_call", guard)])
    assert not (w.project / "a.txt").exists()
    assert seen[0]["name"] == "write" and seen[0]["arguments"] == {"path": "a.txt", "content": "A"}
    (sent,) = model.results(1)  # the next request carries the call's error result
    text = sent["content"][0]["text"]
    assert sent["is_error"] is True
    assert "writing is switched off here" in text and "'guard'" in text
    (recorded,) = results(w)
    assert recorded["denied"] == {"plugin": "guard", "reason": "writing is switched off here"}
    assert recorded["mutation"] == "not-applied" and recorded["outcome"] == "error"
    assert kinds(w, "effect_intent") == []  # it never reached the effect boundary
    assert w.of("tool_end")[0]["result"]["mutation"] == "not-applied"
    assert [e["stop"] for e in w.of("agent_end")] == ["end"]


def test_a_deny_wins_over_allows_and_rewrites_without_a_conflict(tmp_path: Path) -> None:
    w = World(tmp_path)
    model = Scripted(tmp_path, "s", [WRITE_A, DONE])
    plugins = [
        on("tool_call", lambda e, v: [Allow()], "allows"),
        on("tool_call", lambda e, v: [RewriteArguments({"path": "b.txt", "content": "B"})], "rw"),
        on("tool_call", lambda e, v: [DenyCall("first")], "deny1"),
        on("tool_call", lambda e, v: DenyCall("second"), "deny2"),
        on("tool_call", lambda e, v: asked.append(e["name"]), "asker"),
    ]
    asked: list[str] = []
    converse(w, model, plugins)
    assert not (w.project / "a.txt").exists() and not (w.project / "b.txt").exists()
    assert errors(w) == []
    assert results(w)[0]["denied"] == {"plugin": "deny1", "reason": "first"}
    assert asked == []  # the first deny ends the review: nobody after it is asked


def test_a_rewrite_is_reviewed_again_by_the_plugins_before_it(tmp_path: Path) -> None:
    """Plugins after a rewriter review the rewritten call; those before it are asked
    again once the arguments changed, and may deny what now would run."""
    w = World(tmp_path)
    model = Scripted(tmp_path, "s", [WRITE_A, DONE])
    seen: list[tuple[str, str]] = []

    def guard(event: dict[str, Any], view: Any) -> Any:
        seen.append(("guard", event["arguments"]["path"]))
        return DenyCall("not b.txt") if event["arguments"]["path"] == "b.txt" else None

    def redirect(event: dict[str, Any], view: Any) -> Any:
        seen.append(("redirect", event["arguments"]["path"]))
        return RewriteArguments({**event["arguments"], "path": "b.txt"})

    def after(event: dict[str, Any], view: Any) -> None:
        seen.append(("after", event["arguments"]["path"]))

    plugins = [on("tool_call", guard, "guard"), on("tool_call", redirect, "redirect"),
               on("tool_call", after, "after")]  # fmt: skip
    converse(w, model, plugins)
    assert not (w.project / "a.txt").exists() and not (w.project / "b.txt").exists()
    assert seen == [("guard", "a.txt"), ("redirect", "a.txt"), ("after", "b.txt"),
                    ("guard", "b.txt")]  # fmt: skip
    assert results(w)[0]["denied"] == {"plugin": "guard", "reason": "not b.txt"}


def test_a_rewrite_runs_the_call_with_the_new_arguments(tmp_path: Path) -> None:
    w = World(tmp_path)
    model = Scripted(tmp_path, "s", [WRITE_A, DONE])

    def redirect(event: dict[str, Any], view: Any) -> list[Any]:
        return [RewriteArguments({**event["arguments"], "path": "b.txt"})]

    converse(w, model, [on("tool_call", redirect, "redirect")])
    assert not (w.project / "a.txt").exists()
    assert (w.project / "b.txt").read_text() == "A"
    assistant = next(m for m in messages(w.reopened()) if m["role"] == "assistant")
    assert assistant["content"][-1]["arguments"]["path"] == "a.txt"  # what the model asked
    (intent,) = kinds(w, "effect_intent")  # what ran
    assert intent["input"]["path"] == "b.txt" and intent["cause"]["rewritten_by"] == "redirect"
    (recorded,) = results(w)
    assert recorded["rewritten"] == {"plugin": "redirect",
                                     "arguments": {"path": "b.txt", "content": "A"}}  # fmt: skip
    assert recorded["is_error"] is False and errors(w) == []
    (start,) = w.of("tool_start")
    assert start["arguments"]["path"] == "b.txt" and start["rewritten_by"] == "redirect"
    # Replay shows the call as it ran, with the plugin that rewrote it.
    from smith.frontends.replay._timeline import reconstruct

    played = [i.event for i in reconstruct(w.reopened()).items if i.event is not None]
    (replayed,) = [e for e in played if e["type"] == "tool_start"]
    assert replayed["arguments"]["path"] == "b.txt" and replayed["rewritten_by"] == "redirect"


def test_an_invalid_rewrite_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    w = World(tmp_path)
    model = Scripted(tmp_path, "s", [WRITE_A, DONE])
    converse(w, model, [on("tool_call", lambda e, v: [RewriteArguments({"path": 5})], "bad")])
    assert not (w.project / "a.txt").exists()
    assert kinds(w, "effect_intent") == []
    (sent,) = model.results(1)
    assert sent["is_error"] is True and "'bad'" in sent["content"][0]["text"]
    assert [d["code"] for d in errors(w)] == ["plugin.invalid-action"]
    assert "'bad'" in errors(w)[0]["what"]
    assert results(w)[0]["mutation"] == "not-applied"


def test_allowed_calls_run_as_asked(tmp_path: Path) -> None:
    w = World(tmp_path)
    model = Scripted(tmp_path, "s", [WRITE_A, DONE])
    seen: list[str] = []

    def watch(event: dict[str, Any], view: Any) -> None:
        seen.append(event["tool_call_id"])

    plugins = [on("tool_call", lambda e, v: [Allow()], "allow"), on("tool_call", watch, "watch")]
    converse(w, model, plugins)
    assert (w.project / "a.txt").read_text() == "A"
    assert seen == ["call_0_0"] and errors(w) == []
    (recorded,) = results(w)
    assert recorded["is_error"] is False
    assert "denied" not in recorded and "rewritten" not in recorded


def test_two_different_rewrites_conflict_and_the_call_does_not_run(tmp_path: Path) -> None:
    w = World(tmp_path)
    model = Scripted(tmp_path, "s", [WRITE_A, DONE])
    plugins = [
        on("tool_call", lambda e, v: [RewriteArguments({"path": "x.txt", "content": "X"})], "a"),
        on("tool_call", lambda e, v: [RewriteArguments({"path": "y.txt", "content": "Y"})], "b"),
    ]
    converse(w, model, plugins)
    assert not any((w.project / n).exists() for n in ("a.txt", "x.txt", "y.txt"))
    (problem,) = errors(w)
    assert problem["code"] == "plugin.conflict" and "a, b" in problem["what"]
    (recorded,) = results(w)
    assert recorded["denied"]["plugin"] == "a, b" and recorded["mutation"] == "not-applied"
    assert "plugins a, b" in model.results(1)[0]["content"][0]["text"]


def test_the_same_rewrite_from_two_plugins_is_no_conflict(tmp_path: Path) -> None:
    w = World(tmp_path)
    model = Scripted(tmp_path, "s", [WRITE_A, DONE])
    same = RewriteArguments({"path": "x.txt", "content": "X"})
    converse(w, model, [on("tool_call", lambda e, v: [same], n) for n in ("a", "b")])
    assert (w.project / "x.txt").read_text() == "X" and errors(w) == []


@pytest.mark.parametrize("which", ["broken", "late"])
def test_a_failing_or_late_tool_call_handler_denies_the_call(tmp_path: Path, which: str) -> None:
    """A reviewer that broke never lets a call through unreviewed (the approval plugin
    is one): the call is not run, the model is told why, and the failure is reported."""
    import threading

    w = World(tmp_path)
    model = Scripted(tmp_path, "s", [WRITE_A, DONE])
    never = threading.Event()

    def broken(event: dict[str, Any], view: Any) -> None:
        raise RuntimeError("broken")

    def late(event: dict[str, Any], view: Any) -> None:
        never.wait(5)

    handler = broken if which == "broken" else late

    async def main() -> None:
        ctx = ToolContext(root=str(w.project), cwd=str(w.project), session=w.session)
        rt = Runtime(w.session, model=model.model, tools=list(builtin_tools().values()),
                     context=ctx, limits=Limits(handler_deadline=0.2),
                     plugins=[on("tool_call", handler, which)])  # fmt: skip
        rt.on_event(w._seen)
        rt.prompt("go")
        await rt.wait_idle()
        never.set()

    run(main)
    assert not (w.project / "a.txt").exists()
    (end,) = w.of("tool_end")
    assert (
        end["is_error"]
        and f"plugin '{which}' denied it: its tool_call handler failed" in (end["result"]["text"])
    )
    assert [(d["code"], d["value"]) for d in errors(w)] == [("plugin.handler-failed", f'"{which}"')]


def test_a_failing_or_late_handler_at_another_hook_counts_as_allow(tmp_path: Path) -> None:
    """At input and tool_result a broken handler changes nothing: the prompt and the
    result go on as they were."""
    import threading

    w = World(tmp_path)
    model = Scripted(tmp_path, "s", [WRITE_A, DONE])
    never = threading.Event()

    def broken(event: dict[str, Any], view: Any) -> None:
        raise RuntimeError("broken")

    def late(event: dict[str, Any], view: Any) -> list[Any]:
        never.wait(5)
        return [ReplaceResult("too late")]

    async def main() -> None:
        ctx = ToolContext(root=str(w.project), cwd=str(w.project), session=w.session)
        rt = Runtime(w.session, model=model.model, tools=list(builtin_tools().values()),
                     context=ctx, limits=Limits(handler_deadline=0.2),
                     plugins=[on("input", broken, "broken"),
                              on("tool_result", late, "late")])  # fmt: skip
        rt.on_event(w._seen)
        rt.prompt("go")
        await rt.wait_idle()
        never.set()

    run(main)
    assert (w.project / "a.txt").read_text() == "A"
    assert [(d["code"], d["value"]) for d in errors(w)] == [
        ("plugin.handler-failed", '"broken"'),
        ("plugin.handler-failed", '"late"'),
    ]
    assert "too late" not in json.dumps(model.requests()[-1])


@pytest.mark.parametrize(
    "returned",
    [[ReplaceResult("no")], [DenyCall("never a.txt"), "junk"], Question("?", [("y", "Y")])],
    ids=["another hook's", "a denial with junk", "a question not asked"],
)
def test_a_reviewer_returning_what_tool_call_does_not_take_denies_the_call(
    tmp_path: Path, returned: Any
) -> None:
    """What a broken reviewer decided is unknown: the call does not run (a denial next
    to junk, or a Question returned instead of asked, let the write through)."""
    w = World(tmp_path)
    model = Scripted(tmp_path, "s", [WRITE_A, DONE])
    converse(w, model, [on("tool_call", lambda e, v: returned, "odd")])
    assert not (w.project / "a.txt").exists()
    assert [d["code"] for d in errors(w)] == ["plugin.wrong-action"]
    (end,) = w.of("tool_end")
    assert "plugin 'odd' denied it: its tool_call handler returned" in end["result"]["text"]


def test_an_action_another_hook_does_not_take_is_reported_and_ignored(tmp_path: Path) -> None:
    w = World(tmp_path)
    model = Scripted(tmp_path, "s", [READ_APP, DONE])
    converse(w, model, [on("tool_result", lambda e, v: [DenyCall("no")], "odd")])
    assert [d["code"] for d in errors(w)] == ["plugin.wrong-action"]
    assert not w.of("tool_end")[0]["is_error"]


# -- tool_result -------------------------------------------------------------------------


def test_a_replaced_result_is_what_the_model_sees_now_and_after_resuming(
    tmp_path: Path,
) -> None:
    w = World(tmp_path)
    model = Scripted(tmp_path, "s", [READ_APP, DONE])
    seen: list[dict[str, Any]] = []

    def summarise(event: dict[str, Any], view: Any) -> list[Any]:
        seen.append(event)
        return [ReplaceResult("app.py defines app(), which greets")]

    converse(w, model, [on("tool_result", summarise, "summary")])
    assert "return 'hello'" in seen[0]["result"]["text"]
    assert [r["content"][0]["text"] for r in model.results(1)] == [
        "app.py defines app(), which greets"
    ]
    (recorded,) = results(w)
    assert "return 'hello'" in recorded["content"][0]["text"]  # the real output
    assert recorded["presented"] == {"text": "app.py defines app(), which greets",
                                     "plugin": "summary"}  # fmt: skip
    assert "return 'hello'" in w.of("tool_end")[0]["result"]["text"]

    # A later runtime on the reopened session (no plugin now) sends what was seen.
    again = Scripted(tmp_path, "again", [DONE])
    converse(w, again, [], prompts=["and now?"], session=resumed(w))
    sent = again.results(0)
    assert [r["content"][0]["text"] for r in sent] == ["app.py defines app(), which greets"]
    assert "presented" not in sent[0]


def test_two_different_replacements_conflict_and_the_model_sees_the_real_output(
    tmp_path: Path,
) -> None:
    w = World(tmp_path)
    model = Scripted(tmp_path, "s", [READ_APP, DONE])
    plugins = [
        on("tool_result", lambda e, v: [ReplaceResult("one")], "p1"),
        on("tool_result", lambda e, v: [ReplaceResult("two")], "p2"),
    ]
    converse(w, model, plugins)
    (problem,) = errors(w)
    assert problem["code"] == "plugin.conflict" and "p1, p2" in problem["what"]
    assert "return 'hello'" in model.results(1)[0]["content"][0]["text"]
    assert "presented" not in results(w)[0]


# -- input -------------------------------------------------------------------------------


def test_a_transformed_input_is_recorded_and_sent_with_the_original_noted(
    tmp_path: Path,
) -> None:
    w = World(tmp_path)
    model = Scripted(tmp_path, "s", [DONE])

    def expand(event: dict[str, Any], view: Any) -> list[Any]:
        assert event["mode"] == "prompt"
        return [TransformInput(f"{event['text']}, and explain why")]

    converse(w, model, [on("input", expand, "expand")], prompts=["fix it"])
    (user,) = [m for m in messages(w.reopened()) if m["role"] == "user"]
    assert user["content"][0]["text"] == "fix it, and explain why"
    assert user["transformed"] == {"plugin": "expand", "original": "fix it"}
    sent = model.requests()[0]["messages"]
    assert sent[0]["content"][0]["text"] == "fix it, and explain why"
    assert w.of("message_end")[0]["message"]["content"][0]["text"] == "fix it, and explain why"


def test_input_handled_as_a_command_is_recorded_as_such_and_asks_no_model(
    tmp_path: Path,
) -> None:
    w = World(tmp_path)
    model = Scripted(tmp_path, "s", [DONE])

    def command(event: dict[str, Any], view: Any) -> list[Any] | None:
        if event["text"].startswith("/"):
            return [HandleInput("pong")]
        return None

    rt = converse(w, model, [on("input", command, "commands")], prompts=["/ping"])
    assert messages(w.reopened()) == []
    assert model.requests() == []
    (handled,) = w.of("input_handled")
    record = {"plugin": "commands", "mode": "prompt", "text": "/ping", "reply": "pong"}
    assert handled == {"type": "input_handled", "entry_id": handled["entry_id"], **record,
                       "submission": handled["submission"]}  # fmt: skip
    # Recorded as what it was (no message: the model never sees it), and replayed.
    assert kinds(w, "input_handled") == [record]
    from smith.frontends.replay._timeline import reconstruct

    played = [i.event for i in reconstruct(w.reopened()).items if i.event is not None]
    assert [e for e in played if e["type"] == "input_handled"] == [
        {"type": "input_handled", "entry_id": handled["entry_id"], **record}
    ]
    assert w.of("agent_start") == [] and w.of("turn_start") == []
    assert w.types()[-1] == "settled" and not rt.busy


def test_queued_input_goes_through_the_hook_with_its_mode(tmp_path: Path) -> None:
    w = World(tmp_path)
    model = Scripted(tmp_path, "s", [DONE, DONE])
    modes: list[str] = []

    def tag(event: dict[str, Any], view: Any) -> list[Any]:
        modes.append(event["mode"])
        return [TransformInput(f"[{event['mode']}] {event['text']}")]

    plugins = [
        on("agent_start", lambda e, v: [Enqueue("follow_up", "and then?")], "later"),
        on("input", tag, "tag"),
    ]
    converse(w, model, plugins)
    users = [m for m in messages(w.reopened()) if m["role"] == "user"]
    assert [m["content"][0]["text"] for m in users][:2] == ["[prompt] go", "[follow_up] and then?"]
    assert users[1]["queued"] == "follow_up" and modes[:2] == ["prompt", "follow_up"]


def test_an_abort_while_input_handlers_run_records_the_input_as_typed(tmp_path: Path) -> None:
    import asyncio
    import threading

    w = World(tmp_path)
    model = Scripted(tmp_path, "s", [DONE])
    called, release = threading.Event(), threading.Event()

    def slow(event: dict[str, Any], view: Any) -> list[Any]:
        called.set()
        release.wait(10)
        return [TransformInput("changed")]

    async def main() -> None:
        ctx = ToolContext(root=str(w.project), cwd=str(w.project), session=w.session)
        rt = Runtime(w.session, model=model.model, tools=[], context=ctx,
                     limits=Limits(handler_deadline=10), plugins=[on("input", slow)])  # fmt: skip
        rt.on_event(w._seen)
        rt.prompt("as typed")
        assert await asyncio.to_thread(called.wait, 10)
        rt.abort()
        await rt.wait_idle()
        release.set()

    run(main)
    assert [m["content"][0]["text"] for m in messages(w.reopened())] == ["as typed"]
    assert [e["stop"] for e in w.of("agent_end")] == ["abort"] and model.requests() == []


def test_conflicting_input_decisions_keep_the_input_as_typed(tmp_path: Path) -> None:
    w = World(tmp_path)
    model = Scripted(tmp_path, "s", [DONE])
    plugins = [
        on("input", lambda e, v: [TransformInput("other")], "t"),
        on("input", lambda e, v: [HandleInput(None)], "h"),
    ]
    converse(w, model, plugins)
    (problem,) = errors(w)
    assert problem["code"] == "plugin.conflict" and "t, h" in problem["what"]
    assert messages(w.reopened())[0]["content"][0]["text"] == "go"


# -- session_start -----------------------------------------------------------------------


def test_session_start_comes_once_before_the_first_turn(tmp_path: Path) -> None:
    w = World(tmp_path)
    model = Scripted(tmp_path, "s", [DONE, DONE])
    seen: list[dict[str, Any]] = []

    def start(event: dict[str, Any], view: Any) -> list[Any]:
        seen.append(event)
        return [AppendSystemPrompt("Keep it short.")]

    converse(w, model, [on("session_start", start)], prompts=["one", "two"])
    assert [e["resumed"] for e in seen] == [False] and seen[0]["entries"] == 0
    assert w.types().count("session_start") == 1
    assert w.types().index("session_start") < w.types().index("turn_start")
    assert all(r["system"].endswith("Keep it short.") for r in model.requests())

    seen.clear()
    again = Scripted(tmp_path, "again", [DONE])
    converse(w, again, [on("session_start", start)], prompts=["three"], session=resumed(w))
    assert [e["resumed"] for e in seen] == [True] and seen[0]["entries"] > 0


def test_a_handled_inputs_reply_becomes_a_notice_for_the_frontends() -> None:
    from smith.ui import intent_for

    ev = {"type": "input_handled", "plugin": "p", "mode": "prompt", "text": "/x", "reply": "hi"}
    intent = intent_for(ev)
    assert intent is not None
    assert intent.kind == "notify" and intent.data == {"level": "info", "text": "hi"}
    quiet = intent_for({**ev, "reply": None})  # no reply: only the state it says
    assert quiet is not None and quiet.kind == "status"


@pytest.fixture
def pinger(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """tests/command_plugin.py joins the built-in plugins (for the in-process CLI)."""
    import smith.plugins
    from smith.sdk import builtin_manifests

    monkeypatch.setattr(smith.plugins, "BUILTIN", (*smith.plugins.BUILTIN, "tests.command_plugin"))
    builtin_manifests.cache_clear()
    yield
    builtin_manifests.cache_clear()


def test_eval_answers_a_handled_prompt_with_the_plugins_reply(
    pinger: None, senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = senv.make_project()
    r = smith("eval", "!ping", cwd=project)
    assert (r.code, r.out) == (0, "pong\n"), r.err
    r = smith("eval", "--json", "!ping", cwd=project)
    assert r.code == 0, r.err
    result = json.loads(r.out.splitlines()[-1])
    assert (result["ok"], result["stop"], result["text"]) == (True, "handled", "pong")


def test_a_failed_command_ends_eval_with_its_error(
    pinger: None, senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = senv.make_project()
    r = smith("eval", "!fail", cwd=project)
    assert r.code == 1 and r.out == ""
    assert "smith: pinger: /!fail failed: the pinger is out of pongs" in r.err
    r = smith("eval", "--json", "!fail", cwd=project)
    assert r.code == 1, r.err
    result = json.loads(r.out.splitlines()[-1])
    assert (result["ok"], result["stop"], result["exit_code"]) == (False, "error", 1)
    handled = [json.loads(line) for line in r.out.splitlines()[:-1]]
    (event,) = [e for e in handled if e["type"] == "input_handled"]
    assert event["error"] == "the pinger is out of pongs"  # recorded, and replayed (below)
    r = smith("replay", "--json", "--instant", result["session"]["id"], cwd=project)
    assert r.code == 0, r.err
    replayed = [json.loads(line) for line in r.out.splitlines() if line.strip()]
    assert any(e.get("error") == "the pinger is out of pongs" for e in replayed), r.out


def test_the_library_returns_a_handled_prompts_reply(
    senv: SmithEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    for key, value in senv.env.items():
        monkeypatch.setenv(key, value)

    import smith as library
    from tests.command_plugin import PLUGIN

    async def main() -> tuple[str, str | None]:
        async with library.Agent("demo", cwd=str(tmp_path), store=str(tmp_path / "store"),
                                 plugins=[PLUGIN]) as agent:  # fmt: skip
            message = await agent.send("!ping")
            return library.text_of(message), agent.stop

    assert asyncio.run(main()) == ("pong", "handled")


def test_remember_keeps_only_settings_the_plugin_owns_and_only_with_a_user_file(
    tmp_path: Path,
) -> None:
    """RuntimeView.remember: a setting the plugin does not own is refused (LookupError),
    and a runtime built without the assembly's user file says it has none (OSError)."""
    w = World(tmp_path)
    model = Scripted(tmp_path, "s", [WRITE_A, DONE])
    seen: list[str] = []

    def keep(event: dict[str, Any], view: Any) -> None:
        for key in ("model", "approval.allow"):
            try:
                view.remember(key, "x")
            except (LookupError, OSError) as exc:
                seen.append(f"{type(exc).__name__}: {exc}")

    plugin = Plugin("keeper", handlers={"tool_call": keep}, settings={"approval.allow": []})
    converse(w, model, [plugin])
    assert seen == [
        "LookupError: the plugin 'keeper' does not own the setting 'model'",
        "OSError: this runtime has no user configuration file to keep settings in",
    ]
    assert (w.project / "a.txt").read_text() == "A"  # what the handler raised was its own
