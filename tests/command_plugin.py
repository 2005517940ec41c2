"""A plugin that takes `!ping` as a command (HandleInput), and `!fail`, a command that
fails, for the tests of how each mode ends a prompt no turn runs for
(tests/test_plugin_events.py)."""

from __future__ import annotations

from typing import Any

from smith.sdk import HandleInput, Plugin


def _command(event: dict[str, Any], view: Any) -> list[Any] | None:
    text = event["text"].strip()
    if text == "!fail":
        return [HandleInput(error="the pinger is out of pongs")]
    return [HandleInput("pong")] if text == "!ping" else None


PLUGIN = Plugin("pinger", handlers={"input": _command})
