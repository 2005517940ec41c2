from typing import Any

from typing_extensions import Buffer

class DecodeError(ValueError):
    """Input that is not (canonical, when strict) CBOR of the value model, or over a bound."""

    offset: int
    reason: str
    def __init__(self, offset: int, reason: str) -> None: ...

def decode(
    data: Buffer,
    *,
    strict: bool = False,
    max_length: int = 67108864,
    max_depth: int = 256,
    max_items: int = 1048576,
) -> Any:
    """The value of one CBOR item filling `data`; strict accepts only canonical input;
    at most max_items items (every value, array member, map key and value) are decoded."""
