"""edit: exact replacements, all or nothing, refused when ambiguous, missing or stale."""

from __future__ import annotations

import itertools

from smith.effects._filestate import digest, last_seen
from smith.effects._tool import Presentation, ToolContext, ToolError, ToolResult, ToolSpec
from smith.effects.tools._files import read_bytes, unified


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _count(text: str, old: str) -> int:
    """Occurrences of `old`, overlapping ones included ('aa' is twice in 'aaa')."""
    count, at = 0, text.find(old)
    while at >= 0:
        count += 1
        at = text.find(old, at + 1)
    return count


def _plan(text: str, edits: list[tuple[str, str]], shown: str) -> list[tuple[int, int, str]]:
    """Where each edit applies in the original text; every old_text must match once."""
    spans = []
    for n, (old, new) in enumerate(edits, start=1):
        label = f"edit {n}: " if len(edits) > 1 else ""
        if not old:
            raise ToolError(f"{label}old_text is empty; quote the exact text to replace")
        first = text.find(old)
        if first < 0:
            hint = ""
            stripped = old.strip()
            if "\n" in old and old.replace("\n", "\r\n") in text:
                hint = "; the file has CRLF line endings: write \\r\\n where it breaks lines"
            elif stripped and stripped in text:
                hint = (
                    f"; the text appears with different surrounding whitespace at line "
                    f"{_line_of(text, text.find(stripped))}"
                )
            raise ToolError(
                f"{label}old_text was not found in {shown}{hint}; read the file "
                "and copy the exact text, including indentation"
            )
        count = _count(text, old)
        if count > 1:
            lines: list[str] = []
            at = first
            while at >= 0 and len(lines) < 5:
                lines.append(str(_line_of(text, at)))
                at = text.find(old, at + 1)
            raise ToolError(
                f"{label}old_text is ambiguous: it matches {count} places in "
                f"{shown} (lines {', '.join(lines)}); include more surrounding "
                "text so it matches exactly one"
            )
        spans.append((first, first + len(old), new))
    spans.sort()
    for before, after in itertools.pairwise(spans):
        if after[0] < before[1]:
            raise ToolError(
                f"two edits overlap at line {_line_of(text, after[0])} of {shown}; "
                "merge them into one"
            )
    return spans


def _changed(ctx: ToolContext, args: dict[str, object]) -> tuple[str, str, str, str, int]:
    """What the edit would make of the file, changing nothing: its real path, the path
    as shown, its text before and after, and the number of replacements; ToolError for
    an edit that would be refused."""
    path = ctx.writable(str(args["path"]))
    shown = ctx.show(path)
    if "edits" in args and ("old_text" in args or "new_text" in args):
        raise ToolError("give either old_text/new_text or edits, not both")
    if "edits" in args:
        raw = args["edits"]
        assert isinstance(raw, list)
        edits = [(str(e["old_text"]), str(e["new_text"])) for e in raw]
    elif "old_text" in args and "new_text" in args:
        edits = [(str(args["old_text"]), str(args["new_text"]))]
    else:
        raise ToolError("give old_text and new_text, or edits: a list of such pairs")
    data = read_bytes(path, shown, missing="use write to create it")
    seen = last_seen(ctx.session, shown)
    if seen is not None and seen != digest(data):
        raise ToolError(
            f"{shown} changed since it was last read; read it again before "
            "editing, so the edit is made against what is there now"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{shown} is not UTF-8 text; edit only changes text files") from None
    spans = _plan(text, edits, shown)
    out, at = [], 0
    for start, end, new in spans:
        out.append(text[at:start])
        out.append(new)
        at = end
    out.append(text[at:])
    updated = "".join(out)
    if updated == text:
        raise ToolError(f"the edit would not change {shown}: new_text equals old_text")
    return path, shown, text, updated, len(spans)


def preview(ctx: ToolContext, args: dict[str, object]) -> str:
    """The diff the edit would make, changing nothing (what an approval shows); ToolError
    for an edit that would be refused (old_text not found, ...)."""
    _, shown, text, updated, _ = _changed(ctx, args)
    return unified(text, updated, shown)


def run(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
    from smith._atomic import write_atomic

    path, shown, text, updated, replacements = _changed(ctx, args)
    try:
        write_atomic(path, updated)
    except OSError as exc:  # the temporary file is gone and the original untouched
        raise ToolError(f"{shown} cannot be written: {exc.strerror or exc}") from None
    diff = unified(text, updated, shown)
    encoded = updated.encode("utf-8")
    return ToolResult(
        f"edited {shown} ({replacements} replacement{'s' * (replacements > 1)})\n{diff}",
        mutation="applied",
        details={
            "path": shown,
            "sha256": digest(encoded),
            "diff": diff,
            "replacements": replacements,
        },
    )


_OLD = {
    "type": "string",
    "description": "the exact text to replace, whitespace and line breaks included; it "
    "must occur exactly once in the file",
}
_NEW = {"type": "string", "description": "the text that replaces old_text (may be empty)"}
_PAIR = {
    "type": "object",
    "properties": {"old_text": _OLD, "new_text": _NEW},
    "required": ["old_text", "new_text"],
    "additionalProperties": False,
}

SPEC = ToolSpec(
    "edit",
    "Replace exact text in a UTF-8 file: old_text must match exactly one place, character "
    "for character (read the file first). Several replacements go in edits, applied "
    "together, all or nothing. Returns a diff. Refuses an old_text that is missing or "
    "matches more than once, a change that changes nothing, a file changed since it was "
    "last read, a file that is not UTF-8 text, paths outside the project and protected "
    "paths (.git, .smith, tools.protected).",
    {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "minLength": 1,
                "description": "the file: relative to the working directory, or absolute "
                "inside the project",
            },
            "old_text": _OLD,
            "new_text": _NEW,
            "edits": {
                "type": "array",
                "items": _PAIR,
                "minItems": 1,
                "description": "several {old_text, new_text} replacements in one file, "
                "instead of old_text and new_text; each must match once, none may overlap",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    run,
    effect="writes",
    preview=preview,
    presentation=Presentation("path", "change"),
)
