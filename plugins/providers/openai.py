"""The openai provider: OpenAI's Responses API (`POST {base}/responses`, streamed) for its
models, and Chat Completions (smith.plugins.providers._openai_chat) for a model whose
ModelInfo.api is "openai-chat".

Requests are stateless (`store: false`): the whole conversation is sent each time. A
reasoning model's thinking comes back as reasoning items whose summaries stream as
thinking deltas; with `include: ["reasoning.encrypted_content"]` each item also carries
its encrypted reasoning, which smith keeps as the thinking part's signature and sends
back on the next request, so the model continues its own reasoning across tool calls.
Items go back without their ids, as OpenAI's codex client sends them: an id would name a
stored item, and nothing is stored.

A streamed response is a series of named events (each data object repeats its `type`):

    response.created / response.in_progress                         (nothing to do)
    response.output_item.added   {"output_index": 0, "item": {"type": "reasoning", ...}}
    response.reasoning_summary_part.added / _text.delta {"delta": "**Plan**..."}
    response.output_item.done    {"item": {"type": "reasoning", "encrypted_content": ...}}
    response.output_text.delta   {"output_index": 1, "delta": "Hel"}
    response.output_item.added   {"item": {"type": "function_call", "call_id": "call_1",
                                           "name": "read", "arguments": ""}}
    response.function_call_arguments.delta {"output_index": 2, "delta": "{\\"pa"}
    response.output_item.done    {"item": {"type": "function_call", "arguments": "{...}"}}
    response.completed           {"response": {"status": "completed", "usage": {...}}}
    response.incomplete          {"response": {"incomplete_details": {"reason": ...}}}
    response.failed              {"response": {"error": {"code": ..., "message": ...}}}
    error                        {"code": ..., "message": ...}

The thinking signature is a JSON object `{"openai-reasoning": MODEL, "items": [...]}`:
the reasoning items (summary and encrypted content) of one run of consecutive reasoning,
which the runtime keeps as one thinking part. It is replayed only to the model that made
it (another model cannot decrypt it) and only to a model that advertises thinking;
thinking without such a signature (from another provider) is not sent: the Responses API
takes no plain reasoning text.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

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
    WireFormat,
    content_parts,
    excerpt,
    merge_body,
)
from smith.sdk import Plugin, ProviderSpec, provider_facts
from smith.text import loads

from ._openai_chat import ChatCompletions, request_headers
from ._openai_common import (
    MODEL_LIST,
    count,
    http_error,
    image_note,
    image_url,
    reasoning_effort,
    stream_error,
    strict_schema,
    temperature,
    text_of,
    tool_call,
    usage,
)

NAME = "openai"
# Its facts are its manifest's (smith.plugins.MANIFESTS), the one copy.
FACTS = provider_facts()[NAME]
DEFAULT_BASE_URL = str(FACTS.default_base_url)
DEFAULT_MODEL = "gpt-5"  # when no model is configured and this provider has a key
CREDENTIAL_ENV = FACTS.credential_env
LABEL = "OpenAI"
SIGNATURE_TAG = "openai-reasoning"


def create(model: str, host: ProviderHost) -> Provider:
    from smith.providers import HttpProvider

    info = host.model_info(NAME, model)
    return HttpProvider(NAME, wire_for(info), info, host.settings(NAME), host.engine, info.pricing)


def wire_for(info: ModelInfo) -> WireFormat:
    """The wire format a model takes: Chat Completions where its api says so."""
    if info.api == "openai-chat":
        return ChatCompletions(label=LABEL)
    return Responses()


class Responses:
    """The openai-responses wire format (sans I/O)."""

    api = "openai-responses"
    base_url_form = f"{DEFAULT_BASE_URL}: the API root, ending in /v1 (smith adds /responses to it)"
    label = LABEL

    def build(self, request: Request, model: ModelInfo, settings: ProviderSettings) -> HttpCall:
        body: dict[str, object] = {
            "model": model.id,
            "input": self.input(request, model),
            "stream": True,
            "store": False,
        }
        if request.system:
            body["instructions"] = request.system
        if request.tools and model.tools:
            body["tools"] = [self.tool(t, model) for t in request.tools]
        limit = count(request.settings.get("max_tokens")) or model.max_output
        body["max_output_tokens"] = min(limit, model.max_output)
        sampling = temperature(request, model, reasoning_takes_it=False)
        if sampling is not None:
            body["temperature"] = sampling
        effort = reasoning_effort(request, model)
        if effort is not None:
            # Summaries are what smith shows as thinking; the encrypted reasoning is what
            # lets the next request continue it without anything stored at OpenAI.
            body["reasoning"] = {"effort": effort, "summary": "auto"}
            body["include"] = ["reasoning.encrypted_content"]
        body = merge_body(body, settings.extra, provider=settings.name)
        return HttpCall(
            url=settings.base_url.rstrip("/") + "/responses",
            headers=request_headers(settings),
            body=body,
        )

    def input(self, request: Request, model: ModelInfo) -> list[dict[str, Any]]:
        """smith's neutral messages as Responses input items, in order."""
        items: list[dict[str, Any]] = []
        for message in request.messages:
            role = message.get("role")
            if role == "user":
                items.append({"type": "message", "role": "user", "content": _user(message, model)})
            elif role == "assistant":
                items += _assistant(message, model)
            elif role == "tool_result":
                items.append(
                    {
                        "type": "function_call_output",
                        "call_id": str(message.get("tool_call_id", "")),
                        "output": text_of(message) or "(no output)",
                    }
                )
        return items

    def tool(self, spec: Mapping[str, object], model: ModelInfo) -> dict[str, object]:
        parameters = spec.get("parameters") or {"type": "object", "properties": {}}
        return {
            "type": "function",
            "name": spec.get("name"),
            "description": spec.get("description", ""),
            "parameters": parameters,
            # The Responses API is strict unless told otherwise, so `strict` is always
            # sent: true only where the model has strict tools and the schema meets the
            # rules, false everywhere else.
            "strict": bool(model.strict_tools and strict_schema(parameters)),
        }

    def decoder(self, model: ModelInfo) -> ResponsesDecoder:
        return ResponsesDecoder(model)

    def error(self, status: int, headers: Mapping[str, str], body: bytes) -> End:
        return http_error(status, headers, body, label=LABEL)


def _user(message: Mapping[str, Any], model: ModelInfo) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in content_parts(message):
        if block.get("type") == "text":
            out.append({"type": "input_text", "text": str(block.get("text", ""))})
        elif block.get("type") == "image":
            url = image_url(block)
            if url is not None and "image" in model.input:
                out.append({"type": "input_image", "image_url": url})
            else:
                out.append({"type": "input_text", "text": image_note(model)})
    return out or [{"type": "input_text", "text": ""}]  # never an empty content list


def _assistant(message: Mapping[str, Any], model: ModelInfo) -> list[dict[str, Any]]:
    """An assistant message as items in the order the model produced them: reasoning,
    text as output messages, function calls."""
    items: list[dict[str, Any]] = []
    text: list[str] = []

    def flush() -> None:
        if "".join(text):
            content = [{"type": "output_text", "text": "".join(text)}]
            items.append({"type": "message", "role": "assistant", "content": content})
        text.clear()

    for block in content_parts(message):
        kind = block.get("type")
        if kind == "text":
            text.append(str(block.get("text", "")))
        elif kind == "thinking":
            flush()
            items += replayable(block.get("signature"), model)
        elif kind == "tool_call":
            flush()
            items.append(
                {
                    "type": "function_call",
                    "call_id": str(block.get("id", "")),
                    "name": str(block.get("name", "")),
                    "arguments": json.dumps(block.get("arguments") or {}),
                }
            )
    flush()
    return items


def signature(model: ModelInfo, items: list[dict[str, Any]]) -> str:
    return json.dumps({SIGNATURE_TAG: model.id, "items": items}, separators=(",", ":"))


def replayable(sig: object, model: ModelInfo) -> list[dict[str, Any]]:
    """The reasoning items a thinking part's signature carries, when they can go back to
    `model`: it advertises thinking and made them itself. Anything else is not sent."""
    if not model.thinking or not isinstance(sig, str):
        return []
    try:
        parsed = loads(sig)
    except ValueError:
        return []
    if not isinstance(parsed, dict) or parsed.get(SIGNATURE_TAG) != model.id:
        return []
    items = parsed.get("items")
    if not isinstance(items, list):
        return []
    return [
        {"type": "reasoning", "summary": i.get("summary", []), "encrypted_content": enc}
        for i in items
        if isinstance(i, dict) and isinstance(enc := i.get("encrypted_content"), str)
    ]


@dataclass
class _Item:
    kind: str = ""
    call_id: str = ""
    name: str = ""
    pieces: list[str] = field(default_factory=list)  # function-call argument deltas
    arguments: str | None = None  # the whole arguments, once the server said them
    streamed: bool = False  # its text arrived as deltas (so the done item adds none)


class ResponsesDecoder:
    """One streamed Responses API response into smith's stream events."""

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.items: dict[object, _Item] = {}  # by output_index (or item_id)
        self.run: list[dict[str, Any]] = []  # reasoning items since the last text or call
        self.calls = 0
        self.thought = False  # the last text sent was thinking (a new item needs a break)
        self.done = False

    def feed(self, event: str, data: str) -> list[StreamEvent]:
        text = data.strip()
        if self.done or not text or text == "[DONE]":
            return []
        try:
            obj = loads(text)
        except ValueError:
            obj = None
        if not isinstance(obj, dict):
            return self._stop(
                End(
                    "error",
                    error=f"{LABEL} sent a stream event that is not a JSON object: "
                    f"{excerpt(text, 120)}",
                    kind="malformed",
                )
            )
        kind = obj.get("type") if isinstance(obj.get("type"), str) else event
        handler = _HANDLERS.get(str(kind))
        return handler(self, obj) if handler is not None else []

    def finish(self) -> list[StreamEvent]:
        if self.done:
            return []
        return self._stop(
            End(
                "error",
                error=f"{LABEL}'s stream ended before response.completed; the response "
                "was cut off and is incomplete",
                retryable=True,
                kind="malformed",
            )
        )

    # -- events ----------------------------------------------------------------------

    def _item(self, obj: Mapping[str, Any]) -> _Item:
        key = obj.get("output_index", obj.get("item_id"))
        return self.items.setdefault(key, _Item())

    def _added(self, obj: Mapping[str, Any]) -> list[StreamEvent]:
        item = obj.get("item")
        if isinstance(item, dict):
            state = self._item(obj)
            state.kind = str(item.get("type", ""))
            state.call_id = str(item.get("call_id") or "")
            state.name = str(item.get("name") or "")
            if isinstance(item.get("arguments"), str) and item["arguments"]:
                state.pieces.append(item["arguments"])
        return []

    def _summary_part(self, obj: Mapping[str, Any]) -> list[StreamEvent]:
        state = self._item(obj)
        # Summary parts are paragraphs of one thinking part: a blank line between them.
        return [ThinkingDelta("\n\n")] if state.streamed else []

    def _thinking(self, obj: Mapping[str, Any]) -> list[StreamEvent]:
        delta = obj.get("delta")
        if not isinstance(delta, str) or not delta:
            return []
        state = self._item(obj)
        # Consecutive reasoning items become one thinking part: a blank line between.
        gap = "\n\n" if self.thought and not state.streamed else ""
        state.streamed = self.thought = True
        return [ThinkingDelta(gap + delta)]

    def _text(self, obj: Mapping[str, Any]) -> list[StreamEvent]:
        delta = obj.get("delta")
        if not isinstance(delta, str) or not delta:
            return []
        self._item(obj).streamed = True
        self.run, self.thought = [], False
        return [TextDelta(delta)]

    def _arguments(self, obj: Mapping[str, Any]) -> list[StreamEvent]:
        if isinstance(obj.get("delta"), str):
            self._item(obj).pieces.append(obj["delta"])
        return []

    def _arguments_done(self, obj: Mapping[str, Any]) -> list[StreamEvent]:
        if isinstance(obj.get("arguments"), str):
            self._item(obj).arguments = obj["arguments"]
        return []

    def _done(self, obj: Mapping[str, Any]) -> list[StreamEvent]:
        item = obj.get("item")
        if not isinstance(item, dict):
            return []
        state = self._item(obj)
        kind = item.get("type") or state.kind
        if kind == "function_call":
            self.calls += 1
            self.run, self.thought = [], False
            raw = item.get("arguments")
            if not isinstance(raw, str):
                raw = state.arguments if state.arguments is not None else "".join(state.pieces)
            call_id = str(item.get("call_id") or state.call_id or item.get("id") or "")
            name = str(item.get("name") or state.name)
            return [tool_call(call_id or f"call_{self.calls}", name, raw)]
        if kind == "reasoning":
            return self._reasoning(item, state)
        if kind == "message" and not state.streamed:
            said = "".join(
                str(part.get("text") or part.get("refusal") or "")
                for part in item.get("content") or []
                if isinstance(part, dict)
            )
            if said:
                self.run, self.thought = [], False
                return [TextDelta(said)]
        return []

    def _reasoning(self, item: Mapping[str, Any], state: _Item) -> list[StreamEvent]:
        """A finished reasoning item: its summary, when none streamed, and the signature
        of the reasoning run so far (the runtime keeps the latest on the thinking part)."""
        out: list[StreamEvent] = []
        summary = [s for s in item.get("summary") or [] if isinstance(s, dict)]
        if not state.streamed:
            said = "\n\n".join(str(s.get("text", "")) for s in summary if s.get("text"))
            if said:
                out.append(ThinkingDelta(("\n\n" if self.thought else "") + said))
                self.thought = True
        encrypted = item.get("encrypted_content")
        if isinstance(encrypted, str) and encrypted:
            self.run.append({"summary": summary, "encrypted_content": encrypted})
            out.append(ThinkingDelta("", signature=signature(self.model, self.run)))
        return out

    def _completed(self, obj: Mapping[str, Any]) -> list[StreamEvent]:
        response = obj.get("response")
        out = self._usage(response)
        return out + self._stop(End("tool_use") if self.calls else End("success"))

    def _incomplete(self, obj: Mapping[str, Any]) -> list[StreamEvent]:
        response = obj.get("response")
        out = self._usage(response)
        details = response.get("incomplete_details") if isinstance(response, dict) else None
        reason = details.get("reason") if isinstance(details, dict) else None
        if reason == "max_output_tokens":
            return out + self._stop(End("limit"))
        why = "its content filter stopped it" if reason == "content_filter" else f"{reason}"
        end = End("error", error=f"{LABEL} left the response incomplete: {why}", kind="invalid")
        return out + self._stop(end)

    def _failed(self, obj: Mapping[str, Any]) -> list[StreamEvent]:
        response = obj.get("response")
        out = self._usage(response)
        error = response.get("error") if isinstance(response, dict) else None
        if not error:
            error = {"message": "the response failed without saying why"}
        return out + self._stop(stream_error({"error": error}, label=LABEL))

    def _error(self, obj: Mapping[str, Any]) -> list[StreamEvent]:
        return self._stop(stream_error(obj, label=LABEL))

    def _usage(self, response: object) -> list[StreamEvent]:
        reported = response.get("usage") if isinstance(response, dict) else None
        if not isinstance(reported, dict):
            return []
        return [
            usage(
                reported.get("input_tokens"),
                reported.get("output_tokens"),
                reported.get("input_tokens_details"),
                self.model,
            )
        ]

    def _stop(self, end: End) -> list[StreamEvent]:
        self.done = True
        return [end]


_HANDLERS = {
    "response.output_item.added": ResponsesDecoder._added,
    "response.reasoning_summary_part.added": ResponsesDecoder._summary_part,
    "response.reasoning_summary_text.delta": ResponsesDecoder._thinking,
    "response.reasoning_text.delta": ResponsesDecoder._thinking,
    "response.output_text.delta": ResponsesDecoder._text,
    "response.refusal.delta": ResponsesDecoder._text,
    "response.function_call_arguments.delta": ResponsesDecoder._arguments,
    "response.function_call_arguments.done": ResponsesDecoder._arguments_done,
    "response.output_item.done": ResponsesDecoder._done,
    "response.completed": ResponsesDecoder._completed,
    "response.incomplete": ResponsesDecoder._incomplete,
    "response.failed": ResponsesDecoder._failed,
    "error": ResponsesDecoder._error,
}


# What this module contributes: the provider, for the model registry; its facts are its
# manifest's (smith.plugins.MANIFESTS), which smith reads before importing this module.
PLUGIN = Plugin(
    NAME,
    providers={
        NAME: ProviderSpec(
            create,
            default_model=DEFAULT_MODEL,
            hooks=sys.modules[__name__],
            list_models=MODEL_LIST,
            **FACTS.spec_fields(),
        )
    },
)
