"""The scripted provider: plays a JSON script of assistant responses (docs/scripted.md).

`--model scripted:PATH` makes every provider request take the next response of the script
at PATH and stream it through the normalized stream exactly as a remote model would:
thinking deltas, text deltas, tool calls, usage, then one End. Tests and demos use it to
drive the whole runtime offline and deterministically; its optional requests log shows
what would have been sent to a real provider.

The script is read and checked once, in create(): a mistake in it is a diagnostic naming
the file and the JSON location (`responses[2].stop`), never a surprise in the middle of a
run. Running out of responses is an error End, not an exception, because it is the
conversation (not the script) that went further than the author planned.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass

from smith.diagnostics import DiagnosticKind, SmithError, Source, did_you_mean, show_value
from smith.providers import (
    End,
    Outcome,
    Pricing,
    Request,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    Usage,
)
from smith.sdk import Plugin, ProviderSpec, provider_facts
from smith.text import JsonInputError, loads

SCRIPT_NO_PATH = DiagnosticKind(
    "scripted.no-path",
    what="the scripted provider was given no script (model setting '{model}')",
    why="the scripted provider plays the responses of a JSON script named in the model setting",
    fix="name the script after the provider, e.g. --model scripted:PATH/TO/script.json "
    "(docs/scripted.md describes the format)",
)
SCRIPT_UNREADABLE = DiagnosticKind(
    "scripted.unreadable",
    what="cannot read the script {path}: {reason}",
    why="the scripted provider plays the responses of the JSON script named in the model "
    "setting (scripted:PATH), so it must be a readable file",
    fix="check the path (a relative one is taken from the current directory) or create "
    "the script; docs/scripted.md describes the format",
)
SCRIPT_NOT_JSON = DiagnosticKind(
    "scripted.not-json",
    what="the script {path} is not valid JSON: {detail}",
    why='a script is one JSON object, {{"responses": [...]}}, read with a strict JSON parser',
    fix="correct the JSON at that line and column (no comments, no trailing commas, strings "
    "in double quotes); docs/scripted.md has an example",
)
SCRIPT_INVALID = DiagnosticKind(
    "scripted.invalid",
    what="expected {expected}, got {got}",
    why="the scripted provider checks the whole script of {path} before playing any of it, "
    "so a mistake is reported here rather than in the middle of a run",
    fix="{remedy} (docs/scripted.md describes every key of a script)",
)

# How a script's stop names map onto the normalized stream's End outcomes.
STOPS: dict[str, Outcome] = dict(end="success", tool_use="tool_use", limit="limit", error="error")
TOP_KEYS = ("responses", "pricing", "requests_log", "input")
INPUTS = ("text", "image")  # what a script may say its model takes
RESPONSE_KEYS: tuple[str, ...] = ("text", "thinking", "tool_calls", "stop", "error")
RESPONSE_KEYS += ("retryable", "retry_after", "usage", "delay_ms")
CALL_KEYS = ("name", "arguments", "id")
COUNT_KEYS = ("input", "output", "cache_read", "cache_write")  # usage and pricing alike
WORDS_PER_DELTA = 3  # enough deltas for tests to see streaming, few enough to read

# A script is data a person writes by hand: any JSON value can turn up anywhere.
Json = object
MISSING = object()  # a required key that is absent (JSON null is None)


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    id: str
    name: str
    arguments: dict[str, object] | str  # a string is parsed when streamed (may be bad)


@dataclass(frozen=True, slots=True)
class ScriptedResponse:
    thinking: str
    text: str
    tool_calls: tuple[ScriptedCall, ...]
    usage: Usage | None  # None: the response says nothing, so usage stays unknown
    delay: float  # seconds before each event
    end: End


@dataclass(frozen=True, slots=True)
class Script:
    path: str
    responses: tuple[ScriptedResponse, ...]
    pricing: Pricing | None
    requests_log: str | None  # absolute
    input: tuple[str, ...] = ("text",)  # what the model takes, as a catalog entry says


def chunks(text: str, words: int = WORDS_PER_DELTA) -> list[str]:
    """`text` cut into pieces of a few words that concatenate back to exactly `text`
    (whitespace, newlines and all). Deterministic, so tests can count deltas."""
    if not text:
        return []
    pieces = [p for p in re.split(r"(?<=\s)(?=\S)", text) if p]  # a word and its spacing
    return ["".join(pieces[i : i + words]) for i in range(0, len(pieces), words)]


class _Checker:
    """Reads a script's JSON value into a Script, raising SCRIPT_INVALID at the first
    wrong shape with its JSON location."""

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(
        self, where: str | None, expected: str, value: Json, remedy: str, got: str = ""
    ) -> SmithError:
        return SCRIPT_INVALID.error(
            field=where,
            value=None if value is MISSING else value,
            source=Source("file", self.path),
            path=self.path,
            expected=expected,
            got=got or _describe(value),
            remedy=remedy,
        )

    def obj(self, value: Json, where: str, keys: tuple[str, ...]) -> dict[str, Json]:
        if not isinstance(value, dict):
            name = where or "the script"
            raise self.fail(where or None, "a JSON object", value, f"write {name} as {{...}}")
        for key in value:
            if key not in keys:
                close = did_you_mean(key, keys, otherwise="")
                raise self.fail(
                    f"{where}.{key}" if where else key,
                    f"one of the keys {', '.join(keys)}",
                    key,
                    f"{close} Otherwise remove the key" if close else "remove or rename the key",
                    got=f"the unknown key {show_value(key)}",
                )
        return value

    def string(self, value: Json, where: str, *, empty: bool = True) -> str:
        if not isinstance(value, str) or (not empty and not value):
            what = "a string" if empty else "a non-empty string"
            raise self.fail(where, what, value, f'write {where} as "..." in double quotes')
        return value

    def number(self, value: Json, where: str, *, integer: bool = False) -> float:
        # bool is an int to Python but never a count or a price to a person; Python's
        # json also reads NaN and Infinity, which are no count or price either.
        kinds = (int,) if integer else (int, float)
        if (
            isinstance(value, bool)
            or not isinstance(value, kinds)
            or value < 0
            or not math.isfinite(value)
        ):
            what = "a whole number, 0 or more" if integer else "a number, 0 or more"
            raise self.fail(where, what, value, f"write {where} as a number like 0 or 1500")
        return value

    def counts(self, value: Json, where: str, *, integer: bool) -> dict[str, float | None]:
        fields = self.obj(value, where, COUNT_KEYS)
        out: dict[str, float | None] = dict.fromkeys(COUNT_KEYS)
        for key in COUNT_KEYS:
            if fields.get(key) is not None:
                out[key] = self.number(fields[key], f"{where}.{key}", integer=integer)
        return out

    def script(self, value: Json) -> Script:
        top = self.obj(value, "", TOP_KEYS)
        if "responses" not in top:
            raise self.fail("responses", "a list of responses", MISSING, 'add "responses": [...]')
        items = top["responses"]
        if not isinstance(items, list):
            raise self.fail("responses", "a list of responses", items, "write it as [{...}]")
        pricing = None
        if "pricing" in top:
            prices = self.counts(top["pricing"], "pricing", integer=False)
            pricing = Pricing(**{k: None if v is None else float(v) for k, v in prices.items()})
        log = None
        if "requests_log" in top:
            name = self.string(top["requests_log"], "requests_log", empty=False)
            log = os.path.join(os.path.dirname(os.path.abspath(self.path)), name)
        takes: tuple[str, ...] = ("text",)
        if "input" in top:
            listed = top["input"]
            if not (isinstance(listed, list) and listed and all(x in INPUTS for x in listed)):
                raise self.fail("input", 'a list of "text" and "image"', listed,
                                'write it as ["text", "image"]')  # fmt: skip
            takes = tuple(str(x) for x in listed)
        responses = tuple(self.response(item, i) for i, item in enumerate(items))
        return Script(self.path, responses, pricing, log, takes)

    def response(self, value: Json, index: int) -> ScriptedResponse:
        where = f"responses[{index}]"
        fields = self.obj(value, where, RESPONSE_KEYS)
        text = self.string(fields.get("text", ""), f"{where}.text")
        thinking = self.string(fields.get("thinking", ""), f"{where}.thinking")
        raw_calls = fields.get("tool_calls", [])
        if not isinstance(raw_calls, list):
            raise self.fail(f"{where}.tool_calls", "a list of tool calls", raw_calls, "use [...]")
        calls = tuple(self.call(c, index, j) for j, c in enumerate(raw_calls))
        error = None
        if "error" in fields:
            error = self.string(fields["error"], f"{where}.error", empty=False)
        failing = error is not None or "retryable" in fields or "retry_after" in fields
        stop = fields.get("stop", "error" if failing else "tool_use" if calls else "end")
        if stop not in STOPS:
            raise self.fail(
                f"{where}.stop", f"one of {', '.join(STOPS)}", stop, "use one of those names"
            )
        if failing and stop != "error":
            raise self.fail(
                f"{where}.stop",
                '"error" (the response has error, retryable or retry_after)',
                stop,
                'set "stop": "error", or remove error, retryable and retry_after',
            )
        retryable = fields.get("retryable", False)
        if not isinstance(retryable, bool):
            raise self.fail(f"{where}.retryable", "true or false", retryable, "use true or false")
        retry_after = None
        if "retry_after" in fields:
            retry_after = float(self.number(fields["retry_after"], f"{where}.retry_after"))
        usage = None
        if "usage" in fields:
            n = self.counts(fields["usage"], f"{where}.usage", integer=True)
            usage = Usage(**{k: None if v is None else int(v) for k, v in n.items()})
        delay = self.number(fields.get("delay_ms", 0), f"{where}.delay_ms") / 1000
        return ScriptedResponse(
            thinking=thinking,
            text=text,
            tool_calls=calls,
            usage=usage,
            delay=delay,
            end=End(
                STOPS[str(stop)],
                error=(error or f"scripted error ({where} of {self.path})")
                if stop == "error"
                else None,
                retryable=retryable,
                retry_after=retry_after,
            ),
        )

    def call(self, value: Json, index: int, j: int) -> ScriptedCall:
        where = f"responses[{index}].tool_calls[{j}]"
        fields = self.obj(value, where, CALL_KEYS)
        for key in ("name", "arguments"):
            if key not in fields:
                raise self.fail(
                    f"{where}.{key}", f'the key "{key}"', MISSING, f'add "{key}" to the call'
                )
        name = self.string(fields["name"], f"{where}.name", empty=False)
        call_id = f"call_{index}_{j}"  # deterministic, unique within the script
        if "id" in fields:
            call_id = self.string(fields["id"], f"{where}.id", empty=False)
        arguments = fields["arguments"]
        if not isinstance(arguments, dict | str):
            raise self.fail(
                f"{where}.arguments",
                "a JSON object, or a string holding (possibly broken) JSON",
                arguments,
                'write the arguments as {"path": "..."}',
            )
        return ScriptedCall(call_id, name, arguments)


def _describe(value: Json) -> str:
    """A JSON value as a person would name it in an error: its type and a glimpse."""
    if value is MISSING:
        return "nothing (the key is missing)"
    if value is None:
        return "null"
    kind = {dict: "an object", list: "a list", bool: "a boolean", str: "the string"}
    for cls, name in kind.items():
        if isinstance(value, cls):
            return name if cls in (dict, list) else f"{name} {show_value(value)}"
    return f"the number {show_value(value)}"


def load(path: str) -> Script:
    """Read and check the script at `path` (SmithError when it cannot be played)."""
    source = Source("file", path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        shown = os.path.abspath(path)
        raise SCRIPT_UNREADABLE.error(value=path, source=source, path=shown, reason=reason) from e
    try:
        value = loads(text)
    except JsonInputError as e:
        raise SCRIPT_NOT_JSON.error(
            source=Source("file", f"{path}:{e.lineno}:{e.colno}"),
            path=path,
            detail=e.msg,  # the line and column are in the source location
        ) from e
    return _Checker(path).script(value)


def _parse_arguments(raw: dict[str, object] | str) -> tuple[dict[str, object] | None, str | None]:
    """A call's arguments, or None and why they are not usable (a string is JSON text,
    parsed now just as a remote provider's accumulated argument text would be)."""
    if isinstance(raw, dict):
        return dict(raw), None  # a copy: the script stays as written whatever a caller does
    try:
        parsed = loads(raw)
    except JsonInputError as e:
        return None, f"the tool call's arguments are not valid JSON: {e}"
    if not isinstance(parsed, dict):
        return None, f"the tool call's arguments must be a JSON object, not {_describe(parsed)}"
    return parsed, None


class ScriptedProvider:
    """Plays `script`: each stream() call takes the next response."""

    name = "scripted"

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests = 0  # requests received so far, answered or not
        self.input = script.input  # what the runtime checks attached images against

    def pricing(self, model: str) -> Pricing | None:
        return self.script.pricing

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        self.requests += 1
        logged = self._log(request)
        if logged is not None:
            yield End("error", error=logged)
            return
        count = len(self.script.responses)
        if self.requests > count:
            yield End(
                "error",
                error=f"the script {self.script.path} has no response left: it has {count} "
                f"response{'' if count == 1 else 's'} and this is request {self.requests}; "
                'add responses to its "responses" list (docs/scripted.md)',
            )
            return
        response = self.script.responses[self.requests - 1]
        for event in _events(response):
            if response.delay:
                # asyncio.sleep, so cancelling the task running the stream stops it here;
                # the CancelledError goes to the runtime, which records the abort itself.
                await asyncio.sleep(response.delay)
            yield event

    def _log(self, request: Request) -> str | None:
        """Append the request to the requests log; why not, when it could not be."""
        if self.script.requests_log is None:
            return None
        entry = {
            "model": request.model,
            "system": request.system,
            "messages": request.messages,
            "tools": request.tools,
            "settings": request.settings,
        }
        try:
            line = json.dumps(entry, ensure_ascii=False)
        except (TypeError, ValueError) as e:
            # A remote provider could not send it either: say so rather than guess.
            return f"the request cannot be written as JSON to {self.script.requests_log}: {e}"
        try:
            os.makedirs(os.path.dirname(self.script.requests_log), exist_ok=True)
            with open(self.script.requests_log, "a", encoding="utf-8") as f:
                f.write(line + "\n")
        except OSError as e:
            return f"cannot append to the requests log {self.script.requests_log}: {e}"
        return None


def _events(response: ScriptedResponse) -> list[StreamEvent]:
    """A response's events in stream order: thinking, text, tool calls, usage, End."""
    events: list[StreamEvent] = [ThinkingDelta(c) for c in chunks(response.thinking)]
    events += [TextDelta(c) for c in chunks(response.text)]
    for call in response.tool_calls:
        arguments, error = _parse_arguments(call.arguments)
        events.append(ToolCall(call.id, call.name, arguments, error))
    if response.usage is not None:
        events.append(response.usage)
    events.append(response.end)
    return events


def create(model: str) -> ScriptedProvider:
    """The provider for `scripted:PATH`: `model` is the script's path."""
    if not model.strip():
        # Where the model setting came from is the registry's knowledge, not ours.
        raise SCRIPT_NO_PATH.error(value=model, model=model)
    return ScriptedProvider(load(os.path.expanduser(model)))


# What this module contributes: the provider, for the model registry.
PLUGIN = Plugin(
    "scripted",
    providers={"scripted": ProviderSpec(create, **provider_facts()["scripted"].spec_fields())},
)
