"""The intent kinds, what produces each, and the values producers hand the runtime.

An `Intent` is what a frontend is given: a kind and its data (and the runtime event it
stands for, when it came from one). Producers never build intents themselves: the
runtime's events map to them (`intent_for`), and plugins, commands and tools hand the
runtime typed values (`Notify`, `Progress`, `Status`, `Todos`, `Hatch`, `Question`,
`Confirm`), which it turns into intents and sends out on the event stream (`ui` events)
or to the frontend's `ask` (questions). docs/ui.md has the table with each frontend's policy.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

Unsupported = Literal["drop", "refuse", "persist"]
Level = Literal["info", "warning", "error"]
LEVELS = ("info", "warning", "error")


@dataclass(frozen=True)
class Kind:
    name: str
    unsupported: Unsupported  # what a frontend that cannot honour it does
    producers: str  # who emits it (docs/ui.md lists the same)


_TABLE = (
    Kind("transcript_append", "persist", "runtime: message_end (a recorded message), "
         "environment and instructions (a recorded note the model is told)"),
    Kind("message_delta", "drop", "runtime: message_start, message_delta"),
    Kind("tool_activity", "drop", "runtime: tool_start, tool_update, tool_end"),
    Kind("status", "drop", "runtime: session_start, agent_start, turn_start, turn_end, "
         "agent_end, queue_changed, settled, input_handled without a reply; plugins: Status"),
    Kind("notify", "drop", "runtime: error, retry, failover, input_handled's reply; "
         "plugins: Notify"),
    Kind("progress", "drop", "runtime: compaction_start, compaction_end; plugins: Progress"),
    Kind("todo", "drop", "plugins: Todos (the plan plugin's todo tool; its calls' results "
         "keep the list)"),
    Kind("hatch", "drop", "plugins: Hatch (an escape hatch the plugin declared: clipboard, "
         "open-url, bell)"),
    Kind("request_choice", "refuse", "plugins: Question (handlers, commands, tools)"),
    Kind("request_confirm", "refuse", "plugins: Confirm (handlers, commands, tools)"),
    Kind("answer", "persist", "runtime: intent_answered, intent_refused (how a question "
         "ended; recorded in the session)"),
)  # fmt: skip
KINDS_TABLE: Mapping[str, Kind] = {k.name: k for k in _TABLE}
KINDS = tuple(KINDS_TABLE)
UNSUPPORTED: Mapping[str, Unsupported] = {k.name: k.unsupported for k in _TABLE}
QUESTIONS = ("request_choice", "request_confirm")
SHOWN = tuple(k for k in KINDS if k not in QUESTIONS)  # what `show` takes
# Kinds a frontend shows only if it says so in its Capabilities: an escape hatch does
# something on the user's machine (the clipboard, the browser), never by default.
OPT_IN = ("hatch",)


@dataclass(frozen=True)
class Intent:
    kind: str
    data: dict[str, Any] = field(default_factory=dict)
    # The runtime event it stands for (frontends that print events print this one).
    event: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    @property
    def unsupported(self) -> Unsupported:
        return UNSUPPORTED[self.kind]


# -- what producers hand the runtime ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Notify:
    """A passing notice for the user."""

    text: str
    level: Level = "info"

    kind = "notify"

    def fields(self) -> dict[str, Any]:
        return {"level": self.level if self.level in LEVELS else "info", "text": self.text}


@dataclass(frozen=True, slots=True)
class Progress:
    """How far a piece of work has come: `done` of `total` (either may be unknown);
    `done == total` says it is over."""

    label: str
    done: float | None = None
    total: float | None = None

    kind = "progress"

    def fields(self) -> dict[str, Any]:
        return {"label": self.label, "done": self.done, "total": self.total}


@dataclass(frozen=True, slots=True)
class Status:
    """A line of state to keep in view (one per `key` of a producer; empty text clears
    it)."""

    text: str
    key: str = ""

    kind = "status"

    def fields(self) -> dict[str, Any]:
        return {"key": self.key, "text": self.text}


TODO_STATES = ("pending", "in_progress", "completed")


@dataclass(frozen=True, slots=True)
class Todos:
    """A todo list to keep in view, whole: `items` of (what is to be done, its state:
    pending, in_progress or completed). Sent out as a `todo` event of its own."""

    items: tuple[tuple[str, str], ...]

    kind = "todo"

    def fields(self) -> dict[str, Any]:
        return {
            "items": [
                {"content": c, "status": s if s in TODO_STATES else "pending"}
                for c, s in self.items
            ]
        }


HATCH_MAX = 64 * 1024  # characters of a hatch's value (a URL: URL_MAX)
URL_MAX = 8 * 1024
# Removed from a hatch's value: escape sequences (CSI, OSC), then C0 controls but tab
# and newline, DEL, C1 controls, and the bidirectional controls that reorder what is
# shown (smith._inert lists the same).
_CONTROLS = dict.fromkeys(
    [*(c for c in range(32) if c not in (9, 10)), *range(127, 160), *range(0x202A, 0x202F),
     *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C]
)  # fmt: skip
_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
)


@dataclass(frozen=True, slots=True)
class Hatch:
    """A frontend escape hatch: `capability` "clipboard" copies `value` to the user's
    clipboard, "open-url" opens it (an http or https URL) in the user's browser, "bell"
    rings the bell (no value). Only a hatch the plugin declares (plugin.kdl `frontend
    "clipboard"`, `Plugin.frontend`) is allowed, else the runtime refuses it; a frontend
    that cannot do it drops it. The value is plain text (control characters removed), at
    most 64 KiB; a longer one, or an open-url value that is no http(s) URL, is refused
    (ValueError)."""

    capability: str
    value: str = ""

    kind = "hatch"

    def __post_init__(self) -> None:
        from smith.ui._product import HATCHES

        if self.capability not in HATCHES:
            raise ValueError(f"{self.capability!r} is no escape hatch (the hatches: "
                             f"{', '.join(HATCHES)})")  # fmt: skip
        value = "" if self.capability == "bell" else plain_value(str(self.value))
        if self.capability == "open-url":
            value = value.strip()
            problem = url_problem(value)
            if problem is not None:
                raise ValueError(f"open-url takes an http(s) URL, not {value[:80]!r}: "
                                 f"{problem}")  # fmt: skip
        bound = URL_MAX if self.capability == "open-url" else HATCH_MAX
        if len(value) > bound:
            raise ValueError(f"a {self.capability} value is at most {bound} characters, "
                             f"not {len(value)}")  # fmt: skip
        object.__setattr__(self, "value", value)

    def fields(self) -> dict[str, Any]:
        return {"capability": self.capability, "value": self.value}


def plain_value(text: str) -> str:
    """`text` with escape sequences and control characters (but tab and newline)
    removed."""
    return _ESCAPES.sub("", text).translate(_CONTROLS)


def url_problem(url: str) -> str | None:
    """Why `url` is no URL open-url opens (an absolute http or https URL with a host, no
    spaces or credentials), or None."""
    from urllib.parse import urlsplit

    if any(c.isspace() for c in url):
        return "it holds spaces"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises on a bad port)
    except ValueError as exc:
        return str(exc)
    if parts.scheme.lower() not in ("http", "https"):
        return f"its scheme is {parts.scheme or 'missing'}"
    if not parts.hostname:
        return "it has no host"
    if parts.username is not None or parts.password is not None:
        return "it carries credentials"
    return None


Shown = Notify | Progress | Status | Todos | Hatch
SHOWN_TYPES = (Notify, Progress, Status, Todos, Hatch)


NOTE_MAX = 500  # characters of a reason the user gives with an answer (Reply.note)
DETAIL_MAX = 32 * 1024  # characters of a question's detail carried and recorded
DETAIL_KINDS = ("diff", "command", "text")


@dataclass(frozen=True, slots=True)
class Detail:
    """What a question is about, to show with it: `kind` "diff" (a unified diff: the
    change an approval would let a call make), "command" (a whole command line) or
    "text" (anything else, e.g. why the call would fail). Bounded: past DETAIL_MAX
    characters it is cut at a line and says how much was left out (`cut`)."""

    kind: str
    text: str
    cut: int = 0  # characters left out

    def __post_init__(self) -> None:
        if self.kind not in DETAIL_KINDS:
            raise ValueError(f"a question's detail is one of {', '.join(DETAIL_KINDS)}, "
                             f"not {self.kind!r}")  # fmt: skip
        text = str(self.text)
        if len(text) > DETAIL_MAX:
            kept = text[:DETAIL_MAX]
            kept = kept[: kept.rfind("\n") + 1] or kept
            object.__setattr__(self, "cut", self.cut + len(text) - len(kept))
            text = kept
        object.__setattr__(self, "text", text)

    def fields(self) -> dict[str, Any]:
        return {"kind": self.kind, "text": self.text, **({"cut": self.cut} if self.cut else {})}


@dataclass(frozen=True, slots=True)
class Question:
    """A question with choices: (key, label) pairs; the answer is a key. `reasons`: the
    keys of the choices the user may give a reason with (a line of text, `Reply.note`:
    "deny, because ..."). `timeout` (seconds): refused when nobody answered by then
    (None: the frontend's own bound). `detail`: what the question is about, shown with it
    (the diff an approval would let a call make, the whole command)."""

    text: str
    choices: Sequence[tuple[str, str]]
    timeout: float | None = None
    reasons: Sequence[str] = ()
    detail: Detail | None = None

    kind = "request_choice"

    def __post_init__(self) -> None:
        keys = [str(k) for k, _ in self.choices]
        if not keys or len(set(keys)) != len(keys):
            raise ValueError("a question needs choices with distinct keys")
        if not set(map(str, self.reasons)) <= set(keys):
            raise ValueError("a question's reasons name keys that are none of its choices")
        object.__setattr__(self, "choices", tuple((str(k), str(v)) for k, v in self.choices))
        object.__setattr__(self, "reasons", tuple(map(str, self.reasons)))


CONFIRM_CHOICES = (("yes", "Yes"), ("no", "No"))


@dataclass(frozen=True, slots=True)
class Confirm:
    """A yes-or-no question; `Reply.confirmed` is true only for an explicit yes."""

    text: str
    timeout: float | None = None

    kind = "request_confirm"
    reasons: ClassVar[tuple[str, ...]] = ()  # a yes or a no takes no reason
    detail: ClassVar[Detail | None] = None

    @property
    def choices(self) -> tuple[tuple[str, str], ...]:
        return CONFIRM_CHOICES


Asked = Question | Confirm


@dataclass(frozen=True, slots=True)
class Reply:
    """How a question ended: answered with a `choice` (a key), or `refused` with the
    reason nobody answered (the frontend cannot ask, a timeout, an abort, the user
    dismissed it). `frontend` names who answered or refused; `note` is the reason the
    user gave with a choice that takes one (Question.reasons), else empty. `interrupt`:
    a refusal by which the user also stopped the work that asked (Escape on an approval:
    the call is denied and the turn ends, as an abort ends it)."""

    choice: str | None = None
    refused: str | None = None
    frontend: str = ""
    note: str = ""
    interrupt: bool = False

    @property
    def answered(self) -> bool:
        return self.refused is None

    @property
    def confirmed(self) -> bool:
        return self.refused is None and self.choice == "yes"


def refused(reason: str, frontend: str = "") -> Reply:
    return Reply(None, reason, frontend)


INTERRUPTED = "the user interrupted"


def interrupted(frontend: str = "") -> Reply:
    """The user stopped the work that asked (Reply.interrupt)."""
    return Reply(None, INTERRUPTED, frontend, interrupt=True)


# -- intents from producers' values, and their events and records ---------------------------


def shown_intent(value: Shown, *, origin: str) -> Intent:
    """The intent of a plugin's notice, progress, status, todo list or escape hatch
    (`origin`: who sent it)."""
    data = {"origin": origin, **value.fields()}
    if isinstance(value, Todos):  # a list of its own: the `todo` event
        return Intent(value.kind, data, {"type": "todo", **data})
    return Intent(value.kind, data, {"type": "ui", "intent": value.kind, **data})


def question_intent(value: Asked, *, origin: str, ask_id: str) -> Intent:
    data: dict[str, Any] = {
        "ask_id": ask_id,
        "origin": origin,
        "text": value.text,
        "choices": [
            {"key": k, "label": label, **({"reason": True} if k in value.reasons else {})}
            for k, label in value.choices
        ],
        "timeout": value.timeout,
    }
    if value.detail is not None:
        data["detail"] = value.detail.fields()
    return Intent(value.kind, data)


def answer_record(intent: Intent, reply: Reply) -> dict[str, Any]:
    """What the session keeps of a question and how it ended (entry kind `question`)."""
    data = intent.data
    return {
        "ask_id": data.get("ask_id"),
        "intent": intent.kind,
        "origin": data.get("origin"),
        "text": data.get("text"),
        "choices": data.get("choices", []),
        "choice": reply.choice,
        "refused": reply.refused,
        "frontend": reply.frontend,
        **({"note": reply.note} if reply.note else {}),
        **({"interrupt": True} if reply.interrupt else {}),
        **({"detail": data["detail"]} if data.get("detail") else {}),
    }


def answer_event(record: Mapping[str, Any]) -> dict[str, Any]:
    """The event of a question's end: `intent_answered` or `intent_refused`."""
    common = {k: record.get(k) for k in ("ask_id", "intent", "origin", "text", "choices")}
    if record.get("refused") is None:
        note = {"note": record["note"]} if record.get("note") else {}
        return {"type": "intent_answered", **common, "choice": record.get("choice"),
                "frontend": record.get("frontend"), **note}  # fmt: skip
    interrupt = {"interrupt": True} if record.get("interrupt") else {}
    return {"type": "intent_refused", **common, "frontend": record.get("frontend"),
            "reason": record.get("refused"), **interrupt}  # fmt: skip


# -- runtime events -> intents ---------------------------------------------------------------

_STATUS = ("session_start", "agent_start", "agent_end", "turn_start", "turn_end",
           "queue_changed", "settled", "entry")  # fmt: skip


def intent_for(event: Mapping[str, Any]) -> Intent | None:
    """The one intent a runtime event (docs/events.md) stands for; None for what is no
    runtime event (a hook event, a frontend's own record such as eval's `result`)."""
    ev = dict(event)
    kind = ev.get("type")
    if kind == "message_end":
        data = {k: ev.get(k) for k in ("message", "entry_id", "message_id")}
        return Intent("transcript_append", data, ev)
    if kind in ("environment", "instructions"):  # a recorded note (docs/context.md)
        data = {"entry_id": ev.get("entry_id"), "note": kind, "text": ev.get("text")}
        return Intent("transcript_append", data, ev)
    if kind == "message_start":
        data = {"start": True, "role": ev["role"], "message_id": ev["message_id"]}
        return Intent("message_delta", data, ev)
    if kind == "message_delta":
        return Intent("message_delta", {k: ev[k] for k in ("message_id", "channel", "delta")}, ev)
    if kind in ("tool_start", "tool_update", "tool_end"):
        return Intent("tool_activity", {"phase": kind[5:], **ev}, ev)
    if kind == "input_handled":  # a plugin's command: its reply, if it gave one, or error
        if ev.get("error"):
            text = f"{ev.get('plugin')}: {ev.get('text')}: {ev['error']}"
            return Intent("notify", {"level": "error", "text": text}, ev)
        reply = ev.get("reply")
        if reply:
            return Intent("notify", {"level": "info", "text": reply}, ev)
        return Intent("status", {"event": kind, **ev}, ev)
    if kind in _STATUS:
        return Intent("status", {"event": kind, **ev}, ev)
    if kind in ("compaction_start", "compaction_end"):
        return Intent("progress", {"event": kind, **ev}, ev)
    if kind == "retry":
        return Intent("notify", {"level": "warning", "text": f"retrying: {ev['error']}"}, ev)
    if kind == "failover":
        text = f"{ev['from_model']} failed ({ev['error']}); {ev['to_model']} answers instead"
        return Intent("notify", {"level": "warning", "text": text}, ev)
    if kind == "error":
        return Intent("notify", {"level": "error", "diagnostic": ev["diagnostic"]}, ev)
    if kind == "ui" and ev.get("intent") in SHOWN:
        data = {k: v for k, v in ev.items() if k not in ("type", "intent")}
        return Intent(str(ev["intent"]), data, ev)
    if kind == "todo":
        return Intent("todo", {k: v for k, v in ev.items() if k != "type"}, ev)
    if kind == "mode":
        return Intent("status", {"event": kind, **ev}, ev)
    if kind in ("intent_answered", "intent_refused"):
        return Intent("answer", {k: v for k, v in ev.items() if k != "type"}, ev)
    return None
