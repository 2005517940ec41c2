"""bash: a shell command in an explicit directory, with a timeout, bounded output, and
the whole process group ended when it times out or is interrupted.

The command runs in a new session (its own process group), with a per-run mark in its
environment, so that processes which leave the group (setsid, double fork) are still
found and ended. Output (stdout and stderr
together) is read as it arrives; the last `TAIL_BYTES` are kept for the result, and when
there is more the full output is saved to a file that the result names. After the shell
exits, output still in the pipe is read to the end (bounded by a short grace period, in
case a background process keeps the pipe open), so nothing printed just before exit is
lost.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time

from smith.effects._tool import ToolCancelled, ToolContext, ToolError, ToolResult, ToolSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO

TAIL_BYTES = 50 * 1024
SAVE_BYTES = 64 * 1024 * 1024  # most output kept in the saved file
GRACE = 1.0  # seconds to wait for the pipe to close after the shell exits
KILL_WAIT = 2.0  # seconds between SIGTERM and SIGKILL
PROGRESS_EVERY = 0.5  # seconds between progress reports of a running command


MARK = "SMITH_TOOL_RUN"  # set in the command's environment; descendants inherit it


def _marked(token: str) -> set[int]:
    """Processes carrying this run's environment mark: found even after they left the
    process group and were re-parented (setsid, double fork)."""
    needle = f"{MARK}={token}".encode()
    found = set()
    for name in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if name.isdigit():
            try:
                with open(f"/proc/{name}/environ", "rb") as f:
                    if needle in f.read().split(b"\0"):
                        found.add(int(name))
            except OSError:
                continue
    return found


def _descendants(pid: int) -> set[int]:
    """Processes below `pid` (Linux /proc), to end those that left its process group."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return set()
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _end(proc: subprocess.Popen[bytes], token: str) -> None:
    """End the command's process group and every process it started: TERM, then KILL."""
    targets = (_descendants(proc.pid) | _marked(token)) - {os.getpid()}
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        if sig == signal.SIGKILL:
            targets |= _marked(token) - {os.getpid()}  # anything started since
        for pid in targets:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        try:
            proc.wait(timeout=KILL_WAIT if sig == signal.SIGTERM else None)
            if sig == signal.SIGTERM and not any(_alive(p) for p in targets):
                return
        except subprocess.TimeoutExpired:
            continue


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _Output:
    """Keeps the tail in memory and, past that, everything in a file."""

    def __init__(self, spill_dir: str) -> None:
        self.tail = bytearray()
        self.total = 0
        self.spill_dir = spill_dir
        self.file: BinaryIO | None = None
        self.path: str | None = None

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if self.file is None and self.total > TAIL_BYTES:
            import tempfile

            os.makedirs(self.spill_dir, exist_ok=True)
            fd, self.path = tempfile.mkstemp(prefix="bash-", suffix=".log", dir=self.spill_dir)
            self.file = os.fdopen(fd, "wb")
            self.file.write(bytes(self.tail))
        if self.file is not None and self.total - len(chunk) < SAVE_BYTES:
            self.file.write(chunk[: max(0, SAVE_BYTES - (self.total - len(chunk)))])
        self.tail += chunk
        if len(self.tail) > TAIL_BYTES:
            del self.tail[: len(self.tail) - TAIL_BYTES]

    def close(self) -> None:
        if self.file is not None:
            self.file.close()

    def text(self) -> str:
        text = self.tail.decode("utf-8", "replace")
        if self.total > len(self.tail):
            cut = text.find("\n")
            text = text[cut + 1 :] if 0 <= cut < 200 else text
            kept = "all of it" if self.total <= SAVE_BYTES else f"its first {SAVE_BYTES} bytes"
            text = (
                f"[output was {self.total} bytes; showing the end; {kept} is in "
                f"{self.path}]\n{text}"
            )
        return text


def _shell() -> list[str]:
    import shutil

    bash = shutil.which("bash")
    return [bash, "-c"] if bash else ["/bin/sh", "-c"]


def _pump(
    proc: subprocess.Popen[bytes],
    output: _Output,
    timeout: float,
    token: str,
    ctx: ToolContext,
) -> bool:
    """Read the command's output until it ends; True if it had to be ended at `timeout`."""
    import selectors

    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    deadline = time.monotonic() + timeout
    exited_at: float | None = None
    timed_out = False
    reported = 0.0  # the first output is reported at once, then at most every PROGRESS_EVERY
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > GRACE:
                return timed_out  # a background process holds the pipe: stop reading
            if exited_at is None and ctx.cancelled.is_set():
                _end(proc, token)
                raise ToolCancelled("unknown")
            if exited_at is None and now >= deadline:
                timed_out = True
                _end(proc, token)
                exited_at = time.monotonic()
            wait = 0.05 if exited_at is not None else max(0.0, min(deadline - now, 0.25))
            if not sel.select(wait):
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
                        _end(proc, token)
                return timed_out
            output.add(chunk)
            if now - reported >= PROGRESS_EVERY:
                reported = now
                tail = bytes(output.tail[-200:]).decode("utf-8", "replace")
                ctx.progress({"output_bytes": output.total, "tail": tail})


def run(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
    command = str(args["command"])
    timeout = args.get("timeout", ctx.limits.get("bash.timeout", 120))
    assert isinstance(timeout, int | float)
    cwd = ctx.path(str(args["cwd"])) if "cwd" in args else os.path.realpath(ctx.cwd)
    if not os.path.isdir(cwd):
        raise ToolError(f"cwd {ctx.show(cwd)} is not a directory")
    output = _Output(ctx.spill_dir)
    token = os.urandom(8).hex()
    try:
        proc = subprocess.Popen(
            [*_shell(), command],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=ctx.process_env(**{MARK: token}),
        )
    except OSError as exc:
        raise ToolError(f"the shell could not be started: {exc}") from None
    try:
        timed_out = _pump(proc, output, float(timeout), token, ctx)
    except BaseException:
        _end(proc, token)  # interrupted: leave nothing running
        raise
    finally:
        assert proc.stdout is not None
        proc.stdout.close()
        output.close()
    code = proc.wait()
    text = output.text()
    details: dict[str, object] = {
        "exit_status": code,
        "cwd": ctx.show(cwd),
        "output_bytes": output.total,
        "full_output": output.path,
    }
    if timed_out:
        details["timed_out"] = True
        raise ToolError(
            f"{text}\n[timed out after {timeout} s; the command and everything "
            "it started were ended]",
            mutation="unknown",
            details=details,
        )
    status = f"[killed by signal {-code}]" if code < 0 else f"[exit status {code}]" if code else ""
    body = text + ("\n" if text and not text.endswith("\n") and status else "") + status
    return ToolResult(body or "(no output)", details=details, mutation="applied", ok=code == 0)


SPEC = ToolSpec(
    "bash",
    "Run a shell command (bash -c) in the project, in `cwd` (default: the working "
    "directory), for at most `timeout` seconds (default 120). Returns the output (stdout "
    "and stderr together, the end kept when long, all of it saved to a file) and the exit "
    "status. Everything the command started is ended when it times out.",
    {
        "type": "object",
        "properties": {
            "command": {"type": "string", "minLength": 1},
            "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": 86400},
            "cwd": {"type": "string", "minLength": 1},
        },
        "required": ["command"],
        "additionalProperties": False,
    },
    run,
    mutating=True,
    touches=lambda args: None,  # a command may touch anything
)
