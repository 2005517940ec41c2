"""smith's options for the shell sandbox and approvals (docs/safety.md), registered by
smith.config._options with the rest."""

from __future__ import annotations

from smith.config._schema import Option
from smith.config._types import Boolean, Choice, Strings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

SANDBOX_MODES = ("workspace-write", "read-only", "off")  # smith.effects._sandbox.MODES
APPROVAL_POLICIES = ("never", "on-failure", "on-request", "untrusted")


def safety_options(add: Callable[[Option], object]) -> None:
    """The shell sandbox and approvals (docs/safety.md)."""
    add(
        Option(
            "sandbox.mode",
            Choice(SANDBOX_MODES),
            "workspace-write",
            doc="How every command smith starts is confined (bubblewrap): workspace-write "
            "(only the project, tools.extra-roots and a private /tmp writable; .git and "
            ".smith read-only; no network), read-only (only the private /tmp writable), "
            "or off (commands run with all of your rights).",
        )
    )
    add(
        Option(
            "sandbox.network",
            Boolean(),
            False,
            doc="Let sandboxed commands reach the network (off: only their own loopback).",
        )
    )
    add(
        Option(
            "sandbox.fallback",
            Choice(("refuse", "off")),
            "refuse",
            doc="Where the sandbox cannot run (no bubblewrap, no user namespaces): refuse "
            "commands, or run them without it (with a warning at start).",
        )
    )
    add(
        Option(
            "approval",
            Choice(APPROVAL_POLICIES),
            "on-failure",
            doc="When smith asks before a tool call: never; on-failure (a command the "
            "sandbox stopped may be retried outside it once you approve); on-request (the "
            "model may ask to run a command outside the sandbox, with a reason); "
            "untrusted (every bash, write and edit call asks first).",
        )
    )
    for which, what in (("allow", "run without asking"), ("deny", "refuse, whatever else")):
        add(
            Option(
                f"approval.{which}",
                Strings(),
                [],
                doc=f"Tool calls to {what}: a tool's name (write, edit, bash) or the start "
                "of a bash command, whole words (git status, rm -rf). Deny wins over allow.",
            )
        )
