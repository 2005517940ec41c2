"""The protocol every frontend speaks with the runtime, declared once (docs/events.md,
docs/rpc.md): each event type and each operation is a msgspec `Struct`, and the JSON
Schema `smith rpc --schema` prints is generated from them. Events are dicts of these
shapes; `encode_line` (an RPC line) and `dumps_event` (an `eval --json` line) write them
through msgspec's encoder.

`VERSION` is importable without msgspec; the declarations load on first use (PEP 562),
so nothing on smith's start-up path pays for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# The protocol's version: the major part changes when a field is removed or changes
# meaning (never, so far), the minor part when types or fields are added.
VERSION = "1.0"

if TYPE_CHECKING:
    from smith.protocol._encode import dumps_event, encode_line
    from smith.protocol._events import EVENTS, HOOK_EVENTS, Event
    from smith.protocol._schema import schema
    from smith.protocol.ops import OPERATIONS, Operation

_LAZY = {
    "EVENTS": "smith.protocol._events",
    "HOOK_EVENTS": "smith.protocol._events",
    "Event": "smith.protocol._events",
    "OPERATIONS": "smith.protocol.ops",
    "Operation": "smith.protocol.ops",
    "schema": "smith.protocol._schema",
    "encode_line": "smith.protocol._encode",
    "dumps_event": "smith.protocol._encode",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'smith.protocol' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup (an encoder's, per event) finds it directly
    return value


__all__ = [
    "EVENTS",
    "HOOK_EVENTS",
    "OPERATIONS",
    "VERSION",
    "Event",
    "Operation",
    "dumps_event",
    "encode_line",
    "schema",
]
