"""What a tool is: a provider-neutral definition and a function over a context.

Each built-in tool lives in its own module under smith/effects/tools/ and exports `SPEC`.
A tool's `run` gets the validated arguments and a `ToolContext`; it returns a `ToolResult`
or raises `ToolError` (a failure the model should see, with what to do instead). Either
way it states the mutation: applied, not-applied or unknown.
"""

from __future__ import annotations

import threading
from typing import Any, Literal, Protocol

TYPE_CHECKING = False
if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable, Collection, Mapping, Sequence

    from smith.effects._outputs import Mask
    from smith.effects._routes import SecretRoutes
    from smith.effects._sandbox import Sandbox
    from smith.session import Session
    from smith.ui import ToolUi


class ToolResult:
    """What the model sees (`text`, and an `image` as (media type, bytes) for a model
    that takes images), what programs see (`details`), and what changed. The image is
    no part of `to_dict` (nor of the effect records): the runtime stores it once in the
    session and the tool result names it."""

    __slots__ = ("details", "image", "mutation", "ok", "text")

    def __init__(
        self,
        text: str,
        *,
        details: dict[str, object] | None = None,
        mutation: str = "not-applied",
        ok: bool = True,
        image: tuple[str, bytes] | None = None,
    ) -> None:
        self.text = text
        self.details = details or {}
        self.mutation = mutation
        self.ok = ok
        self.image = image

    def to_dict(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "text": self.text,
            "details": self.details,
            "mutation": self.mutation,
        }


class ToolError(Exception):
    """A tool call that failed in a way the model can correct; nothing was changed unless
    `mutation` says otherwise."""

    def __init__(
        self,
        message: str,
        *,
        mutation: str = "not-applied",
        details: dict[str, object] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.mutation = mutation
        self.details = details or {}


class ToolCancelled(Exception):
    """Raised by a tool that noticed `ctx.cancelled` and stopped; `mutation` is what it
    knows about its changes (unknown when it was part-way through); `text` and `details`:
    what it had done by then (bash: the output printed before the abort), kept in the
    recorded result before the note that the call was aborted."""

    def __init__(self, mutation: str = "unknown", *, text: str = "",
                 details: dict[str, object] | None = None) -> None:  # fmt: skip
        super().__init__("cancelled")
        self.mutation = mutation
        self.text = text
        self.details = details or {}


def _path_argument(args: dict[str, object]) -> list[str] | None:
    path = args.get("path", ".")
    return [path] if isinstance(path, str) else None


class Presentation:
    """How a frontend shows a tool's calls and results (ToolSpec.presentation), so a
    plugin's tool is shown as the built-ins are. `argument`: the argument a call is shown
    by (`edit PATH`; a multi-line one by its first line: `bash COMMAND`), None: all its
    arguments. `result`: how a result is reviewed: "change" (its details' `path` and
    unified `diff`: a summary line over the diff), "command" (details' `exit_status`:
    a summary line over the output) or "plain" (its text)."""

    __slots__ = ("argument", "result")
    RESULTS = ("change", "command", "plain")

    def __init__(self, argument: str | None = None, result: str = "plain") -> None:
        if result not in self.RESULTS:
            raise ValueError(
                f"a result is shown as one of {', '.join(self.RESULTS)}, not {result!r}"
            )
        self.argument = argument
        self.result = result

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Presentation) and (self.argument, self.result) == (
            other.argument, other.result)  # fmt: skip

    def __hash__(self) -> int:
        return hash((self.argument, self.result))

    def __repr__(self) -> str:
        return f"Presentation({self.argument!r}, {self.result!r})"


PLAIN = Presentation()


EFFECTS = ("reads", "writes", "runs", "network", "unknown")
ToolEffect = Literal["reads", "writes", "runs", "network", "unknown"]


class ToolFacts:
    """What the core and plugins need to know about a tool, as its spec declares it
    (ToolSpec.facts; a plugin reads them through RuntimeView.tool): `effect`, what a
    call may do: "reads" (reads only), "writes" (changes files), "runs" (runs commands),
    "network" (reaches the network) or "unknown" (declares nothing: treated as anything);
    `mutating` (see ToolSpec); `secrets`, whether its processes get the registered
    secrets restored; `command`, the argument holding the shell command a call runs
    (approval reads it); `timeout`, the argument holding a call's own time limit in
    seconds (the runtime waits that long and a grace); `previews`, whether the change a
    call would make can be shown before it is made (RuntimeView.preview); `outside`,
    whether its calls act where smith's sandbox does not reach (a remote service, a
    process smith does not confine: an MCP server over HTTP or with sandbox=false), so
    approval asks before one that is not read-only under on-failure too."""

    __slots__ = ("command", "effect", "mutating", "name", "outside", "previews", "secrets",
                 "timeout")  # fmt: skip

    def __init__(self, name: str, effect: ToolEffect, *, mutating: bool, secrets: bool = False,
                 command: str | None = None, timeout: str | None = None,
                 previews: bool = False, outside: bool = False) -> None:  # fmt: skip
        self.outside = outside
        self.name = name
        self.effect: ToolEffect = effect
        self.mutating = mutating
        self.secrets = secrets
        self.command = command
        self.timeout = timeout
        self.previews = previews

    @property
    def read_only(self) -> bool:
        return self.effect == "reads"

    def __repr__(self) -> str:
        return f"ToolFacts({self.name!r}, {self.effect!r})"


class ToolSpec:
    """A tool: its definition for the model, its function, and how it may be scheduled.

    `effect` is what a call may do (ToolFacts: "reads", "writes", "runs", "network", or
    "unknown", the default: a tool that declares nothing may do anything, so approval
    asks about it). `mutating` tools change files or run processes: by default those
    that write or run, and those that do not say (unknown: they may, so after a crash
    or an abort their changes are unknown, and file history snapshots around them); a
    reading tool cannot be mutating, nor a writing or running one not. Calls of one
    assistant message run concurrently except where order matters: an `exclusive` tool
    runs alone, an `ordered` tool's calls run one after another in call order (a tool
    whose call starts from what the one before it left: todo), and a call waits for
    earlier ones whose `touches(args)`
    paths overlap its own when either of them mutates (None means it may touch anything,
    as a shell command may). `timeout` bounds one call (None: the runtime's default);
    `timeout_argument` names the argument a call gives its own limit in (the runtime
    then waits that long and a grace). `secrets`: its processes get the registered
    secrets restored (the secret proxy; every other tool sees them masked).
    `command_argument` names the argument holding the shell command a call runs (what
    approval rules judge). `preview(ctx, args)`, where given, is the unified diff a call
    would make, changing nothing (ToolError when the tool would refuse it). A `confined`
    tool reaches files only through the context's path checks (`ToolContext.path`), so
    it can be pointed at a scratch copy of the project; a shell cannot be (replay re-runs
    it only in the sandbox). `presentation` is how frontends show its calls and results.
    `own_thread`: each call runs in a thread of its own, not the runtime's shared worker
    pool: a call that waits for other calls to run (a sub-agent's task, whose child's
    calls need workers) would otherwise hold a worker they wait for, and enough of them
    at once would take every worker and wait forever.
    `outside`: its calls act where the sandbox does not reach (ToolFacts.outside).
    """

    __slots__ = (
        "command_argument",
        "confined",
        "description",
        "effect",
        "exclusive",
        "mutating",
        "name",
        "ordered",
        "outside",
        "own_thread",
        "parameters",
        "presentation",
        "preview",
        "run",
        "secrets",
        "timeout",
        "timeout_argument",
        "touches",
        "tuned",
    )

    def __init__(
        self,
        name: str,
        description: str,
        parameters: dict[str, object],
        run: Callable[[ToolContext, dict[str, object]], ToolResult],
        *,
        mutating: bool | None = None,
        effect: ToolEffect = "unknown",
        exclusive: bool = False,
        ordered: bool = False,
        timeout: float | None = None,
        touches: Callable[[dict[str, object]], list[str] | None] = _path_argument,
        confined: bool = True,
        tuned: Callable[[Mapping[str, int]], ToolSpec] | None = None,
        presentation: Presentation = PLAIN,
        secrets: bool = False,
        timeout_argument: str | None = None,
        command_argument: str | None = None,
        preview: Callable[[ToolContext, dict[str, object]], str] | None = None,
        outside: bool = False,
        own_thread: bool = False,
    ) -> None:
        if effect not in EFFECTS:
            raise ValueError(f"a tool's effect is one of {', '.join(EFFECTS)}, not {effect!r}")
        if mutating is None:  # what may change files: unknown means it may
            mutating = effect in ("writes", "runs", "unknown")
        elif (mutating and effect == "reads") or (not mutating and effect in ("writes", "runs")):
            raise ValueError(
                f"the {name} tool is declared {'' if mutating else 'not '}mutating, "
                f"which a tool whose effect is {effect!r} cannot be"
            )
        self.name = name
        self.presentation = presentation
        self.description = description
        self.parameters = parameters  # JSON Schema (draft 2020-12) of the arguments
        self.run = run
        self.effect: ToolEffect = effect
        self.mutating = mutating
        self.exclusive = exclusive
        self.ordered = ordered
        self.timeout = timeout
        self.touches = touches
        self.confined = confined
        # The spec as configured limits make it (its description states its bounds).
        self.tuned = tuned
        self.secrets = secrets
        self.timeout_argument = timeout_argument
        self.command_argument = command_argument
        self.preview = preview
        self.own_thread = own_thread
        self.outside = outside  # its calls act outside the sandbox (ToolFacts.outside)

    @property
    def facts(self) -> ToolFacts:
        """What this tool declares about its calls (ToolFacts)."""
        return ToolFacts(self.name, self.effect, mutating=self.mutating, secrets=self.secrets,
                         command=self.command_argument, timeout=self.timeout_argument,
                         previews=self.preview is not None, outside=self.outside)  # fmt: skip

    def for_limits(self, limits: Mapping[str, int]) -> ToolSpec:
        """This tool as `limits` (ToolContext.limits: tools.read.max-lines, ...) bound it:
        the definition the model is given then states those bounds, not the defaults."""
        return self.tuned(limits) if self.tuned is not None else self

    def definition(self) -> dict[str, object]:
        """The provider-neutral definition a model is given."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


class ToolContext:
    """Where a tool call runs: the project, its working directory, the limits, and the
    session (for what earlier calls saw, e.g. the file state a read recorded)."""

    def __init__(
        self,
        *,
        root: str,
        cwd: str,
        session: Session | None = None,
        extra_roots: tuple[str, ...] = (),
        limits: dict[str, int] | None = None,
        spill_dir: str | None = None,
        ignore: tuple[str, ...] = (),
        protected: tuple[str, ...] = (".git", ".smith"),
        withhold: frozenset[str] = frozenset(),
        sandbox: Sandbox | None = None,
        approval: str = "never",
    ) -> None:
        import tempfile

        from smith.effects._sandbox import OFF

        self.root = root
        self.cwd = cwd
        self.session = session
        self.roots = [root, *extra_roots]
        self.limits = {
            "read.max-lines": 2000,
            "read.max-bytes": 50 * 1024,
            "images.max-bytes": 5 * 1024 * 1024,
            "bash.timeout": 120,
            **(limits or {}),
        }
        # Where long command output is saved in full (the result names the file).
        self.spill_dir = spill_dir or tempfile.gettempdir()
        # Configured ignores (gitignore-style globs) on top of the .gitignore files.
        self.ignore = ignore
        # Paths tools never change (tools.protected), see smith.effects._paths.
        self.protected = protected
        # Set when the call is aborted; long-running tools check it and raise
        # ToolCancelled. Tools run in worker threads, so this is a threading.Event.
        self.cancelled = threading.Event()
        # The runtime's event loop, for tools written as coroutines (None outside it).
        self.loop: asyncio.AbstractEventLoop | None = None
        # Environment additions for processes this call starts (restored secrets).
        self.env: dict[str, str] = {}
        # What masks registered secrets in output saved to files (the runtime's secret
        # proxy; see smith.effects._outputs), None: nothing is registered.
        self.mask: Mask | None = None
        # Where secrets' values may go (the runtime's plugins' secret routes, set by the
        # runtime and the tool host: smith.effects._routes); None: no plugin routes any.
        self.routes: SecretRoutes | None = None
        # Records what identifies the processes a call started (run_tool sets it to a
        # durable progress record of the effect, so they can be ended if it is lost).
        self.started: Callable[[dict[str, object]], None] = lambda identity: None
        # Variables of smith's environment that processes do not inherit (provider keys).
        self.withhold = withhold
        # How processes a call starts are confined (sandbox.*: smith.effects._sandbox);
        # the assembly sets it from configuration, a bare context runs them unconfined.
        self.sandbox = sandbox if sandbox is not None else OFF
        # The approval policy (smith.plugins.approval): bash asks the user (self.ui)
        # before running outside the sandbox, on-failure or on-request.
        self.approval = approval
        # Reports progress of a running call (a `tool_update` event); safe from any thread.
        self.progress: Callable[[dict[str, object]], None] = lambda update: None
        # The user, through UI intents (smith.ui.ToolUi): ui.show(Notify(...)) and
        # ui.ask(Question(...)), which blocks until it is answered or refused. Set per
        # call by the runtime and the tool host; by default nobody: nothing is shown and
        # every question is refused.
        self.ui: ToolUi = _no_ui()
        # Child agents on new branches of the session (smith.runtime._children, set by
        # the assembly for a runtime's calls); None outside a runtime (MCP, tools run).
        self.children: Children | None = None
        # The id of this call's effect_intent entry (run_tool sets it when it records
        # the intent): where a child agent it starts forks by default. None before.
        self.intent: str | None = None
        # The plugin generation its effect is journaled with (run_tool sets it): effects
        # the call causes in turn (a plugin tool's host effects) are journaled with it.
        self.generation = 0

    async def spawn_child(
        self,
        prompt: str,
        *,
        tools: Sequence[ToolSpec] | None = None,
        system_prompt: str | None = None,
        limits: Any = None,
        model: Any = None,
        at: str | None = None,
        offered: Collection[str] | None = None,
        max_depth: int | None = None,
        max_turns: int | None = None,
        watch: Callable[[dict[str, Any]], object] | None = None,
        on_branch: Callable[[str, str], object] | None = None,
        label: str | None = None,
    ) -> dict[str, Any]:
        """Run `prompt` in a child runtime on a new branch of this call's session (forked
        at `at`, default: this call's own effect_intent entry, `intent`) with its own
        tools (`offered`: the names it is offered of them and its plugins' tools, None:
        all), system prompt, limits (smith.Limits) and model (default: the parent's), and
        wait for it to stop: {stop, error, message, text, at, leaf, turns, depth};
        `watch` sees its events; `on_branch(at, leaf)` is told its branch once it has
        ended, however it ended; `label` (what it is doing) is named in its questions.
        A ToolError past `max_depth` levels of children or
        `max_turns` rounds of the whole tree of children (smith.runtime._children). For
        a tool written as a coroutine."""
        if self.children is None:
            raise ToolError("child agents start only from a runtime's tool calls")
        return await self.children.run(prompt, tools=tools, system_prompt=system_prompt,
                                       limits=limits, model=model,
                                       at=at if at is not None else self.intent,
                                       offered=offered, max_depth=max_depth,
                                       max_turns=max_turns, watch=watch,
                                       on_branch=on_branch, label=label)  # fmt: skip

    def for_call(self) -> ToolContext:
        """A copy for one call, with its own cancellation flag."""
        import copy

        ctx = copy.copy(self)
        ctx.cancelled = threading.Event()
        ctx.env = dict(self.env)
        ctx.intent = None
        return ctx

    def process_env(self, **extra: str) -> dict[str, str]:
        """The environment of a process a call starts: smith's own without the withheld
        variables, then the call's additions (smith._spawn.process_env, what every
        process smith starts gets)."""
        from smith._spawn import process_env

        return process_env(self.withhold, {**self.env, **extra})

    def path(self, path: str) -> str:
        """`path` resolved and confined to the roots; smith's own directories (those the
        sandbox hides: sessions, credentials, configuration) are refused even inside
        them."""
        import os

        from smith.effects._paths import confine

        real = confine(path, cwd=self.cwd, roots=self.roots)
        for private in self.sandbox.hidden:
            own = os.path.realpath(private)
            inside = real == own or real.startswith(own.rstrip("/") + "/")
            holds_root = os.path.realpath(self.root).startswith(own.rstrip("/") + "/")
            if inside and not holds_root:  # a project inside it is the user's choice
                raise ToolError(
                    f"{path} is inside smith's own directory {self.show(own)} (sessions, "
                    "credentials, configuration): no tool reads or changes it"
                )
        return real

    def resolve(self, path: str) -> str:
        """The real absolute path `path` names from this context (symbolic links
        followed as far as it exists), without the confinement checks of `path`: for
        comparing paths, e.g. the scheduler's conflicts."""
        import os

        return os.path.realpath(os.path.join(self.cwd, os.path.expanduser(path)))

    def writable(self, path: str) -> str:
        """`path` as for `path`, refused also when it is protected: for tools that change
        the file."""
        from smith.effects._paths import protect

        real = self.path(path)
        protect(real, path=path, roots=self.roots, protected=self.protected)
        return real

    def show(self, path: str) -> str:
        from smith.effects._paths import relative

        return relative(path, self.root)


class Children(Protocol):
    """What starts child runtimes (smith.runtime._children.Children)."""

    async def run(
        self,
        prompt: str,
        *,
        tools: Sequence[ToolSpec] | None = ...,
        system_prompt: str | None = ...,
        limits: Any = ...,
        model: Any = ...,
        at: str | None = ...,
        offered: Collection[str] | None = ...,
        max_depth: int | None = ...,
        max_turns: int | None = ...,
        watch: Callable[[dict[str, Any]], object] | None = ...,
        on_branch: Callable[[str, str], object] | None = ...,
        label: str | None = ...,
    ) -> dict[str, Any]: ...


def _no_ui() -> ToolUi:
    from smith.ui import NO_UI

    return NO_UI
