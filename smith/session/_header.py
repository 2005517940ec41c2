"""A session's header (its session info: id, name, created, cwd) as smith can use it.

smith writes text there, and `created` as milliseconds since the epoch; a file made or
changed by another program can hold any value CBOR can: a 2,000-byte integer (which no
JSON or text output takes), bytes, NaN, a NUL in a path, a lone surrogate.
`checked_header` keeps each field that is what smith writes and says what is wrong with
each other one, so that listing and showing a session never fail on it (the field shows
as unknown), and commands that copy the header (dump) refuse it with the way out.
"""

from __future__ import annotations

import math
import os

from smith.diagnostics import DiagnosticKind, Source

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from smith.diagnostics import Diagnostic
    from smith.session._session import Session

MAX_TS = (1 << 63) - 1  # what an entry's timestamp can hold, in ms

ODD_HEADER_FIELD = DiagnosticKind(
    "session.bad-header",
    severity="warning",
    what="this session's header holds {problem}, so it is shown as unknown",
    why="smith writes {expected} there; a file made or changed by another program can hold "
    "any value, which smith will not print, dump or use as a path",
    fix="the rest of the session is intact: `smith sessions fork {id}` copies it into a new "
    "session with a sound header",
)
HEADER_UNUSABLE = DiagnosticKind(
    "session.header-unusable",
    what="cannot {action}: this session's header holds {problem}",
    why="smith writes {expected} there, and {action} copies the header as it is",
    fix="`smith sessions fork {id}` copies the session into a new one with a sound header "
    "(a new id, created now); {action} that one",
)

_EXPECTED = {
    "id": "the session's id as text",
    "name": "the session's name as text",
    "created": "when the session was created, in milliseconds since 1970 (0 to 2**63-1)",
    "cwd": "the directory the session worked in, as a path",
}


def problems(info: Mapping[str, object]) -> dict[str, str]:
    """What is wrong with each header field of `info` that is not what smith writes,
    by field ("'created' = bytes (2)"). A field that is absent (or null) is fine."""
    found = {}
    for field in _EXPECTED:
        value = info.get(field)
        if value is None:
            continue
        if field == "created":
            sound = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TS
            problem = "" if sound else describe(value)
        else:
            problem = text_problem(value, path=field == "cwd")
        if problem:
            found[field] = f"'{field}' = {problem}"
    return found


def text_problem(value: object, *, path: bool = False) -> str:
    """Why `value` cannot be a header's text (a `path` takes no NUL either): "" if it can."""
    if not isinstance(value, str):
        return describe(value)
    if value.isascii():  # the usual case, and no surrogate is ASCII
        return (
            "a path with a NUL character, which no path can hold" if path and "\0" in value else ""
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = value[exc.start]
        return f"text with a lone surrogate (\\u{ord(bad):04x}), which is not UTF-8"
    if path and "\0" in value:
        return "a path with a NUL character, which no path can hold"
    return ""


def describe(value: object) -> str:
    """`value` as a diagnostic names it, whatever it is: never its whole text, and never by
    a conversion that could fail (an integer of thousands of digits has no str())."""
    if value is None or isinstance(value, bool):
        return "null" if value is None else str(value).lower()
    if isinstance(value, int):
        bits = value.bit_length()
        if bits <= 64:
            return f"the integer {value}"
        return f"an integer of about {int(bits * math.log10(2)) + 1:,} digits"
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else f"the number {value!r}"
    if isinstance(value, bytes):
        return f"bytes ({len(value):,})"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the text {shown.encode('unicode_escape').decode('ascii')!r}"
    return f"a {type(value).__name__}"


def checked_header(session: Session) -> tuple[dict[str, object], list[Diagnostic]]:
    """The header fields of `session` smith can use (each unusable one None; an unusable
    id is the file's name) and a warning for each unusable one."""
    info = session.info
    found = problems(info)
    fields = {field: None if field in found else info.get(field) for field in _EXPECTED}
    if fields["id"] is None:
        fields["id"] = os.path.basename(session.path).removesuffix(".smith")
    source = Source("file", session.path)
    warnings = [
        ODD_HEADER_FIELD(
            field=field,
            source=source,
            problem=problem,
            expected=_EXPECTED[field],
            id=str(fields["id"]),
        )
        for field, problem in found.items()
    ]
    return fields, warnings


def unusable(session: Session, action: str) -> Diagnostic | None:
    """Why the header of `session` cannot be copied by `action` ("dump it"), if it cannot."""
    found = problems(session.info)
    if not found:
        return None
    field, problem = next(iter(found.items()))
    identity = session.info.get("id")
    sid = identity if "id" not in found and isinstance(identity, str) else ""
    sid = sid or os.path.basename(session.path).removesuffix(".smith")
    return HEADER_UNUSABLE(field=field, source=Source("file", session.path), action=action,
                           problem=problem, expected=_EXPECTED[field], id=sid)  # fmt: skip
