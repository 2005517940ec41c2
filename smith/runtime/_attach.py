"""`@path` attachments: a file named in a sent message goes with it to the model.

Every mode sends input through `smith.runtime._hooks.accept_inputs`, and that is where
this runs (after templates and the input hook, on the text as it will be sent), so the
app, `smith eval "explain @src/app.py"`, RPC prompts and the library all do the same.

A word `@PATH` (at the start or after whitespace; trailing punctuation .,;:!?)]}'"
is not part of it) names a file. It is read with the read tool, through the effect
journal with the user as its cause, so it is confined to the project and bounded like
any read (tools.read.max-lines, tools.read.max-bytes) and recorded like one: a later
edit's staleness check knows the file was seen. What is attached goes into the user
message as one more text part per file, after the typed text (which stays as typed):

    <attached path="src/app.py" lines="1-40 of 40">
    ...the file's lines...
    </attached>

(a window the bounds cut says `cut="yes"` and ends with the read tool's hint to
continue with an offset)
and the message notes it: `"attached": [{"path", "lines", "bytes", "cut"}]`. What a
plugin's `input` handler attaches (TransformInput.attach: an MCP resource an
`@alias:uri` names) goes the same way (`attached_by`), its note naming the plugin. An image
file (PNG, JPEG, GIF, WebP) is attached as an image part instead (stored once in the
session, smith.runtime._images; noted `{"path", "image", "bytes"}`), for a model that
takes images; for any other it stays as typed, with the warning below. A path
that cannot be attached (missing, a directory, binary, outside the project) stays as
typed and a warning (`input.attach-failed`) says why. Input with no `@` costs nothing.
A word `@NAME:SCHEME:...` (`@files:notes://readme`) is an MCP resource's mention, the
mcp plugin's to attach, never a path (`@./files:x:y` names such a file).
"""

from __future__ import annotations

import asyncio
import os
import re
from typing import TYPE_CHECKING, Any

from smith.diagnostics import DiagnosticKind, Source

if TYPE_CHECKING:
    from collections.abc import Sequence

    from smith.runtime._loopctx import LoopContext

ATTACH_FAILED = DiagnosticKind(
    "input.attach-failed",
    severity="warning",
    what="'@{path}' was not attached: {reason}",
    why="an @path attaches a readable text file inside the project, read as the read tool reads it",
    fix="name a text file inside the project (relative to the working directory); the "
    "message was sent with '@{path}' as typed",
)

_MENTION = re.compile(r"(?:^|(?<=\s))@([^\s@]+)")
# `@alias:uri`: a resource of the MCP server `alias` (the mcp plugin attaches it).
RESOURCE = re.compile(r"([A-Za-z0-9_.-]+):([A-Za-z][A-Za-z0-9+.-]*:\S+)")
_TRAILING = ".,;:!?)]}'\""
# A path `@PATH` can name: what _MENTION takes whole, not ending in what it leaves off.
_MENTIONABLE = re.compile(r"[^\s@]*[^\s@" + re.escape(_TRAILING) + "]")

Part = dict[str, Any]
Attached = dict[str, object]


def mentions(text: str) -> list[str]:
    """The paths `text` names with `@PATH`, each once, in order."""
    found: dict[str, None] = {}
    for match in _MENTION.finditer(text):
        path = match.group(1).rstrip(_TRAILING)
        if path and not RESOURCE.fullmatch(path):
            found.setdefault(path, None)
    return list(found)


def resource_mentions(text: str) -> list[tuple[str, str]]:
    """The (alias, uri) of each `@alias:uri` in `text`, each once, in order."""
    found: dict[tuple[str, str], None] = {}
    for match in _MENTION.finditer(text):
        named = RESOURCE.fullmatch(match.group(1).rstrip(_TRAILING))
        if named:
            found.setdefault((named.group(1), named.group(2)), None)
    return list(found)


def attached_by(
    rt: LoopContext, given: Sequence[tuple[str, Sequence[tuple[str, str]]]]
) -> tuple[list[Part], list[Attached]]:
    """The parts and notes of what plugins attach to an input ((plugin, TransformInput's
    (name, text) pairs) each): each as an attached file is, cut at the result limit."""
    from smith.runtime._runner import truncate

    parts: list[Part] = []
    notes: list[Attached] = []
    for plugin, name, body in ((p, n, b) for p, pairs in given for n, b in pairs):
        whole = str(rt.secrets.redact(body))
        text = truncate(whole, rt.limits.result_bytes)
        cut = text != whole
        total = len(whole.splitlines())
        lines = f"1-{len(text.splitlines()) - cut} of {total}"  # less truncate's marker
        mark = ' cut="yes"' if cut else ""
        tag = f'<attached path="{name}" lines="{lines}"{mark}>'
        parts.append({"type": "text", "text": f"{tag}\n{text.rstrip(chr(10))}\n</attached>"})
        notes.append({"path": name, "lines": lines, "bytes": len(body.encode()), "cut": cut,
                      "plugin": plugin})  # fmt: skip
    return parts, notes


def mentionable(path: str) -> bool:
    """Whether `@path` names `path` (no whitespace or @ in it, no punctuation the
    parser leaves off at its end): the app completes only such paths."""
    return _MENTIONABLE.fullmatch(path) is not None


async def attachments(rt: LoopContext, text: str) -> tuple[list[Part], list[Attached]]:
    """The content parts and notes of the files `text` names; ([], []) for none."""
    parts: list[Part] = []
    notes: list[Attached] = []
    for path in mentions(text):
        found = await asyncio.to_thread(_read, rt, path)
        if isinstance(found, str):
            source = Source(rt.surface, "prompt")
            rt.error(ATTACH_FAILED(value=path, source=source, path=path, reason=found))
            continue
        parts.append(found[0])
        notes.append(found[1])
    return parts, notes


def _read(rt: LoopContext, path: str) -> tuple[Part, Attached] | str:
    """The part and note of `path`, read as a recorded read effect of the user; or why
    it cannot be attached."""
    from smith.effects import run_tool
    from smith.effects.tools.read import SPEC

    ctx = rt.context.for_call()
    outcome = run_tool(rt.journal, SPEC, {"path": path}, ctx, cause={"attached": True})
    result = outcome.result
    if not result.ok:
        return str(rt.secrets.redact(result.text))
    details = result.details
    shown = str(details.get("path", path))
    if result.image is not None:  # an image file: attached as the image itself
        return _image(rt, shown, result.image)
    total, last = details.get("lines", 0), details.get("last", 0)
    body = result.text  # a cut window ends with the read tool's hint to continue
    cut = last != total or "[... line cut:" in body
    text = str(rt.secrets.redact(body))
    lines = f"1-{last} of {total}"
    mark = ' cut="yes"' if cut else ""
    tag = f'<attached path="{shown}" lines="{lines}"{mark}>'
    part: Part = {"type": "text", "text": f"{tag}\n{text.rstrip(chr(10))}\n</attached>"}
    note: Attached = {"path": shown, "lines": lines, "bytes": len(body.encode()), "cut": cut}
    return part, note


def _image(rt: LoopContext, shown: str, image: tuple[str, bytes]) -> tuple[Part, Attached] | str:
    from smith.runtime._images import Image, image_part, takes_images

    if not takes_images(rt.current.provider):
        return f"it is an image and the model {rt.current.model} does not take image input"
    media_type, data = image
    part = image_part(rt.session, Image(data, media_type, os.path.basename(shown)))
    return part, {"path": shown, "image": media_type, "bytes": len(data)}


__all__ = [
    "ATTACH_FAILED",
    "attached_by",
    "attachments",
    "mentionable",
    "mentions",
    "resource_mentions",
]
