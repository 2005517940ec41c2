"""The tool host: tools run outside a model turn, with everything a turn gives them.

`smith mcp` and `smith tools run` call tools directly; each call goes through here, and
from here through the runner a turn's calls take (smith.runtime._runner), so that it is
what a call in a turn is: validated and journaled before and after it runs, confined to
the project (the ToolContext), with registered secrets restored only for the tools that
declare they get them (ToolSpec.secrets) and masked in every result and record (the
secret proxy), bounded by its timeout, its result cut as a turn's is, and, when it may
change files, snapshotted before and after (smith.vcs), so `smith undo` takes its change
back like a turn's. Each call is one unit of undo.

    host = assembly.tool_host(session)
    outcome = host.run(spec, {"path": "a.txt", "content": "x"}, cause={"manual": True},
                       review=None)  # the user's own call; a program's: host.review(caller)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smith.runtime._runner import Ran
from smith.runtime._toolsets import LiveTools

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from smith.config import Config
    from smith.diagnostics import Diagnostic
    from smith.effects import Outcome, ToolContext, ToolSpec
    from smith.runtime._limits import Limits
    from smith.runtime._review import Caller, HostReview, Readiness
    from smith.runtime._secrets import SecretProxy
    from smith.sdk import Plugin
    from smith.session import Session
    from smith.vcs import FileHistory


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
        limits: Limits | None = None,
        reviewers: Sequence[Plugin] = (),
        settings: Callable[[Plugin], Mapping[str, object]] | None = None,
        readiness: Readiness | None = None,
        config: Config | None = None,
    ) -> None:
        from smith.effects import EffectJournal
        from smith.providers import watch_credentials
        from smith.runtime._limits import Limits
        from smith.runtime._pluginstate import PluginState
        from smith.runtime._runner import ToolRunner

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
        # The one path of every call (a turn's too): `limits` bound its time and result.
        self.limits = limits or Limits()
        self.runner = ToolRunner(self.journal, secrets, self.limits, history=history,
                                 warn=warn)  # fmt: skip
        # The plugins that review a program's calls (tool_call), with their settings, and
        # which of them are ready (smith.runtime._review: not started outside a runtime).
        self.reviewers = tuple(p for p in reviewers if "tool_call" in p.handlers)
        self._settings = settings or (lambda plugin: {})
        self.readiness = readiness
        # The configuration the reviewers read (RuntimeView.config: the hooks plugin's
        # before-tool hooks review a program's calls as they review a turn's).
        self.config = config
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

    def review(self, caller: Caller) -> HostReview:
        """The tool_call review of `caller`'s calls (a program's: MCP's client), the one
        a turn's calls get (smith.runtime._review); `caller` is asked what the handlers
        ask (MCP's refuses) and shown what they show."""
        from smith.runtime._review import HostReview

        return HostReview(self.reviewers, self._settings, tools=self.tools, context=self.context,
                          session_id=self.session.id, states=self.plugin_state,
                          tool_sets=self.tools.sets if isinstance(self.tools, LiveTools) else None,
                          limits=self.limits, secrets=self.secrets, caller=caller,
                          warn=self.warn, readiness=self.readiness,
                          config=self.config)  # fmt: skip

    def run(
        self,
        spec: ToolSpec,
        args: object,
        *,
        call: ToolContext | None = None,
        cause: dict[str, object] | None = None,
        review: HostReview | None,
    ) -> Outcome:
        """Run one call (blocking: from a worker thread when there is a loop) through the
        runner every call takes (smith.runtime._runner: the review, secrets, the journal,
        the crash rule, the timeout, masking and truncation), between two snapshots when
        it may change files. `call`: a context made by `self.context.for_call()` when the
        caller needs its cancellation flag or progress callback. `review`: a program's
        call is reviewed (`self.review(caller)`); the user's own (`smith tools run`) is
        not: None. A call the review keeps from running is not snapshotted and gives its
        result (`denied`, as in a turn). JournalError when the session cannot record the
        call."""
        ctx = call if call is not None else self.context.for_call()
        runner = self.runner
        # Reviewed first (None: the user's own call), so a call that does not run is
        # neither snapshotted nor recorded as an effect, as in a turn.
        args, cause, refused = runner.reviewed(review, spec, args, cause)
        if refused is not None:
            return denied(runner.finish(refused))
        snapshots = runner.snapshots([spec])
        base = runner.snapshot("before", None, dict(cause or {})) if snapshots else None
        try:
            ran = runner.run_sync(spec, args, ctx, cause=cause)
        finally:
            if snapshots:  # what the call changed, against the files before it
                runner.snapshot("after", base, dict(cause or {}))
        if ran.unrecorded is not None:  # the caller says so in its own way
            raise ran.unrecorded
        return runner.finish(ran).outcome()


def denied(ran: Ran) -> Outcome:
    """The outcome of a call the review kept from running: its result as a turn records
    it (an error, `not-applied`), the plugin and its reason as `denied` in its details."""
    outcome = ran.outcome()
    outcome.result.details = {**outcome.result.details, "denied": ran.result["denied"]}
    return outcome


__all__ = ["ToolHost", "denied"]
