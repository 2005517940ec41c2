"""A plugin whose commands `/tmpl` and `/help` are answered by its input hook
(HandleInput), as a WebAssembly plugin's are: its Commands send `/NAME args` to the
runtime as a prompt (smith.wasm's `_command_runner`). `/tmpl fail` fails. For the tests
of which command or template a name runs (tests/test_command_names.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from smith.sdk import Command, CommandHost, HandleInput, Plugin

NAMES = ("tmpl", "help")


def _answer(event: dict[str, Any], view: Any) -> list[Any] | None:
    text = str(event["text"])
    words = text[1:].split() if text.startswith("/") else []
    if not words or words[0] not in NAMES:
        return None
    if words[1:] == ["fail"]:
        return [HandleInput(error="it broke")]
    return [HandleInput(f"{words[0]} ran: {text}")]


def _sender(name: str) -> Callable[[CommandHost, str], object]:
    def send(host: CommandHost, args: str) -> object:
        from smith.runtime import ops

        return host.runtime.submit(ops.Prompt(f"/{name} {args}".rstrip()))

    return send


PLUGIN = Plugin(
    "slashes",
    handlers={"input": _answer},
    commands=[Command(n, f"the plugin's /{n}", _sender(n)) for n in NAMES],
)
