"""`smith replay SESSION` in the terminal: the app, read-only, showing a recorded session
as it happened.

The recorded branch's entries are appended, at their recorded pace (`--speed`,
`--instant`, pauses shortened to `--max-gap`), to an in-memory copy of the session that
the app displays exactly as it displays a live one; `--turns` keeps only those prompts.
Nothing runs: the input is disabled, no model is asked and no tool is called. The status
line says which turn is playing; Ctrl+C, Ctrl+D or Escape-then-q leaves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from textual.widgets import Static

from smith.text import inert

from ._app import SmithApp

if TYPE_CHECKING:
    from smith.runtime import Runtime
    from smith.session import Entry, Session


class ReplayApp(SmithApp):
    def __init__(
        self,
        recorded: Session,
        steps: Sequence[tuple[int, Entry]],  # (turn, entry) in recorded order
        *,
        speed: float | None,
        max_gap: float,
        sleep: Any = asyncio.sleep,
        **kw: Any,
    ) -> None:
        from smith.runtime import ProjectSessions

        view = ProjectSessions.in_memory(dict(recorded.info))
        super().__init__(_idle_runtime, view, **kw)
        self.recorded = recorded
        self.steps = list(steps)
        self.speed = speed
        self.max_gap = max_gap
        self._sleep = sleep
        self.turns = sorted({turn for turn, _ in self.steps})
        self.playing = 0  # the turn being shown
        self.finished = False

    async def on_mount(self) -> None:
        await super().on_mount()
        field = self.editor
        field.placeholder = "replay: read only (Ctrl+C leaves)"
        field.disabled = True
        self.run_worker(self._play(), exclusive=True)

    async def _play(self) -> None:
        last_ts: int | None = None
        parent: str | None = None
        for turn, entry in self.steps:
            if self.speed is not None and last_ts is not None and entry.ts > last_ts:
                await self._sleep(min((entry.ts - last_ts) / 1000.0 / self.speed, self.max_gap))
            last_ts = entry.ts if last_ts is None else max(last_ts, entry.ts)
            self.session.append(
                entry.kind, entry.content, parent=parent, pair=entry.pair, id=entry.id,
                ts=entry.ts,
            )  # fmt: skip
            parent = entry.id
            self.playing = turn
            self._sync()
            self._status()
        self.finished = True
        self._status()

    def _status(self) -> None:
        name = inert(self.recorded.name or self.recorded.id)
        where = f"turn {self.playing} of {self.turns[-1]}" if self.turns else "no turns"
        pace = "instant" if self.speed is None else f"{self.speed:g}x"
        state = "finished" if self.finished else "playing"
        text = f"replay of {name} · {where} · {pace} · {state} · read only"
        self.query_one("#status", Static).update(text)


def _idle_runtime(session: Session) -> Runtime:
    """A runtime the app can hold that never runs anything (the input is disabled)."""
    from smith.effects import ToolContext
    from smith.runtime import Runtime

    root = str(session.info.get("cwd") or ".")
    context = ToolContext(root=root, cwd=root, session=None)
    return Runtime(session, model="demo", tools=[], context=context, surface="tui")


def steps_of(
    session: Session, run_starts: dict[str, int], selected: Any
) -> list[tuple[int, Entry]]:
    """The recorded branch's entries with the turn (prompt) each belongs to, keeping those
    of the selected turns. `run_starts` maps the entry that starts a turn to its number."""
    out: list[tuple[int, Entry]] = []
    turn = 0
    for entry in session.branch():
        turn = run_starts.get(entry.id, turn)
        if turn in selected:
            out.append((turn, entry))
    return out
