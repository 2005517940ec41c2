"""The one agent runtime: operations in, events out.

Every mode (TUI, web, eval, RPC, MCP, replay) and the library API drive a `Runtime`:

    runtime = Runtime(session, model="scripted:script.json", tools=tools, context=ctx)
    async for event in runtime.events(): ...        # observe (from another task)
    runtime.prompt("fix the failing test")          # operations return at once
    await runtime.wait_idle()

Operations: `prompt`, `steer`, `follow_up`, `abort`, `compact`, `set_model`,
`set_thinking`, queue listing and removal, or `submit({"op": ...})` with the same names.
Events are the dicts of docs/events.md. The loop itself (one prompt until an explicit
stop) is in `_loop.py`; provider streaming in `_steps.py`, the tool batch in `_batch.py`
(given the services of its turn, `_turn.Turn`). A runtime is built from typed parts
(`_parts`: `Runtime.of(session, parts)`; the keywords above build them).

A frontend consumes a runtime through `attach(frontend)` (smith.ui): its events as UI
intents, and the questions plugins ask (`ask`); `post` sends a plugin's notice,
progress or status out as a `ui` event (`_intents.py`). Any number may be attached: each
gets every event, and a question goes to each that can ask it (the first reply wins).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Unpack

from smith.diagnostics import Diagnostic, SmithError, Source
from smith.runtime._context import ContextCache
from smith.runtime._cost import CostMeter, carry_cost, count_earlier
from smith.runtime._events import SUBMISSION, Event, event, publish_entries
from smith.runtime._generation import Generation
from smith.runtime._kinds import LOOP_FAILED, OP_BUSY, check_thinking
from smith.runtime._mode import mode, start_mode
from smith.runtime._parts import Options, Parts, Services
from smith.runtime._project import prompt_parts
from smith.runtime._prompt import Part, compose
from smith.runtime._queue import InputQueue, listed
from smith.runtime._view import plugin_view
from smith.runtime.ops import APPLY, OPERATIONS, Operation, checked, parse_op
from smith.sdk import Plugin, RuntimeView, resolve_plugins
from smith.session import new_id

if TYPE_CHECKING:
    from smith.diagnostics import Surface
    from smith.effects import ToolContext, ToolSpec
    from smith.providers import Provider
    from smith.runtime._images import Image
    from smith.runtime._intents import Pending
    from smith.runtime._templates import Template
    from smith.session import Session
    from smith.ui import Asked, Frontend, Reply, Shown
    from smith.vcs import FileHistory

log = logging.getLogger("smith.runtime")


class Runtime:
    def __init__(
        self,
        session: Session,
        *,
        model: str | tuple[Provider, str],
        tools: Sequence[ToolSpec],
        context: ToolContext,
        **options: Unpack[Options],
    ) -> None:
        """The runtime over `session` with `model`, `tools` and the tools' `context`;
        `options` name the rest of its parts (smith.runtime._parts)."""
        self._assemble(session, Parts.of(model=model, tools=tools, context=context, **options))

    @classmethod
    def of(cls, session: Session, parts: Parts) -> Runtime:
        """The runtime over `session` built from `parts` (what the assembly builds)."""
        runtime = cls.__new__(cls)
        runtime._assemble(session, parts)
        return runtime

    def _assemble(self, session: Session, parts: Parts) -> None:
        from smith.effects import SecretRoutes
        from smith.providers import resolve_model, watch_credentials
        from smith.runtime._lifecycle import Lifecycle

        self.parts = parts
        self._abort_reason: str | None = None
        self.services = services = Services.open(
            session, parts, stopping=lambda: self._abort_reason is not None
        )
        self.session, self.context, self.secrets = session, services.context, services.secrets
        self.journal, self.history = services.journal, services.history
        self.memory, self.plugin_state = services.memory, services.plugin_state
        policies = parts.policies
        self.limits, self.context_policy = policies.limits, policies.context_policy
        self.surface: Surface = policies.surface
        self.templates: Mapping[str, Template] = policies.templates
        self.remember = policies.remember
        # The resolved plugin list's active plugins (smith.sdk.resolve_plugins: the
        # built-ins configuration leaves on, less the provider-only ones, which reach the
        # registry instead), then the caller's own plugins.
        side = parts.plugins
        self.plugin_list = side.plugin_list if side.plugin_list is not None else resolve_plugins()
        self.plugins = (*self.plugin_list.active, *side.plugins)
        self.plugin_list.configure(self.plugins)  # their settings, before any call of theirs
        self.context.routes = SecretRoutes.of(self.plugins)  # where secrets may go: theirs
        self.handled = frozenset(t for p in self.plugins for t in p.handlers)  # event types
        self.entries_at_start = len(session)  # 0: a new session (session_start says)
        self.session_started = False
        self.cost = CostMeter()
        self._counting: asyncio.Task[None] | None = None  # see _cost.carry_cost
        spec = parts.model
        self._resolve = spec.resolve or resolve_model
        check_thinking(spec.thinking)
        model = spec.model
        provider, model_id = self._resolve(model) if isinstance(model, str) else model
        setting = model if isinstance(model, str) else f"{provider.name}:{model_id}"
        # The plugins' start and stop, and the tools each offers now (its assembly's).
        self.lifecycle = Lifecycle(self, side.tool_sets, side.lifecycle)
        active = (*spec.tools, *self.lifecycle.tool_sets.tools())
        # What the model is told besides the conversation (docs/context.md), composed once.
        self.project = spec.project
        self.prompt_parts = tuple(
            prompt_parts(spec.project, self.plugins, [t.name for t in active], spec.system_prompt)
        )
        self._gen = Generation(0, setting, model_id, provider, spec.thinking,
                               compose(self.prompt_parts), active, dict(spec.settings))  # fmt: skip
        carry_cost(self)
        self.queue = InputQueue(
            {k: v for p in self.plugins for k, v in p.queue_policies.items()},
            steer=policies.queue_policy[0],
            follow_up=policies.queue_policy[1],
            on_change=lambda items: self.emit(
                event("queue_changed", queue=listed(items, self.secrets))
            ),
        )
        self.turn = 0
        self.kept_views: dict[
            str, tuple[tuple[int, int, str], RuntimeView]
        ] = {}  # plugin views kept for Plugin.wants (_view.plugin_view)
        self.context_cache = ContextCache()
        self.compaction_failed_at: int | None = None  # context tokens then
        self.last_message: dict[str, Any] | None = None  # the latest assistant message
        self._init_running_state()
        # Every provider credential read in this process, now or later (a renewed
        # token), is redacted from what the model is sent and the session records.
        watch_credentials(self.secrets.protect)
        self.secrets.record(session)
        # Every entry appended from now on is an `entry` event (frontends follow the
        # session through these and the Entries operation, never the Session itself).
        self._unpublish = publish_entries(session, self.emit)
        start_mode(self)  # --plan: in plan mode from the start (smith.runtime._mode)

    def _init_running_state(self) -> None:
        """What the runtime keeps about the task it runs and who listens."""
        self._subscribers: list[asyncio.Queue[Event | None]] = []
        self._callbacks: list[Callable[[Event], object]] = []
        # The attached frontends, in the order they were attached: where questions go.
        self.frontends: list[Frontend] = []
        # A sub-agent's runtime: what it is doing, which its questions name (its task's
        # description or agent; smith.runtime._children). None: the agent the user runs.
        self.subagent: str | None = None
        # The questions waiting for the frontend (each with the reason it was withdrawn,
        # once it is).
        self.asking: dict[asyncio.Future[Reply], Pending] = {}
        self._task: asyncio.Task[None] | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self._abort_reason = None
        self._started = False  # whether the current task has begun running
        self._compact_requested = False
        self._compact_focus: str | None = None  # what the asked-for compaction must keep
        self._closed = False

    # -- the published generation (what handlers may read: smith.sdk.RuntimeView) ----

    @property
    def generation(self) -> int:
        return self._gen.number

    @property
    def current(self) -> Generation:
        return self._gen

    @property
    def model(self) -> str:
        return self._gen.model

    @property
    def thinking(self) -> str:
        return self._gen.thinking

    @property
    def system_prompt(self) -> str:
        return self._gen.system_prompt

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self._gen.tools)

    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    def state(self) -> dict[str, Any]:
        return {
            "busy": self.busy,
            "session": self.session.id,
            "model": self.model,
            "thinking": self.thinking,
            "generation": self.generation,
            "tools": list(self.tool_names),
            "queue": listed(self.queue.items(), self.secrets),
            "cost": self.cost.to_dict(),
            "mode": mode(self),  # normal or plan
        }

    # -- events out -------------------------------------------------------------------

    def emit(self, ev: Event) -> None:
        # The submission that caused it (docs/events.md, Submissions): set in its task.
        if (submission := SUBMISSION.get()) is not None and "submission" not in ev:
            ev["submission"] = submission
        for queue in self._subscribers:
            queue.put_nowait(ev)
        for callback in list(self._callbacks):
            try:
                callback(ev)
            except Exception:  # observers are best-effort: never break the loop
                log.exception("an event observer failed on %s", ev.get("type"))

    def on_event(self, callback: Callable[[Event], object]) -> Callable[[], None]:
        """Call `callback(event)` for every event; returns a function that stops it."""
        self._callbacks.append(callback)
        return lambda: self._callbacks.remove(callback)

    async def events(self) -> AsyncIterator[Event]:
        """Every event from now on, until the runtime is closed."""
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._subscribers.append(queue)
        try:
            while (ev := await queue.get()) is not None:
                yield ev
        finally:
            self._subscribers.remove(queue)

    def error(self, diagnostic: Diagnostic) -> None:
        self.emit(event("error", diagnostic=diagnostic.to_dict()))

    # -- UI intents (smith.ui) -----------------------------------------------------------

    def announce_mode(self, known: str = "normal") -> None:
        """A `mode` event if the mode is not `known`, the one a frontend's listeners last
        heard of: a runtime that started in plan mode (the session's, or `--plan`)
        before anyone listened, or one over another session switched to (docs/plan.md)."""
        from smith.runtime._mode import announce

        announce(self, known)

    def attach(self, frontend: Frontend) -> Callable[[], None]:
        """The one way a frontend consumes this runtime: every event goes through
        `smith.ui.deliver` to it, and questions to its `ask`. Any number of frontends
        may be attached at once: each gets every event (one that fails is logged and
        leaves the others theirs), and a question goes to every one that can ask it,
        the first reply winning (`smith.ui.ask_first`). Returns a function that
        detaches it again."""
        from smith.ui import deliver

        self.frontends.append(frontend)
        stop = self.on_event(lambda ev: deliver(frontend, ev))

        def detach() -> None:
            if frontend in self.frontends:
                stop()
                self.frontends.remove(frontend)

        return detach

    def post(self, value: Shown, *, origin: str) -> None:
        """Send a plugin's Notify, Progress or Status out as a `ui` event."""
        from smith.runtime._intents import post

        post(self, value, origin=origin)

    async def ask(self, question: Asked, *, origin: str) -> Reply:
        """Ask the attached frontends a Question or Confirm on behalf of `origin` (a
        plugin's name): the first answer, or a refusal when nobody can or did answer.
        The outcome is recorded once (entry kind `question`) and emitted."""
        from smith.runtime._intents import ask

        return await ask(self, question, origin=origin)

    # -- operations in ----------------------------------------------------------------

    def prompt(self, text: str, images: Sequence[Image] = ()) -> str:
        """Start processing `text` (with `images` attached); while busy it is queued as a
        follow-up. Returns its submission id: `p-…` when it starts now, the queue item's
        `q-…` when queued; every event it causes carries that id as `submission` (and
        agent_start/agent_end as `prompt_id`). Images the current model does not take
        refuse the whole prompt before anything is recorded (smith.runtime._images)."""
        images = self._check_images(images)
        if self.busy:
            return self.queue.add("follow_up", text, images).id
        submission = f"p-{new_id(4)}"
        self._start([text], [images], submission)
        return submission

    def _check_images(self, images: Sequence[Image]) -> tuple[Image, ...]:
        if not images:
            return ()
        from smith.runtime._images import checked

        return checked(images, self._gen, self.limits.image_bytes, self.surface)

    def shell(self, command: str, *, context: bool = True) -> str:
        """Run the user's own `command` (`!command`; `!!command`: context=False), refused
        while busy (smith.runtime._shell). Returns its call id."""
        from smith.runtime._shell import run_shell, shell_call

        source = Source(self.surface, "shell")
        if self.busy:
            raise OP_BUSY.error(value="shell", source=source, op="shell")
        call_id = shell_call(command, source=source)
        self._launch(run_shell(self, command, context=context, call_id=call_id), call_id)
        return call_id

    def steer(self, text: str, images: Sequence[Image] = ()) -> str:
        if not self.busy:
            return self.prompt(text, images)
        return self.queue.add("steer", text, self._check_images(images)).id

    def follow_up(self, text: str, images: Sequence[Image] = ()) -> str:
        if not self.busy:
            return self.prompt(text, images)
        return self.queue.add("follow_up", text, self._check_images(images)).id

    def abort(self, reason: str = "abort") -> bool:
        """Cancel the current work; True if there was any. The loop records what it
        knows and ends with an `agent_end` whose stop is `abort` (or `deadline`). A
        second abort while the first is being handled changes nothing, so the first can
        finish recording how each effect ended."""
        if not self.busy:
            return False
        assert self._task is not None
        if self._abort_reason is None:
            self._abort_reason = reason
            if self._started:  # else _guard cancels once the task runs (see there)
                self._task.cancel()
            if self.asking:  # questions of the run are refused, never left waiting
                from smith.runtime._intents import ABORTED, withdraw

                withdraw(self, ABORTED)
        return True

    @property
    def abort_reason(self) -> str | None:
        """Why the current work is being stopped ("abort", "deadline"); None if it is not."""
        return self._abort_reason

    def take_compact_request(self) -> bool:
        """Whether a compaction was asked for while busy (the request is then taken;
        `compact_focus` is what it must keep)."""
        asked, self._compact_requested = self._compact_requested, False
        return asked

    @property
    def compact_focus(self) -> str | None:
        """What the compaction asked for last must keep above all (`/compact FOCUS`)."""
        return self._compact_focus

    def resolve(self, model: str) -> tuple[Provider, str]:
        """The provider and model id a model setting names (the registry's routing)."""
        return self._resolve(model)

    def check_abort(self) -> None:
        """Raise CancelledError if an abort is pending: the loop calls this at its safe
        points, so an abort is seen even where nothing else awaits (a provider that
        never suspends, an abort before the task ran)."""
        if self._abort_reason is not None:
            raise asyncio.CancelledError

    def compact(self, focus: str | None = None) -> None:
        """Compact now when idle, else at the next safe point; `focus`: what the summary
        must keep above all."""
        self._compact_focus = focus.strip() or None if focus else None
        if self.busy:
            self._compact_requested = True
            return
        self._launch(self._compact_alone(), f"c-{new_id(4)}")

    def set_model(self, model: str) -> None:
        provider, model_id = self._resolve(model)
        self.publish(
            replace(self._gen, model=model, model_id=model_id, provider=provider),
            model_changed=True,
        )

    def set_thinking(self, level: str) -> None:
        check_thinking(level)
        self.publish(replace(self._gen, thinking=level), thinking_changed=True)

    OPS = tuple(OPERATIONS)  # the names submit() takes (smith.runtime.ops)

    def submit(self, op: Operation | Mapping[str, Any]) -> object:
        """Run one operation: typed (`Prompt("hi")`) or as data (`{"op": "prompt",
        "text": "hi"}`, what RPC sends), each declared once in smith.protocol.ops; a
        diagnostic names an unknown operation or a malformed field, either way."""
        op = checked(op, self.surface) if isinstance(op, Operation) else parse_op(op, self.surface)
        return APPLY[type(op)](self, op)

    def status(self) -> dict[str, Any]:
        """The one view frontends read (smith.runtime._view.status, docs/architecture.md
        "What frontends read"): `state()`, damage, context use, memory, and the facts a
        frontend needs about where and with what the runtime works."""
        from smith.runtime._view import status

        return status(self)

    def context_parts(self, *, upcoming: bool = True) -> list[Part]:
        """What the model is told besides the conversation, part by part, in the order
        the next request sends it (docs/context.md; `_project.live_parts`). `upcoming`
        reads git for the next environment block: call this off the event loop."""
        from smith.runtime._project import live_parts

        return live_parts(self, upcoming=upcoming)

    # -- file history (smith/vcs) ----------------------------------------------------------

    def undo(self, *, force: bool = False) -> dict[str, object]:
        """Take back the file changes of the newest turn that made any (see docs/history.md);
        raises a diagnostic when there is none, on a conflict (unless `force`), or while
        busy. Returns what changed."""
        return self.files("undo").undo(force=force)

    def redo(self, *, force: bool = False) -> dict[str, object]:
        return self.files("redo").redo(force=force)

    def restore(
        self, target: str, *, conversation: bool = False, force: bool = False
    ) -> dict[str, object]:
        """Make the files as they were at session entry `target`; `conversation` also
        continues the session from there."""
        return self.files("restore").restore(target, conversation=conversation, force=force)

    def idle_for(self, op: str) -> None:
        """Refuse operation `op` while a turn runs (runtime.busy, naming it)."""
        if self.busy:
            raise OP_BUSY.error(value=op, source=Source(self.surface, op), op=op)

    def files(self, op: str) -> FileHistory:
        """The file history, for operation `op`: refused while busy, or when off."""
        from smith.vcs import HISTORY_OFF

        self.idle_for(op)
        if self.history is None:
            raise HISTORY_OFF.error(
                value=op,
                source=Source(self.surface, op),
                reason="it is not enabled for this runtime",
                remedy="set vcs.enabled to true and start smith again",
            )
        return self.history

    async def wait_idle(self) -> None:
        while self.busy:
            await self._idle.wait()

    async def close(self) -> None:
        """Abort anything running, wait for it, and end every `events()` stream."""
        self.abort("abort")
        if self.asking:
            from smith.runtime._intents import CLOSED, withdraw

            withdraw(self, CLOSED)
        await self.wait_idle()
        await self.lifecycle.close()  # session_end, then each plugin's stop (bounded)
        if self._counting is not None:
            await self._counting  # its thread reads the session: done before it closes
        self._closed = True
        for queue in self._subscribers:
            queue.put_nowait(None)
        if self.history is not None:
            self.history.close()
        self.memory.close()
        self._unpublish()
        self.session.sync()

    # -- running ----------------------------------------------------------------------

    def _start(self, texts: list[str], images: list[tuple[Image, ...]], submission: str) -> None:
        from smith.runtime._loop import run_agent

        # Input left queued by an aborted run was typed before this: it goes first.
        earlier = self.queue.take_all()
        taken = [submission]
        if earlier:
            texts = [*(item.text for item in earlier), *texts]
            images = [*(item.images for item in earlier), *images]
            taken = [*(item.id for item in earlier), submission]
        self._launch(run_agent(self, texts, images, taken=taken, prompt_id=submission), submission)

    def _launch(self, coro: Any, submission: str) -> None:
        if self.cost.pending and self._counting is None:
            # Beside the run, not before it: an abort must still find the run's task.
            self._counting = asyncio.get_running_loop().create_task(count_earlier(self))
        self._idle.clear()
        self._abort_reason = None
        self._started = False
        coro = self.memory.session.run(coro)
        self._task = asyncio.get_running_loop().create_task(self._guard(coro, submission))

    async def _guard(self, coro: Any, submission: str) -> None:
        # Aborted before this ran? Then nothing is cancelled: the loop sees the abort at
        # its first check (see check_abort), after recording the prompt, and ends it
        # properly; a task cancelled before its first step would run no clean-up at all.
        self._started = True
        # The task runs in a copy of the context: only its own events carry the id.
        token = SUBMISSION.set(submission)
        try:
            await coro
        except asyncio.CancelledError:
            pass  # cancelled before the loop could take it over
        except Exception as exc:  # a bug: report it and stay usable
            log.exception("the agent loop failed")
            if isinstance(exc, SmithError):
                self.error(exc.diagnostic)
            else:
                self.error(
                    LOOP_FAILED(
                        value=f"{type(exc).__name__}: {exc}",
                        source=Source("internal", "runtime"),
                        problem=f"{type(exc).__name__}: {exc}",
                    )
                )
        finally:
            SUBMISSION.reset(token)
            self.session.sync()
            self._task = None
            self._after_run()

    def _after_run(self) -> None:
        """Start what is waiting (queued input, a compaction asked for during the last
        turn) or settle. After an abort, queued input stays queued until the next
        prompt: the user stopped the agent and should not be surprised by it."""
        aborted = self._abort_reason is not None
        if not aborted and self._compact_requested:
            self._compact_requested = False
            self._launch(self._compact_alone(), f"c-{new_id(4)}")
        elif not aborted and len(self.queue):
            from smith.runtime._loop import run_agent

            items = self.queue.take_all()
            taken = [i.id for i in items]  # a queued prompt's events carry its queue id
            run = run_agent(self, [i.text for i in items], [i.images for i in items],
                            taken=taken, prompt_id=taken[0])  # fmt: skip
            self._launch(run, taken[0])
        else:
            self._idle.set()
            self.emit(event("settled", queue=len(self.queue)))

    async def _compact_alone(self) -> None:
        from smith.runtime._compaction import compact

        try:
            self.check_abort()
            await compact(self, "manual", self._compact_focus)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()

    # -- plugins and generations --------------------------------------------------------

    async def dispatch(self, ev: Event) -> bool:
        """Run the plugin handlers of a safe-point event and publish their batch;
        whether any handler ran."""
        from smith.runtime._hooks import dispatch

        return await dispatch(self, ev)

    def view(self, plugin: Plugin | None = None, gate: Any = None) -> RuntimeView:
        """A frozen snapshot for `plugin`'s handlers (they run in threads of their own),
        with that plugin's own settings; its `ask` asks on behalf of `plugin`, pausing
        `gate` (its deadline) meanwhile."""
        return plugin_view(self, plugin, gate)

    def publish(
        self, gen: Generation, *, model_changed: bool = False, thinking_changed: bool = False
    ) -> None:
        if gen.number == self._gen.number:
            gen = replace(gen, number=self._gen.number + 1)
        self._gen = gen
        self.journal.generation = gen.number
        if model_changed:
            self.session.append(
                "model_change",
                {"provider": gen.provider.name, "model": gen.model_id, "setting": gen.model},
            )
        if thinking_changed:
            self.session.append("thinking_level", {"level": gen.thinking})
