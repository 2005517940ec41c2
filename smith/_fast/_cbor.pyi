from typing import Any

from typing_extensions import Buffer

class EncodeError(ValueError):
    """A value outside smith's value model; `path` locates it, e.g. `$.content.args[3]`."""

    path: str
    reason: str
    def __init__(self, path: str, reason: str) -> None: ...

class DecodeError(ValueError):
    """Input that is not (canonical, when strict) CBOR of the value model, or over a bound."""

    offset: int
    reason: str
    def __init__(self, offset: int, reason: str) -> None: ...

def encode(obj: object, /) -> bytes:
    """obj as canonical CBOR (RFC 8949 §4.2.1), byte-identical to cbor2 canonical."""

def decode(
    data: Buffer,
    *,
    strict: bool = False,
    max_length: int = 67108864,
    max_depth: int = 256,
) -> Any:
    """The value of one CBOR item filling `data`; strict accepts only canonical input."""
