"""The bounds of every HTTP exchange with a provider, and where they are configured."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from smith.config import Config

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """Bounds that keep a misbehaving server or a runaway request from holding smith:
    sizes in bytes, times in seconds. Tests use small ones."""

    max_request: int = 16 * MIB  # larger request bodies are refused before sending
    max_response: int = 64 * MIB  # the body is cut off (outcome truncated) beyond this
    head_timeout: float = 120.0  # from sending the request to the response head
    chunk_gap: float = 300.0  # the longest silence between two body chunks
    connect_timeout: float = 30.0
    channel: int = 64  # body chunks read ahead of the consumer before reading waits


def limits_from(config: Config) -> HttpLimits:
    """The limits configured as http.max-request, http.max-response, http.head-timeout
    and http.chunk-gap (smith.config._options)."""
    return HttpLimits(
        max_request=config.integer("http.max-request"),
        max_response=config.integer("http.max-response"),
        head_timeout=float(config.integer("http.head-timeout")),
        chunk_gap=float(config.integer("http.chunk-gap")),
    )


def size(n: int) -> str:
    """A byte count as people read it: '16 MiB (16777216 bytes)'."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            amount = n / scale
            shown = f"{amount:.0f}" if amount == int(amount) else f"{amount:.1f}"
            return f"{shown} {unit} ({n} bytes)"
    return f"{n} bytes"
