"""The first launch's welcome: when a new session opens in a project whose prompt history
is empty (nothing was ever sent from the app there), the transcript starts with a few
lines saying which model answers, in which project, three things to try and where help
is. Never when resuming a session with messages, when a prompt was given on the command
line, or when the project has a history: someone who has used smith here needs none.
It is not recorded: the session holds only what was said."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from rich.text import Text

from smith.text import inert

if TYPE_CHECKING:
    from ._app import SmithApp


def wanted(app: SmithApp) -> bool:
    """Whether `app` opens on a first launch: no prompt given, a new session, and a
    project prompt history (kept on disk) that is empty."""
    history = app.history
    if app.first_prompt or history is None or history.path is None or history.entries:
        return False
    if app.runtime is None:
        return False
    from smith.runtime import Shown, ops

    found = app.runtime.submit(ops.Entries(kinds=("message",)))
    assert isinstance(found, Shown)
    return not found.entries


def welcome_text(model: str, project: str, keys: Mapping[str, str]) -> Text:
    from ._host import key_label

    def key(name: str, default: str) -> str:
        return key_label(keys.get(name) or default).split(",")[0]

    text = Text()
    text.append("Welcome to smith", style="bold green")
    text.append(f": {inert(model)} answers, in {inert(project)}.\n", style="bold")
    text.append("Try:\n", style="bold")
    for example, note in (
        ("explain how this project is laid out", ""),
        ("@README.md summarise this", "  (@ completes a path and attaches the file)"),
        ("/model", "  (/ lists the commands; !git status runs a command)"),
    ):
        text.append("  " + example, style="cyan")
        text.append(note + "\n", style="dim")
    text.append(
        f"Help: {key('help', 'f1')} or /help · {key('palette', 'ctrl+p')}: the palette · "
        f"{key('abort', 'escape')} stops a turn",
        style="dim",
    )
    return text


def welcome(app: SmithApp) -> None:
    """Add the welcome to `app`'s transcript when it opens on a first launch."""
    if not wanted(app) or app.runtime is None:
        return
    model = app.runtime.model
    cwd = str(app.session_info().get("cwd") or os.getcwd())
    home = os.path.expanduser("~")
    project = "~" + cwd[len(home) :] if home != "/" and cwd.startswith(home + "/") else cwd
    text = welcome_text(model, project, app.keys)
    app.transcript.add("welcome", lambda: text)


__all__ = ["wanted", "welcome", "welcome_text"]
