"""Child runtimes: an agent run on a new branch of a parent's session, from a tool call.

    @smith.tool
    async def delegate(ctx: smith.ToolContext, task: str) -> str:
        run = await ctx.spawn_child(task, tools=[...], system_prompt="...", limits=...)
        return run["text"]

The assembly gives each runtime's tool context a `Children` over the runtime's session
(`ToolContext.children`). `run` forks a `smith.session.Branch` at an entry (from
`spawn_child`, default: the calling call's own effect_intent entry, `ToolContext.intent`,
which run_tool sets when it records the intent, so parallel calls each fork at their
own; without one, the parent's leaf now), built `apart`
(the child's conversation, effects and file history start after the fork point), and
runs a runtime of the same assembly on it, with its own tools, system prompt, limits and
model, until it stops. The parent waits on its tool call meanwhile; its cursor is
untouched (the child writes aside), so its next entries continue its own branch and the
file's selected leaf stays the parent's. Cancelling the call (an abort, a timeout)
aborts the child.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from smith.effects import ToolSpec
    from smith.providers import Provider
    from smith.runtime._build import Assembly
    from smith.runtime._events import Event
    from smith.runtime._limits import Limits
    from smith.runtime._runtime import Runtime
    from smith.session import Session


class Children:
    """Starts child runtimes on new branches of `session` (ToolContext.children)."""

    def __init__(
        self, assembly: Assembly, session: Session, model: str | tuple[Provider, str]
    ) -> None:
        self.assembly = assembly
        self.session = session
        self.model = model
        self.parent: Runtime | None = None  # the runtime whose tools start children

    async def run(
        self,
        prompt: str,
        *,
        tools: Sequence[ToolSpec] | None = None,
        system_prompt: str | None = None,
        limits: Limits | None = None,
        model: str | tuple[Provider, str] | None = None,
        at: str | None = None,
    ) -> dict[str, Any]:
        """Run `prompt` in a child runtime on a new branch forked at `at` (default: the
        parent's leaf now; `spawn_child` passes its call's intent entry) and wait for it
        to stop. Returns how it ended: `stop`, `error`,
        the final `message` and its `text`, the branch's fork point (`at`) and `leaf`."""
        from smith.session import Branch

        branch = Branch(self.session, self.session.leaf if at is None else at, apart=True)
        child = self.assembly.runtime(
            branch,
            prepare=False,  # the parent's unfinished call is the fork point, not a loss
            parent=self.parent,  # its plugins: started once, by the parent
            model=model or self.model,
            tools=tools,
            system_prompt=system_prompt,
            limits=limits,
        )
        ended: list[Event] = []
        stop_watching = child.on_event(
            lambda event: ended.append(event) if event["type"] == "agent_end" else None
        )
        try:
            child.prompt(prompt)
            await child.wait_idle()
        except asyncio.CancelledError:
            child.abort()
            raise
        finally:
            stop_watching()
            await child.close()
        end: Event = ended[-1] if ended else {"stop": "error", "message": None}
        message = end.get("message") or {"role": "assistant", "content": []}
        text = "".join(
            str(p.get("text", "")) for p in message.get("content", []) if p.get("type") == "text"
        )
        return {
            "stop": end.get("stop"),
            "error": end.get("error"),
            "message": message,
            "text": text,
            "at": branch.fork_point,
            "leaf": branch.leaf,
        }


__all__ = ["Children"]
