"""The plugin event boundary: the handlers of an event, run in plugin order, each in a
thread of its own with a deadline (`call_handler`); at a safe point (smith.sdk
SAFE_POINTS) their batches go to `_generation.plan` and may publish a new generation.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from smith.diagnostics import DiagnosticKind, Source
from smith.runtime._events import Event
from smith.runtime._generation import plan
from smith.sdk import SAFE_POINTS, Plugin

if TYPE_CHECKING:
    from smith.runtime._runtime import Runtime

HANDLER_FAILED = DiagnosticKind(
    "plugin.handler-failed",
    what="plugin '{plugin}' failed in its {event} handler: {reason}",
    why="a handler must return its actions within {deadline} s without raising; this one "
    "did not, so it was abandoned",
    fix="fix or disable the plugin; the loop went on without its actions",
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


# -- running handlers -----------------------------------------------------------------


async def dispatch(rt: Runtime, ev: Event) -> None:
    """Run the plugin handlers of a safe-point event and publish their batch."""
    if ev["type"] not in SAFE_POINTS or ev["type"] not in rt.handled:
        return
    batches = await answers(rt, ev)
    if not any(batch for _, batch in batches):
        return
    from smith.runtime._runtime import THINKING_LEVELS

    result = plan(
        rt.current, ev["type"], batches, resolve=rt._resolve, thinking_levels=THINKING_LEVELS
    )
    for problem in result.problems:
        rt.error(problem)
    for item in result.enqueue:
        rt.queue.add(item.mode, item.text)
    if result.generation is not None:
        rt._publish(
            result.generation,
            model_changed=result.model_changed,
            thinking_changed=result.thinking_changed,
        )


async def answers(rt: Runtime, ev: Event) -> list[tuple[str, object]]:
    """(plugin, what its handler returned) for each plugin handling `ev`, in order."""
    found: list[tuple[str, object]] = []
    for plugin in rt.plugins:
        handler = plugin.handlers.get(ev["type"])
        if handler is not None:
            found.append((plugin.name, await call_handler(rt, plugin, handler, ev)))
    return found


async def call_handler(rt: Runtime, plugin: Plugin, handler: Any, ev: Event) -> object:
    """A handler's batch, or None if it failed or ran past its deadline.

    Handlers run in a thread of their own (coroutine handlers on a loop of their own
    there), so one that blocks or ignores cancellation is simply abandoned: the loop
    stops waiting for it and a daemon thread never holds up exit."""
    import concurrent.futures
    import contextlib
    import copy
    import threading

    deadline = rt.limits.handler_deadline
    done: concurrent.futures.Future[object] = concurrent.futures.Future()
    view = rt.view()
    ev = copy.deepcopy(ev)  # the handler's own: recorded messages stay untouched

    def call() -> None:
        try:
            result = handler(ev, view)
            if asyncio.iscoroutine(result):
                result = asyncio.run(result)
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
    try:
        return await asyncio.wait_for(asyncio.wrap_future(done), deadline)
    except TimeoutError:
        reason = f"no answer within {deadline} s"
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}"
    rt.error(
        HANDLER_FAILED(
            value=plugin.name,
            source=Source("plugin", plugin.name),
            plugin=plugin.name,
            event=ev["type"],
            reason=reason,
            deadline=deadline,
        )
    )
    return None
