"""Running one hook (plugins/hooks.py, docs/hooks.md): its command in smith's sandbox,
the event as JSON on its stdin, within its timeout; and what it answered.

The command runs as a bash call's does (smith.effects Sandbox, from the runtime's
ToolContext): under bubblewrap in sandbox.mode, writable only in the project (and
tools.extra-roots), no network unless sandbox.network, smith's own directories hidden,
provider keys withheld; in a PID namespace of its own, so nothing it starts outlives it.
With the sandbox off it runs as the user's own process, in a PID namespace of its own
where `unshare` can make one (as an unsandboxed bash call does), else in a process group
of its own, ended with it. Past its timeout it is killed (and everything it started), as
it is when its handler is cancelled (an abort: smith.runtime's call_handler cancels an
abandoned coroutine handler), and it never outlives smith.

Its answer, as Claude Code's hooks give one: exit status 0 (allow; stdout may hold a
JSON object, below), 2 (deny or block, stderr the reason), anything else a failure. The
JSON object: `decision` ("allow"/"approve", "deny"/"block", "ask"), `reason`,
`additionalContext`, `updatedInput` (or `arguments`: the call's new arguments),
`result` (what the model sees of a call's result), `systemMessage` (a notice for the
user); Claude Code's `hookSpecificOutput` {permissionDecision, permissionDecisionReason,
updatedInput, additionalContext} is read too.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smith.effects import ToolContext

OUTPUT_MAX = 64 * 1024  # bytes of a hook's stdout and of its stderr kept (the rest read, dropped)
SHELL = ("/bin/sh", "-c")


@dataclass
class Ran:
    """How a hook's process ended: `status` (its exit status; None when it did not end
    on its own: `timed_out`, or it could not be started: `error`), its output, the
    sandbox mode it ran in and how long it took."""

    status: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    error: str = ""
    cut: int = 0  # bytes of stdout past OUTPUT_MAX, read and dropped
    sandbox: str = "off"
    seconds: float = 0.0
    notice: str = ""  # what the sandbox did after it (a repository moved out)


async def _read(stream: Any, into: bytearray, dropped: list[int]) -> None:
    while chunk := await stream.read(65536):
        room = OUTPUT_MAX - len(into)
        if room > 0:
            into += chunk[:room]
        dropped[0] += max(0, len(chunk) - max(room, 0))


async def _feed(stream: Any, data: bytes) -> None:
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stream.write(data)
        await stream.drain()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
        stream.close()


def _end(pid: int) -> None:
    """Kill the hook's process group (with the sandbox, bubblewrap: its PID namespace
    ends with it, and every process in it)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def run(command: str | tuple[str, ...], payload: bytes, *, context: ToolContext,
              timeout: float, env: dict[str, str]) -> Ran:  # fmt: skip
    """Run one hook's `command` with `payload` on its stdin in the project's root, as
    `context`'s sandbox confines commands; `env`: added to its environment."""
    import asyncio

    from smith.effects import dies_with_smith, namespace_prefix

    argv = [*SHELL, command] if isinstance(command, str) else list(command)
    sandbox = context.sandbox
    mode = sandbox.effective
    started = time.monotonic()
    if mode == "refused":
        cause, _ = sandbox.problem() or ("unknown", "")
        return Ran(None, error=f"the sandbox cannot run here ({cause}), and sandbox.fallback "
                   "is refuse", sandbox=mode)  # fmt: skip
    cwd = os.path.realpath(context.root)
    environment = sandbox.environment(context.process_env(**env))
    confinement = None
    fds: tuple[int, ...] = ()
    if mode != "off":
        try:
            confinement = sandbox.confinement(roots=context.roots, cwd=cwd,
                                              protected=context.protected)  # fmt: skip
        except Exception as exc:  # the socket filter could not be made (FilterUnavailable)
            return Ran(None, error=f"the sandbox could not be set up: {exc}", sandbox=mode)
        argv = confinement.argv(argv)
        fds = confinement.fds
    else:  # a PID namespace of its own where one can be made: nothing it starts outlives it
        argv = [*(namespace_prefix() or ()), *argv]
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=environment,
            pass_fds=fds,
            start_new_session=True,
            # Killed when smith (the handler's thread) goes, as every process smith starts.
            preexec_fn=dies_with_smith(),
        )
    except OSError as exc:
        if confinement is not None:
            confinement.settle()
        return Ran(None, error=f"it could not be started: {exc}", sandbox=mode)
    if confinement is not None:
        confinement.started()
    out, err = bytearray(), bytearray()
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    cut, _cut_err = [0], [0]
    readers = [asyncio.ensure_future(_read(proc.stdout, out, cut)),
               asyncio.ensure_future(_read(proc.stderr, err, _cut_err))]  # fmt: skip
    feeder = asyncio.ensure_future(_feed(proc.stdin, payload))
    timed_out = False
    try:
        await asyncio.wait_for(proc.wait(), timeout)
    except TimeoutError:
        timed_out = True
    finally:
        # Whatever it left running (it ended, or its time is up) ends with it, so its
        # output's pipes close.
        _end(proc.pid)
        status = await proc.wait()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*readers, feeder), 5)
        for task in (*readers, feeder):
            task.cancel()
        notice = confinement.settle() if confinement is not None else ""
    return Ran(
        None if timed_out else status,
        stdout=out.decode("utf-8", "replace"),
        stderr=err.decode("utf-8", "replace"),
        timed_out=timed_out,
        cut=cut[0],
        sandbox=mode,
        seconds=time.monotonic() - started,
        notice=notice,
    )


# -- what it answered ---------------------------------------------------------------------


@dataclass
class Answer:
    """A hook's answer: `decision` "allow", "deny" or "ask" (or "failed": `reason` says
    why, and the hook is reported); `context`: text to add to what the model is told;
    `arguments`: a tool call's new arguments; `result`: what the model sees of a call's
    result; `message`: a notice for the user."""

    decision: str = "allow"
    reason: str = ""
    context: str = ""
    arguments: dict[str, Any] | None = None
    result: str | None = None
    message: str = ""
    stdout: str = ""  # plain (not JSON) output of a hook that exited 0
    ignored: list[str] = field(default_factory=list)  # keys it gave that mean nothing here


DECISIONS = {"allow": "allow", "approve": "allow", "deny": "deny", "block": "deny", "ask": "ask"}


def _text(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else json.dumps(value)


def answer(ran: Ran, timeout: float) -> Answer:
    """What `ran` says (see the module)."""
    if ran.error:
        return Answer("failed", ran.error)
    if ran.timed_out:
        return Answer("failed", f"it did not finish within {timeout:g} s, and was killed")
    stderr = ran.stderr.strip()
    if ran.status == 2:
        return Answer("deny", stderr or "it exited with status 2 and said nothing on stderr")
    if ran.status != 0:
        said = f": {stderr.splitlines()[-1]}" if stderr else ""
        how = f"was killed by signal {-ran.status}" if ran.status and ran.status < 0 else (
            f"exited with status {ran.status}")  # fmt: skip
        return Answer("failed", f"it {how}{said}")
    stdout = ran.stdout.strip()
    if not stdout.startswith("{"):
        return Answer(stdout=stdout)
    if ran.cut:
        return Answer("failed", f"its output starts as JSON but was cut at {OUTPUT_MAX} bytes "
                      f"({ran.cut} more were dropped): an answer must be shorter")  # fmt: skip
    try:
        data = json.loads(stdout)
    except ValueError as exc:
        return Answer("failed", f"its output starts as JSON but is not ({exc})")
    if not isinstance(data, dict):
        return Answer("failed", "its JSON output is not an object")
    specific = data.get("hookSpecificOutput")
    if isinstance(specific, dict):
        data = {**data, **specific}
    given = data.get("permissionDecision", data.get("decision", "allow"))
    decision = DECISIONS.get(given.lower()) if isinstance(given, str) else None
    if decision is None:
        return Answer("failed", f"its decision {json.dumps(given)} is none of "
                      "allow, deny, block, ask")  # fmt: skip
    arguments = data.get("updatedInput", data.get("arguments"))
    if arguments is not None and not isinstance(arguments, dict):
        return Answer("failed", "its updatedInput is not an object")
    result = data.get("result")
    if result is not None and not isinstance(result, str):
        return Answer("failed", "its result is not a string")
    reason = data.get("permissionDecisionReason", data.get("reason"))
    return Answer(
        decision,
        _text(reason),
        context=_text(data.get("additionalContext")),
        arguments=arguments,
        result=result,
        message=_text(data.get("systemMessage")),
    )
