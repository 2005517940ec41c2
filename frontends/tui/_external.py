"""Ctrl+G: the input's text in the user's own editor ($VISUAL, else $EDITOR).

The app hands the terminal over (Textual's `App.suspend`: the screen is restored and
input released, also inside tmux) while the editor runs on a temporary file, then takes
the terminal back and reads what was saved. In the browser there is no terminal to hand
over, so it says so.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from typing import Any


def edit_externally(app: Any, text: str) -> tuple[str | None, str | None]:
    """(the saved text, None), or (None, why not): no editor is set, the app runs in a
    browser, the editor failed."""
    command = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not command:
        return None, "set $VISUAL or $EDITOR to edit the input in your editor (Ctrl+G)"
    if app.is_web:
        return None, "the browser app cannot open your terminal's editor; type here instead"
    fd, path = tempfile.mkstemp(prefix="smith-input-", suffix=".md")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        try:
            with app.suspend():
                code = subprocess.call([*shlex.split(command), path], env=_editor_env())
        except (OSError, ValueError) as exc:
            return None, f"the editor '{command}' could not be started: {exc}"
        except Exception as exc:  # the driver cannot hand the terminal over (headless)
            return None, f"the terminal cannot be handed to an editor here ({type(exc).__name__})"
        if code != 0:
            return None, f"the editor '{command}' exited with status {code}; the input is unchanged"
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().rstrip("\n"), None
    finally:
        os.unlink(path)


def _editor_env() -> dict[str, str]:
    """The editor's environment: what every process smith starts gets, without the
    provider keys (smith.effects.process_env); it runs on the user's behalf, not the
    model's, but needs no key either."""
    from smith.effects import process_env
    from smith.providers import credential_variables

    return process_env(credential_variables(None), secrets=True)
