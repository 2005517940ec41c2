"""Ctrl+C when nothing is selected and the agent is idle (the app's `action_interrupt`
copies a selection and aborts a turn first).

- With a draft in the editor it clears the draft: Ctrl+Z undoes that, and Up shows it
  first (`Editor.discard`).
- On an empty editor it says "press Ctrl+C again to quit", and quits only on a second
  press within `QUIT_WINDOW` seconds, as the peers do: one press never throws the app away.
- Where nothing can be typed (a replay's disabled editor) it quits at once.
- In the browser (`smith web`, where Ctrl+C is also the browser's copy key) it never
  quits; a notice says how to (the quit key on an empty editor, or /quit).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.app import App

    from ._app import SmithApp

QUIT_WINDOW = 2.0  # seconds within which a second Ctrl+C quits


def in_browser(app: App[Any]) -> bool:
    """Whether `app` is drawn in a browser (smith web: textual-serve's web driver), not
    in a terminal. The one test of it: behaviour that differs there asks this."""
    return app.is_web


class QuitKey:
    """Ctrl+C's idle meaning for one app: the time of the press that asked for another."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._asked: float | None = None

    def press(self, app: SmithApp) -> None:
        if app.editor.discard():
            self._asked = None
            app.notify("draft cleared: Ctrl+Z or Up brings it back", timeout=QUIT_WINDOW)
            return
        if app.editor.disabled:  # nothing can be typed (a replay): nothing to lose
            app.exit(0)
            return
        if in_browser(app):
            app.notify(f"Ctrl+C does not close smith in the browser: {_quit_key(app)} on an "
                       "empty editor or /quit does", timeout=4)  # fmt: skip
            return
        now = self.clock()
        if self._asked is not None and now - self._asked <= QUIT_WINDOW:
            app.exit(0)
            return
        self._asked = now
        app.notify("press Ctrl+C again to quit", timeout=QUIT_WINDOW)


def _quit_key(app: SmithApp) -> str:
    key = app.keys.get("quit", "").split(",")[0].strip() or "ctrl+d"
    return "+".join(part.capitalize() for part in key.split("+"))


__all__ = ["QUIT_WINDOW", "QuitKey", "in_browser"]
