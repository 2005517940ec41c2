"""JSON-RPC 2.0 framing without I/O: one input line in, calls or error responses out.

A line is one request, one notification (no `id`: never answered) or a batch (an array
of them, answered by one array); or the client's response to a request the server sent
(`ui.ask`), which is never answered either. Everything that goes wrong here has the standard code
and a smith diagnostic as `data`, so a client can show `what`/`why`/`fix` as they are:

    -32700 parse error       the line is not JSON, not UTF-8 or nested too deeply
                             (smith.text.loads; the id is then unknown: null)
    -32600 invalid request   not a request object (bad `jsonrpc`, `method`, `id`, `params`)
    -32601 method not found  the method is not one smith offers
    -32602 invalid params    a missing, unknown or ill-typed parameter, or a value smith
                             refuses (an unknown model, a thinking level...)
    -32603 internal error    a bug in smith
    -32000 operation failed  the operation was refused or failed (busy, nothing to undo...)
    -32001 not built         the method names a capability this version does not have

`Param` declares a method's parameters; `bind` checks the given ones against them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from smith import protocol
from smith.diagnostics import Diagnostic, DiagnosticKind, Source, did_you_mean
from smith.text import TEXT_REPLACED, loads, replace_surrogates

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
OPERATION_FAILED = -32000
NOT_BUILT = -32001

MESSAGES = {
    PARSE_ERROR: "Parse error",
    INVALID_REQUEST: "Invalid Request",
    METHOD_NOT_FOUND: "Method not found",
    INVALID_PARAMS: "Invalid params",
    INTERNAL_ERROR: "Internal error",
}

RPC_NOT_JSON = DiagnosticKind(
    "rpc.not-json",
    what="input line {line} is not JSON: {detail}",
    why="smith rpc reads one JSON-RPC 2.0 message (or batch) per line, separated by LF only",
    fix="send each message as compact JSON on a single line, ending with a line feed",
)
RPC_BAD_REQUEST = DiagnosticKind(
    "rpc.invalid-request",
    what="not a JSON-RPC 2.0 request: {problem}",
    why='a request is an object with "jsonrpc": "2.0", a string "method", optional '
    '"params" (object or array) and, to get an answer, an "id" (string, number or null)',
    fix="send a request object of that shape (docs/rpc.md has examples)",
)
RPC_UNKNOWN_METHOD = DiagnosticKind(
    "rpc.unknown-method",
    what="'{method}' is not a method of smith rpc",
    why="smith rpc offers only the methods listed in docs/rpc.md",
    fix="{hint}; docs/rpc.md lists every method",
)
RPC_MISSING_PARAM = DiagnosticKind(
    "rpc.missing-param",
    what="{method} needs the parameter '{param}' ({expected})",
    why="{method} cannot run without it",
    fix="add it to params, e.g. {example}",
)
RPC_UNKNOWN_PARAM = DiagnosticKind(
    "rpc.unknown-param",
    what="{method} has no parameter '{param}'",
    why="unknown parameters are refused so that a misspelt one is never silently ignored",
    fix="{hint}; docs/rpc.md lists each method's parameters",
)
RPC_BAD_PARAM = DiagnosticKind(
    "rpc.bad-param",
    what="{method}: the parameter '{param}' must be {expected}, not {got}",
    why="{method} checks its parameters before doing anything",
    fix="send {param} as {expected} (docs/rpc.md lists every method's parameters)",
)

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "array": (list,),
}


class RpcError(Exception):
    """A JSON-RPC error response, with the diagnostic that explains it as `data`."""

    def __init__(self, code: int, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.what)
        self.code = code
        self.diagnostic = diagnostic

    def to_dict(self) -> dict[str, Any]:
        message = MESSAGES.get(self.code, self.diagnostic.what)
        return {"code": self.code, "message": message, "data": self.diagnostic.to_dict()}


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter of a method: by name in an object, or by position in an array."""

    name: str
    type: str  # string | boolean | integer | array
    required: bool = False
    example: str = ""


@dataclass(frozen=True, slots=True)
class Call:
    """One well-formed request; `id` is absent (`notification`) or the request's own."""

    method: str
    params: dict[str, Any] | list[Any]
    id: object = None
    notification: bool = False


@dataclass(frozen=True, slots=True)
class Response:
    """The client's answer to a request the server sent it (`ui.ask`): `result` or
    `error`, for the request `id`."""

    id: object
    result: object = None
    error: object = None


# A call to make, a response from the client, or an error response already decided.
Item = Call | Response | dict[str, Any]


def parse_line(raw: bytes, number: int) -> tuple[list[Item], bool, int] | dict[str, Any]:
    """A line's calls and error responses, whether it was a batch, and how many
    characters that cannot be encoded (lone surrogates) were replaced with U+FFFD; or
    the single error response of a line that cannot be read at all (not JSON, not
    UTF-8, nested too deeply, an empty batch)."""
    try:
        message = loads(raw)
    except ValueError as exc:
        shown = raw[:200].decode("utf-8", "replace")
        diagnostic = RPC_NOT_JSON(value=shown, source=_where(number), line=number, detail=str(exc))
        return error_response(None, RpcError(PARSE_ERROR, diagnostic))
    message, replaced = replace_surrogates(message)
    if isinstance(message, list):
        if not message:
            return error_response(None, _invalid(number, "the batch is an empty array"))
        return [_call(m, number) for m in message], True, replaced
    return [_call(message, number)], False, replaced


def replaced_note(count: int, number: int) -> Diagnostic:
    """The warning that `count` characters of input line `number` were replaced."""
    where = f"input line {number}"
    return TEXT_REPLACED(value=count, source=_where(number), count=count, where=where)


def _where(number: int) -> Source:
    return Source("rpc", f"line {number}")


def _invalid(number: int, problem: str) -> RpcError:
    return RpcError(INVALID_REQUEST, RPC_BAD_REQUEST(source=_where(number), problem=problem))


SERVER_IDS = "smith-"  # the ids of the server's own requests to the client (ui.ask)


def _call(message: object, number: int) -> Item:
    if not isinstance(message, dict):
        return error_response(None, _invalid(number, f"a {_json_type(message)}, not an object"))
    has_id = "id" in message
    id = message.get("id")
    if has_id and (isinstance(id, bool) or not isinstance(id, str | int | float | type(None))):
        return error_response(None, _invalid(number, f"the id is a {_json_type(id)}"))
    if message.get("jsonrpc") != "2.0":
        return error_response(id, _invalid(number, '"jsonrpc" must be "2.0"'))
    answers = "result" in message or "error" in message
    if "method" not in message and has_id and (answers or str(id).startswith(SERVER_IDS)):
        # A response to one of the server's own requests (ui.ask): never answered. One
        # with neither result nor error is malformed, which refuses the question.
        error = message.get("error") if answers else {
            "code": -32600, "message": "the response has neither result nor error"}  # fmt: skip
        return Response(id, message.get("result"), error)
    method = message.get("method")
    if not isinstance(method, str):
        return error_response(id, _invalid(number, '"method" must be a string'))
    params = message.get("params", {})
    if not isinstance(params, dict | list):
        problem = f'"params" must be an object or an array, not a {_json_type(params)}'
        return error_response(id, _invalid(number, problem))
    return Call(method, params, id, notification=not has_id)


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def unknown_method(method: str, known: Sequence[str]) -> RpcError:
    hint = did_you_mean(method, known, otherwise="check the method name")
    return RpcError(
        METHOD_NOT_FOUND,
        RPC_UNKNOWN_METHOD(value=method, source=Source("rpc", method), method=method, hint=hint),
    )


def bind(method: str, spec: Sequence[Param], params: dict[str, Any] | list[Any]) -> dict[str, Any]:
    """The parameters as keyword arguments, checked against `spec`: each raises an
    invalid-params RpcError naming the parameter."""
    source = Source("rpc", method)
    if isinstance(params, list):
        if len(params) > len(spec):
            extra = f"#{len(spec) + 1}"
            hint = f"{method} takes at most {len(spec)} parameters"
            raise RpcError(
                INVALID_PARAMS,
                RPC_UNKNOWN_PARAM(source=source, method=method, param=extra, hint=hint),
            )
        params = {p.name: v for p, v in zip(spec, params, strict=False)}
    names = [p.name for p in spec]
    for name in params:
        if name not in names:
            hint = did_you_mean(name, names, otherwise=_takes(method, names))
            raise RpcError(
                INVALID_PARAMS,
                RPC_UNKNOWN_PARAM(value=name, source=source, method=method, param=name, hint=hint),
            )
    out: dict[str, Any] = {}
    for p in spec:
        if p.name not in params or params[p.name] is None:
            if p.required:
                example = p.example or f'{{"{p.name}": ...}}'
                raise RpcError(
                    INVALID_PARAMS,
                    RPC_MISSING_PARAM(source=source, method=method, param=p.name,
                                  expected=_article(p.type), example=example),
                )  # fmt: skip
            continue
        value = params[p.name]
        allowed = _TYPES[p.type]
        if not isinstance(value, allowed) or (p.type == "integer" and isinstance(value, bool)):
            raise RpcError(
                INVALID_PARAMS,
                RPC_BAD_PARAM(value=value, source=source, method=method, param=p.name,
                          expected=_article(p.type), got=f"a {_json_type(value)}"),
            )  # fmt: skip
        out[p.name] = value
    return out


def _takes(method: str, names: Sequence[str]) -> str:
    if not names:
        return f"{method} takes no parameters: send none"
    return f"{method} takes: {', '.join(names)}"


def _article(kind: str) -> str:
    return f"an {kind}" if kind in ("integer", "array") else f"a {kind}"


def response(id: object, result: object) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "result": result}


def error_response(id: object, error: RpcError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "error": error.to_dict()}


def notification(method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def encode(message: object) -> bytes:
    """One protocol record as one line: JSON escapes every line break inside strings,
    so the only LF is the terminator. A lone surrogate becomes its JSON escape."""
    return protocol.encode_line(message)  # msgspec's encoder, loaded at the first record
