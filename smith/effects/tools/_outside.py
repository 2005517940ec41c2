"""Running a command outside the sandbox, which only the user can allow (approval
on-failure and on-request: docs/safety.md).

The question shows the whole command, every control character made visible, and the
model's reason on one bounded line after it, so neither can pass for something else; a
command too long to show whole is not offered. "No" is the first choice (what Enter
picks in the app), and the user may say why, which the model is told. A yes is for this
one run: a standing approval to leave the sandbox is `sandbox.mode off`, never a click.
"""

from __future__ import annotations

from smith.effects._tool import ToolContext, ToolResult
from smith.text import inert

SHOWN_MAX = 4000  # characters: a longer command is not offered to run outside
REASON_MAX = 200  # characters of the model's reason shown

# What a command prints when the sandbox stopped it: a write outside, the network. Any
# command can print them: they only decide that the user is asked.
SANDBOX_SIGNS = (
    ("Read-only file system", "a write outside the writable roots"),
    ("Network is unreachable", "the network"),
    ("Temporary failure in name resolution", "the network"),
    ("Could not resolve host", "the network"),
    ("Address family not supported", "a unix socket (the socket filter)"),
)


def stopped_by_sandbox(result: ToolResult) -> str | None:
    """What the sandbox stopped, when a sandboxed command failed with its signs."""
    if result.ok or result.details.get("sandbox") not in ("workspace-write", "read-only"):
        return None
    return next((what for sign, what in SANDBOX_SIGNS if sign in result.text), None)


def ask_outside(ctx: ToolContext, command: str, why: str, *, reason: str = "") -> tuple[bool, str]:
    """Ask the user to run `command` outside the sandbox: (allowed, why not)."""
    from smith.ui import Question

    if len(command) > SHOWN_MAX:
        return False, (f"the command is {len(command):,} characters, too long to show for "
                       f"approval (at most {SHOWN_MAX:,})")  # fmt: skip
    lines = [why, "", "Run it outside the sandbox, with all of your rights?", "",
             *(f"  {inert(line)}" for line in command.split("\n"))]  # fmt: skip
    if reason:
        said = inert(" ".join(reason.split()))
        lines += ["", "The model's reason: " + (said if len(said) <= REASON_MAX
                                                else said[:REASON_MAX] + "…")]  # fmt: skip
    choices = (("no", "No: keep the sandbox (you may say why)"),
               ("yes", "Yes: run it outside the sandbox, this once"))  # fmt: skip
    reply = ctx.ui.ask(Question("\n".join(lines), choices, reasons=("no",)))
    if reply.refused is not None:
        return False, reply.refused
    return reply.choice == "yes", "the user said no" + (f": {reply.note}" if reply.note else "")
