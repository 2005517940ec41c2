"""Playing a timeline back: which prompts, how fast, and what each item becomes.

    play(timeline, emit, turns=parse_turns("3..5"), speed=10.0, clock=Clock())

Items are emitted in source order. Between two items the player sleeps for the recorded
gap divided by `speed` (real time is speed 1; None plays instantly), never longer than
`max_gap` seconds, so a session resumed the next morning does not replay the night.
Sleeps go through `Clock`, which tests replace to see the timing without waiting for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from smith.diagnostics import DiagnosticKind, Source

if TYPE_CHECKING:
    from ._records import Effect
    from ._timeline import Timeline

BAD_TURNS = DiagnosticKind(
    "cli.replay-turns",
    what="'{text}' is not a range of turns",
    why="--turns takes a turn number or a range of them: 4, 3..5, 3.. (from the third on) "
    "or ..5 (up to the fifth); turns count from 1",
    fix="write it like --turns 3..5",
)
NO_SUCH_TURNS = DiagnosticKind(
    "cli.replay-no-turns",
    what="--turns {text} asks for turns the session does not have: it has {count}",
    why="a turn is one prompt and everything the agent did for it, counted from 1 on the "
    "replayed branch",
    fix="ask only for turns it has: {remedy}",
)
DEFAULT_MAX_GAP = 10.0  # seconds: the longest pause playback keeps


class Clock:
    """Wall-clock sleeping; tests substitute one that records instead."""

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class Turns:
    """A range of prompts, 1-based and inclusive; `last` None means to the end."""

    __slots__ = ("first", "last", "text")

    def __init__(self, first: int = 1, last: int | None = None, text: str = "") -> None:
        self.first = first
        self.last = last
        self.text = text

    def __contains__(self, run: int) -> bool:
        run = max(run, 1)  # what came before the first prompt goes with it
        return self.first <= run and (self.last is None or run <= self.last)

    def check(self, count: int) -> None:
        """Refuse a range that selects nothing of a session with `count` prompts."""
        if self.text and (self.first > count or (self.last is not None and self.last < 1)):
            remedy = f"pick turns from 1 to {count}" if count else "replay it without --turns"
            raise NO_SUCH_TURNS.error(
                value=self.text,
                source=Source("flag", "--turns"),
                text=self.text,
                count=count,
                remedy=remedy,
            )


def parse_turns(text: str | None) -> Turns:
    """`4`, `3..5`, `3..` or `..5`; a diagnostic for anything else."""
    if text is None:
        return Turns()
    start, sep, end = text.strip().partition("..")
    if not sep:
        end = start

    def number(part: str, default: int | None) -> int | None:
        part = part.strip()
        if not part and sep:
            return default
        if not part.isdigit() or int(part) < 1:
            raise BAD_TURNS.error(value=text, source=Source("flag", "--turns"), text=text)
        return int(part)

    first = number(start, 1)
    last = number(end, None)
    assert first is not None
    if last is not None and last < first:
        raise BAD_TURNS.error(value=text, source=Source("flag", "--turns"), text=text)
    return Turns(first, last, text)


def play(
    timeline: Timeline,
    emit: Callable[[dict[str, Any]], None],
    *,
    turns: Turns | None = None,
    speed: float | None = None,
    max_gap: float = DEFAULT_MAX_GAP,
    clock: Clock | None = None,
    effect: Callable[[Effect, bool], dict[str, Any] | None] | None = None,
) -> None:
    """Emit the timeline's events (and what `effect` reports for each effect) within
    `turns`, timed by `speed`. `effect` sees every effect, selected or not (re-execution
    keeps its scratch workspace in step), with whether it is selected."""
    turns = turns or Turns()
    clock = clock or Clock()
    last_ts: int | None = None
    for item in timeline.items:
        selected = item.run in turns
        report = None
        if item.effect is not None and effect is not None:
            report = effect(item.effect, selected)
        out = item.event if item.event is not None else report
        if not selected or out is None:
            continue
        if speed is not None and last_ts is not None and item.ts > last_ts:
            clock.sleep(min((item.ts - last_ts) / 1000.0 / speed, max_gap))
        last_ts = item.ts if last_ts is None else max(last_ts, item.ts)
        emit(out)
