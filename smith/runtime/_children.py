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

A child has its parent's model (the provider the parent uses now, so one provider engine
serves the tree) unless given another, and the tools named by `offered` among the given
tools (default the built-ins) and its plugins' (default: all of them, so a child can
start children of its own), never one its parent was not offered (a restricted child's
own children are restricted as it is, whatever they ask for). The children of one root
runtime form a tree (`Tree`): `max_depth` bounds how deep a call may start one (the
root's children are at depth 1) and `max_turns` the provider rounds of all the root's
descendants together; either is a ToolError, which the model reads as the call's error
result, never a crash (a child is given at most the rounds the tree has left, so it stops
before the round past the cap; of children running at once, the one whose round would
pass it is aborted at its turn_start, before the round's request is sent; either ends its
call so). The rounds are counted per prompt of the root runtime (Tree.prompt). A child
that ended because the user interrupted it at a call (an interrupt answer to its
question: DenyCall.interrupt) aborts its parent's turn too, so the interrupt ends the
turn the user is watching. What a child spent is added to its parent's cost meter when it
ends, however it ends (unknown usage stays unknown: CostMeter.merge). Its questions (an
approval, a plugin's) go to the frontends attached to the parent; its events only to the
caller's `watch`.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Sequence

    from smith.effects import ToolSpec
    from smith.providers import Provider
    from smith.runtime._build import Assembly
    from smith.runtime._events import Event
    from smith.runtime._limits import Limits
    from smith.runtime._runtime import Runtime
    from smith.session import Branch, Session


class Tree:
    """What the runtimes started from one root runtime share: the provider rounds all its
    descendants have taken (their turn_start events) since the root's current prompt
    (`prompt`, its submission) began: the cap is per prompt of the root."""

    __slots__ = ("prompt", "turns")

    def __init__(self) -> None:
        self.turns = 0
        self.prompt: str | None = None


class _Seen:
    """What a child's events tell its run: its rounds (counted in the tree's too; the
    round past the tree's cap aborts it before its request is sent) and how it ended;
    each event is passed on to `watch`."""

    def __init__(
        self, child: Runtime, tree: Tree, max_turns: int | None,
        watch: Callable[[Event], object] | None,
    ) -> None:  # fmt: skip
        self.child, self.tree, self.max_turns, self.watch = child, tree, max_turns, watch
        self.ended: list[Event] = []
        self.turns = 0
        self.capped = False

    def __call__(self, event: Event) -> None:
        kind = event["type"]
        if kind == "agent_end":
            self.ended.append(event)
        elif kind == "turn_start":
            self.turns += 1
            self.tree.turns += 1
            over = self.max_turns is not None and self.tree.turns > self.max_turns
            if over and not self.capped:
                self.capped = True
                self.child.abort()  # before the round's request (the loop checks)
        if self.watch is not None:
            self.watch(event)


class Children:
    """Starts child runtimes on new branches of `session` (ToolContext.children)."""

    def __init__(
        self, assembly: Assembly, session: Session, model: str | tuple[Provider, str]
    ) -> None:
        self.assembly = assembly
        self.session = session
        self.model = model
        self.parent: Runtime | None = None  # the runtime whose tools start children
        self.depth = 0  # of `parent` below the tree's root runtime
        self.tree = Tree()
        # The tools `parent` is offered (None: all): its children get at most these.
        self.offered: frozenset[str] | None = None

    async def run(
        self,
        prompt: str,
        *,
        tools: Sequence[ToolSpec] | None = None,
        system_prompt: str | None = None,
        limits: Limits | None = None,
        model: str | tuple[Provider, str] | None = None,
        at: str | None = None,
        offered: Collection[str] | None = None,
        max_depth: int | None = None,
        max_turns: int | None = None,
        watch: Callable[[Event], object] | None = None,
        on_branch: Callable[[str, str], object] | None = None,
        label: str | None = None,
    ) -> dict[str, Any]:
        """Run `prompt` in a child runtime on a new branch forked at `at` (default: the
        parent's leaf now; `spawn_child` passes its call's intent entry) and wait for it
        to stop; `watch` sees each of its events. Returns how it ended: `stop`, `error`,
        the final `message` and its `text`, the branch's fork point (`at`) and `leaf`,
        its `turns` and `depth`, and `interrupted` (True when the user interrupted it at
        a question: the parent's turn is aborted too, as an interrupt ends a turn). A
        ToolError when the child would be deeper than `max_depth` or the tree has taken
        `max_turns` rounds (see the module; its details name the branch of a child that
        ran). `on_branch(at, leaf)` is told the branch once the child has ended, however
        it ended (cancelled too). `label`: what the child is doing, which its questions
        name (Runtime.subagent)."""
        from smith.session import Branch

        depth, tree = self._admit(max_depth, max_turns)
        if max_turns is not None:  # a lone child stops before the round past the cap
            limits = _within(limits or self.assembly.options.get("limits"), max_turns - tree.turns)
        if self.offered is not None:  # no child has a tool its parent was not offered
            offered = self.offered if offered is None else self.offered & set(offered)
        branch = Branch(self.session, self.session.leaf if at is None else at, apart=True)
        child = self._child(
            branch, depth, model=model or self._model(), tools=tools,
            system_prompt=system_prompt, limits=limits, offered=offered, label=label,
        )  # fmt: skip
        seen = _Seen(child, tree, max_turns, watch)
        stop_watching = child.on_event(seen)
        try:
            child.prompt(prompt)
            await child.wait_idle()
        except asyncio.CancelledError:
            child.abort()
            raise
        finally:
            stop_watching()
            await child.close()
            if self.parent is not None:  # what it spent is the parent's too
                self.parent.cost.merge(child.cost)
            at, leaf = branch.fork_point, branch.leaf
            if on_branch is not None and at is not None and leaf is not None:
                on_branch(at, leaf)
        return self._ended(seen, branch, depth, max_turns)

    def _admit(self, max_depth: int | None, max_turns: int | None) -> tuple[int, Tree]:
        """The depth of a child started now, and its tree (its rounds counted from the
        root's current prompt on); a ToolError past the tree's limits."""
        from smith.effects import ToolError
        from smith.runtime._events import SUBMISSION

        depth, tree = self.depth + 1, self.tree
        if self.depth == 0 and tree.prompt != SUBMISSION.get():  # the cap is per prompt
            tree.prompt, tree.turns = SUBMISSION.get(), 0
        if max_depth is not None and depth > max_depth:
            raise ToolError(
                f"a sub-agent cannot start another here: it would be {depth} levels deep and "
                f"the limit is {max_depth}; do this part of the task yourself"
            )
        if max_turns is not None and tree.turns >= max_turns:
            raise ToolError(
                f"the sub-agents of this prompt have taken {tree.turns} turns, the limit of "
                f"the whole tree ({max_turns}); no more can start: finish the task with what "
                "you have"
            )
        return depth, tree

    def _ended(
        self, seen: _Seen, branch: Branch, depth: int, max_turns: int | None
    ) -> dict[str, Any]:
        """How a child that ran ended (see `run`)."""
        from smith.effects import ToolError

        link = {"branch": {"at": branch.fork_point, "leaf": branch.leaf}, "turns": seen.turns,
                "depth": depth}  # fmt: skip
        end: Event = seen.ended[-1] if seen.ended else {"stop": "error", "message": None}
        capped = seen.capped
        if max_turns is not None and end.get("stop") == "max_iterations":
            capped = capped or seen.tree.turns >= max_turns  # its rounds ran out with the tree's
        if capped:
            raise ToolError(
                f"the sub-agents of this prompt reached the limit of {max_turns} turns for "
                f"the whole tree; this one was stopped after {seen.turns} of its own and may "
                "have changed files part-way: check before going on",
                mutation="unknown",
                details=link,
            )
        interrupted = end.get("stop") == "abort" and _interrupted(self.session, branch.leaf)
        if interrupted and self.parent is not None:
            self.parent.abort()  # the user's interrupt ends the turn that waits on it too
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
            "turns": seen.turns,
            "depth": depth,
            "interrupted": interrupted,
        }

    def _child(self, branch: Branch, depth: int, label: str | None, **given: Any) -> Runtime:
        """The child runtime on `branch`, `depth` levels below the root, with `given`
        (model, tools, system prompt, limits, the tools offered)."""
        from smith.runtime._cost import CostMeter
        from smith.runtime._mode import follow
        from smith.runtime._pluginstate import TreeState

        child = self.assembly.runtime(
            branch,
            prepare=False,  # the parent's unfinished call is the fork point, not a loss
            parent=self.parent,  # its plugins: started once, by the parent
            **given,
        )
        # Its meter counts its own calls: the file's earlier ones (which a runtime over a
        # resumed session counts as its own) are the parent's, and already counted there.
        child.cost = CostMeter()
        if self.parent is not None:  # its questions go to whoever answers the parent's
            child.frontends = self.parent.frontends
            follow(child, self.parent)  # and it is in the parent's mode (plan) as it runs
            # What the user approved for the session holds across the tree.
            child.plugin_state = TreeState(branch, self.parent.plugin_state)
        child.subagent = label
        below = child.context.children
        if isinstance(below, Children):  # its own children are one level deeper
            below.depth, below.tree = depth, self.tree
            offered = given.get("offered")
            below.offered = None if offered is None else frozenset(offered)
        return child

    def _model(self) -> str | tuple[Provider, str]:
        """The parent's model now (its provider object: one engine for the tree)."""
        if self.parent is None:
            return self.model
        current = self.parent.current
        return current.provider, current.model_id


def _interrupted(session: Session, leaf: str | None) -> bool:
    """Whether the results of the last response on the branch ending at `leaf` say the
    user interrupted the turn at one of its calls (where the runtime aborted it)."""
    at = leaf
    while at is not None:
        entry = session.entry(at)
        content = entry.content if entry.kind == "message" else None
        if isinstance(content, dict):
            if content.get("role") != "tool_result":
                return False  # the response itself: its results are all above
            if _interrupts(content):
                return True
        at = entry.parent
    return False


def _interrupts(result: object) -> bool:
    """Whether a call's result says the user interrupted the turn there (a denied call's
    `interrupt`, or a task call whose sub-agent was interrupted)."""
    if not isinstance(result, dict):
        return False
    denied, details = result.get("denied"), result.get("details")
    return (isinstance(denied, dict) and denied.get("interrupt") is True) or (
        isinstance(details, dict) and details.get("interrupted") is True
    )


def _within(limits: object, rounds: int) -> Limits:
    """`limits` (None: the defaults) with at most `rounds` provider rounds per prompt."""
    from dataclasses import replace

    from smith.runtime._limits import Limits

    base = limits if isinstance(limits, Limits) else Limits()
    return replace(base, max_iterations=max(1, min(base.max_iterations, rounds)))


__all__ = ["Children", "Tree"]
