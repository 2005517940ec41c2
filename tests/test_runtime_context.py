"""Context policies, compaction, cost and secrets as the runtime applies them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from smith.providers import End, Pricing, TextDelta, ToolCall, Usage
from smith.providers._model import ModelInfo
from smith.runtime import ContextPolicy, Limits, SecretProxy
from smith.runtime._context import apply_policy
from tests.runtime_kit import Fake, World, call, messages, run, say


def _msg(role: str, text: str = "x", calls: int = 0) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    content += [
        {"type": "tool_call", "id": f"c{i}", "name": "ls", "arguments": {}} for i in range(calls)
    ]
    return {"role": role, "content": content}


@pytest.mark.parametrize("unit", ["messages", "chars", "tokens"])
@pytest.mark.parametrize("limit", [1, 2, 3, 4, 5, 50, 400, 10_000])
def test_a_window_never_starts_at_a_tool_result(unit: str, limit: int) -> None:
    history = [
        _msg("user"),
        _msg("assistant", calls=2),
        _msg("tool_result"),
        _msg("tool_result"),
        _msg("assistant", calls=1),
        _msg("tool_result"),
        _msg("assistant", "done"),
    ]
    pairs = [(str(i), m) for i, m in enumerate(history)]
    kept = apply_policy(pairs, ContextPolicy("window", unit, limit))
    assert kept, "the latest message is always kept"
    assert kept[0][1]["role"] in ("user", "assistant")
    assert kept == pairs[len(pairs) - len(kept) :]


def test_window_policy_limits_what_the_provider_sees(tmp_path: Path) -> None:
    w = World(tmp_path)
    fake = Fake(say("a"), say("b"), say("c"))
    w.converse(
        fake, prompts=["one", "two", "three"], context_policy=ContextPolicy("window", "messages", 3)
    )
    assert [m["role"] for m in fake.requests[2].messages] == ["user", "assistant", "user"]
    assert len(messages(w.session)) == 6  # nothing deleted from the session


def test_compaction_summarises_older_context_and_keeps_history(tmp_path: Path) -> None:
    w = World(tmp_path)
    fake = Fake(
        say("first answer " * 30),
        call(("ls", {})),
        say("second answer " * 30),
        say("SUMMARY of the work", usage=Usage(500, 40)),
        say("after"),
    )

    async def main() -> None:
        runtime = w.runtime(fake, limits=Limits(keep_recent=50))
        for text in ("first question", "second question"):
            runtime.prompt(text)
            await runtime.wait_idle()
        runtime.compact()
        await runtime.wait_idle()
        runtime.prompt("third")
        await runtime.wait_idle()
        assert runtime.cost.to_dict()["by_source"]["compaction"]["tokens"]["input"] == 500

    run(main)
    end = w.of("compaction_end")[-1]
    assert end["ok"] is True and end["summary"] == "SUMMARY of the work"
    assert w.types().index("compaction_start") < w.types().index("compaction_end")
    sent = fake.requests[-1].messages
    assert "SUMMARY of the work" in sent[0]["content"][0]["text"]  # type: ignore[index]
    assert not any("first question" in json.dumps(m) for m in sent)
    assert sent[-1]["content"][0]["text"] == "third"  # type: ignore[index]
    roles = [m["role"] for m in sent]
    assert roles[1] in ("user", "assistant")  # the kept part starts cleanly
    # The session still has every message, plus the compaction entry.
    recorded = w.reopened()
    assert any("first question" in json.dumps(e.content) for e in recorded.entries())
    assert [e.kind for e in recorded.entries()].count("compaction") == 1


@pytest.mark.parametrize(
    "summary",
    [
        [TextDelta("Half a summ"), End("limit")],
        [TextDelta("Half"), End("error", error="overloaded")],
        [TextDelta("no end event")],
        [End("success")],
    ],
    ids=["limit", "error", "no-terminal", "empty"],
)
def test_a_summary_that_did_not_finish_is_not_persisted(tmp_path: Path, summary: Any) -> None:
    w = World(tmp_path)
    fake = Fake(say("a " * 40), say("b " * 40), summary, say("after"))

    async def main() -> None:
        rt = w.runtime(fake, limits=Limits(keep_recent=10))
        for text in ("one", "two"):
            rt.prompt(text)
            await rt.wait_idle()
        rt.compact()
        await rt.wait_idle()
        rt.prompt("three")
        await rt.wait_idle()

    run(main)
    end = w.of("compaction_end")[-1]
    assert end["ok"] is False and "not recorded" in end["error"]
    assert not [e for e in w.reopened().entries() if e.kind == "compaction"]
    assert len(fake.requests[-1].messages) == 5


def test_automatic_compaction_near_the_context_limit_keeps_queued_input(
    tmp_path: Path,
) -> None:
    w = World(tmp_path)
    fake = Fake(say("long " * 200), say("SUMMARY"), say("answer"))

    async def main() -> None:
        rt = w.runtime(fake, limits=Limits(context_limit=200, keep_recent=20))
        rt.prompt("first")
        await rt.wait_idle()
        rt.prompt("second")
        await rt.wait_idle()

    run(main)
    assert w.of("compaction_end")[0]["reason"] == "auto"
    assert w.of("compaction_end")[0]["ok"] is True
    assert "SUMMARY" in json.dumps(fake.requests[2].messages)


def test_without_a_configured_limit_the_models_context_window_is_the_limit(
    tmp_path: Path,
) -> None:
    w = World(tmp_path)
    fake = Fake(say("long " * 200), say("SUMMARY"), say("answer"))
    fake.model = ModelInfo("fake", "m", "openai-chat", context_window=200, max_output=50)  # type: ignore[attr-defined]

    async def main() -> None:
        rt = w.runtime(fake, limits=Limits(keep_recent=20))
        rt.prompt("first")
        await rt.wait_idle()
        rt.prompt("second")
        await rt.wait_idle()

    run(main)
    assert [e["reason"] for e in w.of("compaction_end")] == ["auto"]


def test_unknown_usage_stays_unknown(tmp_path: Path) -> None:
    w = World(tmp_path)
    rt = w.converse(Fake(say("no usage reported")), prompts=["hi"])
    cost = rt.cost.to_dict()
    assert cost["usd"] is None and cost["tokens"]["input"] is None
    assert rt.cost.format() == "unknown"
    assert messages(w.session)[-1]["usage"] is None


def test_cost_from_usage_and_pricing(tmp_path: Path) -> None:
    w = World(tmp_path)
    fake = Fake(
        say("priced", usage=Usage(1_000_000, 100_000, 0, 0)), pricing=Pricing(3.0, 15.0, 0.3, 3.75)
    )
    rt = w.converse(fake, prompts=["hi"])
    assert rt.cost.usd == pytest.approx(3.0 + 1.5)
    assert messages(w.session)[-1]["usage"]["input"] == 1_000_000


def test_a_secret_never_reaches_the_provider_or_the_session_file(tmp_path: Path) -> None:
    w = World(tmp_path)
    token = "tok-4f9a1b2c3d4e5f60718293a4b5c6d7e8"
    proxy = SecretProxy()
    placeholder = proxy.register("DEPLOY_TOKEN", token, source="test")
    command = f'test "$DEPLOY_TOKEN" = "{placeholder}" && echo match; echo {placeholder}'
    fake = Fake(call(("bash", {"command": command})), say(f"I saw {token} there"))
    w.converse(fake, prompts=[f"deploy with {token} please"], secrets=proxy)
    bodies = json.dumps([[r.system, r.messages, r.tools] for r in fake.requests])
    assert token not in bodies
    assert placeholder in bodies  # the model sees the placeholder instead
    data = Path(w.path).read_bytes()
    w.session.close()
    assert token.encode() not in data
    import zstandard

    for entry in w.reopened().entries():
        assert token not in json.dumps(entry.content), entry.kind
    assert zstandard  # compressed frames were decoded above, not searched as bytes
    # Inside the authorised effect the secret was real: the command saw the plaintext
    # both in its environment and where the placeholder stood, and its output came back
    # redacted.
    result = fake.requests[1].messages[-1]["content"][0]["text"]  # type: ignore[index]
    assert "match" in result and token not in result
    secrets = [e.content for e in w.reopened().entries() if e.kind == "secret"]
    assert secrets and all(token not in json.dumps(s) for s in secrets)


def test_tool_calls_streamed_with_results_keep_provider_context_paired(tmp_path: Path) -> None:
    w = World(tmp_path)
    fake = Fake(
        [ToolCall("a", "ls", {}), ToolCall("b", "ls", {"path": "src"}), End("tool_use")], say("ok")
    )
    w.converse(fake, prompts=["list"])
    roles = [(m["role"], m.get("tool_call_id")) for m in fake.requests[1].messages]
    assert roles == [
        ("user", None),
        ("assistant", None),
        ("tool_result", "a"),
        ("tool_result", "b"),
    ]


def test_a_provider_failing_during_compaction_fails_only_the_compaction(tmp_path: Path) -> None:
    w = World(tmp_path)

    class Broken(Fake):
        async def stream(self, request: Any) -> Any:  # type: ignore[override]
            if request.system.startswith("You summarise"):
                raise ConnectionError("network down")
                yield  # pragma: no cover
            async for item in super().stream(request):
                yield item

    fake = Broken(say("a " * 40), say("b " * 40))

    async def main() -> None:
        rt = w.runtime(fake, limits=Limits(keep_recent=10))
        for text in ("one", "two"):
            rt.prompt(text)
            await rt.wait_idle()
        rt.compact()
        await rt.wait_idle()

    run(main)
    end = w.of("compaction_end")[-1]
    assert end["ok"] is False and "network down" in end["error"]
    assert not w.of("error")
    assert w.types()[-1] == "settled"


def test_a_long_history_is_first_decoded_off_the_event_loop(tmp_path: Path) -> None:
    import threading

    from smith.runtime._context import OFF_LOOP, ContextCache
    from smith.session import Session

    entries = [{"id": f"e{i}", "parent": f"e{i - 1}" if i else None, "ts": 1, "kind": "message",
                "content": {"role": "user", "content": [{"type": "text", "text": f"m{i}"}]}}
               for i in range(OFF_LOOP + 1)]  # fmt: skip
    session = Session.from_entries(entries)
    cache = ContextCache()
    threads: list[str] = []
    original = cache._read

    def spy(s: Session, index: int) -> tuple[str, dict[str, object]] | None:
        threads.append(threading.current_thread().name)
        return original(s, index)

    cache._read = spy  # type: ignore[method-assign]
    assert cache.tokens(session) > OFF_LOOP and not threads  # counted from the records

    async def main() -> None:
        await cache.prepare(session)

    run(main)
    assert cache.built and len(threads) == OFF_LOOP + 1
    assert threading.main_thread().name not in threads
    assert len(cache.get(session)) == OFF_LOOP + 1


@pytest.mark.parametrize("busy", [False, True], ids=["idle", "while-busy"])
def test_compact_with_a_focus_asks_the_summary_to_keep_it(tmp_path: Path, busy: bool) -> None:
    """`/compact FOCUS` (the Compact operation's focus, RPC compact's `focus`): the summary
    request says what to keep above all, the compaction records it, and its start event
    names it, whether it runs at once or at the next safe point."""
    from smith.runtime.ops import Compact

    w = World(tmp_path)
    fake = Fake(say("a " * 40), say("b " * 40), say("SUMMARY"), say("after"))

    async def main() -> None:
        rt = w.runtime(fake, limits=Limits(keep_recent=10))
        rt.prompt("one")
        await rt.wait_idle()
        rt.prompt("two")
        if not busy:
            await rt.wait_idle()
        rt.submit(Compact(focus="the parser bug"))
        await rt.wait_idle()

    run(main)
    (start,) = w.of("compaction_start")
    assert start["focus"] == "the parser bug"
    firsts = [r.messages[0]["content"][0]["text"] for r in fake.requests]  # type: ignore[index]
    (asked,) = [t for t in firsts if t.startswith("Summarise")]
    assert asked.startswith("Summarise this conversation so far, keeping above all "
                            "everything about: the parser bug:")  # fmt: skip
    (entry,) = [e for e in w.reopened().entries() if e.kind == "compaction"]
    assert entry.content["focus"] == "the parser bug"


def test_compact_without_a_focus_asks_for_a_plain_summary(tmp_path: Path) -> None:
    w = World(tmp_path)
    fake = Fake(say("a " * 40), say("b " * 40), say("SUMMARY"))

    async def main() -> None:
        rt = w.runtime(fake, limits=Limits(keep_recent=10))
        for text in ("one", "two"):
            rt.prompt(text)
            await rt.wait_idle()
        rt.compact("   ")
        await rt.wait_idle()

    run(main)
    assert "focus" not in w.of("compaction_start")[0]
    asked = fake.requests[2].messages[0]["content"][0]["text"]  # type: ignore[index]
    assert asked.startswith("Summarise this conversation so far:\n\n")


def test_smiths_notes_neither_move_the_cut_nor_count_as_summarised() -> None:
    """A large environment block first (as every real mode records one) must not push
    the cut past the conversation: the older exchange is what is summarised, and a
    context with only notes before any cut has nothing to compact."""
    from smith.runtime._compaction import _cut, render

    def text(role: str, body: str, **extra: object) -> dict[str, Any]:
        return {"role": role, "content": [{"type": "text", "text": body}], **extra}

    note = text("user", "Environment: " + "x " * 2000, context="environment")
    convo = [text("user", "one"), text("assistant", "a " * 40),
             text("user", "two"), text("assistant", "b " * 40)]  # fmt: skip
    messages = [(f"e{i}", m) for i, m in enumerate([note, *convo])]
    cut = _cut(messages, 20_000)
    assert cut >= 3, cut  # "one" and its answer go into the summary
    assert "[user] one" in render(messages[:cut])
    assert render(messages[:1]) == ""  # a note alone: nothing a summary could say
