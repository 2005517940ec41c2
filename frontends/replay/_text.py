"""Replayed events for people: a terminal transcript as it plays, and markdown.

`Transcript` prints each event as it arrives (the answer streams; tools, stops and
re-execution reports get one line each). `markdown` renders a whole timeline at once;
`smith mcp` serves sessions in that form.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TextIO, cast

from smith.runtime import image_chip
from smith.text import inert, replace_surrogates

if TYPE_CHECKING:
    from ._timeline import Timeline

MARKS = {"same": "=", "diverged": "≠", "unknown": "?", "skipped": "-"}


TODO_MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


def _first_line(text: str, width: int = 160) -> str:
    lines = text.strip().splitlines()
    return lines[0][:width] if lines else ""


def _arguments(arguments: object, width: int = 200) -> str:
    return json.dumps(arguments, ensure_ascii=False)[:width]


class Transcript:
    """Prints replayed events (and re-execution reports) as a readable transcript."""

    def __init__(self, out: TextIO, *, first_turn: int = 1) -> None:
        self.out = out
        self.turn = first_turn - 1
        self.role = ""
        self.channel = ""
        self.at_line_start = True
        self.told: set[str] = set()  # the lines of the last environment block shown
        self.nested: dict[str, Transcript] = {}  # each child agent's, by its call's id

    def write(self, text: str) -> None:
        if text:
            # Recorded model and tool output: shown, not obeyed; a lone surrogate (an id
            # of bytes that are not UTF-8) as U+FFFD, which a strict stdout can write.
            self.out.write(inert(replace_surrogates(text)[0]))
            self.out.flush()
            self.at_line_start = text.endswith("\n")

    def line(self, text: str) -> None:
        if not self.at_line_start:
            self.write("\n")
        self.write(text + "\n")

    def __call__(self, item: dict[str, Any]) -> None:
        kind = item["type"]
        if kind == "agent_start":
            self.turn += 1
            self.line(f"── turn {self.turn} " + "─" * 40)
        elif kind == "message_start":
            self.role, self.channel = item["role"], ""
        elif kind == "message_delta":
            self.delta(item)
        elif kind == "message_end":
            if not self.at_line_start:
                self.write("\n")
            for chip in chips(item.get("message")):  # the images a user message attached
                self.line("  " + chip)
        elif kind == "tool_start":
            self.line(f"→ {item['name']} {_arguments(item['arguments'])}")
        elif kind == "tool_end":
            self.tool_end(item)
        elif kind == "tool_update" and isinstance(item["update"].get("child"), dict):
            self.child(item)  # a child agent's event (frontends/replay/_children.py)
        elif kind == "todo":  # the agent's todo list as a call left it (docs/plan.md)
            for todo in item["items"]:
                mark = TODO_MARKS.get(str(todo.get("status")), "[ ]")
                self.line(f"  {mark} {_first_line(str(todo.get('content', '')))}")
        elif kind == "compaction_end":
            self.line(f"[compacted the context; {item.get('tokens_before')} tokens before]")
        elif kind == "environment":
            self.environment(str(item["text"]))
        elif kind == "instructions":
            self.line(f"[told the model the instructions of {item.get('path')}]")
        elif kind == "agent_end" and item["stop"] not in ("end", "done"):
            error = f": {item['error']}" if item.get("error") else ""
            self.line(f"[stopped: {item['stop']}{error}]")
        elif kind in ("intent_answered", "intent_refused"):
            self.line(answered(item))
        elif kind == "input_handled":  # a plugin's command: typed, then its reply or error
            typed, reply = handled(item)
            self.line(f"> {typed}  ({item.get('plugin') or ''})".replace("\n", "\n  "))
            if reply:
                self.line("  " + reply.replace("\n", "\n  "))
        elif kind == "reexecute":
            self.report(item)

    def child(self, item: dict[str, Any]) -> None:
        """A child agent's event, shown as its own transcript indented under the call."""
        nested = self.nested.get(item["tool_call_id"])
        if nested is None:
            if not self.at_line_start:
                self.write("\n")
            nested = Transcript(cast("TextIO", _Indented(self)))
            self.nested[item["tool_call_id"]] = nested
            nested.told = self.told  # the environment the parent was told is not repeated
        nested(item["update"]["child"])

    def environment(self, text: str) -> None:
        """The block the model was told: whole the first time, then what changed."""
        lines = [line for line in text.strip().splitlines() if not line.startswith("<")]
        changed = [line for line in lines if line not in self.told]
        first = not self.told
        self.told = set(lines)
        if changed:
            head = "[the model was told its environment]" if first else "[environment now]"
            self.line("\n  ".join([head, *changed]))

    def delta(self, item: dict[str, Any]) -> None:
        text = str(item["delta"])
        if self.role == "user":
            self.line("> " + text.replace("\n", "\n  "))
            return
        if item["channel"] != self.channel:
            self.channel = item["channel"]
            if not self.at_line_start:
                self.write("\n")
            if self.channel == "thinking":
                self.write("(thinking) ")
        self.write(text)

    def tool_end(self, item: dict[str, Any]) -> None:
        result = item["result"]
        if item["outcome"] == "unknown":
            self.line(f"? {item['name']}: outcome unknown ({_first_line(result['text'])})")
            return
        mark = "✗" if item["is_error"] else "✓"
        self.line(f"{mark} {item['name']}: {_first_line(result['text'])}")

    def report(self, item: dict[str, Any]) -> None:
        status = item["status"]
        head = f"  {MARKS[status]} {item['tool']} ({item['effect']})"
        if status == "same":
            self.line(f"{head}: re-run, same output")
        elif status == "diverged":
            self.line(f"{head}: re-run, diverged:")
            for field in item["differs"]:
                expected = _first_line(json.dumps(item["expected"][field], ensure_ascii=False))
                actual = _first_line(json.dumps(item["actual"][field], ensure_ascii=False))
                self.line(f"      {field}: expected {expected}")
                self.line(f"      {' ' * len(field)}  actual   {actual}")
        else:
            self.line(f"{head}: not re-run ({status}): {item['reason']}")


class _Indented:
    """Where a child's transcript writes: the parent's, each line behind a bar."""

    def __init__(self, parent: Transcript) -> None:
        self.parent = parent

    def write(self, text: str) -> int:
        for piece in text.splitlines(keepends=True):
            if self.parent.at_line_start:
                self.parent.write("  │ ")
            self.parent.write(piece)
        return len(text)

    def flush(self) -> None:
        self.parent.out.flush()


def answered(item: dict[str, Any]) -> str:
    """A recorded question and how it ended, on one line."""
    asked = f'? {item.get("origin") or "smith"} asked "{item.get("text", "")}"'
    if item["type"] == "intent_refused":
        return f"{asked}: refused by {item.get('frontend')}: {item.get('reason')}"
    labels = {c.get("key"): c.get("label") for c in item.get("choices") or []}
    choice = item.get("choice")
    note = f": {item['note']}" if item.get("note") else ""
    return f"{asked}: {labels.get(choice) or choice}{note} (answered in {item.get('frontend')})"


def handled(item: dict[str, Any]) -> tuple[str, str]:
    """A plugin's command (an `input_handled` event): what was typed, and the reply, or
    "failed: ERROR" (its reply is then not shown), or "" for neither."""
    typed = str(item.get("text") or "")
    if item.get("error"):
        return typed, f"failed: {item['error']}"
    return typed, str(item.get("reply") or "").rstrip("\n")


def chips(message: object) -> list[str]:
    """`[image 1: shot.png 34 KB]` for each image a recorded message attached (the bytes
    stay in the session, stored once)."""
    content = message.get("content") if isinstance(message, dict) else None
    images = [p for p in content or [] if isinstance(p, dict) and p.get("type") == "image"]
    return [image_chip(p, n) for n, p in enumerate(images, 1)]


def _fence(text: str) -> str:
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text.rstrip()}\n{fence}"


def markdown(timeline: Timeline, *, title: str) -> str:
    """The timeline as a markdown document: prompts, answers, tool calls and results."""
    out = [f"# {title}", ""]
    turn = 0
    texts: dict[str, list[str]] = {}
    roles: dict[str, str] = {}
    for item in timeline.items:
        ev = item.event
        if ev is None:
            continue
        kind = ev["type"]
        if kind == "agent_start":
            turn += 1
            out += [f"## Turn {turn}", ""]
        elif kind == "message_start":
            roles[ev["message_id"]] = ev["role"]
            texts[ev["message_id"]] = []
        elif kind == "message_delta" and ev["channel"] == "text":
            texts.setdefault(ev["message_id"], []).append(str(ev["delta"]))
        elif kind == "message_end":
            text = "".join(texts.pop(ev["message_id"], [])).strip()
            role = roles.pop(ev["message_id"], "assistant")
            pictures = [f"`{c}`" for c in chips(ev.get("message"))]
            shown = "  \n".join(x for x in [text, *pictures] if x)
            if shown:
                out += [f"**{role.capitalize()}:**", "", shown, ""]
        elif kind == "tool_start":
            out += [f"**Tool call** `{ev['name']}` `{_arguments(ev['arguments'], 2000)}`", ""]
        elif kind == "tool_end":
            result = ev["result"]
            state = "unknown" if ev["outcome"] == "unknown" else "error" if ev["is_error"] else "ok"
            out += [f"**Result** of `{ev['name']}` ({state}):", "", _fence(result["text"]), ""]
        elif kind == "compaction_end":
            out += ["**Compacted:**", "", str(ev.get("summary") or ""), ""]
        elif kind in ("environment", "instructions"):
            what = "Environment" if kind == "environment" else f"Instructions ({ev.get('path')})"
            out += [f"**{what}** (told the model):", "", _fence(str(ev.get("text", ""))), ""]
        elif kind in ("intent_answered", "intent_refused"):
            out += [f"*{answered(ev)}*", ""]
        elif kind == "input_handled":
            typed, reply = handled(ev)
            out += [f"**Command** (handled by {ev.get('plugin') or 'a plugin'}):", "",
                    _fence(typed), "", *([_fence(reply), ""] if reply else [])]  # fmt: skip
        elif kind == "agent_end" and ev["stop"] not in ("end", "done"):
            out += [f"*Stopped: {ev['stop']}*", ""]
    return "\n".join(out).rstrip() + "\n"
