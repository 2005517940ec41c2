"""A session stays resumable whatever happened to a tool call: a call whose result was
lost (kill -9, abort, crash, a damaged frame) is answered by a recorded "outcome unknown"
result, and the context sent to a provider pairs every call with exactly one result, as
OpenAI and Anthropic require (they answer 400 otherwise)."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from smith.runtime._context import paired
from tests.conftest import Result, SmithEnv, smith_executable
from tests.http_kit import LoopbackServer, Recorded, Reply, json_reply, sse
from tests.rpc_kit import Rpc

SSE = {"content-type": "text/event-stream"}


def pairing_problem(messages: list[dict[str, Any]]) -> str | None:
    """What the vendors check: each assistant message's tool calls are answered by tool
    messages right after it, and every tool message answers a pending call."""
    pending: list[str] = []
    for i, m in enumerate(messages):
        if m.get("role") == "tool":
            if m.get("tool_call_id") not in pending:
                return f"messages[{i}]: a tool message without its call"
            pending.remove(m["tool_call_id"])
            continue
        if pending:
            return f"messages[{i}]: tool calls {pending} have no results"
        if m.get("role") == "assistant":
            pending = [c["id"] for c in m.get("tool_calls") or []]
    return f"tool calls {pending} have no results" if pending else None


def _strict_server(seen: list[dict[str, Any]]) -> Callable[[Recorded], Reply]:
    def answer(request: Recorded) -> Reply:
        messages = request.json["messages"]
        problem = pairing_problem(messages)
        seen.append({"messages": messages, "problem": problem})
        if problem:
            return json_reply(400, {"error": {"message": problem, "type": "invalid_request"}})
        chunk = {
            "id": "c1",
            "object": "chat.completion.chunk",
            "model": "x",
            "choices": [{"index": 0, "delta": {"content": "resumed"}, "finish_reason": "stop"}],
        }
        return Reply(200, SSE, [sse(chunk), b"data: [DONE]\n\n"])

    return answer


def _killed_mid_tool(
    senv: SmithEnv, project: Path, name: str, delay: float | None, *, alongside: bool = False
) -> None:
    """`smith eval --session NAME` with a bash call, killed with SIGKILL `delay` seconds
    after launch, or once the command has started when `delay` is None; `alongside`: an
    ls call in the same batch as the long one."""
    marker = project / f".{name}.started"  # where the sandboxed command may write
    script = senv.root / f"{name}.json"
    call = {"command": f"echo started > {marker}; sleep 30", "timeout": 60}
    # Random moments fall in the first batch (two calls at once), between batches, or in
    # the long call; a None delay waits for the long call itself.
    first = [
        {"name": "bash", "arguments": {"command": "echo one; sleep 0.2", "timeout": 60}},
        {"name": "ls", "arguments": {}},
    ]
    long = [{"name": "bash", "arguments": call}, *([{"name": "ls", "arguments": {}}] * alongside)]
    responses = [
        {"tool_calls": long, "stop": "tool_use"},
        {"text": "finished", "stop": "end"},
    ]
    if delay is not None:
        responses.insert(0, {"text": "looking", "tool_calls": first, "stop": "tool_use"})
    script.write_text(json.dumps({"responses": responses}))
    proc = subprocess.Popen(
        [smith_executable(), "eval", "--session", name, "--model", f"scripted:{script}", "go"],
        cwd=project,
        env=senv.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        if delay is None:
            deadline = time.monotonic() + 30
            while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)  # polling for the command's own mark, not timing it
            assert marker.exists(), "the scripted bash call never started"
        else:
            time.sleep(delay)  # a random moment of the run: what the loop is about
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def _resume(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path, name: str
) -> tuple[Result, list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []
    senv.write_user_config('providers { openai-compatible { api-key-env "LOCAL_KEY"; }; }\n')
    with LoopbackServer() as srv:
        srv.script(_strict_server(seen))
        r = smith_process(
            "eval",
            "--session",
            name,
            "--model",
            "openai-compatible/x",
            "--base-url",
            srv.url + "/v1",
            "continue",
            cwd=project,
            env={"LOCAL_KEY": "sk-local-0123456789"},
        )
    return r, seen


def test_a_session_killed_during_a_tool_call_resumes_with_the_call_answered(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = senv.make_project()
    _killed_mid_tool(senv, project, "k9", None)
    r, seen = _resume(senv, smith_process, project, "k9")
    assert r.code == 0, r.err
    assert seen and all(s["problem"] is None for s in seen), seen[0]["problem"]
    messages = seen[0]["messages"]
    calls = [c for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert len(calls) == 1 and "sleep 30" in calls[0]["function"]["arguments"]
    (answer,) = [m for m in messages if m["role"] == "tool"]
    assert "outcome unknown" in json.dumps(answer["content"])
    assert "started" in json.dumps(answer["content"])  # its intent was recorded
    # the answer is recorded in the session, not only made up for the request
    dump = smith_process("sessions", "dump", "k9", cwd=project).out
    recorded = [json.loads(line).get("content") for line in dump.splitlines()]
    lost = [
        c
        for c in recorded
        if isinstance(c, dict) and c.get("role") == "tool_result" and c.get("outcome") == "unknown"
    ]
    assert len(lost) == 1 and lost[0]["is_error"] is True, "no recorded result for the lost call"


def test_kill_9_at_random_moments_always_leaves_a_resumable_session(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    rng = random.Random(15)
    project = senv.make_project()
    lost = 0  # runs killed while a call was open: the cases the loop is about
    for run in range(30):
        name = f"k{run}"
        _killed_mid_tool(senv, project, name, rng.uniform(0.05, 1.5))
        r, seen = _resume(senv, smith_process, project, name)
        problems = [s["problem"] for s in seen if s["problem"]]
        assert not problems, f"run {run}: {problems[0]}"
        assert r.code == 0, f"run {run}: {r.err}"
        lost += any("outcome unknown" in json.dumps(s["messages"]) for s in seen)
    assert lost >= 5, f"only {lost} of 30 runs were killed during a tool call"


def _call(cid: str) -> dict[str, object]:
    return {"role": "assistant", "content": [{"type": "tool_call", "id": cid, "name": "bash"}]}


def _result(cid: str) -> dict[str, object]:
    return {"role": "tool_result", "tool_call_id": cid, "content": []}


def test_context_pairs_every_call_with_one_result() -> None:
    user: dict[str, object] = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    messages = [
        ("e0", _result("gone")),  # its call was cut away (compaction, a damaged frame)
        ("e1", _call("a")),
        ("e2", user),  # the result of `a` was recorded after the next prompt
        ("e3", _result("a")),
        ("e4", _call("b")),  # never answered
    ]
    out = [m for _, m in paired(messages)]
    roles = [(m["role"], m.get("tool_call_id")) for m in out]
    assert roles == [
        ("assistant", None),
        ("tool_result", "a"),
        ("user", None),
        ("assistant", None),
        ("tool_result", "b"),
    ]
    assert out[-1]["outcome"] == "unknown" and out[-1]["is_error"] is True
    well = [("e1", _call("a")), ("e3", _result("a")), ("e2", user)]
    assert paired(well) == well


def test_context_pairs_a_reused_call_id_with_the_result_after_each_call() -> None:
    """A server that numbers its calls sends call_1 every turn: each call keeps the result
    recorded after it, and a later call_1 whose result was lost is answered as lost."""
    first = {**_result("call_1"), "content": [{"type": "text", "text": "A CONTENT"}]}
    second = {**_result("call_1"), "content": [{"type": "text", "text": "B CONTENT"}]}
    user: dict[str, object] = {"role": "user", "content": [{"type": "text", "text": "next"}]}
    messages = [("e1", _call("call_1")), ("e2", first), ("e3", user), ("e4", _call("call_1")),
                ("e5", second), ("e6", user), ("e7", _call("call_1"))]  # fmt: skip
    out = [m for _, m in paired(messages)]
    texts = [json.dumps(m.get("content")) for m in out if m["role"] == "tool_result"]
    assert len(texts) == 3 and "A CONTENT" in texts[0] and "B CONTENT" in texts[1]
    assert "outcome unknown" in texts[2]


def test_a_damaged_frame_is_reported_everywhere_and_requests_stay_paired(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = senv.make_project()
    script = senv.root / "two.json"
    turns = [
        {"tool_calls": [{"name": "bash", "arguments": {"command": f"echo {word}"}}]}
        for word in ("FIRSTRESULTMARK", "SECONDRESULTMARK")
    ]
    script.write_text(json.dumps({"responses": [*turns, {"text": "done", "stop": "end"}]}))
    r = smith_process(
        "eval", "--session", "dmg", "--model", f"scripted:{script}", "go", cwd=project
    )
    assert r.code == 0, r.err
    (path,) = [p for p in senv.data_home.rglob("*.smith") if p.is_file()]
    data = bytearray(path.read_bytes())
    at = data.index(b"FIRSTRESULTMARK\n", data.index(b"tool_result"))  # the first result
    data[at + 2 : at + 5] = b"\xff\xfe\xfd"  # 3 flipped bytes inside that frame
    path.write_bytes(bytes(data))

    listed = json.loads(smith_process("sessions", "list", "--json", cwd=project).out)["sessions"]
    assert listed[0]["damaged"] is True and "1 damaged frame" in listed[0]["damage"]
    human = smith_process("sessions", "list", cwd=project).out
    assert "damaged frame" in human
    shown = smith_process("sessions", "show", "dmg", cwd=project)
    assert shown.code == 0, shown.err
    assert "damaged: 1 damaged frame(s) skipped" in shown.out, shown.out
    assert "1 corrupt frames skipped" in shown.out and f"sessions repair {path.stem}`" in shown.out
    copy = path.with_name("copy-of-dmg.smith")  # a copy keeps the header's id: the advice
    copy.write_bytes(bytes(data))  # names the file itself, not the intact original
    shown = smith_process("sessions", "show", "copy-of-dmg", cwd=project)
    assert "`smith sessions repair copy-of-dmg`" in shown.out, shown.out
    copy.unlink()
    data = json.loads(smith_process("sessions", "show", "dmg", "--json", cwd=project).out)
    assert data["damaged"] is True and "1 damaged frame" in data["damage"]
    assert data["recovery"]["frames_skipped"] == 1

    with Rpc(senv, project, "--session", "dmg", "--model", "demo") as rpc:
        state = rpc.call("get_state")
    assert "1 damaged frame" in state["damage"]

    r, seen = _resume(senv, smith_process, project, "dmg")
    assert r.code == 0, r.err
    assert "damaged frame" in r.err and "sessions repair" in r.err  # eval says so on stderr
    assert seen and all(s["problem"] is None for s in seen), seen[0]["problem"]


def _tool_call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_call", "id": cid, "name": name, "arguments": args}


def test_a_call_that_completed_but_lost_its_result_is_answered_from_its_record(
    tmp_path: Path,
) -> None:
    """Results are recorded after the whole batch: kill -9 while the batch's bash runs
    leaves the write before it completed (its completion is recorded) with no result. The
    answer must say what is recorded, not that the call did not start."""
    from smith.effects import EffectJournal
    from smith.session import Session, calls_pair

    session = Session.create(str(tmp_path / "s.smith"), cwd=str(tmp_path))
    session.append("message", {"role": "user", "content": [{"type": "text", "text": "go"}]})
    calls = [
        _tool_call("c1", "write", {"path": "a", "content": "x"}),
        _tool_call("c2", "bash", {"command": "sleep 9"}),
    ]
    # recorded as the runtime records them: the message lists its calls (calls_pair)
    session.append(
        "message", {"role": "assistant", "content": calls}, pair=calls_pair(["c1", "c2"])
    )
    journal = EffectJournal(session)
    done = journal.begin("write", calls[0]["arguments"], cause={"tool_call": "c1", "turn": "t"})
    output = {
        "text": "created a (1 bytes)",
        "details": {"path": "a"},
        "ok": True,
        "mutation": "applied",
    }
    journal.finish(done, outcome="ok", mutation="applied", output=output)
    journal.begin("bash", calls[1]["arguments"], cause={"tool_call": "c2", "turn": "t"})
    session.close()

    session = Session.open(str(tmp_path / "s.smith"))
    EffectJournal(session).reconcile()
    results = {
        m["tool_call_id"]: m
        for e in session.branch()
        if e.kind == "message" and (m := e.content)["role"] == "tool_result"  # type: ignore[index]
    }
    first = results["c1"]["content"][0]["text"]
    assert "did not start" not in first
    assert "created a (1 bytes)" in first and "applied" in first
    assert results["c1"]["outcome"] == "ok" and results["c1"]["is_error"] is False
    second = results["c2"]["content"][0]["text"]
    assert "outcome unknown" in second and "was started" in second
    assert results["c2"]["is_error"] is True


def test_a_reused_call_id_is_answered_only_by_a_result_after_it(tmp_path: Path) -> None:
    """Servers that send calls without ids get call_1 every turn: an earlier turn's result
    for call_1 does not answer a later call_1 whose result was lost."""
    from smith.effects import EffectJournal
    from smith.session import Session, calls_pair

    session = Session.create(str(tmp_path / "s.smith"), cwd=str(tmp_path))
    session.append("message", {"role": "user", "content": [{"type": "text", "text": "q1"}]})
    made = calls_pair(["call_1"])  # recorded as the runtime records them
    session.append("message", {"role": "assistant", "content": [_tool_call("call_1", "ls", {})]},
                   pair=made)  # fmt: skip
    result = {"role": "tool_result", "tool_call_id": "call_1", "tool_name": "ls",
              "content": [{"type": "text", "text": "a"}]}  # fmt: skip
    session.append("message", result, pair="call_1")
    session.append("message", {"role": "user", "content": [{"type": "text", "text": "q2"}]})
    session.append("message", {"role": "assistant", "content": [_tool_call("call_1", "ls", {})]},
                   pair=made)  # fmt: skip
    EffectJournal(session).reconcile()
    roles = [
        (m["role"], m.get("tool_call_id"))
        for e in session.branch()
        if e.kind == "message" and isinstance(m := e.content, dict)
    ]
    assert roles[-2:] == [("assistant", None), ("tool_result", "call_1")]


# -- the Anthropic Messages wire format ---------------------------------------------------


def anthropic_pairing_problem(messages: list[dict[str, Any]]) -> str | None:
    """What Anthropic checks: every tool_use of an assistant message is answered by a
    tool_result block at the start of the very next message, a user message, and every
    tool_result answers a tool_use of the message just before it."""
    for i, m in enumerate(messages):
        blocks = m["content"] if isinstance(m.get("content"), list) else []
        results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        if results:
            if m["role"] != "user":
                return f"messages[{i}]: tool_result blocks in a {m['role']} message"
            before = messages[i - 1] if i else {}
            asked = [b.get("id") for b in before.get("content") or []
                     if isinstance(b, dict) and b.get("type") == "tool_use"]  # fmt: skip
            if before.get("role") != "assistant" or set(results) - set(asked):
                return f"messages[{i}]: tool_result {results} without its tool_use just before"
        uses = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
        if m["role"] == "assistant" and uses:
            after = messages[i + 1] if i + 1 < len(messages) else {}
            lead = []
            for b in after.get("content") or [] if after.get("role") == "user" else []:
                if not isinstance(b, dict) or b.get("type") != "tool_result":
                    break  # tool_result blocks must come first
                lead.append(b.get("tool_use_id"))
            if sorted(lead) != sorted(uses):
                return (f"messages[{i}]: tool_use ids {uses} were found without tool_result "
                        f"blocks immediately after (found {lead})")  # fmt: skip
    return None


def _anthropic_server(seen: list[dict[str, Any]]) -> Callable[[Recorded], Reply]:
    from tests.test_provider_vendor_loopback import a_stream

    def answer(request: Recorded) -> Reply:
        messages = request.json["messages"]
        problem = anthropic_pairing_problem(messages)
        seen.append({"path": request.path, "messages": messages, "problem": problem})
        if problem:
            error = {"type": "invalid_request_error", "message": problem}
            return json_reply(400, {"type": "error", "error": error})
        return Reply(200, SSE, a_stream(text="resumed"))

    return answer


def test_a_session_killed_during_a_tool_call_resumes_well_paired_for_anthropic(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    """kill -9 while a batch of two calls runs (a long bash beside ls); the request the
    anthropic provider then builds answers both tool_use blocks with tool_result blocks
    leading the next user message, as the Messages API demands (400 otherwise)."""
    project = senv.make_project()
    _killed_mid_tool(senv, project, "ka", None, alongside=True)
    seen: list[dict[str, Any]] = []
    with LoopbackServer() as srv:
        srv.script(_anthropic_server(seen))
        r = smith_process("eval", "--session", "ka", "--model", "anthropic/claude-sonnet-4-5",
                          "--base-url", srv.url + "/v1", "continue", cwd=project,
                          env={"ANTHROPIC_API_KEY": "sk-ant-test-0123456789"})  # fmt: skip
    assert r.code == 0, r.err
    assert seen and seen[0]["path"] == "/v1/messages"
    assert all(s["problem"] is None for s in seen), seen[0]["problem"]
    messages = seen[0]["messages"]
    (asked,) = [m for m in messages if m["role"] == "assistant"]
    uses = [b for b in asked["content"] if b["type"] == "tool_use"]
    assert [u["name"] for u in uses] == ["bash", "ls"] and "sleep 30" in json.dumps(uses[0])
    answered = messages[messages.index(asked) + 1]["content"]
    results = {b["tool_use_id"]: b for b in answered if b["type"] == "tool_result"}
    assert set(results) == {u["id"] for u in uses}
    assert "outcome unknown" in json.dumps(results[uses[0]["id"]])
    assert results[uses[0]["id"]].get("is_error") is True
    assert "resumed" in r.out


def test_the_anthropic_check_refuses_what_the_api_refuses() -> None:
    """The checker itself: an unanswered tool_use, a result not leading the next
    message, and a result without its call are each a problem."""
    use = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls",
                                             "input": {}}]}  # fmt: skip
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "x"}
    text = {"type": "text", "text": "go on"}
    user = {"role": "user", "content": [text]}
    assert anthropic_pairing_problem([user, use, {"role": "user", "content": [result]}]) is None
    assert anthropic_pairing_problem([user, use]) is not None
    assert anthropic_pairing_problem([user, use, {"role": "user", "content": [text, result]}])
    assert anthropic_pairing_problem([user, {"role": "user", "content": [result]}])
