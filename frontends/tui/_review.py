"""How changes and commands look in the transcript: a change (edit, write) is a summary
line (`edit src/app.py +3 -1`) over a unified diff in the file's syntax colours, a
command (bash) one line with its command, exit status and duration over its output.
Which tool is which is its presentation (smith.effects.Presentation), so a plugin's tool
is shown as the built-ins are. Collapsed, a preview is shown under the summary (a diff's
first lines, a command's last ones: how a test run went); expanded, all of it. Either is
built only when the block is drawn (the transcript caches what it drew). The user's own
`!command` and a running command's live output are shown here too."""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.style import Style
from rich.syntax import Syntax
from rich.text import Text

from smith.effects import Presentation
from smith.text import counted, inert

if TYPE_CHECKING:
    from smith.sdk import Plugin

HINT = " (click or Ctrl+O to show)"
PREVIEW = 6  # lines of a diff a collapsed change shows under its summary
LAST = 4  # lines of output a collapsed command shows (its last ones: a test run's result)
LIVE = 5  # lines of a running command's output shown under its call
THEME = "ansi_dark"  # the terminal's own palette, light or dark
ADDED = Style(color="green", bold=True)
REMOVED = Style(color="red", bold=True)
ADDED_LINE = Style(bgcolor="#12301a")
REMOVED_LINE = Style(bgcolor="#3a1418")


def counts(diff: str) -> tuple[int, int]:
    """Lines added and removed by a unified diff (its ---/+++ headers not counted)."""
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++ "):
            added += 1
        elif line.startswith("-") and not line.startswith("--- "):
            removed += 1
    return added, removed


@functools.lru_cache(maxsize=256)
def lexer_for(path: str) -> str:
    """The pygments lexer for a file name ("text" when none fits); by name only, never by
    guessing from content (slow, and wrong on fragments)."""
    from pygments.lexers import get_lexer_for_filename  # type: ignore[import-untyped]
    from pygments.util import ClassNotFound  # type: ignore[import-untyped]

    try:
        aliases: list[str] = get_lexer_for_filename(os.path.basename(path)).aliases
    except ClassNotFound:
        return "text"
    return aliases[0] if aliases else "text"


def colour_diff(diff: str, path: str, limit: int, more: str | None = None) -> Text:
    """`diff` with its +/- lines marked and their code in the syntax colours of `path`'s
    language; at most `limit` lines (then how many more there are)."""
    lines = inert(diff).rstrip("\n").split("\n")
    shown = lines[:limit]
    # Highlight the code of every line at once (strings and comments spanning lines
    # come out right more often than line by line), then put the markers back.
    code = "\n".join(line[1:] if line[:1] in "+- " else "" for line in shown)
    syntax = Syntax("", lexer_for(path), theme=THEME)
    highlighted = syntax.highlight(code).split("\n", allow_blank=True)
    out = Text()
    for n, line in enumerate(shown):
        if n:
            out.append("\n")
        if line.startswith(("--- ", "+++ ")):
            out.append(f"  {line}", style="bold")
        elif line.startswith("@@"):
            out.append(f"  {line}", style="cyan")
        elif line[:1] in "+- " and n < len(highlighted):
            mark = line[:1]
            body = highlighted[n]
            body.rstrip()
            row = Text("  ")
            row.append(mark, style=ADDED if mark == "+" else REMOVED if mark == "-" else "")
            row.append_text(body)
            if mark in "+-":
                row.stylize(ADDED_LINE if mark == "+" else REMOVED_LINE, 2)
            out.append_text(row)
        else:
            out.append(f"  {line}", style="dim")
    if len(lines) > limit:
        why = more if more is not None else " (the full diff is in the session)"
        out.append(f"\n  … {counted(len(lines) - limit, 'more line')}{why}", style="dim")
    return out


Shown = Mapping[str, Presentation]  # how each tool is shown, by its name


def presentations(plugins: Sequence[Plugin] = ()) -> dict[str, Presentation]:
    """How each tool's calls are shown (ToolSpec.presentation): the built-ins', then
    those of the tools `plugins` contribute."""
    from smith.effects import builtin_tools

    table = {t.name: t.presentation for t in builtin_tools().values()}
    table.update({t.name: t.presentation for p in plugins for t in p.tools})
    return table


@functools.cache
def builtin_presentations() -> Shown:
    return MappingProxyType(presentations())


def call_line(name: str, arguments: Any, shown: Shown | None = None) -> str | None:
    """A call as the assistant's message shows it, by the argument its tool's
    presentation names (`edit PATH`, `bash COMMAND`: a long or multi-line one by the
    start of its first line), or None: its arguments are shown as JSON."""
    presentation = (shown if shown is not None else builtin_presentations()).get(name)
    if presentation is None or presentation.argument is None or not isinstance(arguments, dict):
        return None
    value = arguments.get(presentation.argument)
    if not isinstance(value, str):
        return None
    text = inert(value).strip()
    first = text.split("\n", 1)[0]
    return f"{name} {first[:120]}{' …' if len(first) > 120 or chr(10) in text else ''}"


def _head(message: dict[str, Any], *words: str) -> Text:
    mark, style = ("✗", "red") if message.get("is_error") else ("✓", "green")
    head = Text()
    head.append(f"{mark} ", style=style)
    head.append(inert(str(message.get("tool_name", "?"))), style=f"bold {style}")
    for word in words:
        head.append(f"  {word}" if word else "")
    return head


def duration(seconds: float) -> str:
    """A bash call's time as its summary line shows it: 0.04 s, 1.2 s, 73 s, 2 min 5 s."""
    if seconds < 0.1:
        return f"{seconds:.2f} s"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def render_review(message: dict[str, Any], text: str, expanded: bool, limit: int,
                  shown: Shown | None = None) -> RenderableType | None:  # fmt: skip
    """A result its tool's presentation reviews (a change: edit, write; a command: bash)
    as a review block, or None for any other (or one recorded without the details this
    needs: it is shown as a plain tool result)."""
    table = shown if shown is not None else builtin_presentations()
    presentation = table.get(str(message.get("tool_name")))
    details = message.get("details")
    if presentation is None or not isinstance(details, dict):
        return None
    if presentation.result == "change" and isinstance(details.get("diff"), str):
        return _change(message, details, expanded, limit)
    ended = isinstance(details.get("exit_status"), int) or details.get("cancelled") is True
    if presentation.result == "command" and ended:
        return _command(message, details, text, expanded, limit)
    return None


def _change(message: dict[str, Any], details: dict[str, Any], expanded: bool, limit: int
            ) -> RenderableType:  # fmt: skip
    path = str(details.get("path") or "?")
    diff = str(details["diff"])
    added, removed = counts(diff)
    created = details.get("created") is True
    head = _head(message, f"created {inert(path)}" if created else inert(path))
    if created:
        head.append(f"  +{added} line{'s' * (added != 1)}", style=ADDED)
    else:
        head.append(f" +{added}", style=ADDED)
        if removed or message.get("tool_name") == "edit":
            head.append(f" -{removed}", style=REMOVED)
    if not diff:
        if not created:
            head.append("  (no change)", style="dim")
        return head
    if expanded:
        return Group(head, colour_diff(diff, path, limit))
    # Collapsed: its first lines, the file names the summary has already said left out.
    body = "".join(line for line in diff.splitlines(keepends=True)
                   if not line.startswith(("--- ", "+++ ")))  # fmt: skip
    preview = colour_diff(body, path, PREVIEW, more=HINT)
    return Group(head, preview)


def status_line(details: dict[str, Any]) -> tuple[str, str]:
    """How a command ended, and its style: exit 0, exit 2, signal 9, timed out, aborted."""
    if details.get("cancelled") is True:
        return "aborted", "bold yellow"
    code = details.get("exit_status")
    code = code if isinstance(code, int) else 0
    status = "timed out" if details.get("timed_out") else (
        f"signal {-code}" if code < 0 else f"exit {code}")  # fmt: skip
    return status, "green" if code == 0 and not details.get("timed_out") else "bold red"


# The notes bash adds after the output: the summary line says them already.
_NOTES = ("[exit status ", "[killed by signal ", "[cancelled: the call was aborted]")


def output_lines(text: str) -> list[str]:
    """A command's output as lines, without the note of how it ended at its end."""
    lines = inert(text).rstrip("\n").splitlines()
    if lines and lines[-1].startswith(_NOTES) and lines[-1].endswith("]"):
        lines.pop()
    return lines


def _command(message: dict[str, Any], details: dict[str, Any], text: str, expanded: bool,
             limit: int) -> RenderableType:  # fmt: skip
    command = inert(str(details.get("command") or "")).strip()
    first = command.split("\n", 1)[0]
    if len(first) > 80 or "\n" in command:
        first = first[:80] + " …"
    status, style = status_line(details)
    took = details.get("duration")
    head = _head(message, first)
    head.append(f"  {status}", style=style)
    if isinstance(took, int | float):
        head.append(f"  {duration(float(took))}", style="dim")
    lines = output_lines(text)
    if not lines:
        return head
    if expanded:
        body = "\n".join(f"  {line}" for line in lines[:limit])
        if len(lines) > limit:
            more = counted(len(lines) - limit, "more line")
            body += f"\n  … {more} (the full output is in the session)"
        return Group(head, Text(body, style="dim"))
    # Collapsed: its last lines, where a test run or a build says how it went.
    shown = lines[-LAST:]
    more = f"  … {counted(len(lines) - LAST, 'earlier line')}{HINT}\n" if len(lines) > LAST else ""
    return Group(head, Text(more + "\n".join(f"  {line}" for line in shown), style="dim"))


def folded(lines: list[str], expanded: bool, edge: int, limit: int) -> str:
    """`lines` indented, at most `edge` first and `edge` last when collapsed with a line
    saying how many are folded between them (all, up to `limit`, when expanded)."""
    if expanded:
        body = lines[:limit]
        more = f"… {counted(len(lines) - limit, 'more line')}" if len(lines) > limit else ""
    elif len(lines) > 2 * edge:
        hidden = len(lines) - 2 * edge
        body = [*lines[:edge], f"… {counted(hidden, 'more line')}{HINT}", *lines[-edge:]]
        more = ""
    else:
        body, more = lines, ""
    return "\n".join(f"  {line}" for line in [*body, *([more] if more else [])])


def render_shell(command: str, result: dict[str, Any], expanded: bool, limit: int,
                 edge: int = 20) -> RenderableType:  # fmt: skip
    """The user's own `!command` once it ended: the command echoed, its output (the
    first and last `edge` lines when collapsed, all when expanded) and how it ended."""
    details = result.get("details") if isinstance(result.get("details"), dict) else {}
    assert isinstance(details, dict)
    head = Text()
    head.append("$ ", style="bold magenta")
    head.append(inert(command.strip()), style="bold")
    lines = output_lines(str(result.get("text") or ""))
    if not details:  # not run (aborted before it started) or refused: its text says why
        return Group(head, Text(folded(lines, expanded, edge, limit), style="red"))
    status, style = status_line(details)
    end = Text("  ")
    end.append(status, style=style)
    took = details.get("duration")
    if isinstance(took, int | float):
        end.append(f"  {duration(float(took))}", style="dim")
    if not lines:
        return Group(head, end)
    return Group(head, Text(folded(lines, expanded, edge, limit)), end)


def render_running(line: str, tail: str, bytes_out: int) -> RenderableType:
    """A running call's line with the last lines of what it printed so far (a `tool_update`
    tail: a carriage return starts its line over, as a terminal shows it)."""
    call = Text(f"… {line}", style="yellow")
    lines = [row.rsplit("\r", 1)[-1] for row in tail.split("\n")]
    if bytes_out > len(tail.encode()) and len(lines) > 1:
        lines = lines[1:]  # its first line is cut
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        return call
    shown = "\n".join(f"  {inert(row)[:300]}" for row in lines[-LIVE:])
    return Group(call, Text(shown, style="dim"))
