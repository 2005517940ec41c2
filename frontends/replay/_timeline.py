"""A recorded session read back as the events a live run emitted (docs/events.md).

    timeline = reconstruct(session)          # the selected branch, no provider needed
    for item in timeline.items:              # in source order, each with its recorded time
        item.event or item.effect

The session holds what the runtime recorded (user and assistant messages, effect intents
and completions, tool results, compactions, snapshots), not the events themselves, so the
events are derived from the records the way the runtime derived its records from them:

- a user message that is not a delivered steer or follow-up (`queued`) starts a prompt
  (`agent_start`), unless the prompt has not reached the model yet (several texts
  queued behind an abort start one prompt together); so does an `environment` entry,
  which a prompt records just before its message;
- an assistant message is one provider round: `turn_start` and `message_start` when the
  previous record was written (the request went out then), one delta per part and
  `message_end` when it was recorded, then `tool_start` for each of its calls;
- `tool_end` comes when the call's effect completed (its completion record), or with its
  tool result when it ran no effect (invalid arguments, an unknown tool, not run); a call
  whose effect never completed ends as `unknown` when its round does;
- `turn_end` comes once every call has its result, `agent_end` (and `settled`) when the
  next prompt starts or the branch ends;
- a recorded question (entry kind `question`) is the `intent_answered` or
  `intent_refused` event it was, at the point it ended;
- a compaction stays inside its prompt when the loop did it before a round, and comes
  after the prompt's `agent_end` (followed by `settled`) when it ran on its own, while
  idle: the prompt's records show it had ended.
- the user's own `!command` runs only while idle: its effect ends the prompt before it,
  its events carry its call id as their submission, its `tool_start` comes before its
  snapshot of the files, its `tool_end` after the snapshot after it, and its `shell`
  entry is followed by `settled`;
- every entry is an `entry` event (id, parent, kind; `submission` within a prompt) where
  the live run emitted it, as it was appended: before what it says (a completion's
  `tool_end`, a question's answer, an environment block), after the deltas of an
  assistant message (before its `message_end`), after `compaction_start`, and a tool
  result after every call of its batch has ended (a call no effect ran for ends as its
  batch begins).

Ids are derived from entry ids (a prompt is `p-<entry>`, an assistant message
`m-<entry>`), so the same session always gives the same events. Where the records do not
say why a prompt stopped (it ended after a tool batch with no answer: an iteration or
token limit, a deadline, a killed process), `agent_end.stop` is `unknown`.

An entry whose content cannot be decoded (its frame passed its checksum, but what it
holds is not valid compressed CBOR), or cannot be shown as JSON (an integer of thousands
of digits), is left out and listed in `Timeline.unreadable`, which replay says; bytes and
non-finite numbers in content are shown as the JSONL dump writes them ({"$bytes": ...},
{"$float": "nan"}), so that every event is JSON.

Effects that ran outside a model's tool call (`smith tools run`, `smith mcp`) appear as
`tool_start`/`tool_end` pairs whose `tool_call_id` is the effect id. Every effect is also
an `Effect` item at the point it completed (or began, when it never completed), for
`--reexecute`.
"""

from __future__ import annotations

import base64
import math
from typing import TYPE_CHECKING, Any

from smith.diagnostics import SmithError
from smith.ui import answer_event

from ._records import (
    Call,
    Effect,
    Round,
    as_dict,
    marked,
    result_of,
    shown_id,
    stop_of,
    unknown_end,
)

if TYPE_CHECKING:
    from smith.session import Entry, Session

Event = dict[str, Any]


class Item:
    """One step of the timeline: an event, or an effect reaching its completion point.
    `run` is the prompt it belongs to (1, 2, ...; 0 before the first prompt)."""

    __slots__ = ("effect", "event", "run", "ts")

    def __init__(
        self, ts: int, run: int, event: Event | None = None, effect: Effect | None = None
    ) -> None:
        self.ts = ts
        self.run = run
        self.event = event
        self.effect = effect


class Timeline:
    """The items of a branch and the runtime state its records add up to."""

    def __init__(self) -> None:
        self.items: list[Item] = []
        self.runs = 0
        self.unreadable: list[tuple[str, str]] = []  # (entry id, why) of entries left out
        self.state: dict[str, Any] = {
            "model": None,
            "provider": None,
            "thinking": None,
            "messages": 0,
            "turns": 0,  # prompts, as --turns counts them
            "rounds": 0,  # provider requests
            "usage": {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0},
            "usage_complete": True,
            "compactions": 0,
            "snapshots": 0,
            "effects": 0,
            "unknown_effects": [],
        }


def reconstruct(session: Session, leaf: str | None = None) -> Timeline:
    """The timeline of the branch to `leaf` (default: the selected one), with each child
    agent's branch nested under the call that ran it (_children.nest)."""
    return _of(session, session.branch(leaf))


def _of(session: Session, entries: list[Entry]) -> Timeline:
    from ._children import nest

    unreadable: list[tuple[str, str]] = []
    contents = [_content(e, unreadable) for e in entries]
    builder = _Builder(_link(entries, contents))
    builder.timeline.unreadable = unreadable
    for entry, content in zip(entries, contents, strict=True):
        builder.take(entry, content)
    builder.finish()
    nest(session, entries, builder.timeline, lambda part: _of(session, part))
    return builder.timeline


def _content(entry: Entry, unreadable: list[tuple[str, str]]) -> dict[str, Any]:
    """The entry's content as events carry it; {} (and a note in `unreadable`) when it
    cannot be decoded or shown."""
    try:
        content = _shown_as_json(entry.content)
    except SmithError as exc:
        unreadable.append((entry.id, exc.diagnostic.what))
        return {}
    except _Unshowable as exc:
        unreadable.append((entry.id, f"the content of entry {entry.id!r} {exc}"))
        return {}
    return content if isinstance(content, dict) else {}


class _Unshowable(ValueError):
    """Content no event can carry."""


def _shown_as_json(value: object) -> Any:
    """`value` as JSON carries it: bytes as {"$bytes": base64}, NaN and infinities as
    {"$float": "nan"} (as `smith sessions dump` writes them); _Unshowable for an integer
    too long to write as text."""
    if isinstance(value, dict):  # copied only where something changes
        shown = {k: _shown_as_json(v) for k, v in value.items()}
        return value if all(shown[k] is v for k, v in value.items()) else shown
    if isinstance(value, list):
        items = [_shown_as_json(v) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, bytes):
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": repr(value)}
    if isinstance(value, int) and value.bit_length() > 4000:  # 1,205 digits: may be past
        try:
            str(value)
        except ValueError:  # sys.get_int_max_str_digits
            raise _Unshowable("holds an integer too long to write as text") from None
    return value


class _Links:
    """What pass one found: each effect (by id), the call it ran for, and the entry of
    each call's tool result."""

    def __init__(self) -> None:
        self.effects: dict[str, Effect] = {}
        self.call_effect: dict[tuple[str, str], Effect] = {}  # (assistant entry, call id)
        self.results: dict[tuple[str, str], dict[str, Any]] = {}
        self.shells: dict[str, Effect] = {}  # the user's own commands, by call id


def _link(entries: list[Entry], contents: list[dict[str, Any]]) -> _Links:
    links = _Links()
    open_calls: dict[str, str] = {}  # call id -> its assistant message's entry
    for entry, content in zip(entries, contents, strict=True):
        kind = entry.kind
        if kind == "message" and content.get("role") == "assistant":
            parts = content.get("content")
            open_calls = {
                str(p.get("id")): entry.id
                for p in (parts if isinstance(parts, list) else [])
                if isinstance(p, dict) and p.get("type") == "tool_call"
            }
        elif kind == "message" and content.get("role") == "tool_result":
            call = str(content.get("tool_call_id", entry.pair or ""))
            if call in open_calls:
                links.results[(open_calls[call], call)] = content
        elif kind == "effect_intent":
            effect = Effect(entry, content)
            links.effects[effect.id] = effect
            if isinstance(effect.cause.get("shell"), str):
                links.shells[str(effect.cause["shell"])] = effect
            cause = effect.cause.get("tool_call")
            if effect.kind == "tool" and isinstance(cause, str) and cause in open_calls:
                effect.call = cause
                links.call_effect[(open_calls[cause], cause)] = effect
        elif kind == "effect_completion":
            effect_id = str(content.get("effect", entry.pair or ""))
            found = links.effects.get(effect_id)
            if found is not None and found.completion is None:
                found.completion = content
                found.ended = entry.ts
    return links


class _Builder:
    def __init__(self, links: _Links) -> None:
        self.links = links
        self.timeline = Timeline()
        self.state = self.timeline.state
        self.run = 0
        self.in_run = False
        self.answered = False  # the current prompt has reached the model
        self.waiting = False  # the run's newest message is input the model has not seen
        self.prompt_id = ""
        self.turn: Round | None = None
        self.turns_in_run = 0
        self.last_message: dict[str, Any] | None = None
        self.last_turn: Round | None = None
        self.prev_ts = 0
        self.ts = 0
        self.standalone: dict[str, Effect] = {}
        self.appended: Event | None = None  # the `entry` event of the entry being taken
        self.aside: str | None = None  # the user's own command running between prompts
        self.held: Event | None = None  # its `tool_end`, once its snapshot after is taken
        self.mode = "normal"  # the runtime's mode (smith.runtime._mode), as entries set it

    # -- emitting -------------------------------------------------------------------

    def emit(self, type: str, ts: int | None = None, **fields: Any) -> None:
        event = {"type": type, **fields}
        if self.in_run:  # as live: a run's events carry its submission (its prompt_id)
            event["submission"] = self.prompt_id
        elif self.aside is not None:  # and a `!command`'s its call id
            event["submission"] = self.aside
        self.timeline.items.append(Item(self.ts if ts is None else ts, self.run, event))

    def effect(self, effect: Effect) -> None:
        self.timeline.items.append(Item(self.ts, self.run, effect=effect))

    def record(self) -> None:
        """The `entry` event of the entry being taken, once, where the live run emitted
        it among the events derived from the entry: when it was appended."""
        if self.appended is not None:
            fields, self.appended = self.appended, None
            self.emit("entry", **fields)

    # -- entries ----------------------------------------------------------------------

    def take(self, entry: Entry, content: dict[str, Any]) -> None:
        self.prev_ts, self.ts = self.ts or entry.ts, entry.ts
        kind = entry.kind
        self.appended = {"id": entry.id, "parent": entry.parent, "kind": kind}
        self.aside_steps(kind, content)
        if self.turn is not None and kind != "vcs":
            self.batch_begins(self.turn)
        if kind not in ("message", "environment", "effect_intent", "compaction"):
            self.record()  # appended, then what it says was emitted
        if kind == "message":
            role = content.get("role")
            if role == "user":
                self.user(entry, content)
            elif role == "assistant":
                self.assistant(entry, content)
            elif role == "tool_result":
                self.tool_result(entry, content)
        elif kind == "effect_intent":
            self.intent(entry)
        elif kind == "effect_completion":
            self.completion(entry, content)
        elif kind == "compaction":
            self.compaction(entry, content)
        elif kind == "model_change":
            self.state["model"] = content.get("model", self.state["model"])
            self.state["provider"] = content.get("provider", self.state["provider"])
        elif kind == "thinking_level":
            self.state["thinking"] = content.get("level", self.state["thinking"])
        elif kind == "input_handled":  # a plugin's command: what it was and its reply
            # `error` only where the command failed (recorded only then)
            keys = ("plugin", "mode", "text", "reply", *(("error",) if "error" in content else ()))
            fields = {k: content.get(k) for k in keys}
            self.emit("input_handled", entry_id=entry.id, **fields)
        elif kind == "environment":  # recorded as a prompt starts, before its message
            if not (self.in_run and not self.answered):
                self.start_run(entry.id)
            self.record()
            self.emit(kind, entry_id=entry.id, **content)
        elif kind == "instructions":  # a file of a directory a tool batch reached
            self.emit(kind, entry_id=entry.id, **content)
        elif kind == "vcs" and content.get("op") == "snapshot":
            self.state["snapshots"] += 1
        elif kind == "mode" and content.get("mode") not in (None, self.mode):  # docs/plan.md
            self.emit("mode", mode=content["mode"], previous=self.mode, plan=None)
            self.mode = str(content["mode"])
        elif kind == "question":  # how a plugin's question ended (smith.ui)
            ev = answer_event(content)
            self.emit(str(ev.pop("type")), **ev)
        elif kind in ("shell", "shell_private") and self.aside is not None:
            self.aside = None  # what the user's own command printed: then idle again
            self.emit("settled", queue=0)
        self.record()  # an entry its handler left aside (a result of no call it knows)

    def user(self, entry: Entry, message: dict[str, Any]) -> None:
        delivered = self.in_run and (bool(message.get("queued")) or not self.answered)
        if not delivered:
            self.start_run(entry.id)
        self.end_turn()
        self.record()
        self.waiting = True
        # What was typed, as the live run streams it: its first text part (the parts
        # after it are files its `@path`s attached, in `message_end`).
        text = next(
            (
                str(p.get("text", ""))
                for p in message.get("content") or []
                if isinstance(p, dict) and p.get("type") == "text"
            ),
            "",
        )
        self.state["messages"] += 1
        self.emit("message_start", role="user", message_id=entry.id)
        self.emit("message_delta", message_id=entry.id, channel="text", delta=text)
        self.emit("message_end", message_id=entry.id, message=message)

    def assistant(self, entry: Entry, message: dict[str, Any]) -> None:
        if not self.in_run:
            self.start_run(entry.id)
        self.end_turn()
        self.answered = True
        self.waiting = False
        self.turns_in_run += 1
        self.state["rounds"] += 1
        self.state["messages"] += 1
        self.state["model"] = message.get("model", self.state["model"])
        self.state["provider"] = message.get("provider", self.state["provider"])
        self.add_usage(message.get("usage"))
        turn = Round(self.turns_in_run, message)
        mid = f"m-{entry.id}"
        self.emit("turn_start", ts=self.prev_ts, turn=turn.number)
        self.emit("message_start", ts=self.prev_ts, role="assistant", message_id=mid)
        for part in message.get("content") or []:
            if isinstance(part, dict) and part.get("type") in ("text", "thinking"):
                delta = str(part.get("text", ""))
                if delta:
                    self.emit("message_delta", message_id=mid, channel=part["type"], delta=delta)
        self.record()
        self.emit("message_end", message_id=mid, entry_id=entry.id, message=message)
        self.last_message = message
        for part in message.get("content") or []:
            if isinstance(part, dict) and part.get("type") == "tool_call":
                args = part.get("arguments")
                fields: dict[str, Any] = {"arguments": args if isinstance(args, dict) else {}}
                result = self.links.results.get((entry.id, str(part.get("id"))))
                rewritten = as_dict(result.get("rewritten")) if result else {}
                if rewritten:  # it ran with a plugin's arguments, as it did live
                    fields = {"arguments": as_dict(rewritten.get("arguments")),
                              "rewritten_by": rewritten.get("plugin")}  # fmt: skip
                self.emit("tool_start", tool_call_id=part.get("id"), name=part.get("name"),
                          **fields)  # fmt: skip
        for call in turn.calls.values():
            call.effect = self.links.call_effect.get((entry.id, call.id))
            call.result = self.links.results.get((entry.id, call.id))
        self.turn = turn
        self.last_turn = turn
        if not turn.calls:
            self.end_turn()

    def tool_result(self, entry: Entry, message: dict[str, Any]) -> None:
        turn = self.turn
        call_id = str(message.get("tool_call_id", entry.pair or ""))
        if turn is None or call_id not in turn.calls:
            return
        turn.calls[call_id].result = message
        # The results are recorded once every call of the batch has ended.
        for call in turn.calls.values():
            if not call.ended:
                self.end_call(call)
        turn.calls[call_id].recorded = True
        self.record()
        if all(c.recorded for c in turn.calls.values()):
            self.end_turn()

    def intent(self, entry: Entry) -> None:
        effect = self.links.effects.get(str(entry.pair))
        if effect is None or effect.entry != entry.id:
            return
        self.state["effects"] += 1
        # A read a message's `@path` attached showed no call live (its message says it).
        if effect.call is None and effect.kind == "tool" and "attached" not in effect.cause:
            self.standalone_start(effect)
        self.record()
        if effect.completion is None:  # it never ended: shown where it began, never re-run
            self.state["unknown_effects"].append(effect.id)
            self.effect(effect)
            if effect.id in self.standalone:
                self.emit("tool_end", **unknown_end(shown_id(effect), effect.name),
                          **marked(effect))  # fmt: skip

    def completion(self, entry: Entry, content: dict[str, Any]) -> None:
        effect = self.links.effects.get(str(content.get("effect", entry.pair or "")))
        if effect is None or effect.completion is not content:
            return
        if not effect.complete:  # cancelled part-way, or recovered as unknown on resume
            self.state["unknown_effects"].append(effect.id)
        if effect.id in self.standalone and self.aside is not None:  # once its files are
            self.held = self.ended(shown_id(effect), effect.name, result_of(content),
                                   **marked(effect))  # fmt: skip
        elif effect.id in self.standalone:
            self.tool_end(shown_id(effect), effect.name, result_of(content), **marked(effect))
        elif effect.complete and self.turn is not None and effect.call in self.turn.calls:
            call = self.turn.calls[effect.call]
            if call.effect is effect and not call.ended:
                self.end_call(call)
        # A call whose effect did not complete ends with its tool result (cancelled), or
        # as unknown with its round.
        self.effect(effect)

    def compaction(self, entry: Entry, content: dict[str, Any]) -> None:
        # The loop compacts before a round, so within a prompt the model has yet to answer
        # input, or its last round asked for tools; otherwise the prompt had ended and
        # this compaction ran on its own, while idle (`compact` between prompts).
        idle = not self.in_run or (not self.waiting and stop_of(self.last_turn)[0] != "unknown")
        if idle:
            self.end_run(ts=self.prev_ts)
        self.end_turn()
        self.state["compactions"] += 1
        self.add_usage(content.get("usage"))
        reason = content.get("reason", "auto")
        focus = {"focus": content["focus"]} if content.get("focus") else {}
        self.emit("compaction_start", ts=self.prev_ts, reason=reason, **focus)
        self.record()
        self.emit(
            "compaction_end",
            reason=reason,
            ok=True,
            summary=content.get("summary"),
            entry_id=entry.id,
            first_kept=content.get("first_kept"),
            tokens_before=content.get("tokens_before"),
        )
        if idle:
            self.emit("settled", queue=0)

    # -- calls, turns and runs ----------------------------------------------------------

    def batch_begins(self, turn: Round) -> None:
        """A call no effect ran for (invalid arguments, an unknown tool, a plugin's
        refusal) ended as its batch began, before anything else of the batch (but the
        snapshot before it) was recorded."""
        if turn.begun:
            return
        turn.begun = True
        for call in turn.calls.values():
            if call.effect is None and call.result is not None and not call.ended:
                self.end_call(call)

    def end_call(self, call: Call) -> None:
        call.ended = True
        effect = call.effect
        if call.result is None and (effect is None or not effect.complete):
            self.emit("tool_end", **unknown_end(call.id, call.name))
            return
        if call.result is not None:
            message = call.result
            parts = message.get("content") or []
            text = "".join(
                str(p.get("text", "")) for p in parts if isinstance(p, dict) and "text" in p
            )
            outcome = str(message.get("outcome", "error" if message.get("is_error") else "ok"))
            mutation = "not-applied"
            if effect is not None and effect.completion is not None:
                mutation = str(effect.completion.get("mutation", "unknown"))
            elif outcome == "unknown":
                mutation = "unknown"
            result = {
                "text": text,
                "details": as_dict(message.get("details")),
                "ok": not message.get("is_error", False),
                "outcome": outcome,
                "mutation": mutation,
            }
        else:
            assert effect is not None and effect.completion is not None
            result = result_of(effect.completion)
        took = {}
        if effect is not None and effect.ended is not None:
            took["duration_ms"] = float(effect.ended - effect.ts)
        self.tool_end(call.id, call.name, result, **took)

    def tool_end(self, call_id: str, name: str, result: dict[str, Any], **extra: Any) -> None:
        self.emit(**self.ended(call_id, name, result, **extra))
        todos = as_dict(result.get("details")).get("todos")
        if name == "todo" and result.get("ok") and isinstance(todos, list):  # the plan plugin's
            self.emit(type="todo", origin="plan", items=todos)  # list, as it was sent live

    @staticmethod
    def ended(call_id: str, name: str, result: dict[str, Any], **extra: Any) -> Event:
        return {"type": "tool_end", "tool_call_id": call_id, "name": name, "result": result,
                "outcome": result["outcome"], "is_error": not result["ok"], **extra}  # fmt: skip

    def aside_steps(self, kind: str, content: dict[str, Any]) -> None:
        """A `!command`'s snapshots around it: the one before is taken once its
        `tool_start` was emitted, its `tool_end` once the one after is taken."""
        if self.held is not None and kind != "vcs":
            held, self.held = self.held, None
            self.emit(**held)
        if kind == "vcs" and content.get("phase") == "before":
            shell = self.links.shells.get(str(as_dict(content.get("cause")).get("shell")))
            if shell is not None:
                self.standalone_start(shell)

    def standalone_start(self, effect: Effect) -> None:
        """The `tool_start` of an effect no model's call ran; the user's own command
        (`!command`) runs only while idle, so the prompt before it had ended."""
        if effect.id in self.standalone:
            return
        self.standalone[effect.id] = effect
        if isinstance(effect.cause.get("shell"), str):
            self.end_run(ts=self.prev_ts)
            self.aside = shown_id(effect)
        self.emit("tool_start", tool_call_id=shown_id(effect), name=effect.name,
                  arguments=effect.input, **marked(effect))  # fmt: skip

    def end_turn(self) -> None:
        turn, self.turn = self.turn, None
        if turn is None:
            return
        for call in turn.calls.values():
            if not call.ended:
                self.end_call(call)
        self.emit("turn_end", turn=turn.number, stop=turn.message.get("stop"))

    def start_run(self, entry_id: str) -> None:
        self.end_run()
        self.run += 1
        self.timeline.runs = self.state["turns"] = self.run
        self.in_run = True
        self.answered = False
        self.turns_in_run = 0
        self.last_message = None
        self.last_turn = None
        self.prompt_id = f"p-{entry_id}"
        self.emit("agent_start", prompt_id=self.prompt_id)

    def end_run(self, ts: int | None = None) -> None:
        self.end_turn()
        if not self.in_run:
            return
        self.in_run = False
        stop, error = stop_of(self.last_turn)
        end: Event = {"prompt_id": self.prompt_id, "stop": stop, "message": self.last_message}
        if error:
            end["error"] = error
        end["submission"] = self.prompt_id
        self.emit("agent_end", ts, **end)
        self.emit("settled", ts, queue=0)

    def finish(self) -> None:
        self.aside_steps("", {})
        self.end_run()

    def add_usage(self, usage: object) -> None:
        if not isinstance(usage, dict):
            self.state["usage_complete"] = False
            return
        totals = self.state["usage"]
        for key in totals:
            value = usage.get(key)
            if isinstance(value, int):
                totals[key] += value
            elif key in ("input", "output"):
                self.state["usage_complete"] = False
