"""How transcript entries look: one Rich renderable per message, built from untrusted
text made inert first (escape and control characters are shown, never sent to the
terminal)."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group, RenderableType
from rich.markdown import Markdown
from rich.text import Text

from smith.runtime import image_chip
from smith.text import inert

from ._review import Shown, call_line, render_review

TOOL_LINES = 6  # lines of a tool result shown under its call
HYPERLINKS = False  # OSC 8 links in answers (tui.hyperlinks)
EXPANDED_LINES = 500  # ... when expanded (the full output is in the session)


def _parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The message's content parts, whatever shape it was recorded in: a plain string is
    one text part, anything that is not a part is skipped."""
    content = message.get("content", [])
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return []
    return [p for p in content if isinstance(p, dict)]


def _texts(message: dict[str, Any], kind: str) -> str:
    return "".join(str(p.get("text") or "") for p in _parts(message) if p.get("type") == kind)


def render_message(
    message: dict[str, Any],
    expanded: bool = False,
    *,
    streaming: bool = False,
    shown: Shown | None = None,
) -> RenderableType | None:
    """A message; `expanded` shows thinking and tool results in full; `streaming` shows
    text plain (it is still arriving); `shown`: how each tool's calls are shown (the
    built-ins' when None)."""
    role = message.get("role")
    if role == "user":
        label = Text("you ", style="bold cyan")
        images = [p for p in _parts(message) if p.get("type") == "image"]
        chips = [(" " + inert(image_chip(p, n)), "magenta") for n, p in enumerate(images, 1)]
        return Text.assemble(label, inert(_texts(message, "text")), *chips)
    if role == "assistant":
        return _assistant(message, expanded, streaming, shown)
    if role == "tool_result":
        return _tool_result(message, expanded, shown)
    return None


def plain_text(message: dict[str, Any]) -> str:
    """What search looks through: every text, thinking and tool call of a message."""
    parts = [p.get("text") or "" for p in _parts(message) if "text" in p]
    parts += [json.dumps(p.get("arguments"), ensure_ascii=False, default=str)
              for p in _parts(message) if p.get("type") == "tool_call"]  # fmt: skip
    return "\n".join(str(p) for p in parts)


def _assistant(
    message: dict[str, Any], expanded: bool, streaming: bool, shown: Shown | None
) -> RenderableType:
    parts: list[RenderableType] = []
    thinking = _texts(message, "thinking").strip()
    if thinking and expanded:
        parts.append(Text(f"thinking: {inert(thinking)}", style="dim italic"))
    elif thinking:
        first = inert(thinking.splitlines()[0])[:100]
        more = len(thinking.splitlines()) - 1
        note = f" (+{more} lines; click or Ctrl+O to show)" if more else ""
        parts.append(Text(f"thinking: {first}{note}", style="dim italic"))
    text = _texts(message, "text")
    if text.strip():
        if streaming:
            parts.append(Text(inert(text)))
        else:
            parts.append(render_markdown(text if expanded else fold_code(text)))
    for part in _parts(message):
        if part.get("type") == "tool_call":
            name = inert(str(part.get("name", "?")))
            line = call_line(name, part.get("arguments"), shown)
            if line is None:
                args = inert(json.dumps(part.get("arguments"), ensure_ascii=False, default=str))
                line = f"{name} {args[:160]}"
            parts.append(Text(f"→ {line}", style="yellow"))
    stop = message.get("stop")
    if stop in ("error", "abort", "limit"):
        why = inert(str(message.get("error") or stop))
        parts.append(Text(f"[{stop}] {why}", style="red" if stop == "error" else "dim"))
    return Group(Text("smith", style="bold green"), *parts)


def _tool_result(message: dict[str, Any], expanded: bool, shown: Shown | None) -> RenderableType:
    review = render_review(message, _texts(message, "text"), expanded, EXPANDED_LINES, shown)
    if review is not None:  # an edit, write or bash: a summary line over its diff or output
        return review
    text = inert(_texts(message, "text")).rstrip("\n")
    lines = text.splitlines()
    limit = EXPANDED_LINES if expanded else TOOL_LINES
    body = "\n".join(f"  {line}" for line in lines[:limit])
    hint = "" if expanded else " (click or Ctrl+O to show)"
    more = f"\n  … {len(lines) - limit} more lines{hint}" if len(lines) > limit else ""
    mark, style = ("✗", "red") if message.get("is_error") else ("✓", "green")
    head = Text(f"{mark} {inert(str(message.get('tool_name', '?')))}", style=style)
    return Group(head, Text(body + more, style="dim"))


CODE_LINES = 30  # lines of a code block shown before it folds (Ctrl+O shows it all)
CODE_THEME = "monokai"


def render_markdown(text: str) -> RenderableType:
    """An answer's Markdown, with fenced code in its language's colours."""
    return Markdown(inert(text), hyperlinks=HYPERLINKS, code_theme=CODE_THEME)


def fold_code(text: str, limit: int = CODE_LINES) -> str:
    """`text` with each fenced code block longer than `limit` lines cut to its first
    `limit`, and a line saying how many more there are (the block stays closed)."""
    if "```" not in text:
        return text
    out: list[str] = []
    inside, seen, hidden = False, 0, 0
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            if inside and hidden:
                out.append(f"… {hidden} more lines (click or Ctrl+O to show)")
            inside, seen, hidden = not inside, 0, 0
            out.append(line)
        elif inside and seen >= limit:
            hidden += 1
        else:
            seen += inside
            out.append(line)
    return "\n".join(out)


def settle_point(text: str, done: int, least: int) -> int:
    """Where a streaming answer may be cut into a settled part: just after the last
    paragraph end at least `least` characters past `done` that is outside any fenced
    code block (a part drawn as Markdown must not end inside one); 1 when none is."""
    cut = text.rfind("\n\n", done + least)
    while cut >= done + least and text.count("```", done, cut) % 2:
        cut = text.rfind("\n\n", done + least, cut)
    return cut + 2 if cut >= done + least else 1


def render_notice(text: str, style: str = "bold yellow") -> RenderableType:
    return Text(inert(text), style=style)


def render_tool_activity(
    name: str, arguments: Any, state: str, shown: Shown | None = None
) -> RenderableType:
    line = call_line(inert(name), arguments, shown)  # edit PATH, bash COMMAND
    if line is None:
        line = f"{inert(name)} {inert(json.dumps(arguments, ensure_ascii=False))[:160]}"
    return Text(f"{state} {line}", style="yellow")
