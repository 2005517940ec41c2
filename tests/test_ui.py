"""UI intents (smith.ui, docs/ui.md) through the runtime: what plugins' handlers, tools
and the runtime itself produce, the one path to a frontend (`Runtime.attach`:
`smith.ui.deliver` and `smith.ui.ask`), and how a question ends: answered, or refused
when nobody can or does answer, never left waiting."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from smith.runtime import EVENT_TYPES, Limits, Runtime
from smith.sdk import AppendSystemPrompt, Notify, Plugin, Question, Reply
from smith.ui import (
    KINDS,
    KINDS_TABLE,
    QUESTIONS,
    UNSUPPORTED,
    Capabilities,
    Intent,
    deliver,
    intent_for,
)
from tests import ui_plugin
from tests.runtime_kit import Fake, World, call, run, say

ROOT = Path(__file__).parent.parent


class Recorder:
    """A frontend that keeps what it is shown and answers questions with `answer`."""

    def __init__(self, answer: Any = None, *, asks: tuple[str, ...] = QUESTIONS,
                 name: str = "test") -> None:  # fmt: skip
        self.name = name
        self.capabilities = Capabilities(asks=frozenset(asks), cannot_ask="not here")
        self.shown: list[Intent] = []
        self.asked: list[Intent] = []
        self.answer = answer

    def show(self, intent: Intent) -> None:
        self.shown.append(intent)

    async def ask(self, intent: Intent) -> Reply:
        self.asked.append(intent)
        if self.answer is None:
            await asyncio.Event().wait()  # nobody ever answers
        if callable(self.answer):
            return await self.answer(intent)
        return Reply(self.answer)

    def kinds(self) -> list[str]:
        return [i.kind for i in self.shown]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [i.data for i in self.shown if i.kind == kind]


def converse(w: World, provider: Any, frontend: Recorder | None, *, plugins: Any = (),
             limits: Limits | None = None, prompts: tuple[str, ...] = ("go",),
             during: Any = None) -> Runtime:  # fmt: skip
    async def main() -> Runtime:
        rt = w.runtime(provider, plugins=list(plugins), limits=limits)
        if frontend is not None:
            rt.attach(frontend)
        for text in prompts:
            rt.prompt(text)
            if during is not None:
                await during(rt)
            await rt.wait_idle()
        await rt.close()
        return rt

    result: Runtime = run(main)
    return result


# -- the kinds ----------------------------------------------------------------------------

SAMPLES: dict[str, dict[str, Any]] = {
    "session_start": {"session": "s", "resumed": False, "entries": 0},
    "agent_start": {"prompt_id": "p"},
    "turn_start": {"turn": 1},
    "message_start": {"role": "user", "message_id": "m"},
    "message_delta": {"message_id": "m", "channel": "text", "delta": "x"},
    "message_end": {"message_id": "m", "message": {}},
    "tool_start": {"tool_call_id": "c", "name": "ls", "arguments": {}},
    "tool_update": {"tool_call_id": "c", "name": "ls", "update": {}},
    "tool_end": {"tool_call_id": "c", "name": "ls", "result": {}, "outcome": "ok"},
    "turn_end": {"turn": 1, "stop": "success"},
    "agent_end": {"prompt_id": "p", "stop": "end"},
    "compaction_start": {"reason": "manual"},
    "compaction_end": {"reason": "manual", "ok": True},
    "queue_changed": {"queue": []},
    "retry": {"attempt": 1, "delay": 1, "error": "busy"},
    "failover": {"from_model": "a", "to_model": "b", "error": "rate limited"},
    "error": {"diagnostic": {"code": "x"}},
    "settled": {"queue": 0},
    "input_handled": {"plugin": "p", "mode": "prompt", "text": "/x", "reply": None},
    "environment": {"entry_id": "e", "text": "<environment>...</environment>", "cwd": "/"},
    "instructions": {"entry_id": "e", "path": "/p/AGENTS.md", "directory": "/p", "text": "x"},
    "ui": {"intent": "notify", "origin": "p", "level": "info", "text": "hi"},
    "todo": {"origin": "plan", "items": [{"content": "x", "status": "pending"}]},
    "mode": {"mode": "plan", "previous": "normal", "plan": None},
    "intent_answered": {"ask_id": "a", "intent": "request_choice", "choice": "x"},
    "intent_refused": {"ask_id": "a", "intent": "request_confirm", "reason": "no"},
    "entry": {"id": "e", "parent": None, "kind": "message"},
}
HOOK_EVENTS = ("input", "tool_call", "tool_result")


def test_every_emitted_event_stands_for_exactly_one_intent_and_hooks_for_none() -> None:
    assert set(SAMPLES) | set(HOOK_EVENTS) == set(EVENT_TYPES)
    for type, fields in SAMPLES.items():
        intent = intent_for({"type": type, **fields})
        assert intent is not None, type
        assert intent.kind in KINDS and intent.event == {"type": type, **fields}
    for type in HOOK_EVENTS:
        assert intent_for({"type": type}) is None
    assert intent_for({"type": "result", "ok": True}) is None  # eval's own record


def test_every_kind_has_a_producer_a_policy_and_its_row_in_docs_ui_md() -> None:
    doc = (ROOT / "docs" / "ui.md").read_text()
    produced = {intent_for({"type": t, **f}).kind for t, f in SAMPLES.items()}  # type: ignore[union-attr]
    hatch = {"type": "ui", "intent": "hatch", "origin": "p", "capability": "bell", "value": ""}
    produced.add(intent_for(hatch).kind)  # type: ignore[union-attr]  # a `ui` event's other kind
    assert produced | set(QUESTIONS) == set(KINDS)  # the runtime's, and plugins' questions
    for kind in KINDS:
        assert KINDS_TABLE[kind].producers
        row = re.search(rf"^\| `{kind}` \|(.*)$", doc, re.M)
        assert row is not None, f"docs/ui.md has no row for {kind}"
        assert f"`{UNSUPPORTED[kind]}`" in row.group(1)
    for gone in ("request_text", "overlay_open", "overlay_close"):
        assert gone not in KINDS


def test_a_frontend_is_shown_only_what_it_declares_and_the_rest_degrades() -> None:
    frontend = Recorder()
    frontend.capabilities = Capabilities(shows=frozenset({"notify"}))
    assert deliver(frontend, {"type": "retry", "attempt": 1, "delay": 1, "error": "x"}) == "shown"
    assert deliver(frontend, {"type": "turn_start", "turn": 1}) == "drop"
    end = {"type": "message_end", "message_id": "m", "message": {}}
    assert deliver(frontend, end) == "persist"  # the session holds it
    assert deliver(frontend, {"type": "tool_call"}) is None
    assert frontend.kinds() == ["notify"]


# -- what plugins show ----------------------------------------------------------------------


def test_a_handlers_notices_status_and_progress_go_out_as_ui_events_and_reach_the_frontend(
    tmp_path: Path,
) -> None:
    w = World(tmp_path)
    frontend = Recorder("left")
    fake = Fake(say("done"))
    style = Plugin("style", handlers={
        "agent_start": lambda e, v: [AppendSystemPrompt("Be brief."), Notify("styled", "warning")],
    })  # fmt: skip
    converse(w, fake, frontend, plugins=[ui_plugin.PLUGIN, style])
    ui = w.of("ui")
    assert [(e["intent"], e["origin"]) for e in ui[:4]] == [
        ("notify", "asker"), ("status", "asker"), ("progress", "asker"), ("notify", "style"),
    ]  # fmt: skip
    assert ui[0] == {"type": "ui", "intent": "notify", "origin": "asker", "level": "info",
                     "text": "starting", "submission": ui[0]["submission"]}  # fmt: skip
    assert ui[0]["submission"].startswith("p-")  # posted by a handler of the prompt's run
    assert ui[1]["key"] == "phase" and ui[1]["text"] == "asker is listening"
    assert (ui[2]["label"], ui[2]["done"], ui[2]["total"]) == ("warming up", 1, 2)
    # The rest of the batch still applies: the intents are no part of the generation.
    assert fake.requests[0].system.endswith("Be brief.")
    assert [d["text"] for d in frontend.of("notify") if "origin" in d][:2] == [
        "starting", "styled"]  # fmt: skip
    assert frontend.of("status")[-1]["event"] == "settled"
    assert any(d.get("label") == "warming up" for d in frontend.of("progress"))


# -- questions --------------------------------------------------------------------------------


def test_a_handlers_question_is_answered_by_the_frontend_recorded_and_told(
    tmp_path: Path,
) -> None:
    w = World(tmp_path)

    async def slowly(intent: Intent) -> Reply:
        await asyncio.sleep(0.3)  # longer than the handler's deadline: the clock stops
        return Reply("right")

    frontend = Recorder(slowly)
    converse(w, Fake(say("done")), frontend, plugins=[ui_plugin.PLUGIN],
             limits=Limits(handler_deadline=0.1))  # fmt: skip
    (asked,) = frontend.asked
    assert asked.kind == "request_choice" and asked.data["text"] == "Which way?"
    assert asked.data["origin"] == "asker"
    assert asked.data["choices"] == [{"key": "left", "label": "Go left"},
                                     {"key": "right", "label": "Go right"}]  # fmt: skip
    assert not [e for e in w.of("error") if e["diagnostic"]["code"] == "plugin.handler-failed"]
    (answered,) = w.of("intent_answered")
    assert answered["choice"] == "right" and answered["frontend"] == "test"
    assert answered["ask_id"] == asked.data["ask_id"] and not w.of("intent_refused")
    assert w.of("ui")[-1]["text"] == "chose right (test)"
    (record,) = [e.content for e in w.reopened().entries("question")]
    assert record == {
        "ask_id": asked.data["ask_id"], "intent": "request_choice", "origin": "asker",
        "text": "Which way?", "choices": asked.data["choices"], "choice": "right",
        "refused": None, "frontend": "test",
    }  # fmt: skip
    assert [i.kind for i in frontend.shown].count("answer") == 1


@pytest.mark.parametrize("how", ["no frontend", "cannot ask", "not a choice", "fails"])
def test_a_question_nobody_can_answer_is_refused_at_once(tmp_path: Path, how: str) -> None:
    w = World(tmp_path)

    async def fails(intent: Intent) -> Reply:
        raise RuntimeError("the screen went away")

    frontend = {
        "no frontend": None,
        "cannot ask": Recorder("left", asks=()),
        "not a choice": Recorder("up"),
        "fails": Recorder(fails),
    }[how]
    converse(w, Fake(say("done")), frontend, plugins=[ui_plugin.PLUGIN])
    (refused,) = w.of("intent_refused")
    reason = {
        "no frontend": "no frontend is attached to ask the user",
        "cannot ask": "not here",
        "not a choice": "the answer 'up' is not one of left, right",
        "fails": "the test frontend failed: RuntimeError: the screen went away",
    }[how]
    assert refused["reason"] == reason and refused["text"] == "Which way?"
    assert refused["frontend"] == ("none" if how == "no frontend" else "test")
    assert w.of("ui")[-1]["text"].startswith("refused by")
    assert w.of("ui")[-1]["level"] == "warning"
    (record,) = [e.content for e in w.reopened().entries("question")]
    assert record["refused"] == reason and record["choice"] is None
    assert [e["stop"] for e in w.of("agent_end")] == ["end"]


def test_an_unanswered_question_is_refused_after_its_timeout(tmp_path: Path) -> None:
    w = World(tmp_path)
    replies: list[Reply] = []

    async def ask(event: dict[str, Any], view: Any) -> None:
        replies.append(await view.ask(Question("Now?", [("y", "yes")], timeout=0.05)))

    converse(w, Fake(say("done")), Recorder(None),
             plugins=[Plugin("p", handlers={"agent_start": ask})])  # fmt: skip
    assert replies == [Reply(None, "nobody answered within 0.05 s", "test")]
    assert w.of("intent_refused")[0]["reason"] == "nobody answered within 0.05 s"


def test_an_abort_refuses_the_question_waiting_for_an_answer(tmp_path: Path) -> None:
    w = World(tmp_path)
    frontend = Recorder(None)  # never answers

    async def abort_once_asked(rt: Runtime) -> None:
        while not frontend.asked:
            await asyncio.sleep(0.01)
        rt.abort()

    converse(w, Fake(say("done")), frontend, plugins=[ui_plugin.PLUGIN],
             during=abort_once_asked)  # fmt: skip
    (refused,) = w.of("intent_refused")
    assert refused["reason"] == "the agent was aborted before it was answered"
    assert [e["stop"] for e in w.of("agent_end")] == ["abort"]
    assert w.types()[-1] == "settled"


def test_a_tool_shows_and_asks_from_its_own_thread(tmp_path: Path) -> None:
    w = World(tmp_path)
    frontend = Recorder("yes")
    quiet = Plugin("asker", tools=ui_plugin.PLUGIN.tools)  # the tool only
    fake = Fake(call(("ask_user", {"question": "Delete it?"})), say("ok"))
    converse(w, fake, frontend, plugins=[quiet])
    (asked,) = frontend.asked
    assert asked.kind == "request_confirm" and asked.data["text"] == "Delete it?"
    assert asked.data["origin"] == "asker"  # the plugin that contributed the tool
    assert asked.data["choices"] == [{"key": "yes", "label": "Yes"}, {"key": "no", "label": "No"}]
    (end,) = w.of("tool_end")
    assert end["result"]["text"] == "confirmed=True refused=None"
    assert w.of("ui")[0]["text"] == "checking with you"
    assert w.types().index("ui") < w.types().index("tool_end")
    # Shown and asked from the tool's thread, in the name of the prompt the call works for.
    (prompt,) = [e["prompt_id"] for e in w.events if e["type"] == "agent_start"]
    ui = [e for e in w.events if e["type"] in ("ui", "intent_answered")]
    assert len(ui) == 2 and {e.get("submission") for e in ui} == {prompt}


def test_the_library_runtime_refuses_what_a_plugin_asks_without_a_frontend(
    tmp_path: Path,
) -> None:
    w = World(tmp_path)
    quiet = Plugin("asker", tools=ui_plugin.PLUGIN.tools)
    converse(w, Fake(call(("ask_user", {})), say("ok")), None, plugins=[quiet])
    (end,) = w.of("tool_end")
    assert end["result"]["text"] == (
        "confirmed=False refused=no frontend is attached to ask the user"
    )


def test_a_reason_comes_with_a_choice_that_takes_one_as_one_bounded_line(tmp_path: Path) -> None:
    """Question.reasons marks the choices the user may say why with (`"reason": true`
    in the intent); smith.ui.ask keeps the frontend's note for those only, as one line
    of at most NOTE_MAX characters, and the record and the event carry it."""
    from smith.ui import NOTE_MAX, ask, question_intent

    with pytest.raises(ValueError, match="none of its choices"):
        Question("?", [("a", "A")], reasons=("b",))
    question = Question("Run it?", [("yes", "Yes"), ("no", "No")], reasons=("no",))
    intent = question_intent(question, origin="guard", ask_id="q1")
    assert intent.data["choices"] == [{"key": "yes", "label": "Yes"},
                                      {"key": "no", "label": "No", "reason": True}]  # fmt: skip

    def asked(choice: str, note: str) -> Reply:
        frontend = Recorder(lambda _: _reply(choice, note))
        return asyncio.run(ask(frontend, intent))

    async def _reply(choice: str, note: str) -> Reply:
        return Reply(choice, note=note)

    assert asked("no", "  not\n  now ").note == "not now"
    assert asked("yes", "ignored").note == ""  # "yes" takes no reason
    long = asked("no", "x" * (NOTE_MAX + 50)).note
    assert len(long) == NOTE_MAX and long.endswith("…")
    w = World(tmp_path)
    frontend = Recorder(lambda _: _reply("no", "tests first"))
    converse(w, Fake(say("done")), frontend, plugins=[_asking(question)])
    (answered,) = w.of("intent_answered")
    assert answered["note"] == "tests first"
    (record,) = [e.content for e in w.reopened().entries("question")]
    assert record["note"] == "tests first" and record["choice"] == "no"


def _asking(question: Question) -> Plugin:
    async def handler(event: dict[str, Any], view: Any) -> None:
        await view.ask(question)

    return Plugin("guard", handlers={"agent_start": handler})
