"""The tool host: tools run outside a model turn, with everything a turn gives them.

`smith mcp` and `smith tools run` call tools directly; each call goes through here so
that it is what a call in a turn is: validated and journaled before and after it runs
(smith.effects.run_tool), confined to the project (the ToolContext), with registered
secrets restored only for the tools that declare they get them (ToolSpec.secrets: bash)
and masked in every result and record (the secret proxy), and, when it may change files,
snapshotted before and after (smith.vcs), so `smith undo` takes its change back like a
turn's. Each call is one unit of undo.

    host = assembly.tool_host(session)
    outcome = host.run(spec, {"path": "a.txt", "content": "x"}, cause={"manual": True})
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from smith.diagnostics import Diagnostic
    from smith.effects import Outcome, ToolContext, ToolSpec
    from smith.runtime._secrets import SecretProxy
    from smith.session import Session
    from smith.vcs import FileHistory

log = logging.getLogger("smith.runtime")


class ToolHost:
    def __init__(
        self,
        session: Session,
        tools: Mapping[str, ToolSpec],
        context: ToolContext,
        secrets: SecretProxy,
        *,
        history: FileHistory | None,
        warn: Callable[[Diagnostic], None],
        origins: Mapping[str, str] | None = None,
    ) -> None:
        from smith.effects import EffectJournal
        from smith.providers import watch_credentials

        self.session = session
        self.tools = dict(tools)
        self.context = context
        self.secrets = secrets
        self.history = history
        self.warn = warn
        # The plugin that contributed each tool (not the built-ins): named as the origin
        # of what the tool shows or asks (smith.ui).
        self.origins = dict(origins or {})
        self.journal = EffectJournal(session)
        # Every credential read in this process, now or later, is masked like a secret.
        watch_credentials(secrets.protect)
        secrets.record(session)

    def run(
        self,
        spec: ToolSpec,
        args: object,
        *,
        call: ToolContext | None = None,
        cause: dict[str, object] | None = None,
    ) -> Outcome:
        """Run one call (blocking: from a worker thread when there is a loop). `call`: a
        context made by `self.context.for_call()` when the caller needs its cancellation
        flag or progress callback. The result returned is masked (a tool that crashed is
        logged and gives an error result); JournalError when the session cannot record
        the call."""
        from smith.effects import JournalError, Outcome, ToolResult, run_tool

        ctx = call if call is not None else self.context.for_call()
        ctx.mask = self.secrets  # output saved to a file is masked as the result is
        prepare = None
        if spec.secrets:  # its processes see the secrets restored
            ctx.env = {**ctx.env, **self.secrets.env()}
            prepare = self.secrets.restore_args
        snapshots = self.history is not None and spec.mutating
        base = self._snapshot("before", None, cause) if snapshots else ""
        try:
            outcome = run_tool(self.journal, spec, args, ctx, cause=cause, prepare=prepare)
        except JournalError:
            raise
        except Exception as exc:  # a bug in the tool; run_tool recorded how it ended
            # Logged and told as a turn tells the model: its error is masked below, as
            # every result is (it may quote a secret the tool read).
            log.exception("tool %s crashed", spec.name)
            text = f"the {spec.name} tool failed: {type(exc).__name__}: {exc}"
            crashed = "unknown" if spec.mutating else "not-applied"
            outcome = Outcome(ToolResult(text, ok=False, mutation=crashed), None, "error")
        finally:
            if base:  # what the call changed, against the files before it
                self._snapshot("after", base, cause)
        result = outcome.result
        masked = ToolResult(
            str(self.secrets.redact(result.text)),
            details=self.secrets.redact(result.details),  # type: ignore[arg-type]
            mutation=result.mutation,
            ok=result.ok,
            image=result.image,  # the read tool's image: bytes, passed on as they are
        )
        return Outcome(masked, outcome.effect_id, outcome.outcome)

    def _snapshot(self, phase: str, base: str | None, cause: dict[str, object] | None) -> str:
        assert self.history is not None
        snap = self.history.snapshot(phase, base=base, cause=dict(cause or {}))
        for warning in snap.warnings:
            self.warn(warning)
        return snap.tree or ""


__all__ = ["ToolHost"]
