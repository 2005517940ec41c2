"""How the app draws a recorded entry in the transcript (a message, a compaction, how a
question ended, the user's own command) and the plain text it is searched by."""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType

from ._intents import question_text, render_question
from ._render import plain_text, render_handled, render_message, render_notice, render_shell_note
from ._review import Shown

SHELL_KINDS = ("shell", "shell_private")  # a user's !command and !!command


def render_entry(entry: Any, expanded: bool, *, shown: Shown) -> RenderableType | None:
    content = entry.content
    if entry.kind == "compaction" and isinstance(content, dict):
        summary = content.get("summary", "")
        return render_notice(f"— earlier context compacted: {summary}", "dim")
    if entry.kind == "question" and isinstance(content, dict):
        return render_question(content)
    if entry.kind in SHELL_KINDS and isinstance(content, dict):
        return render_shell_note(content, expanded)
    if entry.kind == "input_handled" and isinstance(content, dict):
        return render_handled(content)
    if isinstance(content, dict):
        drawn: RenderableType | None = render_message(content, expanded, shown=shown)
        return drawn
    return None


def entry_text(entry: Any) -> str:
    content = entry.content
    if entry.kind == "question" and isinstance(content, dict):
        return question_text(content)
    if entry.kind in SHELL_KINDS and isinstance(content, dict):
        return str(content.get("text", ""))
    if entry.kind == "input_handled" and isinstance(content, dict):
        said = content.get("error") or content.get("reply") or ""
        return f"{content.get('text', '')}\n{said}"
    if isinstance(content, dict):
        return plain_text(content) if "role" in content else str(content.get("summary", ""))
    return ""
