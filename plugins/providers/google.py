"""Google's Gemini API (`POST models/{id}:streamGenerateContent?alt=sse`).

Each server-sent event is one GenerateContentResponse: `candidates[0].content.parts`
(text; `thought: true` marks thinking; `functionCall` with its whole `args` object;
`thoughtSignature` on any part), `usageMetadata` (counts so far) and, on the last one,
`candidates[0].finishReason`. Gemini sends no terminal event of its own, so the chunk
whose candidate carries a finishReason is the terminal one: the End follows that chunk's
parts and usage, and a body that ends without such a chunk is an error End
(Decoder.finish), never success. A chunk with only `promptFeedback.blockReason` (the
prompt was blocked) or an `error` object also ends the stream, with an error.

Choices this plugin makes, and why:

- Thinking: only for a model whose catalog entry lists thinking levels, as
  `generationConfig.thinkingConfig: {thinkingBudget, includeThoughts: true}` with the
  budgets in BUDGETS (within every Gemini 2.5 model's range; Gemini 3 takes a budget
  too, for compatibility). A level on a model without levels fails before dispatch; one
  the model does not list becomes the nearest it does. Thinking "off" sends no
  thinkingConfig: a model that thinks by default keeps its own default, since a budget
  of 0 is refused by models that cannot stop thinking. When the request set max_tokens
  itself, the budget is added to it (capped at the model's max_output), as thinking
  counts against maxOutputTokens.
- Thought signatures must return on the part they came on. The runtime keeps one
  thinking part per run of thinking deltas, so a signature travels on a thinking part as
  `google:{"thought": SIG, "next": SIG}`: `thought` belongs to the thought text of that
  part, `next` to the text or function call part right after it (the decoder sends it
  just before that part; with no part after it, it goes back on the part before). Only
  such signatures are sent back; thinking of other vendors is left out, and a model
  that lists no thinking levels is sent no thoughts or signatures at all.
- Images (`{"type": "image", "media_type", "data"}` parts) become inlineData only for a
  model that takes images, a short text note otherwise; tools are declared (with
  `parametersJsonSchema`, full JSON Schema) only to a model that uses tools.
- Function calls are paired with their responses by name and order, as Gemini does;
  an `id` is sent only when Gemini gave one (ids smith made up start with GENERATED).
  A response is `{"output": text}`, or `{"error": text}` for a failed tool.
- Usage: `promptTokenCount` includes `cachedContentTokenCount`, and smith's `input`
  is the uncached rest; output is candidates plus thoughts (both are billed as output).
  Gemini's JSON leaves out counts that are zero, so in the final chunk a missing count
  is 0 (earlier, a missing output count is unknown: nothing was written yet);
  generateContent never writes a cache (caches are made through a separate API), so
  cache_write is 0.
- Finish reasons: STOP is success (tool_use when the response made function calls),
  MAX_TOKENS is limit, the content filters (SAFETY, RECITATION, BLOCKLIST, ...) are
  non-retryable errors, and malformed or unexpected function calls are retryable ones.
- The model list (`smith models --refresh`): GET /v1beta/models, paged by pageToken;
  only the models that can generateContent are chat models.
"""

from __future__ import annotations

import json
import re
import sys
import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from smith.diagnostics import DiagnosticKind, Source
from smith.providers import (
    End,
    HttpCall,
    ModelInfo,
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

NAME = "google"
# Its facts are its manifest's (smith.plugins.MANIFESTS), the one copy.
FACTS = provider_facts()[NAME]
DEFAULT_BASE_URL = str(FACTS.default_base_url)
DEFAULT_MODEL = "gemini-2.5-pro"  # when no model is configured and this provider has a key
CREDENTIAL_ENV = FACTS.credential_env

BUDGETS = {"minimal": 512, "low": 2048, "medium": 8192, "high": 16_384, "xhigh": 24_576}
SIGNATURE = "google:"
GENERATED = "gcall_"  # the ids smith gives calls Gemini gave none

# Google's RPC status names: End.kind and whether trying again may help.
STATUSES = {
    "INVALID_ARGUMENT": ("invalid", False),
    "FAILED_PRECONDITION": ("invalid", False),
    "OUT_OF_RANGE": ("invalid", False),
    "UNAUTHENTICATED": ("auth", False),
    "PERMISSION_DENIED": ("auth", False),
    "NOT_FOUND": ("unavailable", False),
    "RESOURCE_EXHAUSTED": ("rate_limit", True),
    "ABORTED": ("server", True),
    "INTERNAL": ("server", True),
    "UNKNOWN": ("server", True),
    "UNAVAILABLE": ("overloaded", True),
    "DEADLINE_EXCEEDED": ("timeout", True),
}
# Finish reasons other than STOP and MAX_TOKENS: the model's output was refused...
BLOCKED = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "LANGUAGE",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "MISSING_THOUGHT_SIGNATURE",
    }
)
# ...and the rest (MALFORMED_FUNCTION_CALL, UNEXPECTED_TOOL_CALL, OTHER...) went wrong in
# a way a new sample may not.

GOOGLE_NO_KEY = DiagnosticKind(
    "google.no-key",
    what="there is no Gemini API key for {model}",
    why="the Gemini API takes a key in the x-goog-api-key header, and none was found in "
    "{variables}, smith's auth file or configuration",
    fix="export GEMINI_API_KEY=... (or `smith auth login google`), then try again",
)


def create(model: str, host: ProviderHost) -> Provider:
    from smith.providers import HttpProvider

    info = host.model_info(NAME, model)
    return HttpProvider(NAME, Gemini(), info, host.settings(NAME), host.engine, info.pricing)


class Gemini:
    """The google-gemini wire format (sans I/O)."""

    api = "google-gemini"
    base_url_form = (
        f"{DEFAULT_BASE_URL}: the API root, ending in /v1beta (smith adds "
        "/models/MODEL:streamGenerateContent to it)"
    )

    def build(self, request: Request, model: ModelInfo, settings: ProviderSettings) -> HttpCall:
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        if settings.credential:
            headers["x-goog-api-key"] = settings.credential
        elif not any(k.lower() in ("x-goog-api-key", "authorization") for k in settings.headers):
            # (configured headers are added by the host: one of them may authenticate)
            raise GOOGLE_NO_KEY.error(
                source=Source("env", CREDENTIAL_ENV[0]),
                model=model.key,
                variables=" or ".join(CREDENTIAL_ENV),
            )
        config: dict[str, Any] = {}
        limit, asked = kit.max_tokens(request, model)
        level = thinking_level(request, model)
        if level is not None:
            budget = BUDGETS[level]
            if asked:
                limit = min(limit + budget, model.max_output)
            config["thinkingConfig"] = {"thinkingBudget": budget, "includeThoughts": True}
        config["maxOutputTokens"] = limit
        temperature = kit.temperature(request)
        if temperature is not None:
            config["temperature"] = temperature
        body: dict[str, Any] = {"contents": contents(request.messages, model)}
        if request.system:
            body["systemInstruction"] = {"parts": [{"text": request.system}]}
        if request.tools and model.tools:
            body["tools"] = [{"functionDeclarations": [declaration(t) for t in request.tools]}]
        body["generationConfig"] = config
        body = merge_body(body, settings.extra, provider=settings.name)
        url = f"{settings.base_url}/models/{model.id}:streamGenerateContent?alt=sse"
        return HttpCall(url, headers, body)

    def decoder(self, model: ModelInfo) -> Decoder:
        return Decoder()

    def error(self, status: int, headers: Mapping[str, str], body: bytes) -> End:
        """A non-2xx response: `{"error": {"code", "message", "status", "details"}}` (or a
        list of one such object), whose status name and RetryInfo say more than the
        HTTP status."""
        text = body.decode("utf-8", "replace")
        try:
            data: object = loads(text)
        except ValueError:
            data = None
        error = _error_object(data)
        if error is None:
            return error_end(status, headers, label="Gemini", detail=text)
        name = str(error.get("status") or "")
        kind, retry = STATUSES.get(name, (None, None))
        message = str(error.get("message") or text)
        detail = f"{message} ({name})" if name else message
        end = error_end(status, headers, label="Gemini", detail=detail, kind=kind, retryable=retry)
        if end.retry_after is None and (delay := _retry_delay(error)) is not None:
            end = replace(end, retry_after=delay)
        return end


def _error_object(data: object) -> dict[str, Any] | None:
    if isinstance(data, list) and data:
        data = data[0]
    error = data.get("error") if isinstance(data, dict) else None
    return error if isinstance(error, dict) else None


def _retry_delay(error: Mapping[str, Any]) -> float | None:
    """google.rpc.RetryInfo's retryDelay ("21s", "1.5s"), when the error has one."""
    details = error.get("details")
    for detail in details if isinstance(details, list) else []:
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        if isinstance(delay, str) and (m := re.fullmatch(r"(\d+(?:\.\d+)?)s", delay.strip())):
            return float(m[1])
    return None


# -- requests ----------------------------------------------------------------------------


def declaration(definition: Mapping[str, object]) -> dict[str, Any]:
    """A function declaration; `parametersJsonSchema` takes full JSON Schema (the older
    `parameters` takes only an OpenAPI subset and refuses e.g. additionalProperties)."""
    out: dict[str, Any] = {
        "name": definition.get("name"),
        "description": definition.get("description") or "",
    }
    schema = definition.get("parameters")
    if isinstance(schema, dict) and schema:
        out["parametersJsonSchema"] = schema
    return out


def contents(history: list[dict[str, object]], model: ModelInfo) -> list[dict[str, Any]]:
    """Smith's neutral messages as Gemini contents: user and model turns, consecutive
    ones of a role joined (function responses answer one model turn together), empty
    ones left out."""
    out: list[dict[str, Any]] = []
    named: dict[str, str] = {}  # call id -> function name, for responses without one
    with_id: set[str] = set()  # calls whose id went to Gemini, so their responses say it
    for message in history:
        role = message.get("role")
        if role == "assistant":
            parts = _model_parts(message, model, named, with_id)
            role_out = "model"
        elif role == "tool_result":
            parts = [_function_response(message, named, with_id)]
            role_out = "user"
        elif role == "user":
            parts = _user_parts(content_parts(message), model)
            role_out = "user"
        else:
            continue
        if not parts:
            continue
        if out and out[-1]["role"] == role_out:
            out[-1]["parts"] += parts
        else:
            out.append({"role": role_out, "parts": parts})
    return out


def _user_parts(items: list[dict[str, object]], model: ModelInfo) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for item in items:
        kind = item.get("type")
        if kind == "text" and kit.text_of(item):
            parts.append({"text": kit.text_of(item)})
        elif kind == "image":
            data = item.get("data")
            if "image" in model.input and isinstance(data, str):
                mime = item.get("media_type") or item.get("mime_type") or "image/png"
                parts.append({"inlineData": {"mimeType": str(mime), "data": data}})
            else:
                note = f"[an image was attached here, but {model.id} does not take it]"
                parts.append({"text": note})
    return parts


def _model_parts(
    message: Mapping[str, object], model: ModelInfo, named: dict[str, str], with_id: set[str]
) -> list[dict[str, Any]]:
    ours = message.get("provider") in (None, NAME)
    parts: list[dict[str, Any]] = []
    pending: str | None = None  # a `next` signature waiting for its part
    for item in content_parts(message):
        kind = item.get("type")
        if kind == "thinking":
            if not model.thinking:  # no thoughts or signatures for a model that does not think
                continue
            thought, after = _signatures(item)
            if thought is not None:
                parts.append(
                    {"thought": True, "text": kit.text_of(item), "thoughtSignature": thought}
                )
            pending = after or pending
            continue
        if kind == "text" and kit.text_of(item):
            part: dict[str, Any] = {"text": kit.text_of(item)}
        elif kind == "tool_call":
            call_id, name = str(item.get("id") or ""), str(item.get("name") or "")
            named[call_id] = name
            arguments = item.get("arguments")
            call: dict[str, Any] = {
                "name": name,
                "args": arguments if isinstance(arguments, dict) else {},
            }
            if ours and call_id and not call_id.startswith(GENERATED):
                call["id"] = call_id
                with_id.add(call_id)
            part = {"functionCall": call}
        else:
            continue
        if pending is not None:
            part["thoughtSignature"], pending = pending, None
        parts.append(part)
    if pending is not None:  # nothing came after it: back onto the part before
        for part in reversed(parts):
            if not part.get("thought") and "thoughtSignature" not in part:
                part["thoughtSignature"] = pending
                break
    return parts


def _signatures(item: Mapping[str, object]) -> tuple[str | None, str | None]:
    """The (thought, next) signatures a recorded thinking part carries."""
    signature = item.get("signature")
    if not isinstance(signature, str) or not signature.startswith(SIGNATURE):
        return None, None
    try:
        data = loads(signature[len(SIGNATURE) :])
    except ValueError:
        return None, None
    if not isinstance(data, dict):
        return None, None
    thought, after = data.get("thought"), data.get("next")
    return (
        thought if isinstance(thought, str) and thought else None,
        after if isinstance(after, str) and after else None,
    )


def _function_response(
    message: Mapping[str, object], named: dict[str, str], with_id: set[str]
) -> dict[str, Any]:
    call_id = str(message.get("tool_call_id") or "")
    name = str(message.get("tool_name") or named.get(call_id) or "")
    parts = content_parts(message)
    text = "\n".join(kit.text_of(p) for p in parts if p.get("type") == "text")
    if any(p.get("type") == "image" for p in parts):  # a function response carries text only
        text += "\n[an image the tool returned is not shown to the model]"
    response: dict[str, Any] = {
        "name": name,
        "response": {"error": text} if message.get("is_error") else {"output": text},
    }
    if call_id in with_id:
        response["id"] = call_id
    return {"functionResponse": response}


# -- responses ---------------------------------------------------------------------------


class Decoder:
    """One response's chunks, turned into smith's stream."""

    def __init__(self) -> None:
        self.thought: str | None = None  # the signature of the current thinking run
        self.calls = 0
        self.usage: Usage | None = None
        self.done = False

    def feed(self, event: str, data: str) -> list[StreamEvent]:
        if self.done or not data.strip():
            return []
        try:
            chunk = loads(data)
        except ValueError:
            return self._end(kit.malformed(NAME, f"a chunk was not JSON: {excerpt(data, 120)}"))
        if isinstance(chunk, list) and len(chunk) == 1:
            chunk = chunk[0]
        if not isinstance(chunk, dict):
            return self._end(kit.malformed(NAME, "a chunk was not a JSON object"))
        if isinstance(chunk.get("error"), dict):
            return self._end(_stream_error(chunk["error"]))
        candidates = chunk.get("candidates")
        first = candidates[0] if isinstance(candidates, list) and candidates else None
        candidate: dict[str, Any] | None = first if isinstance(first, dict) else None
        out: list[StreamEvent] = []
        if candidate is not None:
            content = candidate.get("content")
            parts = content.get("parts") if isinstance(content, dict) else None
            for part in parts if isinstance(parts, list) else []:
                if isinstance(part, dict):
                    out += self._part(part)
        reason = candidate.get("finishReason") if candidate is not None else None
        final = isinstance(reason, str) and bool(reason)
        out += self._usage(chunk.get("usageMetadata"), final=final)
        if candidate is not None and isinstance(reason, str) and final:
            return out + self._end(self._finish(reason, candidate))
        feedback = chunk.get("promptFeedback")
        blocked = feedback.get("blockReason") if isinstance(feedback, dict) else None
        if blocked and candidate is None:
            error = f"Gemini blocked the prompt ({blocked}); nothing was generated"
            return out + self._end(End("error", error=error, kind="invalid"))
        return out

    def finish(self) -> list[StreamEvent]:
        return [] if self.done else self._end(kit.cut_off(NAME, "a candidate's finishReason"))

    def _end(self, end: End) -> list[StreamEvent]:
        self.done = True
        return [end]

    def _signature(self, after: str | None) -> str:
        fields = {"thought": self.thought, "next": after}
        return SIGNATURE + json.dumps({k: v for k, v in fields.items() if v})

    def _part(self, part: dict[str, Any]) -> list[StreamEvent]:
        signature = part.get("thoughtSignature")
        signature = signature if isinstance(signature, str) and signature else None
        text = part.get("text")
        text = text if isinstance(text, str) else ""
        if part.get("thought") is True:
            if signature is not None:
                self.thought = signature
                return [ThinkingDelta(text, signature=self._signature(None))]
            return [ThinkingDelta(text)] if text else []
        out: list[StreamEvent] = []
        if signature is not None:
            out.append(ThinkingDelta("", signature=self._signature(signature)))
        call = part.get("functionCall")
        if isinstance(call, dict):
            out.append(self._call(call))
        elif text:
            out.append(TextDelta(text))
        else:
            return out  # a part smith does not ask for, or a signature on its own
        self.thought = None  # a new thinking run starts after text or a call
        return out

    def _call(self, call: dict[str, Any]) -> ToolCall:
        self.calls += 1
        given = call.get("id")
        call_id = given if isinstance(given, str) and given else GENERATED + uuid.uuid4().hex[:16]
        name = call.get("name")
        args = call.get("args", {})
        arguments, error = kit.check_arguments({} if args is None else args)
        if not isinstance(name, str) or not name:
            return ToolCall(call_id, "", None, "the function call named no function")
        return ToolCall(call_id, name, arguments, error)

    def _usage(self, raw: object, *, final: bool) -> list[StreamEvent]:
        """Usage from `usageMetadata`. The prompt's counts come whole from the first
        chunk on; output counts are missing (zero, in Google's JSON) until the model has
        written something, so before the final chunk a missing one is unknown."""
        if not isinstance(raw, dict):
            return []

        def count(key: str) -> int | None:
            value = raw.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        prompt, cached = count("promptTokenCount"), count("cachedContentTokenCount")
        if prompt is not None and cached is None:
            cached = 0
        written = [count("candidatesTokenCount"), count("thoughtsTokenCount")]
        output = None
        if final or any(n is not None for n in written):
            output = sum(n or 0 for n in written)
        usage = Usage(
            input=None if prompt is None else max(0, prompt - (cached or 0)),
            output=output,
            cache_read=cached,
            cache_write=0,
        )
        if usage == self.usage:
            return []
        self.usage = usage
        return [usage]

    def _finish(self, reason: str, candidate: Mapping[str, Any]) -> End:
        if reason == "STOP":
            return End("tool_use" if self.calls else "success")
        if reason == "MAX_TOKENS":
            return End("limit")
        said = candidate.get("finishMessage")
        detail = f": {excerpt(said, 200)}" if isinstance(said, str) and said else ""
        if reason in BLOCKED:
            error = f"Gemini stopped the response ({reason}){detail}"
            return End("error", error=error, kind="invalid")
        error = f"Gemini could not finish the response ({reason}){detail}"
        return End("error", error=error, retryable=True, kind="malformed")


def _stream_error(error: Mapping[str, Any]) -> End:
    name = str(error.get("status") or "")
    code = error.get("code")
    if name in STATUSES:
        kind, retry = STATUSES[name]
    elif isinstance(code, int) and code >= 400:
        kind, retry = ("server", True) if code >= 500 else ("invalid", False)
    else:
        kind, retry = "server", True
    message = str(error.get("message") or "")
    end = kit.stream_error("Gemini", message, kind=kind, retry=retry, label=name or str(code or ""))
    delay = _retry_delay(error)
    return replace(end, retry_after=delay) if delay is not None else end


def models_page(base_url: str, key: str | None, token: str | None) -> tuple[str, dict[str, str]]:
    """One page of the model list: up to 1000 models, from the page token given before."""
    from urllib.parse import quote

    after = f"&pageToken={quote(token)}" if token else ""
    headers = {"x-goog-api-key": key} if key else {}
    return f"{base_url.rstrip('/')}/models?pageSize=1000{after}", headers


def parse_models(data: object) -> tuple[list[ListedModel], str | None]:
    """{"models": [{"name": "models/ID", "inputTokenLimit", "outputTokenLimit",
    "supportedGenerationMethods", "thinking"}], "nextPageToken"}; embedding and image
    models (which cannot generateContent) are left out."""
    page, items = kit.list_body(data, "models")
    found = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        methods = item.get("supportedGenerationMethods") or []
        if isinstance(methods, list) and "generateContent" not in methods:
            continue
        found.append(
            ListedModel(
                item["name"].removeprefix("models/"),
                kit.limit(item.get("inputTokenLimit")),
                kit.limit(item.get("outputTokenLimit")),
                tuple(BUDGETS) if item.get("thinking") is True else None,  # every level
            )
        )
    token = page.get("nextPageToken")
    return found, token if isinstance(token, str) and token else None


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
