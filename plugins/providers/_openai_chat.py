"""The Chat Completions wire format (`POST {base}/chat/completions`, streamed), as OpenAI
defines it and llama.cpp's server, Ollama and vLLM imitate it. Used by the openai plugin
for models whose ModelInfo.api is "openai-chat" and by openai-compatible for every model.

A streamed response is a series of `data: {chunk}` events and a final `data: [DONE]`:

    {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"}}]}
    {"choices": [{"index": 0, "delta": {"reasoning_content": "..."}}]}    llama.cpp, vLLM
    {"choices": [{"index": 0, "delta": {"reasoning": "..."}}]}            Ollama, newer vLLM
    {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1",
        "function": {"name": "read", "arguments": "{\\"pa"}}]}}]}
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    {"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 10,
        "prompt_tokens_details": {"cached_tokens": 0}}}     with stream_options.include_usage
    {"error": {"message": "...", "type": "server_error"}}   an error inside the stream
    [DONE]

Tool-call pieces are keyed by their `index` (falling back to the call id, or the last
call, for servers that omit it) and parsed once the finish reason arrives. Usage may come
in the last chunk, with the finish reason, as llama.cpp's `timings`, or not at all (then
it stays unknown). The terminal End is sent at `[DONE]`; a body that ends cleanly after a
finish reason but without `[DONE]` (some llama.cpp forks never send it) still ends as the
finish reason says, and one that ends before any finish reason is an error.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from smith.providers import (
    End,
    HttpCall,
    ModelInfo,
    ProviderSettings,
    Request,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    Usage,
    content_parts,
    excerpt,
    merge_body,
)
from smith.text import loads

from ._openai_common import (
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


class ChatCompletions:
    """Chat Completions requests and streams. `label` names the server in errors;
    `max_tokens_field` is OpenAI's `max_completion_tokens` or the older `max_tokens` that
    local servers take; `replay_reasoning` sends earlier thinking back as
    `reasoning_content` (llama.cpp and vLLM templates use it between tool calls; OpenAI
    does not take it), and only to a model that advertises thinking;
    `reasoning_temperature` says whether a model that thinks takes a temperature (local
    servers' do; OpenAI's reasoning models refuse one, so there it fails before dispatch);
    `base_url_form` is the form of the server's base URL, said when one given answers 404."""

    api = "openai-chat"

    def __init__(
        self,
        *,
        label: str = "OpenAI",
        max_tokens_field: str = "max_completion_tokens",
        replay_reasoning: bool = False,
        reasoning_temperature: bool = False,
        base_url_form: str = "https://api.openai.com/v1: the API root, ending in /v1 (smith "
        "adds /chat/completions to it)",
    ) -> None:
        self.label = label
        self.base_url_form = base_url_form
        self.max_tokens_field = max_tokens_field
        self.replay_reasoning = replay_reasoning
        self.reasoning_temperature = reasoning_temperature

    def build(self, request: Request, model: ModelInfo, settings: ProviderSettings) -> HttpCall:
        body: dict[str, object] = {
            "model": model.id,
            "messages": self.messages(request, model),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        # A model without tool use gets no tools (it could not call them anyway).
        if request.tools and model.tools:
            body["tools"] = [self.tool(t, model) for t in request.tools]
        limit = count(request.settings.get("max_tokens")) or model.max_output
        body[self.max_tokens_field] = min(limit, model.max_output)
        sampling = temperature(request, model, reasoning_takes_it=self.reasoning_temperature)
        if sampling is not None:
            body["temperature"] = sampling
        effort = reasoning_effort(request, model)
        if effort is not None:
            body["reasoning_effort"] = effort
        body = merge_body(body, settings.extra, provider=settings.name)
        return HttpCall(
            url=settings.base_url.rstrip("/") + "/chat/completions",
            headers=request_headers(settings),
            body=body,
        )

    def messages(self, request: Request, model: ModelInfo) -> list[dict[str, Any]]:
        """smith's neutral messages as Chat Completions messages, system prompt first."""
        out: list[dict[str, Any]] = []
        if request.system:
            out.append({"role": "system", "content": request.system})
        for message in request.messages:
            role = message.get("role")
            if role == "user":
                out.append({"role": "user", "content": user_content(message, model)})
            elif role == "assistant":
                out.append(self._assistant(message, model))
            elif role == "tool_result":
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": str(message.get("tool_call_id", "")),
                        "content": text_of(message) or "(no output)",
                    }
                )
        return out

    def _assistant(self, message: Mapping[str, Any], model: ModelInfo) -> dict[str, Any]:
        parts = content_parts(message)
        text = "".join(str(b.get("text", "")) for b in parts if b.get("type") == "text")
        calls = [
            {
                "id": str(b.get("id", "")),
                "type": "function",
                "function": {
                    "name": str(b.get("name", "")),
                    "arguments": json.dumps(b.get("arguments") or {}),
                },
            }
            for b in parts
            if b.get("type") == "tool_call"
        ]
        out: dict[str, Any] = {"role": "assistant", "content": text or (None if calls else "")}
        if calls:
            out["tool_calls"] = calls
        if self.replay_reasoning and model.thinking:
            thought = "".join(str(b.get("text", "")) for b in parts if b.get("type") == "thinking")
            if thought:
                out["reasoning_content"] = thought
        return out

    def tool(self, spec: Mapping[str, object], model: ModelInfo) -> dict[str, object]:
        parameters = spec.get("parameters") or {"type": "object", "properties": {}}
        function: dict[str, object] = {
            "name": spec.get("name"),
            "description": spec.get("description", ""),
            "parameters": parameters,
        }
        # Chat Completions is lax by default: strict only where the model has it and the
        # schema already meets its rules.
        if model.strict_tools and strict_schema(parameters):
            function["strict"] = True
        return {"type": "function", "function": function}

    def decoder(self, model: ModelInfo) -> ChatDecoder:
        return ChatDecoder(model, self.label)

    def error(self, status: int, headers: Mapping[str, str], body: bytes) -> End:
        return http_error(status, headers, body, label=self.label)


def request_headers(settings: ProviderSettings) -> dict[str, str]:
    """JSON in, server-sent events out, and the key as a bearer token; no Authorization
    header at all without a key (local servers need none). Configured headers are added
    by the host (smith.providers._http_provider)."""
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    if settings.credential:
        headers["authorization"] = f"Bearer {settings.credential}"
    return headers


def user_content(message: Mapping[str, Any], model: ModelInfo) -> str | list[dict[str, Any]]:
    """A user message's content: a plain string when it is one text part (what every
    server takes), else a list of text and image_url parts. A model without image input
    gets a note in place of each image."""
    parts = content_parts(message)
    if not parts or (len(parts) == 1 and parts[0].get("type") == "text"):
        return str(parts[0].get("text", "")) if parts else ""
    out: list[dict[str, Any]] = []
    for block in parts:
        if block.get("type") == "image":
            url = image_url(block)
            if url is not None and "image" in model.input:
                out.append({"type": "image_url", "image_url": {"url": url}})
                continue
            out.append({"type": "text", "text": image_note(model)})
        elif block.get("type") == "text":
            out.append({"type": "text", "text": str(block.get("text", ""))})
    return out


@dataclass
class _Call:
    id: str = ""
    name: str = ""
    pieces: list[str] = field(default_factory=list)


class ChatDecoder:
    """One streamed Chat Completions response into smith's stream events."""

    def __init__(self, model: ModelInfo, label: str) -> None:
        self.model = model
        self.label = label
        self.calls: list[_Call] = []
        self.slots: dict[int, int] = {}  # the server's tool-call index -> position in calls
        self.finish_reason: str | None = None
        self.done = False

    def feed(self, event: str, data: str) -> list[StreamEvent]:
        text = data.strip()
        if self.done or not text:
            return []
        if text == "[DONE]":
            if self.finish_reason is None:
                return self._stop(
                    End(
                        "error",
                        error=f"{self.label} ended the stream without a finish reason; "
                        "the response is incomplete",
                        kind="malformed",
                    )
                )
            return self._stop(self._outcome())
        try:
            chunk = loads(text)
        except ValueError:
            chunk = None
        if not isinstance(chunk, dict):
            return self._stop(
                End(
                    "error",
                    error=f"{self.label} sent a stream event that is not a JSON object: "
                    f"{excerpt(text, 120)}",
                    kind="malformed",
                )
            )
        if chunk.get("error") or chunk.get("object") == "error":  # some send "error": null
            return self._stop(stream_error(chunk, label=self.label))
        out: list[StreamEvent] = []
        for choice in chunk.get("choices") or []:
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                out += self._choice(choice)
        reported = chunk.get("usage")
        if isinstance(reported, dict):
            out.append(self._usage(reported))
        elif isinstance(chunk.get("timings"), dict):
            out.append(self._timings(chunk["timings"]))
        return out

    def finish(self) -> list[StreamEvent]:
        if self.done:
            return []
        if self.finish_reason is not None:
            return self._stop(self._outcome())
        return self._stop(
            End(
                "error",
                error=f"{self.label}'s stream ended before the response finished (no "
                "finish reason, no [DONE]); the response is incomplete",
                retryable=True,  # the connection failed, not the request
                kind="malformed",
            )
        )

    def _choice(self, choice: Mapping[str, Any]) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        delta = choice.get("delta")
        if isinstance(delta, dict):
            # Servers name reasoning differently; one that sends both sends the same text.
            thought = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(thought, str) and thought:
                out.append(ThinkingDelta(thought))
            for key in ("content", "refusal"):
                if isinstance(delta.get(key), str) and delta[key]:
                    out.append(TextDelta(delta[key]))
            for piece in delta.get("tool_calls") or []:
                if isinstance(piece, dict):
                    self._accumulate(piece)
        reason = choice.get("finish_reason")
        if isinstance(reason, str) and reason and self.finish_reason is None:
            self.finish_reason = reason
            # A call the server sent no id for gets one of smith's, unique across
            # responses: results are paired with their calls by id, so a `call_1` in
            # every turn would give one turn's result to another's call.
            out += [
                tool_call(c.id or f"call_{uuid.uuid4().hex[:16]}", c.name, "".join(c.pieces))
                for c in self.calls
            ]
        return out

    def _accumulate(self, piece: Mapping[str, Any]) -> None:
        call = self._slot(piece)
        if isinstance(piece.get("id"), str) and piece["id"] and not call.id:
            call.id = piece["id"]
        function = piece.get("function")
        if not isinstance(function, dict):
            return
        if isinstance(function.get("name"), str) and function["name"] and not call.name:
            call.name = function["name"]
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call.pieces.append(arguments)
        elif isinstance(arguments, dict):  # a server that sends the object itself
            call.pieces.append(json.dumps(arguments))

    def _slot(self, piece: Mapping[str, Any]) -> _Call:
        """The call a tool-call piece continues, or a new one. Pieces carry an `index`;
        a piece without one continues the call with its id, or the last call when it has
        no id either. A known index with a different id is a new call (servers that number
        every complete call 0)."""
        call_id = piece.get("id") if isinstance(piece.get("id"), str) else ""
        index = piece.get("index")
        if isinstance(index, int) and index in self.slots:
            call = self.calls[self.slots[index]]
            if not call_id or not call.id or call.id == call_id:
                return call
        elif not isinstance(index, int):
            for call in self.calls:
                if call_id and call.id == call_id:
                    return call
            if not call_id and self.calls:
                return self.calls[-1]
        self.calls.append(_Call())
        if isinstance(index, int):
            self.slots[index] = len(self.calls) - 1
        return self.calls[-1]

    def _outcome(self) -> End:
        reason = self.finish_reason
        if reason == "length":
            return End("limit")
        if reason == "content_filter":
            return End(
                "error",
                error=f"{self.label}'s content filter stopped the response",
                kind="invalid",
            )
        if self.calls:  # also for servers that say "stop" after tool calls
            return End("tool_use")
        if reason in ("tool_calls", "function_call"):
            return End(
                "error",
                error=f"{self.label} stopped for tool calls but sent none",
                kind="malformed",
            )
        return End("success")

    def _usage(self, reported: Mapping[str, Any]) -> Usage:
        return usage(
            reported.get("prompt_tokens"),
            reported.get("completion_tokens"),
            reported.get("prompt_tokens_details"),
            self.model,
        )

    def _timings(self, timings: Mapping[str, Any]) -> Usage:
        """llama.cpp's own counts, for a server that sends timings but no usage:
        prompt_n tokens were processed, cache_n reused from its prompt cache."""
        processed, cached = count(timings.get("prompt_n")), count(timings.get("cache_n"))
        total = None if processed is None else processed + (cached or 0)
        details = None if cached is None else {"cached_tokens": cached}
        return usage(total, timings.get("predicted_n"), details, self.model)

    def _stop(self, end: End) -> list[StreamEvent]:
        self.done = True
        return [end]
