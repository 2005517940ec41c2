"""An assistant message as its provider stream arrives: text and thinking deltas (held
back while a secret could still be forming), tool calls, usage and the one terminal event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smith.providers import End, TextDelta, ThinkingDelta, ToolCall, Usage
from smith.runtime._events import event
from smith.text import replace_surrogates

if TYPE_CHECKING:
    from collections.abc import Callable

    from smith.runtime._events import Event
    from smith.runtime._secrets import SecretProxy


class Response:
    """An assistant message as its stream arrives."""

    def __init__(self, secrets: SecretProxy, emit: Callable[[Event], None], mid: str) -> None:
        self.secrets = secrets
        self.emit = emit
        self.mid = mid
        self.content: list[dict[str, Any]] = []
        self.usage: Usage | None = None
        self.end: End | None = None
        self.held = ""  # text not yet sent as a delta (see take)
        self.held_kind = "text"  # the channel it belongs to
        self.replaced = 0  # characters that could not be encoded, replaced with U+FFFD

    def _clean(self, value: Any) -> Any:
        """`value` as it can be shown, sent and recorded: the provider stream is where
        model text enters, so lone surrogates are replaced here (and counted)."""
        value, n = replace_surrogates(value)
        self.replaced += n
        return value

    def flush(self) -> None:
        """Send what was held back of the current text or thinking part."""
        if self.held:
            delta = str(self.secrets.redact(self.held))
            self.held = ""
            self.emit(
                event("message_delta", message_id=self.mid, channel=self.held_kind, delta=delta)
            )

    def take(self, item: object) -> bool:
        """Add one stream event; True at the terminal one."""
        if isinstance(item, TextDelta | ThinkingDelta):
            kind = "text" if isinstance(item, TextDelta) else "thinking"
            if not self.content or self.content[-1]["type"] != kind:
                self.flush()
                self.content.append({"type": kind, "text": ""})
                self.held_kind = kind
            text = self._clean(item.text)
            self.content[-1]["text"] += text
            if isinstance(item, ThinkingDelta) and item.signature:
                self.content[-1]["signature"] = self._clean(item.signature)
            # Deltas are redacted like the recorded message, holding back what could be
            # the start of a secret, so they still assemble to exactly that message.
            delta, self.held = self.secrets.redact_stream(self.held + text)
            if delta:
                self.emit(event("message_delta", message_id=self.mid, channel=kind, delta=delta))
        elif isinstance(item, ToolCall):
            self.flush()
            part: dict[str, Any] = self._clean(
                {
                    "type": "tool_call",
                    "id": item.id,
                    "name": item.name,
                    "arguments": item.arguments or {},
                }
            )
            if item.arguments is None:
                part["invalid"] = self._clean(item.error or "the arguments were not valid JSON")
            self.content.append(part)
        elif isinstance(item, Usage):
            self.usage = _merge(self.usage, item)
        elif isinstance(item, End):
            self.end = item
            return True
        return False

    def terminal(self) -> End:
        """The stream's outcome, with the ways a stream can be malformed made explicit."""
        if self.end is None:
            return End(
                "error",
                error="the provider's stream ended without a terminal event (it was "
                "cut off or malformed); the response is incomplete",
            )
        if self.end.outcome == "tool_use" and not any(
            p["type"] == "tool_call" for p in self.content
        ):
            return End("error", error="the provider said it wanted tools but sent no tool call")
        return self.end


def _merge(old: Usage | None, new: Usage) -> Usage:
    if old is None:
        return new
    return Usage(
        *(
            n if n is not None else o
            for o, n in zip(
                (old.input, old.output, old.cache_read, old.cache_write),
                (new.input, new.output, new.cache_read, new.cache_write),
                strict=True,
            )
        )
    )
