"""A controllable provider and a runtime in a temporary project, for runtime tests.

`Fake` plays lists of normalized stream events; a `Gate` in a list pauses the stream
until the test opens it, which is how tests abort at an exact point without sleeping.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Any

from smith.effects import ToolContext, ToolResult, ToolSpec, builtin_tools
from smith.providers import End, Pricing, Request, StreamEvent, TextDelta, ToolCall, Usage
from smith.runtime import Limits, Runtime
from smith.session import Session


class Gate:
    """A point in a stream (or a tool) that waits until the test opens it."""

    def __init__(self) -> None:
        self.reached = asyncio.Event()
        self.opened = asyncio.Event()

    async def wait(self) -> None:
        self.reached.set()
        await self.opened.wait()


class Fake:
    name = "fake"

    def __init__(self, *responses: list[StreamEvent | Gate], pricing: Pricing | None = None):
        self.responses = list(responses)
        self.requests: list[Request] = []
        self._pricing = pricing

    def pricing(self, model: str) -> Pricing | None:
        return self._pricing

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        if not self.responses:
            yield End("error", error="the fake provider has no response left")
            return
        for item in self.responses.pop(0):
            if isinstance(item, Gate):
                await item.wait()
            else:
                yield item


def say(text: str, *, usage: Usage | None = None, outcome: str = "success") -> list[Any]:
    words = text.split(" ")
    chunks = [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]
    events: list[Any] = [TextDelta(c) for c in chunks]
    if usage is not None:
        events.append(usage)
    return [*events, End(outcome)]  # type: ignore[arg-type]


def call(*calls: tuple[str, dict[str, Any]], text: str = "") -> list[Any]:
    events: list[Any] = [TextDelta(text)] if text else []
    events += [ToolCall(f"call_{i}", name, args) for i, (name, args) in enumerate(calls)]
    return [*events, End("tool_use")]


def slow_tool(
    name: str,
    release: threading.Event,
    *,
    mutating: bool = False,
    exclusive: bool = False,
    log: list[str] | None = None,
    probe: threading.Condition | None = None,
    started: threading.Event | None = None,
) -> ToolSpec:
    """A tool that records when it starts and ends, and waits for `release`.

    With a `probe`, a call also gives any other call up to 0.3 s to start alongside it
    before it ends: calls the scheduler wrongly lets overlap then interleave in `log`."""

    def run(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
        if log is not None:
            log.append(f"start {name} {args.get('path', '')}")
        if started is not None:
            started.set()
        if probe is not None:
            with probe:
                seen = len(log or [])
                probe.notify_all()
                probe.wait_for(lambda: len(log or []) > seen, timeout=0.3)
        while not release.wait(0.01):
            if ctx.cancelled.is_set():
                from smith.effects import ToolCancelled

                raise ToolCancelled("not-applied")
        if log is not None:
            log.append(f"end {name} {args.get('path', '')}")
        return ToolResult(f"{name} done {args.get('path', '')}".strip())

    schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "additionalProperties": False,
    }
    return ToolSpec(name, f"test tool {name}", schema, run, mutating=mutating, exclusive=exclusive)


class World:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.project = root / "project"
        self.project.mkdir(parents=True, exist_ok=True)
        (self.project / "src").mkdir(exist_ok=True)
        (self.project / "src" / "app.py").write_text("def app():\n    return 'hello'\n")
        self.path = str(root / "session.smith")
        self.session = Session.create(self.path, name="test", cwd=str(self.project))
        self.events: list[dict[str, Any]] = []
        self._waiters: dict[str, list[asyncio.Event]] = {}

    def runtime(
        self,
        provider: Any,
        *,
        tools: Iterable[ToolSpec] | None = None,
        limits: Limits | None = None,
        **kw: Any,
    ) -> Runtime:
        ctx = ToolContext(
            root=str(self.project),
            cwd=str(self.project),
            session=self.session,
            spill_dir=str(self.root / "out"),
        )
        rt = Runtime(
            self.session,
            model=(provider, "m"),
            tools=list(builtin_tools().values()) if tools is None else list(tools),
            context=ctx,
            limits=limits or Limits(retry_delay=0.001),
            **kw,
        )
        rt.on_event(self._seen)
        return rt

    def _seen(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        for waiter in self._waiters.pop(event["type"], []):
            waiter.set()

    async def until(self, type: str) -> None:
        """Wait until an event of `type` has been emitted (at once if it has been)."""
        if not self.of(type):
            waiter = asyncio.Event()
            self._waiters.setdefault(type, []).append(waiter)
            await waiter.wait()

    def converse(self, provider: Any, *, prompts: Iterable[str] = ("go",), **kw: Any) -> Runtime:
        """A runtime over `provider` that runs each prompt to its end, in turn."""

        async def main() -> Runtime:
            rt = self.runtime(provider, **kw)
            for text in prompts:
                rt.prompt(text)
                await rt.wait_idle()
            return rt

        result: Runtime = run(main)
        return result

    def types(self) -> list[str]:
        return [e["type"] for e in self.events]

    def of(self, type: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == type]

    def reopened(self) -> Session:
        """The session as a later process sees it (the file, not memory)."""
        return Session.load(self.path)


def messages(session: Session) -> list[dict[str, Any]]:
    return [e.content for e in session.branch() if e.kind == "message"]  # type: ignore[misc]


def run(coro_fn: Callable[[], Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coro_fn(), 30))
