"""What OpenAI's two wire formats (Chat Completions and Responses) and the servers that
imitate them share: the error object, tool-call arguments, message parts, token usage,
the reasoning effort and the model list (`MODEL_LIST`: GET {base}/models, one page of
{"data": [{"id": ...}]}). Pure functions, no I/O.

Error bodies come in several dialects, all handled by `error_detail`:

    {"error": {"message": "...", "type": "invalid_request_error", "code": "..."}}   OpenAI
    {"error": {"code": 500, "message": "...", "type": "server_error"}}              llama.cpp
    {"error": "model 'x' not found"}                                                Ollama
    {"object": "error", "message": "...", "type": "BadRequestError", "code": 400}   vLLM
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from smith.diagnostics import DiagnosticKind, Source
from smith.providers import (
    End,
    ModelInfo,
    Request,
    ToolCall,
    Usage,
    content_parts,
    error_end,
    excerpt,
    level_rank,
    status_kind,
    thinking_level,
)
from smith.sdk import ListedModel, ModelList
from smith.text import loads

from ._wirekit import limit, list_body

# Error types and codes that say more than the HTTP status: kind, retryable.
_CODES: dict[str, tuple[str, bool]] = {
    "rate_limit_exceeded": ("rate_limit", True),
    "rate_limit_error": ("rate_limit", True),
    # The account is out of credit: waiting does not help, another provider might.
    "insufficient_quota": ("rate_limit", False),
    "server_error": ("server", True),
    "internal_error": ("server", True),
    "api_error": ("server", True),
    "overloaded": ("overloaded", True),
    "overloaded_error": ("overloaded", True),
    "engine_overloaded": ("overloaded", True),
    "server_is_overloaded": ("overloaded", True),
    "service_unavailable": ("overloaded", True),
    "unavailable_error": ("overloaded", True),
    "timeout": ("timeout", True),
    "invalid_api_key": ("auth", False),
    "authentication_error": ("auth", False),
    "permission_error": ("auth", False),
    "model_not_found": ("unavailable", False),
    "not_found_error": ("unavailable", False),
    "context_length_exceeded": ("invalid", False),
    "invalid_request_error": ("invalid", False),
    "invalid_prompt": ("invalid", False),
}
_TRY_AGAIN = re.compile(r"try again in\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|seconds?)\b", re.I)


def error_detail(body: object) -> tuple[str, list[str], int | None]:
    """The message of an error object in any of the module's dialects, its type and code
    names (most specific first), and a numeric code when the server put its HTTP status
    there (llama.cpp, vLLM)."""
    if not isinstance(body, Mapping):
        return ("" if body is None else str(body)), [], None
    inner = body.get("error", body)
    if isinstance(inner, str):
        return inner, [], None
    if not isinstance(inner, Mapping):
        return json.dumps(body), [], None
    message = inner.get("message")
    names = [str(inner[k]) for k in ("code", "type") if isinstance(inner.get(k), str)]
    number = inner.get("code")
    status = number if isinstance(number, int) and not isinstance(number, bool) else None
    if not isinstance(message, str) or not message:
        message = json.dumps(inner)
    return message, names, status


def _classify(names: list[str]) -> tuple[str, bool] | None:
    for name in names:
        if name in _CODES:
            return _CODES[name]
    return None


def http_error(status: int, headers: Mapping[str, str], body: bytes, *, label: str) -> End:
    """The End for a non-2xx response from an OpenAI-style API."""
    text = body.decode("utf-8", "replace")
    try:
        parsed: object = loads(text)
    except ValueError:
        parsed = text  # an HTML page from a proxy, or plain text
    message, names, _ = error_detail(parsed)
    # The status decides; the body only refines it where the status cannot tell: a 429
    # for an exhausted quota (waiting will not help), a 5xx that is an overload.
    known = _classify(names)
    quota = status == 429 and known == ("rate_limit", False)
    overload = status >= 500 and known is not None and known[0] == "overloaded"
    kind, retryable = known if known is not None and (quota or overload) else (None, None)
    detail = f"{message} ({names[0]})" if names and names[0] not in message else message
    return error_end(status, headers, label=label, detail=detail, kind=kind, retryable=retryable)


def stream_error(error: object, *, label: str) -> End:
    """The End for an error reported inside a 200 stream (an `error` event, an `error`
    object in a chunk, a failed response). Without a status or a known code it counts as
    a server failure worth retrying: a bad request would have been refused before the
    stream began."""
    message, names, status = error_detail(error)
    known = _classify(names)
    if known is None and status is not None and status >= 400:
        known = status_kind(status)
    kind, retryable = known or ("server", True)
    wait = None
    if kind in ("rate_limit", "overloaded") and (hint := _TRY_AGAIN.search(message)):
        wait = float(hint[1]) / (1000 if hint[2].lower() == "ms" else 1)
    code = f" ({names[0]})" if names and names[0] not in message else ""
    return End(
        "error",
        error=f"{label} reported an error in the stream: {excerpt(message)}{code}",
        retryable=retryable and status not in (400, 404),
        retry_after=wait,
        kind=kind,
    )


def tool_call(call_id: str, name: str, raw: str) -> ToolCall:
    """A complete tool call from its accumulated argument text, parsed once. Empty text
    is an empty object (servers send "" for a call without parameters); anything that
    is not a JSON object is delivered with `arguments` None and the reason."""
    if not raw.strip():
        return ToolCall(call_id, name, {})
    try:
        value = loads(raw)
    except ValueError as exc:
        why = f"the arguments of {name} were not valid JSON ({exc}): {excerpt(raw, 120)}"
        return ToolCall(call_id, name, None, why)
    if not isinstance(value, dict):
        kind = type(value).__name__
        why = f"the arguments of {name} were JSON but not an object (a {kind}): {excerpt(raw, 120)}"
        return ToolCall(call_id, name, None, why)
    return ToolCall(call_id, name, value)


def count(value: object) -> int | None:
    """A token count as reported, or None when it is missing or nonsensical."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def usage(prompt: object, completion: object, details: object, model: ModelInfo) -> Usage:
    """Usage from OpenAI's counts. OpenAI's prompt count includes the cached tokens, while
    smith's `input` is the uncached rest (as the cost meter prices them apart). A cache
    the provider runs by itself ("automatic") or none at all bills no writes, so
    cache_write is 0 there and unknown otherwise; a cached count the server does not give
    is unknown, except on a model without a cache."""
    cached = count(details.get("cached_tokens")) if isinstance(details, Mapping) else None
    if cached is None and model.cache == "none":
        cached = 0
    total = count(prompt)
    uncached = None if total is None else max(0, total - (cached or 0))
    write = 0 if model.cache in ("none", "automatic") else None
    return Usage(input=uncached, output=count(completion), cache_read=cached, cache_write=write)


OPENAI_REASONING_TEMPERATURE = DiagnosticKind(
    "openai.reasoning-temperature",
    what="a temperature of {temperature} cannot be sent to {model}",
    why="{model} is a reasoning model (its capabilities list thinking levels), and OpenAI's "
    "reasoning models refuse any temperature but their own default",
    fix="remove the model.temperature setting (or its SMITH_MODEL_TEMPERATURE variable), "
    "or choose a model without thinking levels (`smith models` lists them)",
)


def temperature(request: Request, model: ModelInfo, *, reasoning_takes_it: bool) -> float | None:
    """The request's temperature, if it set one. OpenAI's reasoning models (those that
    list thinking levels) refuse a temperature with HTTP 400, so unless the server takes
    one there (`reasoning_takes_it`: local servers do), such a request fails before
    dispatch, as smith never sends what a model does not accept."""
    value = request.settings.get("temperature")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if model.thinking and not reasoning_takes_it:
        raise OPENAI_REASONING_TEMPERATURE.error(
            value=value,
            source=Source("argument", "temperature"),
            temperature=f"{value:g}",
            model=model.key,
        )
    return float(value)


def reasoning_effort(request: Request, model: ModelInfo) -> str | None:
    """OpenAI's reasoning effort for `request`, or None to send no reasoning control.

    A model that advertises thinking levels is a reasoning model, and OpenAI's reasoning
    models cannot stop reasoning: thinking "off" sends the lowest effort the model lists
    (the nearest to off there is). A model without levels gets no reasoning field, and
    a level other than off on it fails before dispatch (smith.providers._wire)."""
    level = thinking_level(request, model)
    if level is None and model.thinking:
        return min(model.thinking, key=level_rank)
    return level


def text_of(message: Mapping[str, Any]) -> str:
    """The text of a message's text parts, joined by blank lines; an image in a tool
    result is named, since neither API takes images back from a tool here."""
    out = []
    for block in content_parts(message):
        if block.get("type") == "text":
            out.append(str(block.get("text", "")))
        elif block.get("type") == "image":
            out.append("[an image the tool returned is not shown to the model]")
    return "\n\n".join(out)


def image_url(block: Mapping[str, Any]) -> str | None:
    """The URL of a neutral image part: its `url`, or a data URL of its base64 `data`
    with its `media_type` (or `mime_type`)."""
    if isinstance(block.get("url"), str):
        return str(block["url"])
    data = block.get("data")
    if not isinstance(data, str):
        return None
    mime = block.get("media_type") or block.get("mime_type") or "image/png"
    return f"data:{mime};base64,{data}"


def image_note(model: ModelInfo) -> str:
    """What a text-only model is told in place of an image: images are never sent to a
    model that does not advertise image input."""
    return f"[an image was attached here, but {model.id} does not take image input]"


def strict_schema(schema: object) -> bool:
    """Whether a tool's JSON Schema already meets OpenAI's strict-mode rules (every
    object closed with additionalProperties false and every property required). Strict
    mode is asked for only then: rewriting a schema would change what the tool accepts."""
    if not isinstance(schema, Mapping):
        return True
    properties = schema.get("properties", {})
    if schema.get("type") == "object" or "properties" in schema:
        if not isinstance(properties, Mapping) or schema.get("additionalProperties") is not False:
            return False
        if set(properties) != set(schema.get("required", [])):
            return False
    subschemas: list[object] = [schema.get("items")]
    if isinstance(properties, Mapping):
        subschemas += properties.values()
    for key in ("anyOf", "allOf", "oneOf", "prefixItems"):
        if isinstance(schema.get(key), list):
            subschemas += schema[key]
    for key in ("$defs", "definitions"):
        if isinstance(schema.get(key), Mapping):
            subschemas += schema[key].values()
    return all(strict_schema(s) for s in subschemas)


# -- the model list ----------------------------------------------------------------------


def models_page(base_url: str, key: str | None, token: str | None) -> tuple[str, dict[str, str]]:
    """GET {base}/models, with the key (if any) as a bearer token: OpenAI's list, and
    that of the servers speaking its API (llama.cpp, Ollama, vLLM). It has one page."""
    headers = {"authorization": f"Bearer {key}"} if key else {}
    return f"{base_url.rstrip('/')}/models", headers


def parse_models(data: object) -> tuple[list[ListedModel], str | None]:
    """{"data": [{"id": ...}, ...]}: vLLM says each model's context length
    (max_model_len); OpenAI and llama.cpp say neither limit."""
    found = []
    for item in list_body(data, "data")[1]:
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            found.append(ListedModel(item["id"], limit(item.get("max_model_len"))))
    return found, None


MODEL_LIST = ModelList(models_page, parse_models)
