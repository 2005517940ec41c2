class EncodeError(ValueError):
    """A value outside smith's value model; `path` locates it, e.g. `$.content.args[3]`."""

    path: str
    reason: str
    def __init__(self, path: str, reason: str) -> None: ...

def encode(obj: object, /) -> bytes:
    """obj as canonical CBOR (RFC 8949 §4.2.1), byte-identical to cbor2 canonical."""
