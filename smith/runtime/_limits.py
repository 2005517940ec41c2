"""The bounds of the agent loop (`Limits`), in a module of their own: configuration builds
them for every mode (smith.runtime._setup), including those that run no loop
(`smith tools run`, MCP), which so need not import the runtime and asyncio."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Bounds of the loop. Times are seconds; None means no bound."""

    max_iterations: int = 50  # provider rounds per prompt
    token_budget: int | None = None  # input + output tokens per prompt (known usage)
    deadline: float | None = None  # wall time per prompt
    tool_timeout: float = 600.0  # a call of a tool that sets no timeout of its own
    result_bytes: int = 64 * 1024  # a tool result beyond this is cut (UTF-8 safe)
    retries: int = 3  # of a provider error that says it is retryable
    retry_delay: float = 1.0  # first backoff; doubles, with jitter
    retry_cap: float = 60.0  # longest wait before a retry, Retry-After included
    handler_deadline: float = 2.0  # a plugin handler past this is abandoned
    abort_grace: float = 5.0  # how long an aborted tool gets to record its end
    context_limit: int | None = None  # estimated tokens; compaction starts at 80 %
    keep_recent: int = 8_000  # estimated tokens compaction keeps verbatim
    image_bytes: int = 5 * 1024 * 1024  # an attached image (images.max-bytes)
