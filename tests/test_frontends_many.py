"""Many frontends on one runtime (issue 28, docs/ui.md "Many frontends"): each attached
frontend gets every event; a question goes to every one that can ask it, the first
reply wins, the others' questions are cancelled and they see the `intent_answered`
event naming who answered; the session records the question once; a frontend that
fails leaves the others theirs."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

from smith.frontends.rpc._protocol import Response
from smith.frontends.rpc._ui import RpcFrontend
from smith.runtime import Runtime
from smith.sdk import Plugin
from smith.ui import QUESTIONS, Capabilities, Intent, Reply, ask_first
from tests import ui_plugin
from tests.runtime_kit import Fake, World, call, run, say


class Front:
    """A frontend that keeps what it is shown and what it was asked; `answer` (a key, a
    Reply, a coroutine function, or None: never) is its reply."""

    def __init__(self, name: str, answer: Any = None, *,
                 asks: tuple[str, ...] = QUESTIONS) -> None:  # fmt: skip
        self.name = name
        self.capabilities = Capabilities(asks=frozenset(asks), cannot_ask=f"{name} cannot ask")
        self.answer = answer
        self.shown: list[Intent] = []
        self.asked: list[Intent] = []
        self.cancelled: list[str] = []  # the ask_ids of questions withdrawn from it

    def show(self, intent: Intent) -> None:
        self.shown.append(intent)

    async def ask(self, intent: Intent) -> Reply:
        self.asked.append(intent)
        try:
            if self.answer is None:
                await asyncio.Event().wait()  # nobody here answers
            if callable(self.answer):
                reply: Reply = await self.answer(intent)
                return reply
            await asyncio.sleep(0)
            return self.answer if isinstance(self.answer, Reply) else Reply(self.answer)
        except asyncio.CancelledError:
            self.cancelled.append(intent.data["ask_id"])
            raise

    def events(self) -> list[str]:
        return [i.event["type"] for i in self.shown if i.event is not None]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [i.data for i in self.shown if i.kind == kind]


def converse(w: World, provider: Any, *frontends: Any, plugins: Any = (ui_plugin.PLUGIN,),
             during: Any = None) -> Runtime:  # fmt: skip
    async def main() -> Runtime:
        rt = w.runtime(provider, plugins=list(plugins))
        for frontend in frontends:
            rt.attach(frontend)
        rt.prompt("go")
        if during is not None:
            await during(rt)
        await rt.wait_idle()
        await rt.close()
        return rt

    result: Runtime = run(main)
    return result


def _questions(w: World) -> list[Any]:
    return [e.content for e in w.reopened().entries("question")]


def test_every_attached_frontend_gets_every_event(tmp_path: Path) -> None:
    w = World(tmp_path)
    one, two = Front("one", "left"), Front("two", "left")
    converse(w, Fake(say("done")), one, two)
    assert one.events() == two.events()
    assert {"agent_start", "message_end", "ui", "intent_answered", "settled"} <= set(one.events())
    assert [d["text"] for d in one.of("notify")] == [d["text"] for d in two.of("notify")]


def test_a_question_goes_to_each_the_first_answer_wins_and_the_other_is_cancelled(
    tmp_path: Path,
) -> None:
    w = World(tmp_path)

    async def later(intent: Intent) -> Reply:
        await asyncio.sleep(5)  # long after the other answered: cancelled before
        return Reply("left")

    slow, quick = Front("slow", later), Front("quick", "right")
    converse(w, Fake(say("done")), slow, quick)
    (asked,) = slow.asked
    assert [i.data for i in quick.asked] == [asked.data]  # the same question, to both
    ask_id = asked.data["ask_id"]
    assert slow.cancelled == [ask_id] and quick.cancelled == []
    (answered,) = w.of("intent_answered")
    assert answered["choice"] == "right" and answered["frontend"] == "quick"
    assert not w.of("intent_refused")
    # Both are told, the one whose prompt closed as well as the one that answered.
    for front in (slow, quick):
        (told,) = front.of("answer")
        assert told["ask_id"] == ask_id and told["frontend"] == "quick"
    assert w.of("ui")[-1]["text"] == "chose right (quick)"
    (record,) = _questions(w)  # one record of the question, not one per frontend
    assert record["choice"] == "right" and record["frontend"] == "quick"


def test_a_frontend_that_cannot_ask_is_not_asked_but_is_told(tmp_path: Path) -> None:
    w = World(tmp_path)
    mute, asker = Front("mute", "left", asks=()), Front("asker", "right")
    converse(w, Fake(say("done")), mute, asker)
    assert not mute.asked and len(asker.asked) == 1
    (answered,) = w.of("intent_answered")
    assert answered["frontend"] == "asker" and mute.of("answer")[0]["choice"] == "right"


def test_when_none_can_ask_the_question_is_refused_as_with_one(tmp_path: Path) -> None:
    w = World(tmp_path)
    converse(w, Fake(say("done")), Front("a", asks=()), Front("b", asks=()))
    (refused,) = w.of("intent_refused")
    assert refused["reason"] == "a cannot ask" and refused["frontend"] == "a"
    assert len(_questions(w)) == 1


def test_a_failing_frontend_leaves_the_question_to_the_others(tmp_path: Path) -> None:
    w = World(tmp_path)

    async def fails(intent: Intent) -> Reply:
        raise RuntimeError("the screen went away")

    async def after(intent: Intent) -> Reply:
        await asyncio.sleep(0.05)
        return Reply("left")

    converse(w, Fake(say("done")), Front("broken", fails), Front("bad", "up"),
             Front("fine", after))  # fmt: skip
    (answered,) = w.of("intent_answered")
    assert answered["choice"] == "left" and answered["frontend"] == "fine"


def test_when_every_frontend_fails_the_first_failure_is_the_refusal(tmp_path: Path) -> None:
    w = World(tmp_path)
    converse(w, Fake(say("done")), Front("a", "up"), Front("b", "down"))
    (refused,) = w.of("intent_refused")
    assert refused["reason"] == "the answer 'up' is not one of left, right"
    assert refused["frontend"] == "a"


def test_a_refusal_a_frontend_gives_wins_as_an_answer_does(tmp_path: Path) -> None:
    """The user dismissed it in one frontend: that is their reply, the other closes."""
    w = World(tmp_path)
    waiting = Front("waiting")
    converse(w, Fake(say("done")), waiting, Front("no", Reply(None, "not now", "no")))
    (refused,) = w.of("intent_refused")
    assert refused["reason"] == "not now" and refused["frontend"] == "no"
    assert len(waiting.cancelled) == 1 and waiting.of("answer")[0]["reason"] == "not now"


def test_an_abort_withdraws_the_question_from_every_frontend(tmp_path: Path) -> None:
    w = World(tmp_path)
    one, two = Front("one"), Front("two")

    async def abort_once_asked(rt: Runtime) -> None:
        while not (one.asked and two.asked):
            await asyncio.sleep(0.01)
        rt.abort()

    converse(w, Fake(say("done")), one, two, during=abort_once_asked)
    (refused,) = w.of("intent_refused")
    assert refused["reason"] == "the agent was aborted before it was answered"
    assert refused["frontend"] == "one, two"
    assert len(one.cancelled) == 1 and len(two.cancelled) == 1
    assert len(_questions(w)) == 1


def test_a_question_unanswered_everywhere_is_refused_after_its_timeout() -> None:
    intent = Intent("request_confirm", {"ask_id": "q", "timeout": 0.05,
                                        "choices": [{"key": "yes"}, {"key": "no"}]})  # fmt: skip
    one, two = Front("one"), Front("two")
    reply = asyncio.run(ask_first([one, two], intent))
    assert reply == Reply(None, "nobody answered within 0.05 s", "one, two")
    assert one.cancelled == ["q"] and two.cancelled == ["q"]


def test_a_tools_question_from_its_thread_goes_to_both(tmp_path: Path) -> None:
    w = World(tmp_path)
    quiet = Plugin("asker", tools=ui_plugin.PLUGIN.tools)  # the tool only
    never, yes = Front("never"), Front("yes", "yes")
    converse(w, Fake(call(("ask_user", {"question": "Delete it?"})), say("ok")), never, yes,
             plugins=[quiet])  # fmt: skip
    (end,) = w.of("tool_end")
    assert end["result"]["text"] == "confirmed=True refused=None"
    assert len(never.asked) == 1 and len(never.cancelled) == 1


class Logged(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_a_frontend_whose_show_raises_does_not_stop_the_other(tmp_path: Path) -> None:
    class Broken(Front):
        def show(self, intent: Intent) -> None:
            raise RuntimeError("the terminal is gone")

    w = World(tmp_path)
    broken, fine = Broken("broken", "left"), Front("fine", "right")
    logged, log = Logged(), logging.getLogger("smith.runtime")
    log.addHandler(logged)  # (not caplog: another test may stop smith's propagation)
    try:
        converse(w, Fake(say("done")), broken, fine)
    finally:
        log.removeHandler(logged)
    assert fine.events() == w.types()
    assert fine.events()[-1] == "settled" and w.of("agent_end")[0]["stop"] == "end"
    assert len(w.of("intent_answered")) == 1
    assert any(m.startswith("an event observer failed") for m in logged.messages)


def test_a_detached_frontend_gets_nothing_more_and_is_not_asked(tmp_path: Path) -> None:
    w = World(tmp_path)
    gone, here = Front("gone", "left"), Front("here", "right")

    async def main() -> None:
        rt = w.runtime(Fake(say("done")), plugins=[ui_plugin.PLUGIN])
        detach = rt.attach(gone)
        rt.attach(here)
        detach()
        detach()  # twice changes nothing
        assert rt.frontends == [here]
        rt.prompt("go")
        await rt.wait_idle()
        await rt.close()

    run(main)
    assert not gone.shown and not gone.asked
    assert w.of("intent_answered")[0]["frontend"] == "here"


def test_the_rpc_frontend_and_another_on_one_runtime(tmp_path: Path) -> None:
    """End to end with smith rpc's own frontend: its client gets the `ui.ask` request,
    the other frontend answers first, and the client is sent `ui.cancel` for it and the
    `intent_answered` event."""
    w = World(tmp_path)
    sent: list[dict[str, Any]] = []
    rpc = RpcFrontend(lambda message: sent.append(json.loads(json.dumps(message))))

    async def after_rpc_asked(intent: Intent) -> Reply:
        while not any(m.get("method") == "ui.ask" for m in sent):
            await asyncio.sleep(0.01)
        return Reply("left")

    converse(w, Fake(say("done")), rpc, Front("app", after_rpc_asked))
    (request,) = [m for m in sent if m.get("method") == "ui.ask"]
    (cancel,) = [m for m in sent if m.get("method") == "ui.cancel"]
    assert cancel["params"] == {"id": request["id"]}
    events = [m["params"] for m in sent if m.get("method") == "event"]
    (answered,) = [e for e in events if e["type"] == "intent_answered"]
    assert answered["frontend"] == "app" and answered["ask_id"] == request["params"]["ask_id"]
    # The client's late answer is ignored, not a second answer.
    rpc.answer(Response(request["id"], {"choice": "right"}, None))
    assert len(_questions(w)) == 1 and _questions(w)[0]["choice"] == "left"


def test_the_rpc_client_can_be_the_one_that_answers(tmp_path: Path) -> None:
    w = World(tmp_path)
    sent: list[dict[str, Any]] = []
    rpc = RpcFrontend(lambda message: sent.append(json.loads(json.dumps(message))))
    app = Front("app")  # never answers

    async def client(rt: Runtime) -> None:
        while not any(m.get("method") == "ui.ask" for m in sent):
            await asyncio.sleep(0.01)
        (request,) = [m for m in sent if m.get("method") == "ui.ask"]
        rpc.answer(Response(request["id"], {"choice": "right"}, None))

    converse(w, Fake(say("done")), app, rpc, during=client)
    (answered,) = w.of("intent_answered")
    assert answered["choice"] == "right" and answered["frontend"] == "rpc"
    assert len(app.cancelled) == 1 and app.of("answer")[0]["frontend"] == "rpc"
    assert not [m for m in sent if m.get("method") == "ui.cancel"]
