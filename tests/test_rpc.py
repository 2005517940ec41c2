"""`smith rpc` as a client drives it: the installed executable over pipes, the scripted
model, JSON-RPC 2.0 records parsed line by line (tests/rpc_kit.py)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

from smith.protocol import VERSION
from tests.conftest import SmithEnv
from tests.rpc_kit import Rpc, script, texts_of

SLOW = 60  # ms before each streamed event of a "slow" response


def _project(senv: SmithEnv) -> Path:
    project = senv.make_project()
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("def app():\n    return 'hello'\n")
    return project


def _started(rpc: Rpc, method: str, text: str) -> dict[str, Any]:
    result: dict[str, Any] = rpc.call(method, {"text": text})
    return result


def _assert_deltas_make_each_end(events: list[dict[str, Any]]) -> int:
    """Every message's deltas come between its start and end and, per channel, make
    exactly the text of the end event's message. Returns how many messages there were."""
    open_: dict[str, dict[str, str]] = {}
    ended = 0
    for ev in events:
        if ev["type"] == "message_start":
            open_[ev["message_id"]] = {"text": "", "thinking": ""}
        elif ev["type"] == "message_delta":
            open_[ev["message_id"]][ev["channel"]] += ev["delta"]  # KeyError: not started
        elif ev["type"] == "message_end":
            got = open_.pop(ev["message_id"])
            for channel in ("text", "thinking"):
                assert got[channel] == texts_of(ev["message"], channel)
            ended += 1
    assert not open_, f"messages never ended: {open_}"
    return ended


def test_a_tool_using_turn_arrives_as_events_whose_deltas_make_the_end_events(
    senv: SmithEnv,
) -> None:
    project = _project(senv)
    model = script(
        senv,
        [
            {
                "thinking": "The user wants the app explained; read it.",
                "text": "Reading the app module first.",
                "tool_calls": [{"name": "read", "arguments": {"path": "src/app.py"}}],
            },
            {"text": "app() returns the word hello, nothing else.", "usage": {"input": 9}},
        ],
    )
    rpc = Rpc(senv, project, "--model", model)
    try:
        asked = rpc.answer(rpc.request("prompt", {"text": "what does app do?"}))
        assert asked["result"]["status"] == "started"
        submission = asked["result"]["id"]
        # Answered once accepted: before the turn produced anything.
        assert rpc.events == []
        assert rpc.call("wait_idle") == {"busy": False, "queue": []}
        types = [ev["type"] for ev in rpc.events]
        assert types[:2] == ["session_start", "agent_start"]
        assert types[-2:] == ["agent_end", "settled"]
        # Every event the prompt caused carries the id its request was answered with.
        assert all(ev["submission"] == submission for ev in rpc.events[:-1])
        assert "submission" not in rpc.events[-1]  # settled: the runtime, no submission
        assert rpc.event("agent_start")["prompt_id"] == submission
        assert types.index("tool_start") < types.index("tool_end") < types.index("turn_end")
        tool_end = rpc.event("tool_end")
        assert tool_end["name"] == "read" and "return 'hello'" in tool_end["result"]["text"]
        assert _assert_deltas_make_each_end(rpc.events) == 3  # user, assistant, assistant
        ends = [ev["message"] for ev in rpc.events if ev["type"] == "message_end"]
        assert texts_of(ends[-1]) == "app() returns the word hello, nothing else."
        assert texts_of(ends[1], "thinking") == "The user wants the app explained; read it."
        # The end events are what was recorded.
        recorded = [m["message"] for m in rpc.call("get_messages")["messages"]]
        assert [m for m in recorded if m["role"] != "tool_result"] == ends
        assert recorded[2]["role"] == "tool_result" and recorded[2]["tool_name"] == "read"
    finally:
        code, err = rpc.close()
    assert code == 0, err


def test_steer_during_a_turn_is_delivered_before_the_next_request(senv: SmithEnv) -> None:
    project = _project(senv)
    log = senv.root / "requests.jsonl"
    model = script(
        senv,
        [
            {
                "text": "Reading it now, one moment please.",
                "tool_calls": [{"name": "read", "arguments": {"path": "src/app.py"}}],
                "delay_ms": SLOW,
            },
            {"text": "Done, and in French."},
        ],
        requests_log=str(log),
    )
    rpc = Rpc(senv, project, "--model", model)
    try:
        _started(rpc, "prompt", "explain app")
        rpc.event("message_start", role="assistant")  # the turn is streaming
        queued = _started(rpc, "steer", "answer in French")
        assert queued["status"] == "queued" and queued["id"].startswith("q-")
        assert rpc.event("queue_changed")["queue"] == [
            {"id": queued["id"], "mode": "steer", "text": "answer in French"}
        ]
        rpc.call("wait_idle")
        steered = [
            ev["message"]
            for ev in rpc.events
            if ev["type"] == "message_end" and ev["message"].get("queued") == "steer"
        ]
        assert [texts_of(m) for m in steered] == ["answer in French"]
        requests = [json.loads(line) for line in log.read_text().splitlines()]
        roles = [m["role"] for m in requests[1]["messages"] if not m.get("context")]
        # After the whole tool batch, before the next request.
        assert roles == ["user", "assistant", "tool_result", "user"]
        assert requests[1]["messages"][-1]["content"][0]["text"] == "answer in French"
        assert rpc.event("agent_end")["stop"] == "end"
    finally:
        code, err = rpc.close()
    assert code == 0, err


def test_queued_steers_arrive_one_at_a_time_by_default(senv: SmithEnv) -> None:
    project = _project(senv)
    gate = project / "gate"  # the tool call blocks reading it until the test writes (in the
    # project: the sandbox shows the command nothing else of /tmp)
    os.mkfifo(gate)
    log = senv.root / "requests.jsonl"
    hold = {"name": "bash", "arguments": {"command": f"read line < '{gate}'"}}
    model = script(
        senv,
        [{"tool_calls": [hold]}, {"text": "took one"}, {"text": "took two"}],
        requests_log=str(log),
    )
    rpc = Rpc(senv, project, "--model", model)
    try:
        _started(rpc, "prompt", "start")
        rpc.event("tool_start")
        one, two = _started(rpc, "steer", "one"), _started(rpc, "steer", "two")
        assert [i["id"] for i in rpc.call("queue.list")["queue"]] == [one["id"], two["id"]]
        with open(gate, "w") as released:
            released.write("go\n")
        rpc.call("wait_idle")
        requests = [json.loads(line) for line in log.read_text().splitlines()]
        users = [  # what the user said (not the environment block smith adds)
            [m["content"][0]["text"] for m in r["messages"]
             if m["role"] == "user" and not m.get("context")]
            for r in requests
        ]  # fmt: skip
        # The oldest after the tool batch, the next at the safe point after its answer.
        assert users == [["start"], ["start", "one"], ["start", "one", "two"]]
        assert [m["role"] for m in requests[2]["messages"]][-3:] == ["user", "assistant", "user"]
    finally:
        code, err = rpc.close()
    assert code == 0, err


def test_abort_stops_the_turn_and_the_queue_can_be_listed_and_edited(senv: SmithEnv) -> None:
    project = _project(senv)
    words = " ".join(f"w{i}" for i in range(60))
    model = script(senv, [{"text": words, "delay_ms": SLOW}, {"text": "second run"}])
    rpc = Rpc(senv, project, "--model", model)
    try:
        _started(rpc, "prompt", "talk slowly")
        # The answer streaming (the prompt has a delta of its own before it).
        streaming = rpc.event("message_start", role="assistant")
        rpc.event("message_delta", message_id=streaming["message_id"])
        first = _started(rpc, "follow_up", "one more thing")
        second = _started(rpc, "prompt", "and another")  # busy: queued as a follow-up
        third = _started(rpc, "steer", "and a steer")
        listed = rpc.call("queue.list")["queue"]
        assert [(i["id"], i["mode"]) for i in listed] == [
            (first["id"], "follow_up"),
            (second["id"], "follow_up"),
            (third["id"], "steer"),
        ]
        assert rpc.call("queue.remove", {"id": second["id"]}) == {"removed": True}
        assert rpc.call("queue.remove", {"id": second["id"]}) == {"removed": False}
        assert rpc.call("abort") == {"aborted": True}
        rpc.call("wait_idle")
        end = rpc.event("agent_end")
        assert end["stop"] == "abort"
        assert words.startswith(texts_of(end["message"])) and texts_of(end["message"]) != words
        assert rpc.event("settled")["queue"] == 2  # kept after an abort
        assert rpc.call("abort") == {"aborted": False}
        assert rpc.call("queue.clear") == {"removed": 2}
        assert rpc.call("queue.list") == {"queue": []}
        state = rpc.call("get_state")
        assert state["busy"] is False and state["queue"] == []
        assert state["protocol"] == VERSION
    finally:
        code, err = rpc.close()
    assert code == 0, err


def test_a_prompt_after_an_abort_takes_the_input_left_queued_and_names_them_all(
    senv: SmithEnv,
) -> None:
    project = _project(senv)
    words = " ".join(f"w{i}" for i in range(60))
    model = script(senv, [{"text": words, "delay_ms": SLOW}, {"text": "second run"}])
    rpc = Rpc(senv, project, "--model", model)
    try:
        _started(rpc, "prompt", "talk slowly")
        streaming = rpc.event("message_start", role="assistant")
        rpc.event("message_delta", message_id=streaming["message_id"])
        left = _started(rpc, "follow_up", "one more thing")["id"]
        assert rpc.call("abort") == {"aborted": True}
        rpc.call("wait_idle")
        assert rpc.event("settled")["queue"] == 1  # kept after the abort
        seen = len(rpc.events)
        accepted = rpc.call("prompt", {"text": "go on"})
        assert accepted["status"] == "started"
        rpc.call("wait_idle")
        run = rpc.events[seen:]
        start = next(e for e in run if e["type"] == "agent_start")
        end = next(e for e in run if e["type"] == "agent_end")
        # The left-over input goes first; the run is the prompt's, and names both.
        assert start["prompt_id"] == end["prompt_id"] == accepted["id"]
        assert start["submissions"] == end["submissions"] == [left, accepted["id"]]
        assert {
            e.get("submission") for e in run if e["type"] not in ("settled", "queue_changed")
        } == {accepted["id"]}
    finally:
        code, err = rpc.close()
    assert code == 0, err


def test_protocol_errors_are_answered_with_standard_codes_and_a_diagnostic(
    senv: SmithEnv,
) -> None:
    project = _project(senv)
    rpc = Rpc(senv, project, "--model", "demo")
    try:
        rpc.send_raw('{"jsonrpc": "2.0", "id": "u1", "method": "get_stat"}\n')
        unknown = rpc.answer("u1")["error"]
        assert unknown["code"] == -32601 and unknown["data"]["code"] == "rpc.unknown-method"
        assert "did you mean 'get_state'?" in unknown["data"]["fix"]

        rpc.send_raw("{this is not json\n")
        bad = rpc.pump(lambda r: "error" in r)
        assert bad["id"] is None and bad["error"]["code"] == -32700
        assert bad["error"]["data"]["code"] == "rpc.not-json"
        rpc.send_raw(b'{"jsonrpc": "2.0", "id": 1, "method": "\xff"}\n')  # not UTF-8
        assert rpc.pump(lambda r: "error" in r)["error"]["code"] == -32700
        rpc.send_raw('{"jsonrpc": "2.0", "id": 2, "method": "get_state", "x": NaN}\n')
        assert rpc.pump(lambda r: "error" in r)["error"]["code"] == -32700

        for line, id in [
            ('{"id": 3, "method": "get_state"}', 3),  # no "jsonrpc"
            ('{"jsonrpc": "2.0", "id": 4, "method": 5}', 4),
            ('{"jsonrpc": "2.0", "id": 5, "method": "get_state", "params": "x"}', 5),
            ('{"jsonrpc": "2.0", "id": [6], "method": "get_state"}', None),
            ("[]", None),
            ('"just a string"', None),
        ]:
            rpc.send_raw(line + "\n")
            got = rpc.pump(lambda r: isinstance(r, dict) and "error" in r)
            assert got["id"] == id and got["error"]["code"] == -32600, line
            assert got["error"]["data"]["code"] == "rpc.invalid-request"

        rpc.send_raw("\n   \n")  # blank lines are no requests: nothing comes back
        batch = [
            {"jsonrpc": "2.0", "id": "b1", "method": "queue.list"},
            {"jsonrpc": "2.0", "method": "queue.clear"},  # a notification: no answer
            {"jsonrpc": "2.0", "id": "b2", "method": "nope"},
            1,
            {"jsonrpc": "2.0", "id": "b3", "method": "thinking.set", "params": ["high"]},
        ]
        rpc.send_raw(json.dumps(batch) + "\n")
        answers = rpc.pump(lambda r: isinstance(r, list))
        assert [a["id"] for a in answers] == ["b1", "b2", None, "b3"]
        assert answers[0]["result"] == {"queue": []}
        assert answers[1]["error"]["code"] == -32601
        assert answers[2]["error"]["code"] == -32600
        assert answers[3]["result"]["thinking"] == "high"
        rpc.send_raw(json.dumps([{"jsonrpc": "2.0", "method": "abort"}]) + "\n")
        assert rpc.call("get_state")["thinking"] == "high"  # and no answer to the batch
        assert not any(isinstance(r, list) for r in rpc.records[rpc.records.index(answers) + 1 :])
    finally:
        code, err = rpc.close()
    assert code == 0, err


def test_invalid_params_get_32602_with_the_smith_diagnostic(senv: SmithEnv) -> None:
    project = _project(senv)
    rpc = Rpc(senv, project, "--model", "demo")
    try:
        cases = [
            ("prompt", {}, "rpc.missing-param"),
            ("prompt", {"txt": "hi"}, "rpc.unknown-param"),
            ("prompt", {"text": 5}, "rpc.bad-param"),
            ("prompt", {"text": "  "}, "rpc.empty-text"),
            ("prompt", ["a", [], "c"], "rpc.unknown-param"),  # text and images, then?
            ("prompt", ["a", "b"], "rpc.bad-param"),  # images are an array
            ("vcs.undo", {"force": "yes"}, "rpc.bad-param"),
            ("model.set", {"model": "nosuch:model-x"}, "model.unknown-provider"),
            ("thinking.set", {"level": "max"}, "runtime.bad-thinking"),
            ("session.switch", {"session": "no-such-session"}, "session.not-found"),
            ("session.switch", {"session": " "}, "rpc.empty-text"),
            ("get_messages", {"leaf": "deadbeef"}, "session.unknown-entry"),
            ("session.select", {"leaf": "deadbeef"}, "session.unknown-entry"),
            ("session.fork", {"entry": "deadbeef"}, "session.unknown-entry"),
            ("session.fork", {"name": " "}, "rpc.empty-text"),
        ]
        for method, params, code in cases:
            error = rpc.error(method, params)
            assert (error["code"], error["data"]["code"]) == (-32602, code), (method, error)
            assert error["message"] == "Invalid params"
            assert error["data"]["what"] and error["data"]["fix"]
        assert "did you mean 'text'?" in rpc.error("prompt", {"txt": "hi"})["data"]["fix"]
        unknown = rpc.error("session.select", {"leaf": "deadbeef"})["data"]
        assert unknown["source"] == {"surface": "rpc", "location": "select.leaf"}
        bad_model = rpc.error("model.set", {"model": "scriptd:x.json"})["data"]
        assert "did you mean 'scripted'" in bad_model["fix"]
        assert rpc.call("get_state")["model"] == "demo"  # nothing changed
    finally:
        code, err = rpc.close()
    assert code == 0, err


def test_state_model_and_thinking(senv: SmithEnv) -> None:
    project = _project(senv)
    senv.write_user_config('models {\n  alias {\n    quick "demo"\n  }\n}\n')
    rpc = Rpc(senv, project, "--model", "demo", "--thinking", "low")
    try:
        state = rpc.call("get_state")
        assert (state["model"], state["thinking"], state["busy"]) == ("demo", "low", False)
        assert state["session"]["entries"] == 0 and state["context"]["tokens"] == 0
        assert set(state["cost"]) >= {"usd", "complete"}
        listed = {m["spec"]: m for m in rpc.call("model.list")["models"]}
        assert listed["quick"] == {
            "spec": "quick",
            "kind": "alias",
            "target": "demo",
            "from": listed["quick"]["from"],
            "current": False,
        }
        assert listed["demo"]["current"] is True
        catalog = [m for m in listed.values() if m["kind"] == "model"]
        assert catalog and all(m["usable"] is False for m in catalog)  # no keys here
        assert rpc.call("model.set", {"model": "quick"})["model"] == "quick"
        assert rpc.call("thinking.set", {"level": "high"})["thinking"] == "high"
        state = rpc.call("get_state")
        assert (state["model"], state["thinking"], state["generation"]) == ("quick", "high", 2)
        assert rpc.call("memory.report") == {"enabled": False, "scopes": []}
        assert state["memory"] is None
    finally:
        code, err = rpc.close()
    assert code == 0, err


def test_sessions_can_be_created_listed_and_switched_when_idle(senv: SmithEnv) -> None:
    project = _project(senv)
    # Each session's runtime has a provider of its own: the script starts again in each.
    model = script(senv, [{"text": "first answer"}, {"text": "slow " * 30, "delay_ms": 30}])
    rpc = Rpc(senv, project, "--model", model, "--session", "alpha")
    try:
        alpha = rpc.call("get_state")["session"]
        assert alpha["name"] == "alpha"
        _started(rpc, "prompt", "one")
        rpc.call("wait_idle")
        beta = rpc.call("session.new", {"name": "beta"})
        assert beta["name"] == "beta" and beta["entries"] == 0
        assert rpc.call("get_state")["session"]["id"] == beta["id"]
        _started(rpc, "prompt", "two")
        rpc.call("wait_idle")
        listed = rpc.call("session.list")["sessions"]
        assert {(s["name"], s["current"]) for s in listed} == {("alpha", False), ("beta", True)}
        back = rpc.call("session.switch", {"session": "alpha"})
        # The prompt, the environment block the model was told, the answer.
        assert back["id"] == alpha["id"] and back["entries"] == 3
        assert rpc.call("session.switch", {"session": alpha["id"]}) == back  # already there
        said = [m["message"]["content"][0]["text"] for m in rpc.call("get_messages")["messages"]]
        assert said == ["one", "first answer"]
        _started(rpc, "prompt", "three")
        rpc.call("wait_idle")
        _started(rpc, "prompt", "four")  # the script's slow response
        rpc.event("message_delta", channel="text", delta="slow slow slow ")
        refused = [
            ("session.switch", {"session": "beta"}),
            ("session.new", {}),
            ("session.fork", {}),
            ("session.select", {"leaf": "x"}),
        ]
        for method, params in refused:
            busy = rpc.error(method, params)
            assert (busy["code"], busy["data"]["code"]) == (-32000, "rpc.busy"), method
        rpc.call("abort")
        rpc.call("wait_idle")
        assert rpc.call("get_state")["session"]["id"] == alpha["id"]
    finally:
        code, err = rpc.close()
    assert code == 0, err


def test_a_fork_continues_from_an_entry_and_branches_can_be_selected(senv: SmithEnv) -> None:
    project = _project(senv)
    rpc = Rpc(senv, project, "--model", script(senv, [{"text": "first answer"}]))
    try:
        alpha = rpc.call("get_state")["session"]
        _started(rpc, "prompt", "one")
        rpc.call("wait_idle")
        user_entry = rpc.call("get_messages")["messages"][0]["entry_id"]
        fork = rpc.call("session.fork", {"entry": user_entry, "name": "gamma"})
        # The environment block the prompt was told, and the prompt.
        assert fork["forked_from"] == alpha["id"] and fork["entries"] == 2
        assert (fork["name"], fork["leaf"]) == ("gamma", user_entry)
        assert rpc.call("get_state")["session"]["id"] == fork["id"]
        tree = rpc.call("get_tree")
        assert [(e["id"], e["role"], e["preview"]) for e in _messages(tree)] == [
            (user_entry, "user", "one")
        ]
        _started(rpc, "prompt", "three")  # a second user message after "one": a new branch
        rpc.call("wait_idle")
        tree = rpc.call("get_tree")
        assert [e["preview"] for e in _messages(tree)] == ["one", "three", "first answer"]
        # The fork kept the environment block before "one": the next prompt found it
        # unchanged, so recorded none.
        kinds = [e["kind"] for e in tree["entries"]]
        assert kinds == ["environment", "message", "message", "message"]
        assert tree["leaves"] == [tree["leaf"]]
        selected = rpc.call("session.select", {"leaf": user_entry})
        assert selected["leaf"] == user_entry
        assert [m["entry_id"] for m in rpc.call("get_messages")["messages"]] == [user_entry]
        assert rpc.error("session.select", {"leaf": "nope"})["data"]["code"] == (
            "session.unknown-entry"
        )
        assert rpc.error("session.fork", {"entry": "nope"})["code"] == -32602
        names = {s["name"] for s in rpc.call("session.list")["sessions"]}
        assert names == {alpha["name"], "gamma"}
    finally:
        code, err = rpc.close()
    assert code == 0, err


def _messages(tree: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in tree["entries"] if e["kind"] == "message"]


def test_shutdown_answers_then_exits_0_with_the_session_closed(senv: SmithEnv) -> None:
    from smith.session import Session

    project = _project(senv)
    model = script(senv, [{"text": "slow " * 40, "delay_ms": 40}])
    with Rpc(senv, project, "--model", model) as rpc:
        path = rpc.call("get_state")["session"]["path"]
        _started(rpc, "prompt", "talk")
        # The answer streaming (the prompt has a delta of its own before it).
        streaming = rpc.event("message_start", role="assistant")
        rpc.event("message_delta", message_id=streaming["message_id"])
        waiting = rpc.request("wait_idle")
        done = rpc.request("shutdown")
        assert rpc.answer(waiting)["result"]["busy"] is False  # answered before the end
        assert rpc.answer(done)["result"]["session"]
        assert rpc.event("agent_end")["stop"] == "abort"
        assert rpc.proc.wait(10) == 0
    with Session.open(path) as session:  # unlocked: the server closed it
        assert [e.content["role"] for e in session.branch(kind="message")] == ["user", "assistant"]


def test_end_of_input_and_sigterm_abort_and_exit_cleanly(senv: SmithEnv) -> None:
    project = _project(senv)
    for ending in ("eof", "sigterm"):
        model = script(senv, [{"text": "slow " * 40, "delay_ms": 40}])
        with Rpc(senv, project, "--model", model) as rpc:
            _started(rpc, "prompt", "talk")
            # The answer streaming (the prompt has a delta of its own before it).
            streaming = rpc.event("message_start", role="assistant")
            rpc.event("message_delta", message_id=streaming["message_id"])
            if ending == "eof":
                assert rpc.proc.stdin is not None
                rpc.proc.stdin.close()
            else:
                rpc.proc.send_signal(signal.SIGTERM)
            assert rpc.event("agent_end")["stop"] == "abort", ending
            assert rpc.event("settled")
            assert rpc.proc.wait(10) == 0, rpc.stderr()


def test_a_batch_that_shuts_down_is_answered_before_the_process_exits(senv: SmithEnv) -> None:
    project = _project(senv)
    with Rpc(senv, project, "--model", "demo") as rpc:
        batch = [
            {"jsonrpc": "2.0", "id": "w", "method": "wait_idle"},
            {"jsonrpc": "2.0", "id": "s", "method": "shutdown"},
            {"jsonrpc": "2.0", "id": "late", "method": "get_state"},
        ]
        rpc.send_raw(json.dumps(batch) + "\n")
        answers = rpc.pump(lambda r: isinstance(r, list))
        assert [a["id"] for a in answers] == ["w", "s", "late"]
        assert answers[0]["result"]["busy"] is False and answers[1]["result"]["session"]
        assert answers[2]["error"]["data"]["code"] == "rpc.closed"
        assert rpc.proc.wait(10) == 0, rpc.stderr()


def test_memory_accounting_is_reported_per_scope(senv: SmithEnv) -> None:
    project = _project(senv)
    with Rpc(senv, project, "--model", "demo", env={"SMITH_MEMORY_ACCOUNTING": "1"}) as rpc:
        rpc.call("prompt", {"text": "list files"})
        rpc.call("wait_idle")
        report = rpc.call("memory.report")
        assert report["enabled"] is True
        kinds = {r["kind"] for r in report["scopes"]}
        assert {"process", "session", "turn", "kernel"} <= kinds
        turn = next(r for r in report["scopes"] if r["kind"] == "turn")
        assert turn["count"] > 0 and turn["peak"] >= turn["live"] >= 0
        memory = rpc.call("get_state")["memory"]
        assert isinstance(memory["session"], int) and isinstance(memory["turn"], int)
        assert rpc.close()[0] == 0


def test_compact_takes_a_focus_and_says_it(senv: SmithEnv) -> None:
    project = _project(senv)
    rpc = Rpc(senv, project, "--model", script(senv, [{"text": "hi"}]))
    try:
        assert rpc.call("compact", {"focus": "the parser bug"}) == {"status": "started"}
        assert rpc.event("compaction_start")["focus"] == "the parser bug"
        assert rpc.event("compaction_end")["ok"] is False  # nothing to compact yet
    finally:
        code, err = rpc.close()
    assert code == 0, err
