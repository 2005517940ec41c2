"""The runtime's own diagnostic kinds (what Runtime refuses or reports of itself)."""

from __future__ import annotations

from smith.config import THINKING_LEVELS
from smith.diagnostics import DiagnosticKind, Source

OP_BUSY = DiagnosticKind(
    "runtime.busy",
    what="'{op}' cannot run while the agent is working",
    why="a running turn may be changing the files that {op} would change",
    fix="wait for the turn to end (or abort it), then {op} again",
)
BAD_THINKING = DiagnosticKind(
    "runtime.bad-thinking",
    what="'{level}' is not a thinking level",
    why="thinking levels are {known}",
    fix="pick one of {known}",
)
LOOP_FAILED = DiagnosticKind(
    "runtime.internal",
    what="the agent loop failed: {problem}",
    why="this is a bug in smith, not something you did; the session is intact and the "
    "runtime is idle again",
    fix="resume and try again; report it with the log (run with --debug for details)",
)


def check_thinking(level: str) -> None:
    """Raise BAD_THINKING unless `level` is one of configuration's thinking levels."""
    if level not in THINKING_LEVELS:
        known = ", ".join(THINKING_LEVELS)
        raise BAD_THINKING.error(
            value=level, source=Source("argument", "thinking"), level=level, known=known
        )
