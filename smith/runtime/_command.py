"""A plugin's command typed while the agent works is answered at once, as the app's own
commands are, not queued behind the run: the `prompt` operation (smith.runtime.ops) with
text `/NAME args`, NAME a command of a plugin that has an input hook (a WebAssembly
plugin's declared commands; a Python plugin's Command whose input hook answers it), asks
the input hook now, beside the run. Its `input_handled` entry is recorded when the hook
answers, between the run's entries (it is no message: the model never sees it), and
its events carry the submission id returned (`p-…`; no `agent_start`/`agent_end`: it
starts no run). Input the hook does not handle after all is queued as a follow-up, as
any prompt is while the agent works."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from smith.runtime._runtime import Runtime

_answering: set[asyncio.Task[None]] = set()  # held until done (the loop keeps weak refs)


def at_once(rt: Runtime, text: str) -> str | None:
    """The submission id of `text` answered now by the input hook, when it is a plugin's
    command; None when it is not (then it is a prompt like any other)."""
    from smith.session import new_id

    words = text[1:].split(maxsplit=1) if text.startswith("/") else []
    name = words[0] if words else ""
    if not name or not any(
        c.name == name for p in rt.plugins if "input" in p.handlers for c in p.commands
    ):
        return None
    submission = f"p-{new_id(4)}"
    task = asyncio.get_running_loop().create_task(_answer(rt, text, submission))
    _answering.add(task)
    task.add_done_callback(_answering.discard)
    return submission


async def _answer(rt: Runtime, text: str, submission: str) -> None:
    from smith.runtime._events import SUBMISSION
    from smith.runtime._hooks import accept_inputs

    SUBMISSION.set(submission)  # this task's own context: its events carry the id
    try:
        if await accept_inputs(rt, [text]):  # not handled after all: it waits its turn
            rt.queue.add("follow_up", text, ())
    except Exception:  # the runtime closed meanwhile, say: said, never lost silently
        logging.getLogger("smith.runtime").exception("the command %r was not answered", text)
