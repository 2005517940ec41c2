"""The plugin event boundary: handlers at safe points and at the hooks.

Every handler of an event runs in plugin order, each in a thread of its own with a
deadline (`call_handler`). At a safe point (smith.sdk SAFE_POINTS) the batches go to
`_generation.plan` and may publish a new generation. At a hook (smith.sdk HOOKS) they
decide about one thing:

    input        accept_inputs  before a user message is recorded: transform or handle it
    tool_call    review_calls   before a call runs: allow, deny or rewrite its arguments
                                (smith.runtime._callreview)
    tool_result  present        after the batch ran: what the model sees of a result

The rules are the same at every hook: a handler that fails, passes its deadline or
returns what the hook does not take counts as allow (and is reported), but at
`tool_call` such a handler denies the call: a reviewer that broke (the approval plugin
among them) never lets a call through unreviewed; two plugins
asking for different things is a conflict (`plugin.conflict`, naming both), and then
nothing any one of them asked for is applied; at `tool_call` any deny wins outright
(and ends the review: smith.runtime._callreview).
An abort while a hook's handlers run takes what is not decided yet as it was, so a
prompt is never lost and every call still gets a result.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from smith.diagnostics import Diagnostic, DiagnosticKind, Source
from smith.protocol.actions import ill_typed
from smith.runtime._events import Event, event
from smith.runtime._generation import CONFLICT, plan
from smith.sdk import (
    HOOK_ACTIONS,
    SAFE_POINTS,
    DenyCall,
    HandleInput,
    HookAction,
    Plugin,
    ReplaceResult,
    RewriteArguments,
    TransformInput,
)
from smith.ui import SHOWN_TYPES

if TYPE_CHECKING:
    from smith.runtime._images import Image
    from smith.runtime._loopctx import LoopContext
    from smith.runtime._review import HookSide

HANDLER_FAILED = DiagnosticKind(
    "plugin.handler-failed",
    what="plugin '{plugin}' failed in its {event} handler: {reason}",
    why="a handler must return its actions within {deadline} s without raising; this one "
    "did not, so it was abandoned",
    fix="fix or disable the plugin; the loop went on without its actions (at tool_call, "
    "without the call: what no reviewer decided does not run)",
)
WRONG_ACTION = DiagnosticKind(
    "plugin.wrong-action",
    what="plugin '{plugin}' returned {returned} from its {event} handler, which {event} "
    "does not take",
    why="{event} handlers return {allowed} or None",
    fix="return one of those; the plugin's answer was ignored (taken as allow)",
)

Call = dict[str, Any]
Result = dict[str, Any]
# How a turn records calls as not run (_steps.skip_tools): given by the turn, so this
# module never imports the steps that call it.
Skip = Callable[["LoopContext", list[Call], str, Sequence[Result | None]], None]


# -- running handlers -----------------------------------------------------------------


async def dispatch(rt: LoopContext, ev: Event) -> bool:
    """Run the plugin handlers of a safe-point event and publish their batch (after what
    the plugins' tool sets changed: smith.runtime._lifecycle); whether any handler ran."""
    rt.lifecycle.at_safe_point()
    if ev["type"] not in SAFE_POINTS or ev["type"] not in rt.handled:
        return False
    batches = [(p, None if isinstance(b, Failed) else b) for p, b in await answers(rt, ev)]
    if not any(batch for _, batch in batches):
        return bool(batches)
    from smith.config import THINKING_LEVELS

    result = plan(
        rt.current, ev["type"], batches, resolve=rt.resolve, thinking_levels=THINKING_LEVELS
    )
    for problem in result.problems:
        rt.error(problem)
    for item in result.enqueue:
        rt.queue.add(item.mode, item.text)
    if result.generation is not None:
        rt.publish(
            result.generation,
            model_changed=result.model_changed,
            thinking_changed=result.thinking_changed,
        )
    return True


async def answers(rt: HookSide, ev: Event) -> list[tuple[str, object]]:
    """(plugin, what its handler returned) for each plugin handling `ev`, in order. UI
    intents in a batch (Notify, Progress, Status) are sent out at once and taken out:
    they are part of no decision and never conflict."""
    found: list[tuple[str, object]] = []
    for plugin in rt.plugins:
        batch = await answer(rt, plugin, ev)
        if batch is not NO_HANDLER:
            found.append((plugin.name, batch))
    return found


NO_REASON = "the command failed and gave no reason"  # HandleInput(error="")
NO_HANDLER = object()  # what `answer` gives for a plugin with nothing to do at an event


async def answer(rt: HookSide, plugin: Plugin, ev: Event) -> object:
    """What `plugin`'s handler of `ev` returned (its UI intents sent out), Failed, or
    NO_HANDLER: it has none, or says it has nothing to do (Plugin.wants), or is not
    ready, which at tool_call is Failed (a reviewer not ready denies:
    smith.runtime._lifecycle)."""
    handler = plugin.handlers.get(ev["type"])
    if handler is None:
        return NO_HANDLER
    if (waiting := rt.lifecycle.not_ready(plugin)) is not None:
        return Failed(waiting) if ev["type"] == "tool_call" else NO_HANDLER
    if not _wanted(rt, plugin, ev):
        return NO_HANDLER
    batch = await call_handler(rt, plugin, handler, ev)
    return _post_intents(rt, plugin.name, batch)


def _wanted(rt: HookSide, plugin: Plugin, ev: Event) -> bool:
    """Whether `plugin` has anything to do at `ev` (Plugin.wants, asked on the loop); a
    `wants` that raises leaves it to the handler, which fails as it fails."""
    if plugin.wants is None:
        return True

    try:
        return bool(plugin.wants(ev["type"], rt.view(plugin)))
    except Exception:
        return True


def unreviewed(how: str) -> DenyCall:
    """The denial of a call its tool_call handler did not decide (`how`: it failed, ran
    past its deadline, returned what tool_call does not take). A reviewer that broke
    fails closed, in a turn and for smith mcp's calls alike."""
    return DenyCall(f"its tool_call handler {how}, so nothing reviewed the call")


class Failed:
    """What call_handler gives for a handler that failed or passed its deadline (already
    reported): nothing, except at `tool_call`, where it denies the call."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _post_intents(rt: HookSide, plugin: str, batch: object) -> object:
    if isinstance(batch, SHOWN_TYPES):
        rt.post(batch, origin=plugin)
        return None
    if not isinstance(batch, list | tuple):
        return batch
    rest = []
    for item in batch:
        if isinstance(item, SHOWN_TYPES):
            rt.post(item, origin=plugin)
        else:
            rest.append(item)
    return rest


async def call_handler(rt: HookSide, plugin: Plugin, handler: Any, ev: Event) -> object:
    """A handler's batch, or Failed (reported) if it failed or ran past its deadline.

    Handlers run in a thread of their own (coroutine handlers on a loop of their own
    there), so one that blocks or ignores cancellation is simply abandoned: the loop
    stops waiting for it and a daemon thread never holds up exit. An abandoned
    coroutine handler is also cancelled (in its own loop), so it can end what it
    started: a hook's command is killed at an abort, not left to its timeout."""
    import concurrent.futures
    import contextlib
    import copy
    import threading

    from smith.runtime._intents import Gate

    deadline = max(rt.limits.handler_deadline, plugin.handler_deadline or 0.0)
    done: concurrent.futures.Future[object] = concurrent.futures.Future()
    gate = Gate()  # the deadline leaves out the time spent waiting for answers
    view = rt.view(plugin, gate)
    ev = copy.deepcopy(ev)  # the handler's own: recorded messages stay untouched

    stop = _Stop()

    def call() -> None:
        try:
            result = handler(ev, view)
            if asyncio.iscoroutine(result):
                result = asyncio.run(stop.running(result))
            outcome: tuple[object, BaseException | None] = (result, None)
        except BaseException as exc:  # reported by the loop, whatever it was
            outcome = (None, exc)
        # The loop may have stopped waiting (deadline, abort): then nobody listens.
        with contextlib.suppress(concurrent.futures.InvalidStateError):
            if outcome[1] is None:
                done.set_result(outcome[0])
            else:
                done.set_exception(outcome[1])

    threading.Thread(target=call, name=f"plugin {plugin.name}", daemon=True).start()
    answer = asyncio.wrap_future(done)
    try:
        return await _within(answer, deadline, gate)
    except TimeoutError:
        reason = f"no answer within {deadline} s"
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}"
    finally:
        answer.cancel()  # abandoned (or done): a late answer is nobody's
        if not done.done() or done.cancelled():
            stop()  # a coroutine handler is cancelled: it ends what it started
    rt.error(
        HANDLER_FAILED(
            value=plugin.name,
            source=_src(plugin.name),
            plugin=plugin.name,
            event=ev["type"],
            reason=reason,
            deadline=deadline,
        )
    )
    return Failed(reason)


class _Stop:
    """Cancels a coroutine handler's task from the loop's side once the loop abandons
    it (an abort, its deadline), so what it started (a hook's process) ends then rather
    than when it would have; a plain function's thread cannot be stopped, only left."""

    def __init__(self) -> None:
        import threading

        self._lock = threading.Lock()
        self._stopped = False
        self._cancel: Callable[[], object] | None = None

    async def running(self, coro: Any) -> object:
        task = asyncio.ensure_future(coro)
        loop = asyncio.get_running_loop()
        with self._lock:
            self._cancel = lambda: loop.call_soon_threadsafe(task.cancel)
            if self._stopped:
                task.cancel()
        return await task

    def __call__(self) -> None:
        import contextlib

        with self._lock:
            self._stopped = True
            if self._cancel is not None:
                with contextlib.suppress(RuntimeError):  # its loop has closed: it ended
                    self._cancel()


async def _within(answer: asyncio.Future[object], deadline: float, gate: Any) -> object:
    """The handler's answer, waiting at most `deadline` seconds of its own time: while
    it waits for a question to be answered the clock stops (TimeoutError past it)."""
    import time

    start = time.monotonic()
    while True:
        if answer.done():
            return answer.result()
        if gate.pending:
            quiet = asyncio.ensure_future(gate.quiet.wait())
            try:
                await asyncio.wait({answer, quiet}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                quiet.cancel()
            continue
        remaining = deadline - gate.used(start)
        if remaining <= 0:
            raise TimeoutError
        try:
            return await asyncio.wait_for(asyncio.shield(answer), remaining)
        except TimeoutError:
            continue


async def _decide(rt: HookSide, ev: Event) -> list[tuple[str, HookAction]]:
    """The actions the handlers of hook event `ev` returned, in plugin order; what a
    hook does not take is reported and left out (that plugin counts as allowing)."""
    actions: list[tuple[str, HookAction]] = []
    for plugin, batch in await answers(rt, ev):
        actions += [(plugin, a) for a in checked(rt, plugin, ev["type"], batch)]
    return actions


def checked(rt: HookSide, plugin: str, kind: str, batch: object) -> list[HookAction]:
    """The actions of one handler's answer at hook `kind` that the hook takes. A failed
    handler, or one that returned what the hook does not take (reported), decides
    nothing, except at tool_call, where it denies the call (a reviewer that broke fails
    closed)."""
    allowed = HOOK_ACTIONS[kind]
    if isinstance(batch, Failed):
        return [unreviewed(f"failed ({batch.reason})")] if kind == "tool_call" else []
    items = batch if isinstance(batch, list | tuple) else [] if batch is None else [batch]
    # An action of a kind this hook takes, with fields of their types (a rewrite's
    # arguments an object): anything else decides nothing.
    wrong = next((a for a in items if not isinstance(a, allowed) or ill_typed(a)), None)
    if wrong is None:
        return [cast(HookAction, a) for a in items]
    shown = repr(wrong)[:80]
    rt.error(
        WRONG_ACTION(
            value=shown,
            source=_src(plugin),
            plugin=plugin,
            returned=shown,
            event=kind,
            allowed=", ".join(t.__name__ for t in allowed),
        )
    )
    if kind == "tool_call":  # fails closed: what it decided is unknown
        return [unreviewed(f"returned {shown}, which decides nothing")]
    return []


def _conflict(rt: HookSide, ev: str, slot: str, claims: Sequence[tuple[str, object]]) -> Diagnostic:
    """Report (and return) that `claims` ask for different things at one hook."""
    problem = CONFLICT(
        value=slot,
        source=_src(claims[0][0]),
        plugins=", ".join(dict.fromkeys(p for p, _ in claims)),
        slot=slot,
        event=ev,
        values="; ".join(f"{p}: {_shown(a)}" for p, a in claims),
    )
    rt.error(problem)
    return problem


def _distinct(claims: Sequence[tuple[str, object]]) -> list[tuple[str, object]]:
    """The first claim of each different value, in plugin order."""
    seen: dict[str, tuple[str, object]] = {}
    for plugin, action in claims:
        seen.setdefault(_shown(action), (plugin, action))
    return list(seen.values())


def _shown(action: object) -> str:
    if isinstance(action, RewriteArguments):
        return json.dumps(dict(action.arguments), sort_keys=True, default=repr)
    return repr(action)


def _src(plugin: str) -> Source:
    return Source("plugin", plugin)


# -- session_start and input ------------------------------------------------------------


async def start_session(rt: LoopContext) -> None:
    """`session_start`, once per runtime, before its first turn."""
    if rt.session_started:
        return
    rt.session_started = True
    entries = rt.entries_at_start
    ev = event("session_start", session=rt.session.id, resumed=entries > 0, entries=entries)
    rt.emit(ev)
    await dispatch(rt, ev)


Notes = dict[str, object]  # what a user message records about how it came to be
_AS_TYPED: Notes = {}  # shared, never changed: the notes of input sent as typed
Part = dict[str, Any]  # a content part of a user message
_NO_PARTS: list[Part] = []  # shared, never changed: no parts after the text


async def accept_inputs(
    rt: LoopContext,
    texts: Sequence[str],
    mode: str = "prompt",
    *,
    images: Sequence[Sequence[Image]] = (),
) -> list[tuple[str, Notes, list[Part]]]:
    """The user messages to record for `texts`, each with its notes and the content
    parts that go after its text: the prompt template it invoked (`template`: name,
    source, what was typed), a plugin's transformation (`transformed`), the files its
    `@path`s attach (`attached`, smith.runtime._attach), after the images given with it
    (`images[i]` for `texts[i]`: stored once in the session, smith.runtime._images);
    inputs handled as commands are left out (`input_handled` says so). A template is
    expanded first, so plugins see what will be sent. The first run also starts the
    session (`session_start`). An abort meanwhile keeps what is not decided yet as
    typed: the loop records it and then sees the abort."""
    kept: list[tuple[str, Notes, list[Part]]] = []
    pictures: list[Sequence[Image]] = []  # the images of each kept input (when any has)
    typed = [_expand(rt, text) for text in texts]
    done = 0  # inputs decided (kept or handled), in order
    try:
        if mode == "prompt" and rt.abort_reason is None:
            await start_session(rt)
        for pair in typed:
            keep: tuple[str, Notes, list[Part]] | None = (*pair, _NO_PARTS)
            if rt.abort_reason is None and "input" in rt.handled:
                accepted = await _accept(rt, pair[0], mode)  # an abort here keeps it as typed
                keep = None if accepted is None else (
                    accepted[0], {**pair[1], **accepted[1]}, accepted[2])  # fmt: skip
            if keep is not None:
                kept.append(keep)
                if images:
                    pictures.append(images[done] if done < len(images) else ())
            done += 1
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        kept += [(*pair, _NO_PARTS) for pair in typed[done:]]
        if images:
            pictures += [images[i] if i < len(images) else () for i in range(done, len(typed))]
    out = [await _attach(rt, *input) for input in kept]
    if not images:  # the usual case: nothing more to do, nothing allocated for it
        return out
    from smith.runtime._images import image_part

    return [
        (text, notes, [*(image_part(rt.session, image) for image in given), *parts])
        for (text, notes, parts), given in zip(out, pictures, strict=True)
    ]


async def _attach(
    rt: LoopContext, text: str, notes: Notes, given: list[Part]
) -> tuple[str, Notes, list[Part]]:
    """The input with the files its `@path`s name, after what a plugin attached (`given`,
    noted in `notes`); none: as it was, at no cost."""
    if "@" not in text or rt.abort_reason is not None:
        return text, notes, given
    from smith.runtime._attach import attachments

    try:
        parts, attached = await attachments(rt, text)
    except asyncio.CancelledError:  # aborted meanwhile: sent as typed, the loop sees it
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        return text, notes, given
    if not parts:
        return text, notes, given
    before = cast("list[object]", notes.get("attached", []))
    return text, {**notes, "attached": [*before, *attached]}, [*given, *parts]


def _expand(rt: LoopContext, text: str) -> tuple[str, Notes]:
    """`text` with the prompt template it invokes (`/NAME args`) expanded, and the note
    saying so; as it was when it invokes none."""
    from smith.runtime._templates import match

    found = match(rt.templates, text) if rt.templates and text[:1] in "/ \t\n" else None
    if found is None or any(c.name == found[0].name for p in rt.plugins for c in p.commands):
        return text, _AS_TYPED  # a plugin's command of that name wins (_templates)
    template, arguments = found
    expanded = template.expand(arguments)
    if not expanded.strip():
        from smith.runtime._templates import EMPTY

        rt.error(
            EMPTY(
                value=text,
                source=Source(rt.surface, "prompt"),
                name=template.name,
                arguments=arguments.strip(),
                hint=template.argument_hint or "none",
                file=template.source,
            )
        )
        return text, _AS_TYPED
    note = {"name": template.name, "source": template.source, "typed": text}
    return expanded, {"template": note}


async def _accept(rt: LoopContext, text: str, mode: str) -> tuple[str, Notes, list[Part]] | None:
    shown = str(rt.secrets.redact(text))
    decided = await _decide(rt, event("input", text=shown, mode=mode))
    # An answer that only attaches (TransformInput of the input's own text, with
    # `attach`) adds to whatever else is decided, and conflicts with nothing.
    adds = [(p, a) for p, a in decided if isinstance(a, TransformInput) and a.attach
            and a.text == shown]  # fmt: skip
    actions = _distinct([claim for claim in decided if claim not in adds])
    if len(actions) > 1:
        _conflict(rt, "input", "the input", actions)
        actions = []  # sent as typed
    plugin, action = actions[0] if actions else ("", None)
    if not isinstance(action, HandleInput):
        notes: Notes = {}
        if isinstance(action, TransformInput):
            notes["transformed"] = {"plugin": plugin, "original": shown}
        given = [(p, a.attach) for p, a in [*adds, *actions] if isinstance(a, TransformInput)]
        sent = action.text if isinstance(action, TransformInput) else text
        if not any(pairs for _, pairs in given):
            return sent, notes, _NO_PARTS
        from smith.runtime._attach import attached_by

        parts, attached = attached_by(rt, given)
        return sent, {**notes, "attached": attached}, parts
    reply = None if action.reply is None else str(rt.secrets.redact(action.reply))
    # Recorded (never sent to the model: the context is built from messages only), so
    # replay and the transcript show what the plugin did with the input.
    record = {"plugin": plugin, "mode": mode, "text": shown, "reply": reply}
    if action.error is not None:  # the command failed (kept only then: older entries lack it)
        said = action.error.strip() and str(rt.secrets.redact(action.error))
        record["error"] = said or NO_REASON  # never empty: frontends test it as a flag
    entry = rt.session.append("input_handled", record)
    rt.emit(event("input_handled", entry_id=entry.id, **record))
    return None


# -- tool_call and tool_result -----------------------------------------------------------


async def present(
    rt: LoopContext, calls: Sequence[Call], results: list[Result]
) -> tuple[list[Result], bool]:
    """The results with what the model is to see of each (`presented`: {text, plugin}
    beside the real output), and whether an abort came meanwhile (then the results not
    yet presented are kept as they are)."""
    if "tool_result" not in rt.handled:
        return results, False
    shown = list(results)
    try:
        for i, (call, result) in enumerate(zip(calls, results, strict=True)):
            if "denied" not in result:  # a call that never ran has no result to change
                shown[i] = await _present(rt, call, result)
    except asyncio.CancelledError:
        return shown, True
    return shown, False


async def _present(rt: LoopContext, call: Call, result: Result) -> Result:
    ev = event("tool_result", tool_call_id=call["id"], name=call["name"],
               arguments=call["arguments"], result=result, is_error=not result["ok"])  # fmt: skip
    replacements = _distinct(await _decide(rt, ev))
    if len(replacements) > 1:
        _conflict(rt, "tool_result", f"the result of call {call['id']}", replacements)
        return result
    if not replacements:
        return result
    plugin, action = replacements[0]
    assert isinstance(action, ReplaceResult)
    text = str(rt.secrets.redact(action.text))
    return {**result, "presented": {"text": text, "plugin": plugin}}
