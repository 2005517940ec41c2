"""The working indicator: one line above the editor from the moment the agent starts
until it settles, saying what it is doing, for how long, and how to stop it:

    ⠹ running bash: pytest -q · 1m 05s · esc to interrupt

`Activity` is the state machine, fed the runtime's intents as `SmithApp._show` gets
them (docs/ui.md): `status` agent_start starts it (so does a tool or a compaction
started outside a prompt, the user's `!cmd` and `/compact`), a streaming message says
thinking or writing by its channel, `tool_activity` names the running calls, `progress`
compaction_start and compaction_end bracket compacting, an open question (an approval:
`WorkingLine.asked`, from the app's `ask`) is waiting for your answer, and `status`
settled ends it.

`WorkingLine` draws it. Idle it is hidden and runs no timer; working it redraws only on
its spinner's frames (FPS a second), its elapsed time read from the clock each frame.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual.timer import Timer
from textual.widgets import Static

from smith.text import inert

from ._statusline import cells

FPS = 4  # spinner frames a second: enough to look alive, cheap to draw
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
WAITING = "waiting for the model"
ASKING = "waiting for your answer"
SUMMARY = 40  # characters of a call's arguments shown
ARGUMENT = {"bash": "command", "read": "path", "write": "path", "edit": "path", "ls": "path",
            "find": "pattern", "grep": "pattern"}  # fmt: skip


def elapsed(seconds: float) -> str:
    """3s, 59s, 1m 05s, 1h 02m."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s // 3600}h {s % 3600 // 60:02d}m"


def key_label(key: str) -> str:
    """A configured key as people write it: "escape" -> "esc", "ctrl+c" as is (the
    first of several)."""
    first = key.split(",", maxsplit=1)[0].strip().lower()
    return {"escape": "esc"}.get(first, first)


def tool_summary(name: str, arguments: Any) -> str:
    """A call in a few words: its tool and the argument that says what it does
    ("bash: pytest -q", "edit: src/calc.py"), on one line, cut to SUMMARY characters."""
    value: object = None
    if isinstance(arguments, Mapping):
        key = ARGUMENT.get(name)
        value = arguments.get(key) if key else None
        if not isinstance(value, str):
            value = next((v for v in arguments.values() if isinstance(v, str)), None)
    if not isinstance(value, str) or not value.strip():
        return inert(name)
    text = " ".join(inert(value).split())
    if len(text) > SUMMARY:
        text = text[: SUMMARY - 1] + "…"
    return f"{inert(name)}: {text}"


class Activity:
    """What the agent is doing, from the intents it emits (see the module doc)."""

    def __init__(self) -> None:
        self._idle()

    def _idle(self) -> None:
        self.since: float | None = None  # when the work started; None: idle
        self._doing = WAITING
        self._streaming = ""  # the id of the assistant message streaming
        self._tools: dict[str, str] = {}  # running calls: id -> summary, in start order
        self._compacting = False
        self.asking = 0  # questions open (an approval): the agent waits for the user

    @property
    def working(self) -> bool:
        return self.since is not None

    def doing(self) -> str:
        if self.asking:
            return ASKING
        if self._compacting:
            return "compacting the context"
        if self._tools:
            *_, last = self._tools.values()
            more = len(self._tools) - 1
            return f"running {last}" + (f" (+{more} more)" if more else "")
        return self._doing

    def take(self, kind: str, data: Mapping[str, Any], now: float) -> bool:
        """Take one intent; whether what the line says changed."""
        before = (self.since, self.doing())
        if kind == "status":
            self._status(str(data.get("event")), now)
        elif kind == "message_delta":
            self._delta(data)
        elif kind == "tool_activity":
            self._tool(data, now)
        elif kind == "progress" and "origin" not in data:
            if data.get("event") == "compaction_start":
                self._start(now)
                self._compacting = True
            elif data.get("event") == "compaction_end":
                self._compacting = False
        return (self.since, self.doing()) != before

    def _start(self, now: float) -> None:
        if self.since is None:
            self.since = now
            self._doing = WAITING

    def _status(self, event: str, now: float) -> None:
        if event == "agent_start":
            self._start(now)
        elif event == "turn_start" and self.since is not None:
            self._doing = WAITING
        elif event == "settled":
            self._idle()

    def _delta(self, data: Mapping[str, Any]) -> None:
        if data.get("start"):
            if data.get("role") == "assistant":
                self._streaming = str(data.get("message_id"))
            return
        if self.since is not None and data.get("message_id") == self._streaming:
            self._doing = "thinking" if data.get("channel") == "thinking" else "writing"

    def _tool(self, data: Mapping[str, Any], now: float) -> None:
        call = str(data.get("tool_call_id"))
        if data.get("phase") == "start":
            self._start(now)
            self._tools[call] = tool_summary(str(data.get("name")), data.get("arguments"))
        elif data.get("phase") == "end":
            self._tools.pop(call, None)
            if not self._tools:
                self._doing = WAITING

    def line(self, now: float, frame: int, key: str, width: int) -> str:
        """The indicator's text at `now`, its spinner at `frame`, fitted to `width`: what
        it does is cut first, the time and the key stay."""
        if self.since is None:
            return ""
        tail = f" · {elapsed(now - self.since)}" + (f" · {key} to interrupt" if key else "")
        head = f"{SPINNER[frame % len(SPINNER)]} "
        doing = self.doing()
        room = width - cell_len(head) - cell_len(tail)  # in cells: CJK takes two each
        if cell_len(doing) > room:
            doing = cells(doing, room - 1) + "…" if room > 1 else ""
        return head + doing + tail


class WorkingLine(Static):
    """The indicator's line (see the module doc). `take` feeds it an intent."""

    DEFAULT_CSS = """
    WorkingLine { height: 1; display: none; color: $text-muted; }
    WorkingLine.shown { display: block; }
    """

    def __init__(
        self, key: str, clock: Callable[[], float] = time.monotonic, **kwargs: Any
    ) -> None:
        super().__init__("", markup=False, **kwargs)
        self.activity = Activity()
        self.key = key_label(key) if key else ""
        self.clock = clock
        self.frame = 0
        self.timer: Timer | None = None  # runs only while working

    def take(self, kind: str, data: Mapping[str, Any]) -> bool:
        """Take one intent; whether the agent started or stopped working with it."""
        was = self.activity.working
        if not self.activity.take(kind, data, self.clock()):
            return False
        working = self.activity.working
        self.set_class(working, "shown")
        if working and self.timer is None:
            self.frame = 0
            self.timer = self.set_interval(1 / FPS, self._tick)
        elif not working and self.timer is not None:
            self.timer.stop()
            self.timer = None
        self.refresh()
        return working != was

    def asked(self, opened: bool) -> None:
        """A question opened (True) or ended: while one is open, the agent waits for
        the user, not the model, and the line says so."""
        self.activity.asking = max(0, self.activity.asking + (1 if opened else -1))
        self.refresh()

    def _tick(self) -> None:
        self.frame += 1
        self.refresh()

    def render(self) -> Text:
        width = self.content_region.width or 80
        return Text(self.activity.line(self.clock(), self.frame, self.key, width), no_wrap=True)


__all__ = ["Activity", "WorkingLine", "elapsed", "key_label", "tool_summary"]
