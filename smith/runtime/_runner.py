"""The one path every tool call runs through, in a turn or outside one.

A turn's batch (smith.runtime._batch), the user's `!command` (smith.runtime._shell) and
the tool host (smith.runtime._host: MCP, `smith tools run`) each build a `ToolRunner`
from the services they have (journal, secret proxy, limits, file history, where
warnings go) and run every call through it:

- `call` (blocking, in the tool's thread): the secret proxy masks output saved to files;
  a tool that declares it gets them (ToolSpec.secrets) has the registered secrets added
  to its environment and restored in its arguments after the intent is recorded;
  smith.effects.run_tool validates the arguments, records the intent, runs the tool in
  its sandbox and records the completion. A tool that crashes gives an error result
  whose mutation is the journal's one rule (smith.effects.unfinished).
- review: a turn's calls are reviewed by the plugins' tool_call handlers before the
  batch runs (smith.runtime._hooks.review_calls); a program's call (MCP's) by that same
  review, `reviewed(review, ...)` before it runs (smith.runtime._review.HostReview);
  the user's own direct calls (`!command`, `smith tools run`) and replay's
  re-execution are not reviewed, explicitly (`review=None`).
- `run` (async: a worker thread of the loop, in the caller's context) and `run_sync`
  (the caller's thread, for the tool host's thread callers): the call bounded by its
  timeout (ToolSpec.timeout, else Limits.tool_timeout; a call's own limit in its
  `timeout_argument` is given 30 s more, so the tool ends its work first); past it, or
  aborted, the tool is told (ToolContext.cancelled) and its own record of how it ended
  is the result. A session that cannot record the call (JournalError) gives an error
  result naming why.
- `finish`: what is returned is masked (the secret proxy) and cut to
  Limits.result_bytes; an image is kept aside as bytes (a turn stores it in the
  session, the host hands it on).
- `snapshot` / `snapshots`: file history around what may change files (a turn's batch
  once around the batch, the host around each call), warnings to `warn`.

    runner = ToolRunner(journal, secrets, limits, history=history, warn=warn)
    ran = runner.run_sync(spec, {"path": "a.txt"}, ctx, cause={"manual": True})
    ran.result  # {"text", "details", "ok", "outcome", "mutation"}
"""

from __future__ import annotations

import functools
import logging
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable, Iterable

    from smith.diagnostics import Diagnostic
    from smith.effects import EffectJournal, JournalError, Outcome, ToolContext, ToolSpec
    from smith.runtime._limits import Limits
    from smith.runtime._review import HostReview
    from smith.runtime._secrets import SecretProxy
    from smith.vcs import FileHistory

log = logging.getLogger("smith.runtime")

Result = dict[str, Any]
OWN_LIMIT_MARGIN = 30.0  # seconds past a call's own limit: the tool ends its work first


@dataclass
class Ran:
    """One call as it ended: the result (text, details, ok, outcome, mutation), the id
    of its effect (None when none was recorded) and the image it gave, as bytes."""

    result: Result
    effect_id: str | None = None
    image: tuple[str, bytes] | None = None
    # Why the session could not record the call (the result says so too).
    unrecorded: JournalError | None = None

    def outcome(self) -> Outcome:
        """As smith.effects.Outcome (what the tool host returns)."""
        from smith.effects import Outcome, ToolResult

        r = self.result
        result = ToolResult(str(r["text"]), details=r.get("details", {}), mutation=r["mutation"],
                            ok=bool(r["ok"]), image=self.image)  # fmt: skip
        return Outcome(result, self.effect_id, str(r["outcome"]))


def timed_out(result: Result, timeout: float) -> Result:
    """A result of a call stopped at its timeout: an error that says so."""
    return {**result, "text": f"[timed out after {timeout:g} s] " + str(result["text"]),
            "ok": False}  # fmt: skip


def not_stopped(spec: ToolSpec) -> Result:
    """The result of a call told to stop that did not within its grace: what it did is
    not known (the journal's rule for a call whose end is unknown)."""
    from smith.effects import unfinished

    return {
        "text": "[the call did not stop in time; its effect is unknown]",
        "details": {},
        "ok": False,
        "outcome": "unknown",
        "mutation": unfinished(spec.mutating),
    }


class ToolRunner:
    """Runs tool calls as recorded effects (see the module doc)."""

    def __init__(
        self,
        journal: EffectJournal,
        secrets: SecretProxy,
        limits: Limits,
        *,
        history: FileHistory | None = None,
        warn: Callable[[Diagnostic], None] | None = None,
    ) -> None:
        self.journal = journal
        self.secrets = secrets
        self.limits = limits
        self.history = history
        self.warn = warn

    # -- the call ------------------------------------------------------------------------

    def timeout(self, spec: ToolSpec, args: object) -> float:
        """How long a call may run: its tool's bound or the runtime's, raised to the
        call's own limit (its `timeout_argument`) plus a margin."""
        timeout = spec.timeout or self.limits.tool_timeout
        own = args.get(spec.timeout_argument) if spec.timeout_argument and isinstance(
            args, dict) else None  # fmt: skip
        if isinstance(own, int | float) and not isinstance(own, bool):
            timeout = max(timeout, float(own) + OWN_LIMIT_MARGIN)
        return timeout

    def call(
        self, spec: ToolSpec, args: object, ctx: ToolContext, *, cause: dict[str, object] | None
    ) -> Outcome:
        """Run one call, blocking (see the module doc). JournalError (the session cannot
        record the call) propagates; the text is not masked here (`finish` does)."""
        from smith.effects import JournalError, Outcome, ToolResult, run_tool, unfinished

        ctx.mask = self.secrets  # output saved to a file is masked as the result is
        prepare = None
        if spec.secrets:  # its processes see the secrets restored, where routes allow
            command = args.get(spec.command_argument or "") if isinstance(args, dict) else None
            held = self.secrets.held(ctx.routes, command if isinstance(command, str) else "")
            ctx.withhold = ctx.withhold | held.keys()  # not even inherited from smith's own
            ctx.env = {**ctx.env, **{k: v for k, v in self.secrets.env().items() if k not in held}}
            prepare = functools.partial(self.secrets.restore_args, held=held)
        try:
            return run_tool(self.journal, spec, args, ctx, cause=cause, prepare=prepare)
        except JournalError:
            raise
        except Exception as exc:  # a bug in the tool; run_tool recorded how it ended
            log.exception("tool %s crashed", spec.name)
            text = f"the {spec.name} tool failed: {type(exc).__name__}: {exc}"
            crashed = unfinished(spec.mutating)  # as run_tool recorded it
            return Outcome(ToolResult(text, ok=False, mutation=crashed), None, "error")

    def attempt(
        self, spec: ToolSpec, args: object, ctx: ToolContext, *, cause: dict[str, object] | None
    ) -> Ran:
        """`call`, its outcome as a result; a session that cannot record the call gives
        an error result naming why (the mutation the journal knows)."""
        from smith.effects import JournalError

        try:
            out = self.call(spec, args, ctx, cause=cause)
        except JournalError as exc:
            return Ran({"text": exc.error.diagnostic.render(), "details": {}, "ok": False,
                        "outcome": "error", "mutation": exc.mutation}, unrecorded=exc)  # fmt: skip
        return Ran({**out.result.to_dict(), "outcome": out.outcome}, out.effect_id,
                   out.result.image)  # fmt: skip

    async def run(
        self, spec: ToolSpec, args: object, ctx: ToolContext, *, cause: dict[str, object] | None
    ) -> Ran:
        """The call in a worker thread, bounded by its timeout; aborted (cancelled), the
        tool is told and its own record of how it ended is the result. Not finished."""
        import asyncio  # here: `smith tools run` runs no loop and imports no asyncio
        import contextvars

        timeout = self.timeout(spec, args)
        # In the caller's context (its submission, smith.runtime._events): the records
        # the call appends announce themselves as the caller's.
        context = contextvars.copy_context()

        def work() -> Ran:
            return context.run(self.attempt, spec, args, ctx, cause=cause)

        # A call that waits for other calls (ToolSpec.own_thread) holds no pool worker.
        future = (
            _in_own_thread(work, spec.name)
            if spec.own_thread
            else asyncio.get_running_loop().run_in_executor(None, work)
        )
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            ctx.cancelled.set()
            ran = await self._settle(spec, future)
            ran.result = timed_out(ran.result, timeout)
            return ran
        except asyncio.CancelledError:
            # Aborted: the tool is told, and its own record of how it ended (cancelled,
            # or finished after all) becomes the result the model sees on resume.
            ctx.cancelled.set()
            ran = await self._settle(spec, future)
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            return ran

    async def _settle(self, spec: ToolSpec, future: asyncio.Future[Ran]) -> Ran:
        """The result of a cancelled call once it has recorded its end (bounded wait)."""
        import asyncio

        done, _ = await asyncio.wait({future}, timeout=self.limits.abort_grace)
        return future.result() if done else Ran(not_stopped(spec))

    def reviewed(
        self,
        review: HostReview | None,
        spec: ToolSpec,
        args: object,
        cause: dict[str, object] | None,
    ) -> tuple[object, dict[str, object] | None, Ran | None]:
        """A program's call (MCP's) through the plugins' tool_call review, the one a
        turn's calls get (smith.runtime._review.HostReview): the arguments and cause it
        runs with (a rewrite: the new arguments, validated again, and `rewritten_by` in
        its cause), or the result of a call that does not run (`denied`, as a turn
        records it). `review=None` is the explicit choice for what is not a program's
        request: the user's own direct call (`smith tools run`; the user's `!command`
        takes `run` unreviewed) and replay's re-execution of what was recorded as run."""
        if review is None:
            return args, cause, None
        call_id = str(next(iter((cause or {}).values()), ""))  # its cause names the call
        args, rewritten, refused = review.review(spec, args, call_id)
        if refused is not None:
            return args, cause, Ran(refused)
        if rewritten is not None:
            cause = {**(cause or {}), "rewritten_by": rewritten}
        return args, cause, None

    def run_sync(
        self, spec: ToolSpec, args: object, ctx: ToolContext, *, cause: dict[str, object] | None
    ) -> Ran:
        """`run` for a caller's thread (the tool host's), with the same bound: the call
        runs in a worker thread (in the caller's context), is told to stop at its timeout
        and gets Limits.abort_grace to end and record how; past that, its effect is
        unknown (`not_stopped`) and it is left to end in the background. Not finished."""
        import contextvars

        timeout = self.timeout(spec, args)
        ended = threading.Event()
        box: list[Ran] = []
        failed: list[BaseException] = []

        def work() -> None:
            try:
                box.append(self.attempt(spec, args, ctx, cause=cause))
            except BaseException as exc:  # raised again in the caller's thread
                failed.append(exc)
            finally:
                ended.set()

        context = contextvars.copy_context()
        threading.Thread(target=context.run, args=(work,), daemon=True,
                         name=f"smith-tool-{spec.name}").start()  # fmt: skip
        if not ended.wait(timeout):
            ctx.cancelled.set()
            if not ended.wait(self.limits.abort_grace):
                return Ran(timed_out(not_stopped(spec), timeout))  # as `run` says it
            if box:
                box[0].result = timed_out(box[0].result, timeout)
        if failed:
            raise failed[0]
        return box[0]

    def finish(self, ran: Ran) -> Ran:
        """What is returned of a call: masked, its text cut to Limits.result_bytes; the
        image (bytes) neither masked nor cut."""
        result = self.secrets.redact(ran.result)
        assert isinstance(result, dict)
        result["text"] = truncate(str(result["text"]), self.limits.result_bytes)
        return Ran(result, ran.effect_id, ran.image, ran.unrecorded)

    # -- file history ----------------------------------------------------------------------

    def snapshots(self, specs: Iterable[ToolSpec | None]) -> bool:
        """Whether calls of these tools are snapshotted around (file history is on and
        one of them may change files)."""
        return self.history is not None and any(s is not None and s.mutating for s in specs)

    def snapshot(self, phase: str, base: str | None, cause: dict[str, Any]) -> str | None:
        """Snapshot the project's files (blocking); its warnings go to `warn`. The files'
        tree, or None when no snapshot could be taken."""
        assert self.history is not None
        snap = self.history.snapshot(phase, base=base, cause=dict(cause))
        for warning in snap.warnings:
            if self.warn is not None:
                self.warn(warning)
        return snap.tree or None


def _in_own_thread(work: Callable[[], Ran], name: str) -> asyncio.Future[Ran]:
    """`work` run in a new thread (ToolSpec.own_thread), as the loop's future."""
    import asyncio
    import concurrent.futures

    done: concurrent.futures.Future[Ran] = concurrent.futures.Future()

    def target() -> None:
        if not done.set_running_or_notify_cancel():
            return
        try:
            done.set_result(work())
        except BaseException as exc:  # raised again where the call is awaited
            done.set_exception(exc)

    threading.Thread(target=target, daemon=True, name=f"smith-tool-{name}").start()
    return asyncio.wrap_future(done)


def truncate(text: str, limit: int) -> str:
    """`text` cut to at most `limit` UTF-8 bytes, at a character boundary, with a marker
    stating the original size."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    kept = data[:limit].decode("utf-8", "ignore")
    return (
        f"{kept}\n[truncated: the result was {len(data)} bytes; the first "
        f"{len(kept.encode('utf-8', 'surrogatepass'))} are shown]"
    )


__all__ = ["Ran", "ToolRunner", "not_stopped", "timed_out", "truncate"]
