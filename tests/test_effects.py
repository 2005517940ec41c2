"""The durable effect boundary: intent before, completion after, unknown when missing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from smith.effects import (
    EffectJournal,
    JournalError,
    ToolContext,
    builtin_tools,
    run_tool,
)
from smith.session import Session

TOOLS = builtin_tools()


@pytest.fixture
def world(tmp_path: Path) -> tuple[Session, ToolContext, Path]:
    project = tmp_path / "project"
    project.mkdir()
    session = Session.create(str(tmp_path / "s.smith"), cwd=str(project))
    return session, ToolContext(root=str(project), cwd=str(project), session=session), project


def _records(session: Session) -> list[tuple[str, object]]:
    return [(e.kind, e.content) for e in session.entries()]


def test_intent_and_completion_bracket_every_effect(
    world: tuple[Session, ToolContext, Path],
) -> None:
    session, ctx, project = world
    journal = EffectJournal(session, generation=3)
    out = run_tool(
        journal,
        TOOLS["write"],
        {"path": "a.txt", "content": "hi\n"},
        ctx,
        cause={"tool_call": "call_1", "turn": "t1"},
    )
    (intent_kind, intent), (done_kind, done) = _records(session)
    assert (intent_kind, done_kind) == ("effect_intent", "effect_completion")
    assert isinstance(intent, dict) and isinstance(done, dict)
    assert intent["effect"] == done["effect"] == out.effect_id
    assert intent["cause"] == {"tool_call": "call_1", "turn": "t1"}
    assert intent["generation"] == 3 and intent["input"] == {"path": "a.txt", "content": "hi\n"}
    assert (done["outcome"], done["mutation"]) == ("ok", "applied")
    assert (project / "a.txt").read_text() == "hi\n"
    entries = list(session.entries())
    assert entries[0].pair == entries[1].pair == out.effect_id


def test_invalid_arguments_never_reach_an_effect(world: tuple[Session, ToolContext, Path]) -> None:
    session, ctx, _ = world
    out = run_tool(EffectJournal(session), TOOLS["write"], {"path": "a.txt"}, ctx)
    assert not out.result.ok and out.effect_id is None
    assert "'content' is a required property" in out.result.text
    assert len(session) == 0


def test_an_intent_that_cannot_be_recorded_stops_the_effect(
    world: tuple[Session, ToolContext, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    session, ctx, project = world

    def full_disk(fd: int, data: bytes) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", full_disk)
    with pytest.raises(JournalError) as info:
        run_tool(EffectJournal(session), TOOLS["write"], {"path": "a.txt", "content": "x"}, ctx)
    assert info.value.error.diagnostic.code == "effect.intent-failed"
    assert info.value.mutation == "not-applied"
    assert not (project / "a.txt").exists()


def test_a_completion_that_cannot_be_recorded_is_terminal_with_the_known_state(
    world: tuple[Session, ToolContext, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    session, ctx, project = world
    real = os.write
    calls = []

    def fail_second(fd: int, data: bytes) -> int:
        calls.append(fd)
        if len(calls) == 2:  # the intent went through; the completion does not
            raise OSError(28, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(os, "write", fail_second)
    with pytest.raises(JournalError) as info:
        run_tool(EffectJournal(session), TOOLS["write"], {"path": "a.txt", "content": "x"}, ctx)
    d = info.value.error.diagnostic
    assert d.code == "effect.completion-failed" and "mutation state is applied" in d.what
    assert (project / "a.txt").read_text() == "x"


def test_a_missing_completion_is_recovered_as_unknown_and_never_rerun(
    world: tuple[Session, ToolContext, Path],
) -> None:
    session, _, project = world
    journal = EffectJournal(session)
    effect = journal.begin("write", {"path": "a.txt", "content": "x"})  # then: SIGKILL
    session.close()
    resumed = Session.open(session.path)
    again = EffectJournal(resumed)
    assert again.pending() == [effect.id]
    [intent] = again.reconcile()
    assert intent["effect"] == effect.id and again.pending() == []
    last = list(resumed.entries())[-1].content
    assert isinstance(last, dict)
    assert (last["outcome"], last["mutation"], last["recovered"]) == ("unknown", "unknown", True)
    assert not (project / "a.txt").exists()  # nothing re-ran it
    assert again.reconcile() == []


def test_secrets_are_replaced_before_recording(world: tuple[Session, ToolContext, Path]) -> None:
    from smith.diagnostics import register_secret

    session, ctx, _ = world
    register_secret("sk-live-supersecret")
    run_tool(
        EffectJournal(session),
        TOOLS["write"],
        {"path": "k.txt", "content": "key=sk-live-supersecret"},
        ctx,
    )
    assert b"supersecret" not in Path(session.path).read_bytes()
