"""Anthropic's Messages API (`POST /v1/messages`, streamed as server-sent events).

A stream is `message_start` (input usage, with cache reads and writes), then for each
content block a `content_block_start`, its deltas (`text_delta`, `thinking_delta`,
`signature_delta`, `input_json_delta`) and a `content_block_stop`, then `message_delta`
(the stop reason and the final output usage) and `message_stop`, the terminal event.
`ping` events may come anywhere; an `error` event (e.g. `overloaded_error`) ends the
stream. Anything else is ignored: the API documents that new event types may appear.

Choices this plugin makes, and why:

- Thinking: a smith level becomes `thinking: {type: enabled, budget_tokens}` with the
  budgets in BUDGETS, only for a model whose catalog entry lists thinking levels (a
  level on any other model fails before dispatch; a level the model does not list
  becomes the nearest it does: smith.providers._wire.thinking_level). Thinking counts
  against `max_tokens`, which must exceed the budget: when the request set its own
  max_tokens, the budget is added to it (capped at what fits, see below) so the answer
  keeps the room the request asked for; a budget that still does not fit is cut to fit,
  and under Anthropic's minimum of 1024 the request fails before dispatch. Anthropic
  rejects a temperature with thinking enabled, so that combination fails before
  dispatch too, with a diagnostic saying so.
- max_tokens defaults to the model's max_output, lowered when the prompt leaves less
  room than that in the context window (Anthropic refuses a prompt plus max_tokens
  beyond it; see room()).
- Thinking blocks must come back unchanged, signature and all, in later requests. The
  runtime keeps one thinking part per run of consecutive thinking deltas with the last
  signature it saw, so the decoder's signatures are self-describing: `anthropic:SIG`
  for a run of one signed thinking block (the usual case: the part's text is the
  block's), `anthropic-blocks:JSON` for anything else (several blocks, or a
  `redacted_thinking` block), listing every block of the run verbatim. Only those come
  back; thinking of another vendor, or unsigned thinking of an interrupted stream, is
  left out rather than sent with a signature Anthropic would reject.
- Tool results are `tool_result` blocks in a user message, consecutive ones together
  and before any text, as the API requires; tool call ids are reduced to the characters
  Anthropic accepts, the same way on both sides of a pair.
- Prompt caching: `cache_control: {type: ephemeral}` breakpoints only when the model's
  catalog entry says cache "explicit": one on the system prompt (which caches the tools
  before it too; the last tool when there is no system prompt) and one on the last
  block of the conversation, so each request reads what the previous one wrote.
- Images (`{"type": "image", "media_type", "data"}` parts) are sent only to a model that
  takes images; for others they become a short text note, never an image block.
- Stop reasons: end_turn and stop_sequence are success, tool_use is tool_use,
  max_tokens, model_context_window_exceeded and pause_turn (the API stopped a long turn
  early) are limit, refusal is a non-retryable error.
- The model list (`smith models --refresh`): GET /v1/models, paged by after_id, whose
  entries say their limits in newer API versions.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from typing import Any

from smith.diagnostics import DiagnosticKind, Source
from smith.providers import (
    End,
    HttpCall,
    ModelInfo,
    Outcome,
    Provider,
    ProviderHost,
    ProviderSettings,
    Request,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    Usage,
    content_parts,
    error_end,
    excerpt,
    merge_body,
    thinking_level,
)
from smith.sdk import ListedModel, ModelList, Plugin, ProviderSpec, provider_facts
from smith.text import loads

from . import _wirekit as kit

NAME = "anthropic"
# Its facts are its manifest's (smith.plugins.MANIFESTS), the one copy.
FACTS = provider_facts()[NAME]
DEFAULT_BASE_URL = str(FACTS.default_base_url)
DEFAULT_MODEL = "claude-sonnet-4-5"  # when no model is configured and this provider has a key
CREDENTIAL_ENV = FACTS.credential_env
API_VERSION = "2023-06-01"

# Thinking budget (tokens) per smith level; Anthropic's minimum is 1024.
BUDGETS = {"minimal": 1024, "low": 4096, "medium": 10_000, "high": 20_000, "xhigh": 32_000}
MIN_BUDGET = 1024
MIN_ROOM = 4096  # output tokens a request always allows (see room())

SIGNED = "anthropic:"
BLOCKS = "anthropic-blocks:"
CACHE = {"type": "ephemeral"}

STOPS: dict[str, Outcome] = {
    "end_turn": "success",
    "stop_sequence": "success",
    "tool_use": "tool_use",
    "max_tokens": "limit",
    "model_context_window_exceeded": "limit",
    "pause_turn": "limit",
}
# Anthropic's error types: End.kind, and whether trying again may help.
ERRORS = {
    "invalid_request_error": ("invalid", False),
    "authentication_error": ("auth", False),
    "permission_error": ("auth", False),
    "billing_error": ("auth", False),
    "not_found_error": ("unavailable", False),
    "request_too_large": ("too_large", False),
    "rate_limit_error": ("rate_limit", True),
    "api_error": ("server", True),
    "timeout_error": ("timeout", True),
    "overloaded_error": ("overloaded", True),
}

ANTHROPIC_NO_KEY = DiagnosticKind(
    "anthropic.no-key",
    what="there is no Anthropic API key for {model}",
    why="the Anthropic API takes a key in the x-api-key header, and none was found in "
    "{variables}, smith's auth file or configuration",
    fix="export ANTHROPIC_API_KEY=... (or `smith auth login anthropic`), then try again",
)
ANTHROPIC_THINKING_TEMPERATURE = DiagnosticKind(
    "anthropic.thinking-temperature",
    what="thinking '{level}' and temperature {temperature} cannot both be sent to {model}",
    why="Anthropic's API rejects a temperature while extended thinking is enabled",
    fix="unset the temperature, or set thinking to off for this model",
)
ANTHROPIC_THINKING_NO_ROOM = DiagnosticKind(
    "anthropic.thinking-no-room",
    what="max_tokens {limit} leaves no room for thinking '{level}' on {model}",
    why="thinking needs a budget of at least 1024 tokens below max_tokens",
    fix="raise max_tokens above 1024, or set thinking to off",
)


def create(model: str, host: ProviderHost) -> Provider:
    from smith.providers import HttpProvider

    info = host.model_info(NAME, model)
    return HttpProvider(NAME, Messages(), info, host.settings(NAME), host.engine, info.pricing)


class Messages:
    """The anthropic-messages wire format (sans I/O)."""

    api = "anthropic-messages"
    base_url_form = f"{DEFAULT_BASE_URL}: the API root, ending in /v1 (smith adds /messages to it)"

    def build(self, request: Request, model: ModelInfo, settings: ProviderSettings) -> HttpCall:
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            "anthropic-version": API_VERSION,
        }
        if settings.credential:
            headers["x-api-key"] = settings.credential
        elif not any(k.lower() in ("x-api-key", "authorization") for k in settings.headers):
            # (configured headers are added by the host: one of them may authenticate)
            raise ANTHROPIC_NO_KEY.error(
                source=Source("env", CREDENTIAL_ENV[0]),
                model=model.key,
                variables=", ".join(CREDENTIAL_ENV),
            )
        cache = model.cache == "explicit"
        body: dict[str, Any] = {"model": model.id}
        body["messages"] = messages(request.messages, model, cache=cache)
        if request.system:
            system: dict[str, Any] = {"type": "text", "text": request.system}
            body["system"] = [{**system, "cache_control": CACHE}] if cache else request.system
        if request.tools and model.tools:
            body["tools"] = [tool(t) for t in request.tools]
            if cache and not request.system:
                body["tools"][-1]["cache_control"] = CACHE
        _limits(body, request, model)
        body["stream"] = True
        body = merge_body(body, settings.extra, provider=settings.name)
        return HttpCall(f"{settings.base_url}/messages", headers, body)

    def decoder(self, model: ModelInfo) -> Decoder:
        return Decoder()

    def error(self, status: int, headers: Mapping[str, str], body: bytes) -> End:
        """A non-2xx response: `{"type": "error", "error": {"type", "message"}}`, whose
        type says more than the status (529 overloaded_error, 429 rate_limit_error)."""
        text = body.decode("utf-8", "replace")
        try:
            data = loads(text)
        except ValueError:
            data = None
        error = data.get("error") if isinstance(data, dict) else None
        if not isinstance(error, dict):
            return error_end(status, headers, label="Anthropic", detail=text)
        label = str(error.get("type") or "")
        message = str(error.get("message") or text)
        kind, retry = ERRORS.get(label, (None, None))
        detail = f"{message} ({label})" if label else message
        return error_end(
            status, headers, label="Anthropic", detail=detail, kind=kind, retryable=retry
        )


def room(body: Mapping[str, Any], model: ModelInfo) -> int:
    """The most output tokens that fit beside this prompt: Anthropic refuses a request
    whose prompt and max_tokens together exceed the context window. The prompt is
    estimated high (3 characters a token; image and redacted data not counted), so the
    estimate errs towards fitting; never under MIN_ROOM, where the prompt itself is
    about to overflow and compaction, not a smaller answer, is the remedy."""
    chars = _chars(body.get("messages")) + _chars(body.get("system")) + _chars(body.get("tools"))
    fits = model.context_window - chars // 3
    return min(model.max_output, max(MIN_ROOM, fits))


def _chars(value: object) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(_chars(v) for k, v in value.items() if k != "data")
    if isinstance(value, list):
        return sum(_chars(v) for v in value)
    return 0


def _limits(body: dict[str, Any], request: Request, model: ModelInfo) -> None:
    """Set max_tokens, and `thinking` for the request's level or else its temperature;
    see the module docstring for the rules."""
    ceiling = room(body, model)
    limit, asked = kit.max_tokens(request, model)
    limit = min(limit, ceiling)
    level = thinking_level(request, model)
    temperature = kit.temperature(request)
    if level is None:
        body["max_tokens"] = limit
        if temperature is not None:
            body["temperature"] = temperature
        return
    if temperature is not None:
        raise ANTHROPIC_THINKING_TEMPERATURE.error(
            value=temperature,
            source=Source("argument", "temperature"),
            level=level,
            temperature=str(temperature),
            model=model.key,
        )
    budget = BUDGETS[level]
    if asked:
        limit = min(limit + budget, ceiling)
    budget = min(budget, limit - 1)
    if budget < MIN_BUDGET:
        raise ANTHROPIC_THINKING_NO_ROOM.error(
            value=limit,
            source=Source("argument", "max_tokens"),
            limit=str(limit),
            level=level,
            model=model.key,
        )
    body["max_tokens"] = limit
    body["thinking"] = {"type": "enabled", "budget_tokens": budget}


# -- requests ----------------------------------------------------------------------------


def tool(definition: Mapping[str, object]) -> dict[str, Any]:
    schema = definition.get("parameters")
    return {
        "name": definition.get("name"),
        "description": definition.get("description") or "",
        "input_schema": schema if isinstance(schema, dict) else {"type": "object"},
    }


def call_id(raw: object) -> str:
    """A tool call id as Anthropic accepts it (letters, digits, _ and -; at most 64)."""
    cleaned = re.sub(r"[^A-Za-z0-9_-]", "_", str(raw or "call"))[:64]
    return cleaned or "call"


def messages(
    history: list[dict[str, object]], model: ModelInfo, *, cache: bool
) -> list[dict[str, Any]]:
    """Smith's neutral messages as Anthropic messages: roles alternate (consecutive
    ones of a role are joined), tool results lead their user message, empty messages
    are left out (the API rejects them)."""
    out: list[dict[str, Any]] = []
    for message in history:
        role = message.get("role")
        if role == "assistant":
            blocks = _assistant(message, model)
            role_out = "assistant"
        elif role == "tool_result":
            blocks = [_tool_result(message, model)]
            role_out = "user"
        elif role == "user":
            blocks = _user_blocks(content_parts(message), model)
            role_out = "user"
        else:
            continue
        if not blocks:
            continue
        if out and out[-1]["role"] == role_out:
            merged = out[-1]["content"] + blocks
            # tool_result blocks must come first in a user message
            merged.sort(key=lambda b: b.get("type") != "tool_result")
            out[-1]["content"] = merged
        else:
            out.append({"role": role_out, "content": blocks})
    if cache and out:
        for block in reversed(out[-1]["content"]):
            if block.get("type") in ("text", "image", "tool_result", "tool_use"):
                block["cache_control"] = CACHE
                break
    return out


def _user_blocks(items: list[dict[str, object]], model: ModelInfo) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in items:
        kind = part.get("type")
        if kind == "text" and kit.text_of(part).strip():  # the API refuses blank text
            blocks.append({"type": "text", "text": kit.text_of(part)})
        elif kind == "image":
            if "image" in model.input:
                source = {
                    "type": "base64",
                    "media_type": str(part.get("media_type") or "image/png"),
                    "data": str(part.get("data") or ""),
                }
                blocks.append({"type": "image", "source": source})
            else:
                blocks.append(
                    {
                        "type": "text",
                        "text": "[an image was left out: this model does not take images]",
                    }
                )
    return blocks


def _assistant(message: Mapping[str, object], model: ModelInfo) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in content_parts(message):
        kind = part.get("type")
        if kind == "thinking":
            if model.thinking:  # a model that does not think is sent no thinking blocks
                blocks += thinking_blocks(part)
        elif kind == "text" and kit.text_of(part).strip():
            blocks.append({"type": "text", "text": kit.text_of(part)})
        elif kind == "tool_call":
            arguments = part.get("arguments")
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call_id(part.get("id")),
                    "name": str(part.get("name") or ""),
                    "input": arguments if isinstance(arguments, dict) else {},
                }
            )
    return blocks


def thinking_blocks(part: Mapping[str, object]) -> list[dict[str, Any]]:
    """The Anthropic blocks a recorded thinking part stands for (see the module
    docstring); [] for thinking that cannot be sent back."""
    signature = part.get("signature")
    if not isinstance(signature, str):
        return []
    if signature.startswith(SIGNED) and len(signature) > len(SIGNED):
        sig = signature[len(SIGNED) :]
        return [{"type": "thinking", "thinking": kit.text_of(part), "signature": sig}]
    if signature.startswith(BLOCKS):
        try:
            listed = loads(signature[len(BLOCKS) :])
        except ValueError:
            return []
        if isinstance(listed, list):
            return [b for b in listed if _sendable(b)]
    return []


def _sendable(block: object) -> bool:
    if not isinstance(block, dict):
        return False
    if block.get("type") == "thinking":
        return isinstance(block.get("thinking"), str) and isinstance(block.get("signature"), str)
    return block.get("type") == "redacted_thinking" and isinstance(block.get("data"), str)


def _tool_result(message: Mapping[str, object], model: ModelInfo) -> dict[str, Any]:
    content = _user_blocks(
        [p for p in content_parts(message) if p.get("type") in ("text", "image")], model
    )
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": call_id(message.get("tool_call_id")),
        "content": content or [{"type": "text", "text": "(no output)"}],
    }
    if message.get("is_error"):
        block["is_error"] = True
    return block


# -- responses ---------------------------------------------------------------------------


class Decoder:
    """One response's events, turned into smith's stream."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.run: list[dict[str, Any]] = []  # thinking blocks since the last text or call
        self.stop: str | None = None
        self.done = False

    def feed(self, event: str, data: str) -> list[StreamEvent]:
        if self.done:
            return []
        try:
            obj = loads(data) if data.strip() else {}
        except ValueError:
            return self._end(kit.malformed(NAME, f"an event was not JSON: {excerpt(data, 120)}"))
        if not isinstance(obj, dict):
            return self._end(kit.malformed(NAME, "an event was not a JSON object"))
        kind = obj.get("type") or event
        handler = getattr(self, f"_on_{kind}", None) if isinstance(kind, str) else None
        return handler(obj) if handler is not None else []  # ping, and events to come

    def finish(self) -> list[StreamEvent]:
        return [] if self.done else self._end(kit.cut_off(NAME, "message_stop"))

    def _end(self, end: End) -> list[StreamEvent]:
        self.done = True
        return [end]

    def _on_message_start(self, obj: dict[str, Any]) -> list[StreamEvent]:
        message = obj.get("message")
        usage = message.get("usage") if isinstance(message, dict) else None
        # output_tokens here is a placeholder; message_delta has the real count
        return [_usage(usage, output=False)] if isinstance(usage, dict) else []

    def _on_content_block_start(self, obj: dict[str, Any]) -> list[StreamEvent]:
        block = obj.get("content_block")
        index = obj.get("index")
        if not isinstance(block, dict) or not isinstance(index, int):
            return self._end(kit.malformed(NAME, "a content block started without an index"))
        state: dict[str, Any] = {"type": block.get("type"), "json": [], "text": []}
        self.blocks[index] = state
        if state["type"] == "tool_use":
            state["id"], state["name"] = str(block.get("id") or ""), str(block.get("name") or "")
            state["input"] = block.get("input")  # {} when the input streams as deltas
        elif state["type"] == "redacted_thinking":
            state["data"] = block.get("data")
        elif state["type"] == "thinking":
            state["signature"] = block.get("signature") or None
            return self._thinking(state, str(block.get("thinking") or ""))
        elif state["type"] == "text" and block.get("text"):
            return self._text(str(block["text"]))
        return []

    def _on_content_block_delta(self, obj: dict[str, Any]) -> list[StreamEvent]:
        index = obj.get("index")
        state = self.blocks.get(index) if isinstance(index, int) else None
        delta = obj.get("delta")
        if state is None or not isinstance(delta, dict):
            return self._end(kit.malformed(NAME, "a delta came for a block that never started"))
        kind = delta.get("type")
        if kind == "text_delta":
            return self._text(str(delta.get("text") or ""))
        if kind == "thinking_delta":
            return self._thinking(state, str(delta.get("thinking") or ""))
        if kind == "signature_delta":
            state["signature"] = str(delta.get("signature") or "") or None
        elif kind == "input_json_delta":
            state["json"].append(str(delta.get("partial_json") or ""))
        return []  # citations and deltas of blocks smith does not ask for

    def _on_content_block_stop(self, obj: dict[str, Any]) -> list[StreamEvent]:
        index = obj.get("index")
        state = self.blocks.pop(index, None) if isinstance(index, int) else None
        return self._close(state) if state is not None else []

    def _close(self, state: dict[str, Any]) -> list[StreamEvent]:
        kind = state["type"]
        if kind == "tool_use":
            self.run = []
            if state["json"] or not state.get("input"):
                arguments, error = kit.parse_arguments("".join(state["json"]))
            else:  # a whole input at the start, nothing streamed
                arguments, error = kit.check_arguments(state["input"])
            return [ToolCall(state["id"], state["name"], arguments, error)]
        if kind == "thinking":
            block = {"type": "thinking", "thinking": "".join(state["text"])}
            if state.get("signature"):
                block["signature"] = state["signature"]
            self.run.append(block)
        elif kind == "redacted_thinking" and isinstance(state.get("data"), str):
            self.run.append({"type": "redacted_thinking", "data": state["data"]})
        else:
            return []
        signature = self._signature()
        return [ThinkingDelta("", signature=signature)] if signature else []

    def _signature(self) -> str | None:
        """What the current thinking run's part must carry (see the module docstring)."""
        if len(self.run) == 1 and self.run[0]["type"] == "thinking":
            sig = self.run[0].get("signature")
            return SIGNED + sig if sig else None
        sendable = [b for b in self.run if _sendable(b)]
        return BLOCKS + json.dumps(sendable, separators=(",", ":")) if sendable else None

    def _text(self, text: str) -> list[StreamEvent]:
        if not text:
            return []
        self.run = []
        return [TextDelta(text)]

    def _thinking(self, state: dict[str, Any], text: str) -> list[StreamEvent]:
        if not text:
            return []
        state["text"].append(text)
        return [ThinkingDelta(text)]

    def _on_message_delta(self, obj: dict[str, Any]) -> list[StreamEvent]:
        delta = obj.get("delta")
        if isinstance(delta, dict) and delta.get("stop_reason"):
            self.stop = str(delta["stop_reason"])
        usage = obj.get("usage")
        return [_usage(usage, output=True)] if isinstance(usage, dict) else []

    def _on_message_stop(self, obj: dict[str, Any]) -> list[StreamEvent]:
        # Blocks left open (a stream that skipped their stop) still deliver what they hold.
        out: list[StreamEvent] = []
        for index in sorted(self.blocks):
            out += self._close(self.blocks.pop(index))
        if self.stop is None:
            return out + self._end(kit.malformed(NAME, "message_stop came without a stop reason"))
        outcome = STOPS.get(self.stop)
        if outcome is not None:
            return out + self._end(End(outcome))
        if self.stop == "refusal":
            end = End(
                "error",
                error="the model refused to continue (stop reason: refusal)",
                kind="invalid",
            )
        else:
            end = kit.malformed(NAME, f"unknown stop reason {self.stop!r}")
        return out + self._end(end)

    def _on_error(self, obj: dict[str, Any]) -> list[StreamEvent]:
        error = obj.get("error")
        error = error if isinstance(error, dict) else {}
        label = str(error.get("type") or "error")
        kind, retry = ERRORS.get(label, ("server", True))
        return self._end(
            kit.stream_error(
                "Anthropic", str(error.get("message") or ""), kind=kind, retry=retry, label=label
            )
        )


def _usage(raw: dict[str, Any], *, output: bool) -> Usage:
    def count(key: str) -> int | None:
        value = raw.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    return Usage(
        input=count("input_tokens"),
        output=count("output_tokens") if output else None,
        cache_read=count("cache_read_input_tokens"),
        cache_write=count("cache_creation_input_tokens"),
    )


def models_page(base_url: str, key: str | None, token: str | None) -> tuple[str, dict[str, str]]:
    """One page of the model list: up to 1000 models, after the last one of the page before."""
    from urllib.parse import quote

    after = f"&after_id={quote(token)}" if token else ""
    headers = {"x-api-key": key, "anthropic-version": API_VERSION} if key else {}
    return f"{base_url.rstrip('/')}/models?limit=1000{after}", headers


def parse_models(data: object) -> tuple[list[ListedModel], str | None]:
    """{"data": [{"id", "max_input_tokens", "max_tokens"}], "has_more", "last_id"}."""
    page, items = kit.list_body(data, "data")
    found = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            context, output = item.get("max_input_tokens"), item.get("max_tokens")
            found.append(ListedModel(item["id"], kit.limit(context), kit.limit(output)))
    last = page.get("last_id") if page.get("has_more") is True else None
    return found, last if isinstance(last, str) and last else None


# What this module contributes: the provider, for the model registry; its facts are its
# manifest's (smith.plugins.MANIFESTS), which smith reads before importing this module.
PLUGIN = Plugin(
    NAME,
    providers={
        NAME: ProviderSpec(
            create,
            default_model=DEFAULT_MODEL,
            hooks=sys.modules[__name__],
            list_models=ModelList(models_page, parse_models),
            **FACTS.spec_fields(),
        )
    },
)
