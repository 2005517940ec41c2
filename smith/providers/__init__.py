"""The vendor-neutral provider contract: requests, the normalized stream, model routing.

Vendor knowledge lives only in provider plugins (smith.plugins.providers.*); the runtime
talks to them through `Provider.stream(Request)` and sees only the events below.
"""

from smith.providers._auth import credential_variables, read_credentials, watch_credentials
from smith.providers._registry import resolve_model
from smith.providers._stream import (
    OUTCOMES,
    End,
    Pricing,
    Provider,
    Request,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    Usage,
)

__all__ = [
    "OUTCOMES",
    "End",
    "Pricing",
    "Provider",
    "Request",
    "StreamEvent",
    "TextDelta",
    "ThinkingDelta",
    "ToolCall",
    "Usage",
    "credential_variables",
    "read_credentials",
    "resolve_model",
    "watch_credentials",
]
