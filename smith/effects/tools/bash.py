"""bash: a shell command in an explicit directory, with a timeout, bounded output, and
everything it started ended when it ends, times out or is interrupted.

The command runs as a `Job` (smith.effects._procs): in its own PID namespace where one
can be made, so no process it starts can outlive it (setsid, double forks and an empty
environment included), nor outlive smith. Output (stdout and stderr
together) is read as it arrives; the last `TAIL_BYTES` are kept for the result, and when
there is more the full output is saved to a file that the result names. After the shell
exits, output still in the pipe is read to the end (bounded by a short grace period, in
case a background process keeps the pipe open), so nothing printed just before exit is
lost.
"""

from __future__ import annotations

import os
import subprocess
import time

from smith.effects._outputs import MAX_BYTES, MaskedFile, prune
from smith.effects._procs import Job
from smith.effects._sandbox import OFF, Confinement, Sandbox
from smith.effects._tool import (
    Presentation,
    ToolCancelled,
    ToolContext,
    ToolError,
    ToolResult,
    ToolSpec,
)
from smith.effects.tools._outside import ask_outside, stopped_by_sandbox

TAIL_BYTES = 50 * 1024
SAVE_BYTES = 64 * 1024 * 1024  # most output kept in the saved file
GRACE = 1.0  # seconds to wait for the pipe to close after the shell exits
PROGRESS_EVERY = 0.5  # seconds between progress reports of a running command


class _Output:
    """Keeps the tail in memory and, past that, everything in a file of the outputs
    folder: masked as it is written, at most `save` bytes of output, and the folder
    pruned to its size bound once the file is complete (smith.effects._outputs)."""

    def __init__(self, ctx: ToolContext) -> None:
        self.tail = bytearray()
        self.total = 0
        self.spill_dir = ctx.spill_dir
        self.mask = ctx.mask
        self.folder_max = ctx.limits.get("bash.outputs-max-bytes", MAX_BYTES)
        self.save = min(SAVE_BYTES, self.folder_max)
        self.file: MaskedFile | None = None
        self.path: str | None = None

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if self.file is None and self.total > TAIL_BYTES:
            import tempfile

            from smith._atomic import private_dirs

            private_dirs(self.spill_dir)  # owner-only, as everything under SMITH_HOME
            fd, self.path = tempfile.mkstemp(prefix="bash-", suffix=".log", dir=self.spill_dir)
            self.file = MaskedFile(os.fdopen(fd, "wb"), self.mask)
            self.file.write(bytes(self.tail[: self.save]))
        if self.file is not None and self.total - len(chunk) < self.save:
            self.file.write(chunk[: max(0, self.save - (self.total - len(chunk)))])
        self.tail += chunk
        if len(self.tail) > TAIL_BYTES:
            del self.tail[: len(self.tail) - TAIL_BYTES]

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
            prune(self.spill_dir, self.folder_max, keep=self.path)

    def text(self) -> str:
        text = self.tail.decode("utf-8", "replace")
        if self.total > len(self.tail):
            cut = text.find("\n")
            text = text[cut + 1 :] if 0 <= cut < 200 else text
            kept = "all of it" if self.total <= self.save else f"its first {self.save} bytes"
            text = (
                f"[output was {self.total} bytes; showing the end; {kept} is in "
                f"{self.path}]\n{text}"
            )
        return text


def _shell() -> list[str]:
    import shutil

    bash = shutil.which("bash")
    return [bash, "-c"] if bash else ["/bin/sh", "-c"]


def _pump(job: Job, output: _Output, timeout: float, ctx: ToolContext) -> bool:
    """Read the command's output until it ends; True if it had to be ended at `timeout`."""
    import selectors

    proc = job.proc
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    deadline = time.monotonic() + timeout
    exited_at: float | None = None
    timed_out = False
    reported = 0.0  # the first output is reported at once, then at most every PROGRESS_EVERY
    told = 0  # bytes of output reported: what came after is reported once a pause allows
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > GRACE:
                return timed_out  # a background process holds the pipe: stop reading
            if exited_at is None and ctx.cancelled.is_set():
                job.end()
                raise ToolCancelled("unknown")
            if exited_at is None and now >= deadline:
                timed_out = True
                job.end()
                exited_at = time.monotonic()
            wait = 0.05 if exited_at is not None else max(0.0, min(deadline - now, 0.25))
            if not sel.select(wait):
                if output.total != told and now - reported >= PROGRESS_EVERY:
                    reported, told = now, output.total  # output, then quiet: show its end
                    ctx.progress({"output_bytes": told, "tail": _shown_tail(ctx, output)})
                continue
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                # End of output: all that was written has been read. The command may
                # still be running (it closed its output), so the deadline still holds.
                if exited_at is None:
                    try:
                        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                    except subprocess.TimeoutExpired:
                        timed_out = True
                        job.end()
                return timed_out
            output.add(chunk)
            if now - reported >= PROGRESS_EVERY:
                reported, told = now, output.total
                ctx.progress({"output_bytes": told, "tail": _shown_tail(ctx, output)})


SHOWN_TAIL = 800  # characters of output a progress update shows (a frontend's last lines)
SECRET_REACH = 4096  # ... masked over this much more, so a secret cut by its edge is whole


def _shown_tail(ctx: ToolContext, output: _Output) -> str:
    """The end of the output so far, secrets masked before it is cut: masked after, a
    secret the cut went through would be shown all but its first characters."""
    text = bytes(output.tail[-(SHOWN_TAIL + SECRET_REACH) :]).decode("utf-8", "replace")
    if ctx.mask is not None:
        text = str(ctx.mask.redact(text))
    return text[-SHOWN_TAIL:]


def _confined(
    ctx: ToolContext, cwd: str, sandbox: Sandbox, command: str
) -> tuple[dict[str, str], Confinement | None, str]:
    """How the command's Job is started: its environment, what confines it (None: no
    sandbox) and the sandbox mode it runs in; raises ToolError when the sandbox is needed
    and cannot run here."""
    from smith.effects._sandbox import SANDBOX_REFUSED

    mode = sandbox.effective
    if mode == "refused":
        cause, remedy = sandbox.problem() or ("unknown", "")
        refused = SANDBOX_REFUSED(cause=cause, mode=sandbox.mode, remedy=remedy)
        raise ToolError(refused.render(), details={"sandbox": mode})
    env = sandbox.environment(ctx.process_env())
    if mode == "off":
        return env, None, mode
    from smith.effects._seccomp import FilterUnavailable

    try:
        confinement = sandbox.for_command(command).confinement(
            roots=ctx.roots, cwd=cwd, protected=ctx.protected
        )
    except FilterUnavailable as exc:
        refused = SANDBOX_REFUSED(cause=exc.cause, mode=sandbox.mode, remedy=exc.remedy)
        raise ToolError(refused.render(), details={"sandbox": mode}) from None
    return env, confinement, mode


def run(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
    """The command in the sandbox; what approval allows beyond it (smith.plugins.approval):
    on-request, the model's `unsandboxed` ask; on-failure, running again outside once the
    user approves, when the sandbox stopped it."""
    command = str(args["command"])
    size = len(os.fsencode(command))
    if size > COMMAND_MAX_BYTES:  # execve would fail with E2BIG
        raise ToolError(
            f"the command is {size:,} bytes; Linux passes at most "
            f"{COMMAND_MAX_BYTES:,} bytes in one argument: write a script with the write "
            "tool and run that"
        )
    timeout = args.get("timeout", ctx.limits.get("bash.timeout", TIMEOUT_DEFAULT))
    assert isinstance(timeout, int | float)
    cwd = ctx.path(str(args["cwd"])) if "cwd" in args else os.path.realpath(ctx.cwd)
    if not os.path.isdir(cwd):
        raise ToolError(f"cwd {ctx.show(cwd)} is not a directory")
    if args.get("unsandboxed") and ctx.sandbox.mode != "off":
        return _unsandboxed_on_request(
            ctx, command, cwd, float(timeout), str(args.get("reason", ""))
        )
    result = _execute(ctx, command, cwd, float(timeout), ctx.sandbox)
    stopped = stopped_by_sandbox(result)
    if stopped is None or ctx.approval != "on-failure":
        return result
    allowed, why = ask_outside(ctx, command, f"The sandbox stopped this command ({stopped}).")
    if not allowed:
        return _noted(result, f"[the sandbox stopped it ({stopped}); not run outside it: {why}]")
    again = _execute(ctx, command, cwd, float(timeout), OFF)
    return _noted(again, "[run again outside the sandbox, as the user approved]", first=True)


def _unsandboxed_on_request(ctx: ToolContext, command: str, cwd: str, timeout: float,
                            reason: str) -> ToolResult:  # fmt: skip
    if ctx.approval != "on-request":
        raise ToolError(f"unsandboxed is only for approval on-request, and approval is "
                        f"{ctx.approval} (--approval on-request lets the model ask): run "
                        "the command in the sandbox")  # fmt: skip
    allowed, why = ask_outside(ctx, command, "The model asks to run a command outside the "
                               "sandbox.", reason=reason)  # fmt: skip
    if not allowed:
        raise ToolError(f"not run: it was not allowed outside the sandbox ({why}); run it in "
                        "the sandbox")  # fmt: skip
    return _noted(_execute(ctx, command, cwd, timeout, OFF),
                  "[run outside the sandbox, as the user approved]", first=True)  # fmt: skip


def _noted(result: ToolResult, note: str, *, first: bool = False) -> ToolResult:
    text = f"{note}\n{result.text}" if first else f"{result.text}\n{note}"
    return ToolResult(text, details=result.details, mutation=result.mutation, ok=result.ok)


def _execute(ctx: ToolContext, command: str, cwd: str, timeout: float,
             sandbox: Sandbox) -> ToolResult:  # fmt: skip
    env, confinement, mode = _confined(ctx, cwd, sandbox, command)
    output = _Output(ctx)
    started = time.monotonic()
    try:
        job = Job([*_shell(), command], cwd=cwd, env=env, sandbox=mode,
                  confine=confinement.argv if confinement else None,
                  sandbox_fds=confinement.fds if confinement else ())  # fmt: skip
    except OSError as exc:
        raise ToolError(f"the shell could not be started: {exc}") from None
    finally:
        if confinement is not None:
            confinement.started()  # bwrap has its own copy of the filter's pipe
    ctx.started(job.identity())
    try:
        timed_out = _pump(job, output, timeout, ctx)
    except ToolCancelled as exc:  # aborted: what it printed until then is kept
        job.end()
        moved = confinement.settle() if confinement is not None else ""
        text = output.text()
        text = f"{text}\n{moved}" if text and moved else text or moved
        details = _details(ctx, command, cwd, mode, output, started)
        raise ToolCancelled(exc.mutation, text=text, details={**details, "cancelled": True}
                            ) from None  # fmt: skip
    except BaseException:
        job.end()  # interrupted: leave nothing running
        if confinement is not None:
            confinement.settle()  # what it made is moved out all the same
        raise
    finally:
        assert job.proc.stdout is not None
        job.proc.stdout.close()
        output.close()
    code = job.wait()
    text = output.text()
    if confinement is not None and (moved := confinement.settle()):
        text = f"{text}\n{moved}" if text else moved
    details = {**_details(ctx, command, cwd, mode, output, started), "exit_status": code}
    if timed_out:
        details["timed_out"] = True
        raise ToolError(
            f"{text}\n[timed out after {timeout:g} s; the command and everything "
            "it started were ended]",
            mutation="unknown",
            details=details,
        )
    status = f"[killed by signal {-code}]" if code < 0 else f"[exit status {code}]" if code else ""
    body = text + ("\n" if text and not text.endswith("\n") and status else "") + status
    return ToolResult(body or "(no output)", details=details, mutation="applied", ok=code == 0)


def _details(ctx: ToolContext, command: str, cwd: str, mode: str, output: _Output,
             started: float) -> dict[str, object]:  # fmt: skip
    """What a result's details say of the command (a review shows them)."""
    return {
        # what ran (a plugin may have rewritten the call), cut short for a summary line
        "command": command if len(command) <= COMMAND_SHOWN else command[:COMMAND_SHOWN] + "…",
        "duration": round(time.monotonic() - started, 3),  # seconds
        "cwd": ctx.show(cwd),
        "sandbox": mode,  # how it was confined (sandbox.mode, as it could be had)
        "output_bytes": output.total,
        "full_output": output.path,
    }


TIMEOUT_DEFAULT = 120  # tools.bash.timeout
COMMAND_MAX_BYTES = 128 * 1024 - 1  # Linux's MAX_ARG_STRLEN (32 pages), less the NUL
COMMAND_SHOWN = 500  # characters of the command kept in the result's details


UNSANDBOXED = {
    "unsandboxed": {
        "type": "boolean",
        "description": "run outside the sandbox, after the user approves (only when the "
        "sandbox stops something the task needs: say why in reason)",
    },
    "reason": {"type": "string", "description": "why it must run outside the sandbox"},
}


def _spec(timeout: int = TIMEOUT_DEFAULT, on_request: bool = False) -> ToolSpec:
    """bash as tools.bash.timeout bounds it; `on_request` (approval on-request): the model
    may ask to run a command outside the sandbox."""
    properties: dict[str, object] = {
        "command": {
            "type": "string",
            "minLength": 1,
            "description": "the command line, run by bash -c: under 128 KB (131,071 bytes), "
            "the system's bound on one argument",
        },
        "timeout": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": 86400,
            "description": f"seconds before the command is ended (default {timeout:,}, "
            "at most 86,400)",
        },
        "cwd": {
            "type": "string",
            "minLength": 1,
            "description": "directory to run in: relative to the working directory, "
            "or absolute inside the project (default: the working directory)",
        },
        **(UNSANDBOXED if on_request else {}),
    }
    return ToolSpec(
        "bash",
        "Run a shell command (bash -c) in `cwd` (default: the working directory), for at "
        f"most `timeout` seconds (default {timeout:,}, tools.bash.timeout). Returns the exit "
        "status and the output, stdout and stderr together: the last 50 KB when longer, with "
        "all of it (up to 64 MB) saved to a file the result names. Everything the command "
        "started is ended when it exits, times out or is interrupted. Use it to build, test "
        "and run; use read, grep, find and ls rather than cat, grep or find here. Refuses a "
        "command of 128 KB or more and a cwd outside the project or not a directory.",
        {
            "type": "object",
            "properties": properties,
            "required": ["command"],
            "additionalProperties": False,
        },
        run,
        effect="runs",
        secrets=True,  # its processes get the registered secrets restored
        command_argument="command",
        timeout_argument="timeout",
        touches=lambda args: None,  # a command may touch anything
        confined=False,  # ... anywhere: no path check can confine a shell
        presentation=Presentation("command", "command"),
        tuned=lambda limits: _spec(
            limits.get("bash.timeout", TIMEOUT_DEFAULT), bool(limits.get("bash.unsandboxed"))
        ),
    )


SPEC = _spec()
