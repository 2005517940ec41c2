"""Telling the user, when the terminal is not in front, that smith is done or waiting.

When a turn ends or a question needs an answer while the app's terminal does not have
focus (Textual's focus reporting: `App.app_focus`), the app asks the terminal for a
desktop notification: OSC 9 where the terminal is known to show one (iTerm2, WezTerm,
ghostty, kitty, Windows Terminal), OSC 777 where it speaks that (VTE terminals such as
GNOME Terminal, foot, urxvt), and otherwise, inside tmux or in the browser, the bell,
which every terminal and tmux's `monitor-bell` understand. `tui.notify false` turns
it off.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

OSC9 = ("iTerm.app", "WezTerm", "ghostty")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def sequence(text: str, env: Mapping[str, str]) -> str:
    """What to write to the terminal for a notification saying `text`: an OSC 9 or
    OSC 777 sequence, or the bell ("\\a") where neither is known to work."""
    if env.get("TMUX"):
        return "\a"  # tmux does not pass OSC 9/777 on without passthrough; it rings
    shown = _CONTROL.sub(" ", text)[:200]  # nothing in it may end or start a sequence
    program = env.get("TERM_PROGRAM", "")
    if program in OSC9 or "kitty" in env.get("TERM", "") or env.get("WT_SESSION"):
        return f"\x1b]9;{shown}\x07"
    if env.get("VTE_VERSION") or program == "foot" or env.get("TERM", "").startswith("rxvt"):
        return f"\x1b]777;notify;smith;{shown}\x07"
    return "\a"


def signal(app: Any, text: str) -> None:
    """Write the notification for `text` to the app's terminal, or ring its bell."""
    import os

    seq = "\a" if app.is_web else sequence(text, os.environ)
    driver = app._driver
    if seq == "\a" or driver is None:
        app.bell()
    else:
        driver.write(seq)
