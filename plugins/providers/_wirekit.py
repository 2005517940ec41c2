"""What the Anthropic and Google wire formats share beyond smith.providers._wire (HTTP
errors, thinking levels, the extras merge): terminal events for errors inside a stream
and for a cut-off stream, the request's sampling settings, tool arguments parsed once,
the neutral message form read defensively, and the numbers of a model list. Pure
functions, no vendor knowledge.
"""

from __future__ import annotations

from collections.abc import Mapping

from smith.providers import End, ModelInfo, Request, excerpt
from smith.text import loads

# -- terminal events -----------------------------------------------------------------------


def stream_error(provider: str, message: str, *, kind: str, retry: bool, label: str = "") -> End:
    """The terminal event of an error the provider reported inside a 200 stream."""
    said = f" ({label})" if label else ""
    text = f"{provider} reported an error in the stream{said}: {excerpt(message) or '(no message)'}"
    return End("error", error=text, retryable=retry, kind=kind)


def cut_off(provider: str, what: str) -> End:
    """The terminal event of a body that ended before the vendor's terminal event: an
    error (never success), worth retrying as the connection, not the request, failed."""
    return End(
        "error",
        error=f"the {provider} stream ended before {what}: the response was cut off and "
        "is incomplete",
        retryable=True,
        kind="malformed",
    )


def malformed(provider: str, why: str) -> End:
    return End("error", error=f"the {provider} stream was malformed: {why}", kind="malformed")


# -- requests ----------------------------------------------------------------------------


def max_tokens(request: Request, model: ModelInfo) -> tuple[int, bool]:
    """The output limit to send and whether the request set it itself (else the model's
    advertised max_output, which also caps what a request may ask)."""
    value = request.settings.get("max_tokens")
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return min(value, model.max_output), True
    return model.max_output, False


def temperature(request: Request) -> float | None:
    value = request.settings.get("temperature")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


# -- the neutral message form ------------------------------------------------------------


def text_of(part: Mapping[str, object]) -> str:
    text = part.get("text")
    return text if isinstance(text, str) else ""


def parse_arguments(raw: str) -> tuple[dict[str, object] | None, str | None]:
    """Tool-call arguments accumulated over a stream, parsed once: the object, or None
    and why not. Empty input is the empty object (a call of a tool without parameters)."""
    if not raw.strip():
        return {}, None
    try:
        value = loads(raw)
    except ValueError as exc:
        return None, f"the arguments were not valid JSON ({exc}): {excerpt(raw, 120)}"
    return check_arguments(value)


def check_arguments(value: object) -> tuple[dict[str, object] | None, str | None]:
    """Arguments that arrived as a whole JSON value: they must be an object."""
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return value, None
    shown = type(value).__name__ if not isinstance(value, list) else "array"
    return None, f"the arguments were a JSON {shown}, not an object"


# -- model lists -------------------------------------------------------------------------


def limit(value: object) -> int | None:
    """A token limit as a model list states it: a positive integer (at most 10**9), else
    None (not said, or not believable)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 10**9:
        return None
    return value


def list_body(data: object, field: str) -> tuple[dict[str, object], list[object]]:
    """A model list's page as an object, and its array `field`; ValueError (its message
    shown) for a body of another shape."""
    if not isinstance(data, dict):
        raise ValueError("the model list is not a JSON object")
    items = data.get(field)
    if not isinstance(items, list):
        raise ValueError(f'the model list has no "{field}" array')
    return data, items
