"""`smith replay` plays the stream of a live run: each recorded entry is an `entry` event
where the live run emitted it, and what happened between prompts (a compaction, the
user's own `!command`) comes between them, as it did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from smith.protocol import schema
from tests.test_protocol import _invalid
from tests.test_replay import _canonical


def _shape(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What live and replay agree on: each event's type, and what an entry event or a
    call's events name (ids renamed as they appear, deltas joined)."""
    return [(e["type"], e.get("kind"), e.get("id"), e.get("tool_call_id"))
            for e in _canonical(events)]  # fmt: skip


def test_a_compaction_between_prompts_is_replayed_where_it_happened(tmp_path: Path) -> None:
    """Compacting when idle (after one prompt ended, before the next) happens outside
    any prompt; one the loop does before a round, inside it. Replay keeps both where the
    live run had them."""
    from smith.frontends.replay._timeline import reconstruct
    from tests.runtime_kit import Fake, World, call, run, say

    w = World(tmp_path)
    fake = Fake(
        say("one " * 30),
        say("two " * 30),
        say("A summary of it all."),
        call(("ls", {})),
        say("A second summary."),
        say("three"),
    )

    async def main() -> None:
        rt = w.runtime(fake)
        for text in ("first", "second"):
            rt.prompt(text)
            await rt.wait_idle()
        rt.compact()  # idle: between the prompts
        await rt.wait_idle()
        rt.prompt("third")
        await w.until("tool_end")
        rt.compact()  # busy: before the next round of this prompt
        await rt.wait_idle()
        await rt.close()

    run(main)
    assert [e["ok"] for e in w.of("compaction_end")] == [True, True]
    live = [
        e for e in w.events if e["type"] not in ("tool_update", "queue_changed", "session_start")
    ]
    replayed = [i.event for i in reconstruct(w.reopened()).items if i.event is not None]

    assert _shape(replayed) == _shape(live)  # each entry event where it was appended
    assert [e["kind"] for e in replayed if e["type"] == "entry"].count("compaction") == 2
    assert _invalid(replayed, schema()) == []


def test_a_command_of_the_user_between_prompts_is_replayed_as_it_ran(tmp_path: Path) -> None:
    """`!command` runs only while idle: the prompt before it has ended, its snapshots
    of the files come around its effect (the one after before its `tool_end`), and
    its events carry its call id as their submission."""
    from smith.frontends.replay._timeline import reconstruct
    from smith.vcs import HistorySettings
    from tests.runtime_kit import Fake, World, run, say

    w = World(tmp_path)
    history = HistorySettings(str(tmp_path / "home"), user_home=str(tmp_path / "user"))

    async def main() -> None:
        rt = w.runtime(Fake(say("one"), say("two")), history=history)
        rt.prompt("first")
        await rt.wait_idle()
        rt.shell("echo hi > made.txt")
        await rt.wait_idle()
        rt.prompt("second")
        await rt.wait_idle()
        await rt.close()

    run(main)
    assert (w.project / "made.txt").exists()
    live = [e for e in w.events if e["type"] not in ("tool_update", "queue_changed",
                                                     "session_start")]  # fmt: skip
    replayed = [i.event for i in reconstruct(w.reopened()).items if i.event is not None]
    assert _shape(replayed) == _shape(live)
    kinds = [e["kind"] for e in replayed if e["type"] == "entry"]
    assert kinds.count("vcs") == 2 and "shell" in kinds
    (start,) = [e for e in replayed if e["type"] == "tool_start"]
    call = start["tool_call_id"]
    assert call.startswith("sh-") and start["shell"] == {"context": True}
    first = replayed.index(start)
    last = next(i for i, e in enumerate(replayed) if e.get("kind") == "shell")
    assert {e.get("submission") for e in replayed[first : last + 1]} == {call}
    # Live too: the command's records carry its id (the runner runs its work in its
    # context), event for event as replay has them.
    begun = next(i for i, e in enumerate(live) if e.get("tool_call_id") == call)
    ended = next(i for i, e in enumerate(live) if e.get("kind") == "shell")
    assert [e.get("submission") for e in live[begun : ended + 1]] == [call] * (last + 1 - first)
    assert replayed[last + 1] == {"type": "settled", "queue": 0}
    assert _invalid(replayed, schema()) == []
