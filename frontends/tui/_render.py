"""How transcript entries look: one Rich renderable per message, built from untrusted
text made inert first (escape and control characters are shown, never sent to the
terminal)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, ClassVar

from markdown_it import MarkdownIt
from rich.console import Group, RenderableType
from rich.markdown import Markdown
from rich.text import Text

from smith.runtime import image_chip
from smith.text import counted, inert

from ._mentions import attachment_lines, typed_text
from ._review import Shown, call_line, render_review, render_running, render_shell

if TYPE_CHECKING:
    from collections.abc import Callable

    from ._transcript import Transcript

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
    """A message; `expanded` shows thinking and tool results in full; `streaming`: it is
    still arriving (its code blocks are not folded); `shown`: how each tool's calls are
    shown (the built-ins' when None)."""
    role = message.get("role")
    if role == "user":
        label = Text("you ", style="bold cyan")
        images = [p for p in _parts(message) if p.get("type") == "image"]
        chips = [(" " + inert(image_chip(p, n)), "magenta") for n, p in enumerate(images, 1)]
        said = Text.assemble(label, inert(typed_text(message)), *chips)
        files = attachment_lines(message)  # what its @paths attached: a line each
        if not files:
            return said
        return Group(said, *(Text(f"  ↳ {inert(line)}", style="dim cyan") for line in files))
    if role == "assistant":
        return _assistant(message, expanded, streaming, shown)
    if role == "tool_result":
        return _tool_result(message, expanded, shown)
    return None


def plain_text(message: dict[str, Any]) -> str:
    """What search looks through: every text, thinking and tool call of a message (of a
    user's, what was typed: not the files it attached, which are not shown)."""
    if message.get("role") == "user":
        return typed_text(message)
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
        note = f" (+{counted(more, 'line')}; click or Ctrl+O to show)" if more else ""
        parts.append(Text(f"thinking: {first}{note}", style="dim italic"))
    text = _texts(message, "text")
    if text.strip():  # (a code block still being written is not folded yet)
        parts.append(render_markdown(text if expanded or streaming else fold_code(text)))
    for part in _parts(message):
        if part.get("type") == "tool_call":
            name = inert(str(part.get("name", "?")))
            line = call_line(name, part.get("arguments"), shown)
            if line is None:
                args = inert(json.dumps(part.get("arguments"), ensure_ascii=False, default=str))
                line = f"{name} {args[:160]}"
            parts.append(Text(f"→ {line}", style="yellow"))
    stop = message.get("stop")
    if stop == "abort":
        parts.append(Text(INTERRUPTED, style="bold yellow"))
    elif stop in ("error", "limit"):
        why = inert(str(message.get("error") or stop))
        parts.append(Text(f"[{stop}] {why}", style="red" if stop == "error" else "dim"))
    return Group(Text("smith", style="bold green"), *parts)


INTERRUPTED = "interrupted: the turn was stopped (send a message to go on)"


def interrupted(data: dict[str, Any]) -> bool:
    """Whether an `agent_end` needs the line saying the turn was stopped: an abort whose
    last message does not say so already (one stopped while it streamed does)."""
    message = data.get("message")
    said = isinstance(message, dict) and message.get("stop") == "abort"
    return data.get("stop") == "abort" and not said


def _tool_result(message: dict[str, Any], expanded: bool, shown: Shown | None) -> RenderableType:
    review = render_review(message, _texts(message, "text"), expanded, EXPANDED_LINES, shown)
    if review is not None:  # an edit, write or bash: a summary line over its diff or output
        return review
    text = inert(_texts(message, "text")).rstrip("\n")
    lines = text.splitlines()
    limit = EXPANDED_LINES if expanded else TOOL_LINES
    body = "\n".join(f"  {line}" for line in lines[:limit])
    hint = "" if expanded else " (click or Ctrl+O to show)"
    more = f"\n  … {counted(len(lines) - limit, 'more line')}{hint}" if len(lines) > limit else ""
    mark, style = ("✗", "red") if message.get("is_error") else ("✓", "green")
    from ._subagents import named  # a task's result: with its description

    head = Text(f"{mark} {named(str(message.get('tool_name', '?')), message.get('details'))}",
                style=style)  # fmt: skip
    return Group(head, Text(body + more, style="dim"))


CODE_LINES = 30  # lines of a code block shown before it folds (Ctrl+O shows it all)
CODE_THEME = "monokai"


class _Markdown(Markdown):
    """Rich's Markdown parsed by one shared parser: Rich builds a new MarkdownIt for every
    instance (0.3 ms, most of the cost of drawing a streaming paragraph, 60 times a
    second). The attributes are the ones Rich's __init__ sets (tests/test_tui_markdown.py
    checks both draw the same)."""

    _parser: ClassVar[MarkdownIt | None] = None

    def __init__(self, markup: str, code_theme: str, hyperlinks: bool) -> None:
        parser = _Markdown._parser
        if parser is None:
            parser = _Markdown._parser = MarkdownIt().enable("strikethrough").enable("table")
        self.markup = markup
        self.parsed = parser.parse(markup)
        self.code_theme = code_theme
        self.justify = None
        self.style = "none"
        self.hyperlinks = hyperlinks
        self.inline_code_lexer = None
        self.inline_code_theme = code_theme


def render_markdown(text: str) -> RenderableType:
    """An answer's Markdown, with fenced code in its language's colours."""
    return _Markdown(inert(text), CODE_THEME, HYPERLINKS)


def render_live(text: str) -> RenderableType:
    """The paragraph of an answer being written: Markdown as it arrives (a heading, an
    emphasis, a table row drawn as soon as its characters are there); benchmarks/
    bench_tui.py measures its frames against plain text's."""
    return render_markdown(text)


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
                out.append(f"… {counted(hidden, 'more line')} (click or Ctrl+O to show)")
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


def render_handled(content: dict[str, Any]) -> RenderableType:
    """A prompt a plugin handled as its command (an `input_handled` entry): what was
    typed, then the plugin's reply, or in red why the command failed."""
    typed = Text(inert(str(content.get("text") or "")), style="bold")
    typed.append(f"  ({inert(str(content.get('plugin') or ''))})", style="dim")
    if content.get("error"):
        return Group(typed, Text(inert(f"failed: {content['error']}"), style="red"))
    reply = content.get("reply")
    return Group(typed, Text(inert(str(reply)))) if reply else typed


def tool_line(name: str, arguments: Any, shown: Shown | None = None) -> str:
    line = call_line(inert(name), arguments, shown)  # edit PATH, bash COMMAND
    if line is None:
        line = f"{inert(name)} {inert(json.dumps(arguments, ensure_ascii=False))[:160]}"
    return line


def render_tool_activity(
    name: str, arguments: Any, state: str, shown: Shown | None = None
) -> RenderableType:
    return Text(f"{state} {tool_line(name, arguments, shown)}", style="yellow")


SHELL_HEAD = "The user ran this command in the project's shell:\n"


def render_shell_note(content: dict[str, Any], expanded: bool) -> RenderableType:
    """A recorded `!command` (a `shell` entry: smith.runtime._shell) drawn as it was when
    it ran: the command, its output, how it ended (a record from before `details` were
    kept says its outcome)."""
    command = str(content.get("command") or "")
    text = str(content.get("text") or "")
    head = f"{SHELL_HEAD}$ {command}\n"
    output = text[len(head) :] if text.startswith(head) else text
    details = content.get("details")
    if not isinstance(details, dict) or not details:
        outcome = str(content.get("outcome") or "ok")
        details = {"exit_status": 0} if outcome == "ok" else {"exit_status": 1}
    return render_shell(command, {"text": output, "details": details}, expanded, EXPANDED_LINES)


class ToolLines:
    """Running calls in the transcript (`tool_activity` intents), a block per call: its
    line while it runs, with the last lines of its output as they arrive (`tool_update`),
    then how it ended until its recorded result takes its place. The user's own
    `!command` is echoed with its output (folded when long; click or Ctrl+O shows it
    all); its record (a `shell` entry, or `shell_private` for `!!`) takes its place as a
    result's does (`shells`: the blocks waiting for one)."""

    def __init__(self, transcript: Callable[[], Transcript], shown: Shown) -> None:
        self.transcript = transcript
        self.shown = shown
        self.calls: dict[str, tuple[str, Any]] = {}  # running call id -> (its line, arguments)
        self.shells: set[str] = set()  # the blocks of `!command`s a record will replace
        self.steps: dict[str, list[str]] = {}  # a running task call's child's latest steps

    def child(self, key: str, call: str, event: dict[str, Any]) -> None:
        """A running task call's sub-agent did something: its block shows the latest."""
        from ._subagents import STEPS, child_step, render_child_running

        step = child_step(event)
        if step is None:
            return
        steps = self.steps.setdefault(call, [])
        steps[:] = [*steps[-(STEPS - 1) :], step]
        line, shown = self.calls[call][0], list(steps)
        self.transcript().add(key, lambda: render_child_running(line, shown))

    def show(self, data: dict[str, Any]) -> None:
        key, call = f"tool-{data['tool_call_id']}", str(data["tool_call_id"])
        phase = data["phase"]
        if phase == "start":
            line = tool_line(data["name"], data.get("arguments"), self.shown)
            self.calls[call] = (line, data.get("arguments"))
            self.transcript().add(key, lambda: Text(f"… {line}", style="yellow"))
        elif phase == "update" and call in self.calls:
            update = data.get("update")
            if isinstance(update, dict) and isinstance(update.get("child"), dict):
                self.child(key, call, update["child"])  # a task call's sub-agent
                return
            tail = update.get("tail") if isinstance(update, dict) else None
            if isinstance(tail, str):
                line, size = self.calls[call][0], update.get("output_bytes")  # type: ignore[union-attr]
                size = size if isinstance(size, int) else len(tail.encode())
                self.transcript().add(key, lambda: render_running(line, tail, size))
        elif phase == "end":
            self.steps.pop(call, None)
            _, arguments = self.calls.pop(call, ("", None))
            result = data["result"]
            if isinstance(data.get("shell"), dict):  # the user's own command: a `shell`
                self.shells.add(key)  # (or `shell_private`, for `!!`) entry records it
                command = str(arguments.get("command") if isinstance(arguments, dict) else "")
                self.transcript().add(
                    key, lambda expanded: render_shell(command, result, expanded, EXPANDED_LINES),
                    expandable=True)  # fmt: skip
                return
            mark = "✗" if data["is_error"] else "✓"
            text = str(result.get("text") or "").strip()
            first = inert(text.splitlines()[0][:120] if text else "")
            from ._subagents import named

            name = named(str(data["name"]), result.get("details"))
            self.transcript().add(key, lambda: Text(f"{mark} {name}: {first}",
                                                    style="dim"))  # fmt: skip
