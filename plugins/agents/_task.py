"""The `task` tool: one call runs a sub-agent to its end (docs/agents.md).

    spec = task_tool(found, max_depth=3, max_turns=100)   # found: _definitions.discover

A call starts a child runtime (ToolContext.spawn_child, smith.runtime._children) on a new
branch of the session forked at the call's own effect intent, so its conversation starts
fresh: the task's prompt is its first message, the definition's body its system prompt,
the definition's tools all it is offered. The child's final text is the call's result;
a child that ended in error, was aborted or hit a limit gives an error result (with what
it had said). Each event of the child is reported as the call's progress (a
`tool_update` whose update is {"child": event}), so frontends show it live under the
call and replay shows the recorded branch the same way. What limits the tree (depth,
turns of all sub-agents together) is a tool error from spawn_child, which the model
reads and can act on.

What the call itself is, for approval and the crash rule: the union of what its child may
do (effect "unknown", mutating), so approval's `untrusted` asks before delegating and an
interrupted call's changes are unknown; the child's own calls are reviewed by approval
one by one as any call is. It touches no path of its own (`touches` is empty), so several
task calls of one response run at once; their children's calls are ordered within each
child only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from smith.effects import ToolContext, ToolResult, ToolSpec

    from ._definitions import Found

TIMEOUT = 3600.0  # seconds a call may run: a sub-agent's task takes many rounds
POLL = 0.05  # seconds between looks at the call's cancellation
GRACE = 30.0  # seconds a cancelled call waits for its child to end (its tools' grace)
DEFAULT = "general"
DONE = ("end", "done")  # how a child's prompt ends when it answered

PARAMETERS: dict[str, object] = {
    "type": "object",
    "properties": {
        "prompt": {
            "type": "string",
            "description": "The whole task and what to answer with (it sees nothing else).",
        },
        "agent": {"type": "string", "description": f"An agent listed above (default {DEFAULT})."},
        "description": {"type": "string", "description": "A few words naming the task."},
    },
    "required": ["prompt"],
    "additionalProperties": False,
}


def describe(found: Found) -> str:
    """The tool's description: what it does and every agent it can run (each definition's
    description; the built-ins' are short, as every request carries them)."""
    agents = "\n".join(f"- {d.name}: {d.description}" for d in found.definitions.values())
    return (
        "Run a sub-agent on a self-contained task; its final report is the result, and "
        "what it reads stays out of your context. It sees none of this conversation, so "
        "the prompt must say all it needs. Task calls in one response run at once. "
        "Agents:\n" + agents
    )


def task_tool(found: Found, *, max_depth: int, max_turns: int) -> ToolSpec:
    """The task tool over the definitions `found`, within the tree's limits."""
    from smith.effects import Presentation, ToolSpec

    def run(ctx: ToolContext, arguments: dict[str, object]) -> ToolResult:
        details: dict[str, object] = {}  # what a cancelled call's result says of its child
        return _on_loop(ctx, run_task(
            ctx, found, str(arguments["prompt"]), str(arguments.get("agent") or DEFAULT),
            str(arguments.get("description") or ""), max_depth=max_depth, max_turns=max_turns,
            details=details,
        ), details)  # fmt: skip

    return ToolSpec(
        "task",
        describe(found),
        PARAMETERS,
        run,
        effect="unknown",  # the union of what its child may do
        timeout=TIMEOUT,
        touches=lambda arguments: [],  # none itself: task calls run concurrently
        presentation=Presentation("description"),
        own_thread=True,  # it waits for its child's calls: it must hold no pool worker
    )


def _on_loop(
    ctx: ToolContext, work: Coroutine[Any, Any, ToolResult], details: dict[str, object]
) -> ToolResult:
    """Run `work` on the runtime's loop from the call's thread. When the call is
    cancelled, cancel it (Children.run aborts the child) and wait until the child has
    ended and recorded how (within GRACE), so the call ends after its child: the parent
    never records, closes or goes on while its child still writes. A cancelled call's
    result has `details` (its child's branch, once it has ended); one whose work ended
    meanwhile (a sub-agent the user interrupted aborts the parent) has its own result."""
    import asyncio
    import concurrent.futures
    import threading

    from smith.effects import ToolCancelled, ToolError

    loop = ctx.loop
    if loop is None or loop.is_closed():
        work.close()
        raise ToolError("the task tool runs sub-agents only within a runtime")
    ended = threading.Event()

    async def guarded() -> ToolResult:
        try:
            return await work
        finally:
            ended.set()

    future = asyncio.run_coroutine_threadsafe(guarded(), loop)
    while True:
        try:
            return future.result(timeout=POLL)
        except concurrent.futures.TimeoutError:
            pass
        except concurrent.futures.CancelledError:  # cancelled on the loop's side
            ended.wait(GRACE)
            raise ToolCancelled("unknown", details=dict(details)) from None
        if ctx.cancelled.is_set() or loop.is_closed():
            if not ended.is_set():
                future.cancel()
            ended.wait(GRACE)
            try:
                return future.result(timeout=GRACE if future.cancelled() else 1.0)
            except (concurrent.futures.CancelledError, concurrent.futures.TimeoutError):
                raise ToolCancelled("unknown", details=dict(details)) from None


async def run_task(
    ctx: ToolContext,
    found: Found,
    prompt: str,
    agent: str,
    description: str,
    *,
    max_depth: int,
    max_turns: int,
    details: dict[str, object] | None = None,
) -> ToolResult:
    """One call: the definition `agent` run on `prompt` (see the module); `details`
    (filled in as it goes) is what its result's details say of the sub-agent."""
    import contextvars

    from smith.diagnostics import SmithError
    from smith.effects import ToolError, ToolResult

    if not prompt.strip():
        raise ToolError("the task's prompt is empty: say the whole task and what to answer with")
    definition = found.definitions.get(agent.strip() or DEFAULT)
    if definition is None:
        known = ", ".join(found.definitions)
        left_out = "".join(f"; {w}" for w in found.warnings if "is not used" in w)
        raise ToolError(f"there is no agent named {agent!r}; the agents are: {known}{left_out}")
    changed: list[str] = []
    # The child's events come in its own prompt's context: what the call reports of them
    # carries this call's submission, as everything the call says does.
    here = contextvars.copy_context()

    def watch(event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "tool_end":
            result = event.get("result")
            if isinstance(result, dict):
                changed.append(str(result.get("mutation", "unknown")))
        # Live progress: each of its events, as the call's update (replay gives the same).
        here.run(ctx.progress, {"child": event})

    details = {} if details is None else details
    details.update(agent=definition.name, description=description)

    def linked(at: str, leaf: str) -> None:  # a result of a child that ran names its branch
        details["branch"] = {"at": at, "leaf": leaf}

    try:
        run = await ctx.spawn_child(
            prompt,
            system_prompt=definition.prompt,
            model=definition.model,
            offered=definition.offered,
            max_depth=max_depth,
            max_turns=max_turns,
            watch=watch,
            on_branch=linked,
            label=_label(definition.name, description),
        )
    except ToolError as exc:  # a limit: its details name the branch of a child that ran
        raise ToolError(exc.message, mutation=exc.mutation,
                        details={**details, **exc.details}) from None  # fmt: skip
    except SmithError as exc:  # its model cannot be used
        raise ToolError(
            f"the agent {definition.name} ({definition.source}) cannot run: {exc.diagnostic.what}"
        ) from None
    mutation = _mutation(changed)
    details.update(stop=run["stop"], turns=run["turns"], depth=run["depth"],
                   branch={"at": run["at"], "leaf": run["leaf"]})  # fmt: skip
    text = str(run["text"])
    said = f"; what it had said: {text}" if text.strip() else ""
    if run.get("interrupted"):  # its turn ended: so does this one (Children.run)
        details["interrupted"] = True
        raise ToolError(
            f"the sub-agent {definition.name} did not finish: the user interrupted it, and "
            f"the turn ended there{said}. Do not retry it; wait for the user's next message.",
            mutation=mutation, details=details,
        )  # fmt: skip
    if run["stop"] not in DONE:
        why = run.get("error") or f"it stopped ({run['stop']})"
        raise ToolError(f"the sub-agent {definition.name} ended without finishing: {why}{said}",
                        mutation=mutation, details=details)  # fmt: skip
    return ToolResult(text or "(the sub-agent gave no answer)", details=details,
                      mutation=mutation)  # fmt: skip


def _label(agent: str, description: str) -> str:
    """What a sub-agent's questions say it is: its agent and the task's description (one
    line, at most 80 characters)."""
    said = " ".join(description.split())
    said = said if len(said) <= 80 else said[:79] + "…"
    return f"{agent}: {said}" if said else agent


def _mutation(ends: list[str]) -> str:
    """What the child's calls changed, together: nothing, something, or not known."""
    if "unknown" in ends:
        return "unknown"
    return "applied" if "applied" in ends else "not-applied"


__all__ = ["describe", "task_tool"]
