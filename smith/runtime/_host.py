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

from smith.runtime._toolsets import LiveTools

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from smith.diagnostics import Diagnostic
    from smith.effects import EffectJournal, Outcome, ToolContext, ToolSpec
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
        from smith.runtime._pluginstate import PluginState

        self.session = session
        # Live when the assembly gives its plugins' tool sets (smith.runtime._toolsets):
        # a plugin's change is served at once.
        self.tools: Mapping[str, ToolSpec] = tools if isinstance(tools, LiveTools) else dict(tools)
        self.context = context
        self.secrets = secrets
        self.history = history
        self.warn = warn
        # The plugin that contributed each tool (not the built-ins): named as the origin
        # of what the tool shows or asks (smith.ui).
        self._origins = dict(origins or {})
        self.journal = EffectJournal(session)
        # What plugins keep for this session (RuntimeView.state of a tool_call reviewer).
        self.plugin_state = PluginState(session)
        # Every credential read in this process, now or later, is masked like a secret.
        watch_credentials(secrets.protect)
        secrets.record(session)

    def record_question(self, record: Mapping[str, object]) -> None:
        """How a question a tool asked ended (smith.ui's answer record), recorded in
        the session as the runtime records its own (entry kind `question`)."""
        self.session.append("question", dict(record))

    @property
    def origins(self) -> dict[str, str]:
        live = self.tools.origins() if isinstance(self.tools, LiveTools) else {}
        return {**self._origins, **live}

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
        from smith.effects import Outcome, ToolResult

        ctx = call if call is not None else self.context.for_call()
        snapshots = self.history is not None and spec.mutating
        base = self._snapshot("before", None, cause) if snapshots else ""
        try:
            outcome = call_tool(self.journal, spec, args, ctx, self.secrets, cause=cause)
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


def call_tool(
    journal: EffectJournal,
    spec: ToolSpec,
    args: object,
    ctx: ToolContext,
    secrets: SecretProxy,
    *,
    cause: dict[str, object] | None,
) -> Outcome:
    """Run one call as every call runs, in a turn (smith.runtime._steps) or outside one
    (ToolHost.run), blocking: output saved to files masked by `secrets`; for a tool that
    declares it gets them (ToolSpec.secrets), the registered secrets restored, added to
    the call's environment and put back in its arguments after the intent is recorded;
    validated and journaled (smith.effects.run_tool). A tool that crashes is logged and
    gives an error result whose mutation is what the journal recorded (unknown for a
    mutating tool, else not applied); its text is not masked here (the callers mask every
    result). JournalError (the session cannot record the call) propagates."""
    from smith.effects import JournalError, Outcome, ToolResult, run_tool

    ctx.mask = secrets  # output saved to a file is masked as the result is
    prepare = None
    if spec.secrets:  # its processes see the secrets restored
        ctx.env = {**ctx.env, **secrets.env()}
        prepare = secrets.restore_args
    try:
        return run_tool(journal, spec, args, ctx, cause=cause, prepare=prepare)
    except JournalError:
        raise
    except Exception as exc:  # a bug in the tool; run_tool recorded how it ended
        log.exception("tool %s crashed", spec.name)
        text = f"the {spec.name} tool failed: {type(exc).__name__}: {exc}"
        crashed = "unknown" if spec.mutating else "not-applied"  # as run_tool recorded it
        return Outcome(ToolResult(text, ok=False, mutation=crashed), None, "error")


__all__ = ["ToolHost", "call_tool"]
