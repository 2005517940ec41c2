"""The user's own shell command: `!command` and `!!command` (ops.Shell).

The command runs through the bash tool as an effect of the user, the way a model's call
runs (smith.runtime._runner, by way of _batch._execute): recorded in the effect journal
(cause `shell`: the call id, with `command` and `context`), with registered secrets
restored for it and masked in what it returns, bounded by tools.bash.timeout, its
output cut as a call's is, and between two snapshots of the files,
so `smith undo` takes back what it changed, as a unit of its own (smith.vcs). Frontends see it as
`tool_start` / `tool_end` events of `bash` whose `shell` field says it was the user's
(`{"context": true|false}`), so they show its output as they show a call's.

With `!` (context=True) the output goes into the context of the next message: a `shell`
note is recorded after it and sent from then on, like the environment block, as a
user-role message marked `"context": "shell"`:

    The user ran this command in the project's shell:
    $ make test
    ...its output, as the bash tool returns it...

With `!!` (context=False) the model never sees it: its output is recorded as a
`shell_private` entry, a kind no context is built from, so the app can show it again
on resume.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from smith.diagnostics import DiagnosticKind, Source
from smith.runtime._events import event

if TYPE_CHECKING:
    from smith.runtime._loopctx import LoopContext

EMPTY_COMMAND = DiagnosticKind(
    "runtime.empty-command",
    what="the shell command is empty: {command}",
    why="`!command` (and `!!command`) runs the command after the `!`s in the project's "
    "shell, and there is none",
    fix="type the command after the `!`, e.g. `!git status`",
)


def shell_call(command: str, *, source: Source) -> str:
    """The call id of a new command; refused (a diagnostic naming where it came from)
    when there is nothing to run (Runtime.shell refuses it while the agent works)."""
    from smith.session import new_id

    if not command.strip():
        raise EMPTY_COMMAND.error(
            value=command, source=Source(source.surface, "shell.command"), command=repr(command)
        )
    return f"sh-{new_id(6)}"


async def run_shell(rt: LoopContext, command: str, *, context: bool, call_id: str) -> None:
    """Run `command` (see the module doc); an abort ends it as a model's call ends."""
    from smith.effects.tools.bash import SPEC
    from smith.runtime._batch import _after, _execute, _snapshot, _tool_end
    from smith.runtime._turn import Turn

    turn = Turn.of(rt)
    spec = SPEC.for_limits(rt.context.limits)
    arguments = {"command": command}
    call: dict[str, Any] = {"id": call_id, "name": "bash", "arguments": arguments}
    marker = {"context": context}
    cause: dict[str, Any] = {"shell": call_id, "command": command, "context": context}
    start = event("tool_start", tool_call_id=call_id, name="bash", arguments=arguments)
    rt.emit({**start, "shell": marker})
    base = None
    snapshots = turn.runner.snapshots([spec])  # the policy of every call (the runner's)
    if snapshots:
        taking = asyncio.ensure_future(_snapshot(turn, "before", None, cause))
        try:
            base = await asyncio.shield(taking)
        except asyncio.CancelledError:  # aborted before it ran: nothing was changed
            await asyncio.wait({taking})  # its thread writes to the session
            _tool_end(turn, call, _NOT_RUN, shell=marker)
            return
    result = await _execute(turn, call, spec, cause)
    if snapshots:
        await _after(turn, base, cause)
    _tool_end(turn, call, result, shell=marker)
    # How it ended (exit status, duration) too, so a resumed app draws it as it was.
    ended = {"outcome": result["outcome"], "ok": result["ok"], "details": result["details"]}
    if context:
        text = f"The user ran this command in the project's shell:\n$ {command}\n{result['text']}"
    else:  # `!!`: a kind no context reads (NOTE_KINDS), kept only to be shown again
        text = result["text"]
    content = rt.secrets.redact({"text": text, "command": command, "tool_call_id": call_id,
                                 **ended})  # fmt: skip
    assert isinstance(content, dict)
    rt.session.append("shell" if context else "shell_private", content)


_NOT_RUN = {
    "text": "[aborted before it ran]",
    "details": {},
    "ok": False,
    "outcome": "cancelled",
    "mutation": "not-applied",
}


__all__ = ["EMPTY_COMMAND", "run_shell", "shell_call"]
