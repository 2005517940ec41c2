"""Resuming a long session decodes only what is needed: the context is counted from the
records (each message's stored size), a request decodes only the newest messages that fit
the model's context window, and reconciliation finds lost tool calls from the records'
pairing ids. Each test counts content decodes, so it fails when a path decodes the whole
history again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import smith.session._codec as codec
from smith.effects import EffectJournal
from smith.effects._journal import answer_lost_calls
from smith.providers._model import ModelInfo
from smith.runtime._context import ContextCache, estimate_tokens
from smith.session import Session, calls_pair, content_size, pair_calls
from tests.runtime_kit import Fake, World, call, run, say


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many entry contents were decoded while the test ran."""
    seen: list[int] = []
    original = codec.decode_content

    def counting(stored: bytes, compressed: bool, **kw: Any) -> object:
        seen.append(len(stored))
        return original(stored, compressed, **kw)

    monkeypatch.setattr(codec, "decode_content", counting)
    yield seen


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}]}


def _long_session(path: Path, n: int) -> Session:
    """n messages, alternately user and assistant, some long enough to be compressed."""
    session = Session.create(str(path), name="long", cwd=str(path.parent))
    for i in range(n):
        size = 3000 if i % 7 == 0 else 40
        session.append("message", _text("user" if i % 2 == 0 else "assistant", f"m{i} " * size))
    return session


def test_records_give_each_contents_canonical_size_without_decoding(tmp_path: Path) -> None:
    session = _long_session(tmp_path / "s.smith", 30)
    session.append("label", {"name": "x"})
    records = session.records
    compressed = [i for i in range(len(session)) if records.compressed(i)]
    assert compressed and len(compressed) < len(session)  # both kinds are covered
    for i in range(len(session)):
        content = session.at(i).content
        assert records.content_size(i) == content_size(content) == len(codec._cbor.encode(content))
    every = session.branch_indices()
    assert records.content_sizes(every).tolist() == [records.content_size(i) for i in every]
    labels = records.of_kind("label", every).tolist()
    assert labels == [len(session) - 1] == records.of_kind("label").tolist()
    assert records.of_kind("nothing").tolist() == []
    session.close()


def test_the_context_is_counted_from_the_records(tmp_path: Path, decodes: list[int]) -> None:
    session = _long_session(tmp_path / "s.smith", 400)
    cache = ContextCache()
    tokens = cache.tokens(session)
    assert decodes == [] and not cache.built
    every = [m for _, m in cache.get(session)]
    assert tokens == sum(estimate_tokens(m) for m in every) and len(every) == 400
    session.close()


def test_a_request_decodes_only_the_newest_messages_that_fit(
    tmp_path: Path, decodes: list[int]
) -> None:
    session = _long_session(tmp_path / "s.smith", 2_000)
    cache = ContextCache()
    window = cache.get(session, within=5_000)
    assert window[0][1]["role"] in ("user", "assistant")
    used = sum(estimate_tokens(m) for _, m in window)
    assert used <= 5_000 and window[-1][0] == session.leaf
    # only what fits was decoded, and the next older message would not have fitted
    assert len(decodes) <= len(window) + 1
    older = session.entry(window[0][0]).parent
    assert older is not None
    assert used + estimate_tokens(session.entry(older).content) > 5_000  # type: ignore[arg-type]
    # a turn's growth decodes only what it added
    decodes.clear()
    session.append("message", _text("user", "one more"))
    assert cache.get(session, within=5_000)[-1][1] == _text("user", "one more")
    assert len(decodes) == 1
    session.close()


def test_a_window_keeps_the_compaction_summary_first(tmp_path: Path, decodes: list[int]) -> None:
    session = _long_session(tmp_path / "s.smith", 300)
    kept = session.branch()[-50].id
    session.append("compaction", {"summary": "what happened", "first_kept": kept})
    for i in range(300):
        session.append("message", _text("user" if i % 2 == 0 else "assistant", f"n{i} " * 40))
    cache = ContextCache()
    full = cache.get(session)
    assert "what happened" in str(full[0][1]) and full[1][0] == kept and len(full) == 1 + 50 + 300
    window = ContextCache().get(session, within=2_000)
    assert "what happened" in str(window[0][1]) and len(window) < 100
    assert sum(estimate_tokens(m) for _, m in window) <= 2_000
    session.close()


def test_requests_never_carry_more_than_the_context_window(tmp_path: Path) -> None:
    w = World(tmp_path)
    for i in range(500):
        w.session.append("message", _text("user" if i % 2 == 0 else "assistant", f"h{i} " * 100))
    fake = Fake(say("answer"))
    fake.model = ModelInfo("fake", "m", "openai-chat", context_window=4_000, max_output=50)  # type: ignore[attr-defined]

    async def main() -> None:
        rt = w.runtime(fake)
        rt.context_cache.tokens(w.session)
        rt.compaction_failed_at = rt.context_cache.tokens(w.session)  # compaction has failed
        rt.prompt("latest question")
        await rt.wait_idle()

    run(main)
    (request,) = fake.requests
    sent = [dict(m) for m in request.messages]
    assert sum(estimate_tokens(m) for m in sent) <= 4_000
    assert sent[-1]["content"][0]["text"] == "latest question" and len(sent) < 500


def test_calls_pairs_round_trip_and_refuse_what_they_cannot_list() -> None:
    assert pair_calls(calls_pair(["a", "b c"])) == ["a", "b c"]
    assert calls_pair([]) is None and pair_calls(None) is None
    assert pair_calls("call_1") is None  # a result's pairing id
    assert calls_pair(["a\x1fb"]) is None and calls_pair([""]) is None
    assert calls_pair(["x" * 70_000]) is None  # more than a record holds


def test_assistant_messages_record_the_calls_they_make(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.converse(Fake(call(("ls", {}), ("ls", {"path": "src"})), say("done")))
    session = w.reopened()
    pairs = [e.pair for e in session.branch(kind="message")]
    listed = [pair_calls(p) for p in pairs if pair_calls(p) is not None]
    assert listed == [["call_0", "call_1"]]
    assert [p for p in pairs if p in ("call_0", "call_1")] == ["call_0", "call_1"]


def test_lost_calls_are_found_from_the_records(tmp_path: Path, decodes: list[int]) -> None:
    session = _long_session(tmp_path / "s.smith", 3_000)
    answered = {"role": "assistant", "content": [{"type": "tool_call", "id": "a1", "name": "ls"}]}
    session.append("message", answered, pair=calls_pair(["a1"]))
    session.append("message", {"role": "tool_result", "tool_call_id": "a1"}, pair="a1")
    lost = {
        "role": "assistant",
        "content": [
            {"type": "tool_call", "id": "b1", "name": "bash"},
            {"type": "tool_call", "id": "b2", "name": "read"},
        ],
    }
    session.append("message", lost, pair=calls_pair(["b1", "b2"]))
    session.append("message", {"role": "tool_result", "tool_call_id": "b1"}, pair="b1")
    decodes.clear()
    assert answer_lost_calls(session) == 1
    assert len(decodes) == 1  # the message with the lost call, for its names
    result = session.at(len(session) - 1).content
    assert isinstance(result, dict) and result["tool_call_id"] == "b2"
    assert result["tool_name"] == "read" and result["outcome"] == "unknown"
    decodes.clear()
    assert EffectJournal(session).reconcile() == [] and decodes == []  # nothing left to answer
    session.close()
