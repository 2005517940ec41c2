"""The protocol as one JSON Schema document (draft 2020-12): `smith rpc --schema`."""

from __future__ import annotations

from typing import Any

import msgspec

from smith.protocol import VERSION
from smith.protocol._events import Event, HookEvent
from smith.protocol._rpc import Request
from smith.protocol.actions import Action, HookAction
from smith.protocol.ops import ALIASES, OPERATIONS, Operation

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def schema() -> dict[str, Any]:
    """The document: `$defs` holds `Event` (every emitted event, one of its kinds),
    `Operation` (every operation), `Request` (every `smith rpc` method's request),
    `HookEvent`, `Action` and `HookAction` (what a plugin's handler returns at a safe
    point and at a hook) and each kind's own definition."""
    (event, hook, operation, request), defs = msgspec.json.schema_components(
        [Event, HookEvent, Operation, Request], ref_template="#/$defs/{name}"
    )
    # Actions share names with operations (SetModel, SetThinking): theirs end in Action.
    (action, hook_action), actions = msgspec.json.schema_components(
        [Action, HookAction], ref_template="#/$defs/{name}Action"
    )
    defs.update({f"{name}Action": found for name, found in actions.items()})
    for op, aliases in ALIASES.items():  # an older spelling, taken in place of its field
        declared = defs[OPERATIONS[op].__name__]
        for old, field in aliases.items():
            declared["properties"][old] = declared["properties"][field]
            declared["required"] = [r for r in declared["required"] if r != field]
            declared["oneOf"] = [{"required": [field]}, {"required": [old]}]
    image = defs["Image"]
    defs["Image"] = {  # as data, an image may also be a file the runtime reads
        "title": image.pop("title"),
        "description": image.pop("description"),
        "anyOf": [
            image,
            {
                "type": "object",
                "properties": {"path": {"type": "string"}, "name": {"type": "string"}},
                "required": ["path"],
                "additionalProperties": False,
            },
        ],
    }
    return {
        "$schema": DRAFT,
        "$id": f"https://smith.invalid/protocol/{VERSION}",
        "title": "smith protocol",
        "description": "The events smith's runtime emits and the operations it takes "
        "(docs/events.md, docs/rpc.md).",
        "version": VERSION,
        "$defs": {
            "Event": event,
            "Operation": operation,
            "Request": request,
            "HookEvent": hook,
            "Action": action,
            "HookAction": hook_action,
            **defs,
        },
    }
