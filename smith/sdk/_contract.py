"""The plugin contract: what a plugin contributes and how it takes part in the loop.

Built-in plugins (smith.plugins.*) and, later, sandboxed user plugins use this one
contract. A plugin is a name plus contributions:

- `handlers`: lifecycle event type -> handler. Handlers run in plugin order at the
  runtime's safe points (`session_start`, `agent_start`, `turn_start`, `turn_end`,
  `agent_end`, `compaction_start`, `compaction_end`, `session_end`), get the event and
  a read-only view of the runtime, and
  return a batch of actions (or None): SetModel, SetThinking, SetSystemPrompt,
  AppendSystemPrompt, AddTool, RemoveTool, SetSetting, Enqueue. The runtime validates
  the batch of every handler of one event together, rejects conflicting ones with a
  diagnostic, and publishes one new runtime generation that the next provider request
  uses. `session_start` comes once per runtime, before its first turn: `resumed` says
  whether the session already had entries (`entries`).
- The hooks (HOOKS) decide about one thing before the runtime goes on, with actions of
  their own (HOOK_ACTIONS):
  - `input` {text, mode}: before a user message (prompt, steer, follow_up) is recorded.
    TransformInput(text) records and sends `text` instead (the original is noted in the
    record), and its `attach` (name, text) pairs go after it as attached parts (one
    that only attaches conflicts with no other answer); HandleInput(reply) treats it
    as a command: no user message is recorded (an `input_handled` entry is, which the
    model never sees), no turn starts, and an `input_handled` event carries the reply.
  - `tool_call` {tool_call_id, name, arguments, turn}: before the call runs. None or
    Allow() lets it run; DenyCall(reason) stops it (the model gets an error result with
    the reason and the plugin's name; recorded as not applied); RewriteArguments(args)
    runs it with `args`, validated again against the tool's schema; the plugins after it
    review the call as rewritten, and those before it review it again (approval's rules
    and questions see what will run). Any deny wins, and the first ends the review:
    plugins after it are not asked (so approval never puts to the user a call plan mode
    or a hook denied); two different rewrites are a conflict and the call does not run
    (smith.runtime._callreview).
  - `tool_result` {tool_call_id, name, arguments, result, is_error}: after the call.
    ReplaceResult(text) is what the model sees; the recorded output stays the tool's.
  Two plugins asking for different things at one hook is a conflict, reported as
  `plugin.conflict` naming both; then nothing any one of them asked for is applied.
- `queue_policies`: name -> policy choosing which queued inputs are delivered at once.
- `tools`: extra tools (ToolSpecs) the plugin makes available.
- `commands`, `keybindings`, `theme`: what an interactive frontend offers (the built-in
  product plugin, smith.plugins.product, contributes the standard ones).
- `providers`: provider name -> `ProviderSpec`, how smith's model registry creates it,
  and the vendor's facts (wire format, key variables, base URL, model list) that the
  rest of smith reads from it (each module of smith.plugins.providers contributes its
  own; `smith.sdk.provider_facts()` gives the built-ins' without importing them).
- `templates`: prompt templates, name -> Markdown text (optional front matter with
  `description` and `argument-hint`; `$1`..`$9`, `$ARGUMENTS`): input `/NAME args`
  is sent as its expansion (user and project templates of the same name win).
- `prompts`: name -> text. `system.NAME` entries are parts of the system prompt, in
  plugin order and then in the mapping's order (the product plugin contributes the
  default ones); `tool.NAME` is a line of guidance for tool NAME, sent under the
  `system.tools` heading only while that tool is active (docs/context.md). Other names
  are left to what reads them. `settings`: smith's own configuration keys the plugin
  owns (e.g. queue.steer), with their defaults.
- `options`: the plugin's own configuration, `plugins.NAME.KEY` in config.kdl
  (`plugins { NAME { KEY VALUE; }; }`): each a `smith.config.Option` whose key is KEY,
  with its type (the validation), default and doc. The plugin list checks the values
  when it is resolved (an unknown key is a warning, a bad value an error naming where
  it was set) and a handler reads them, defaults filled in, as `view.settings`.
- `layouts`: name -> the app's regions top to bottom (smith.ui.LAYOUT_REGIONS; the
  product plugin contributes "standard" and "focus"); `tui.layout NAME` picks one.
- `secret_routes`: `SecretRoute`s, where a secret's value may go (the secret-routing
  policy, docs/plugins.md): a secret no route names goes where its grants allow and
  never to a plugin as plaintext; one that routes name goes only where one of them
  allows.
- `frontend`: the escape hatches it uses (smith.ui.HATCHES: "clipboard", "open-url",
  "bell"), declared so the user sees them; a `Hatch` intent it did not declare is
  refused.
- `version`: the plugin's version; a built-in's is smith's own.

Plugins speak to the user through UI intents (smith.ui, docs/ui.md), whatever the
frontend: any handler may return `Notify(text, level)`, `Progress(label, done, total)`
or `Status(text, key)` in its batch (they are sent out as `ui` events, never conflict
and are not part of the generation), and ask with `await view.ask(Question(text,
choices))` or `await view.ask(Confirm(text))` from a coroutine handler. Commands do the
same through their host (`host.post(...)`, `await host.ask(...)`), tools through
`ToolContext.ui`. A question ends with a `Reply`: the choice, or a refusal (the
frontend cannot ask, nobody answered in time, an abort), so it never waits for an
answer that cannot come.
While a handler waits for an answer its deadline is paused.

Which plugins are in use is resolved once from configuration (`plugins.disabled`) by
`smith.sdk.resolve_plugins`, and every mode takes them from that one list.

    def on_turn_start(event, view):
        if view.turn == 1:
            return [AppendSystemPrompt("Answer in British English.")]

    Plugin("style", handlers={"turn_start": on_turn_start})

    def guard(event, view):
        if event["name"] == "bash" and "rm -rf" in event["arguments"].get("command", ""):
            return [DenyCall("this project does not allow rm -rf")]

    Plugin("guard", handlers={"tool_call": guard})

A handler may be a coroutine function. One that runs past its deadline (or ignores
cancellation) is abandoned and reported (`plugin.handler-failed`); the loop never waits
on it for long, and at a hook its answer counts as allow.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from smith.ui import Asked, Detail, Reply, Shown

if TYPE_CHECKING:
    from typing import TypeAlias

    from smith.config import Config, Option
    from smith.effects import ToolContext, ToolFacts, ToolSpec
    from smith.protocol import Operation
    from smith.protocol.actions import Action, HookAction

SAFE_POINTS = (
    "session_start",
    "agent_start",
    "turn_start",
    "turn_end",
    "agent_end",
    "compaction_start",  # before the older context is summarised (nothing recorded yet)
    "compaction_end",
    "session_end",  # the runtime closes its session (handlers only: not an emitted event)
)
# Hook events: a handler decides about one thing (a user input, a tool call, a tool
# result) before the runtime goes on; see HOOK_ACTIONS for what each accepts.
HOOKS = ("input", "tool_call", "tool_result")


class RuntimeView(Protocol):
    """What a handler may read: the published generation and where the loop is."""

    @property
    def generation(self) -> int: ...
    @property
    def model(self) -> str: ...
    @property
    def thinking(self) -> str: ...
    @property
    def system_prompt(self) -> str: ...
    @property
    def tool_names(self) -> tuple[str, ...]: ...
    @property
    def turn(self) -> int: ...
    @property
    def settings(self) -> Mapping[str, object]:
        """The handler's plugin's own settings (its `options`, defaults filled in), and
        the values of smith's own settings it owns (`Plugin.settings`)."""
        ...

    @property
    def mode(self) -> str:
        """The runtime's mode: "normal", or "plan" (only read-only tools run; the plan
        plugin, docs/plan.md), as set by `set_mode`, `--plan` or the app's Shift+Tab."""
        ...

    @property
    def session_id(self) -> str:
        """The session the runtime records in (what lasts "for this session")."""
        ...

    @property
    def subagent(self) -> str | None:
        """What a sub-agent's runtime is doing (its agent and the task's description:
        docs/agents.md); None for the agent the user runs. A plugin that acts for the
        user's prompts and sessions (hooks) tells the two apart by it."""
        ...

    @property
    def surface(self) -> str:
        """Where the runtime runs: "tui" (the app), "eval" (one-shot), "rpc", "mcp",
        "tools", "replay" or "library": a plugin that would wait for something before a
        prompt does so only where nobody watches it arrive (the mcp plugin, in eval)."""
        ...

    # Ask the user (the plugin is named as the asker); the answer or a refusal. The
    # handler's deadline is paused while it waits.
    async def ask(self, question: Asked) -> Reply: ...

    def post(self, value: Shown) -> None:
        """Send a Notify or Status out now, from any thread (a plugin's background work
        that changed what the user should see: the mcp plugin's servers connecting), as
        a handler's answer would at the next safe point; dropped where the view has no
        runtime to send it through."""
        ...

    def preview(self, name: str, arguments: Mapping[str, object]) -> Detail | None:
        """What a call of the active tool `name` would change, changing nothing: the
        "diff" its spec's preview computes (edit's, write's), or "text" saying why the
        tool would refuse it; None for a tool that has no preview."""
        ...

    def tool(self, name: str) -> ToolFacts | None:
        """What the active tool `name` declares about its calls (smith.effects.ToolFacts:
        its effect, whether it gets restored secrets, its command and timeout
        arguments, whether it previews); None for no such tool."""
        ...

    def remember(self, key: str, item: str) -> str:
        """Keep `item` in the list setting `key` (one of smith's settings the plugin owns,
        `Plugin.settings`) in the user's configuration file, so it holds from the next
        session on, with that file as its source (`smith config show`); where it was
        written. Raises LookupError for a setting the plugin does not own, and OSError
        (with why) where there is no user file to write (the library) or it cannot be
        written."""
        ...

    @property
    def state(self) -> Mapping[str, object]:
        """The plugin's own state in this session (a read-only copy): what it kept with
        `set_state` on the session's branch, a resumed session's included."""
        ...

    def set_state(self, key: str, value: object) -> None:
        """Keep `value` under `key` in the plugin's state for this session (None removes
        it): recorded in the session (entry kind `plugin_state`), so resume and replay
        see it, and nothing else does (another session, another runtime). Values are
        JSON-like: None, booleans, finite numbers, strings, and lists and string-keyed
        dicts of them (TypeError otherwise); keep them small. Raises OSError where the
        view has no session to keep it in."""
        ...

    @property
    def config(self) -> Config | None:
        """The resolved configuration the runtime was built from (its open sections, such
        as `mcp` and `hooks`, read with `subtree`; `project_root`, `project_trusted`),
        or None: a runtime built without one (a library caller's `Runtime(...)`, or a
        tool host's review made without an assembly; an assembly's tool host gives its
        own). A plugin that needs it does nothing without it."""
        ...

    @property
    def context(self) -> ToolContext | None:
        """Where the runtime's tools run (smith.effects.ToolContext: the project root,
        the working directory, the sandbox commands run in, the variables withheld), or
        None where there is no runtime."""
        ...

    def set_tools(self, tools: Sequence[ToolSpec]) -> None:
        """Make `tools` the whole set of tools the plugin offers (at first, its declared
        `Plugin.tools`; an empty set removes them all), from any thread, at any time: the
        tool host (MCP, `smith tools`) serves the new set at once, and the runtime
        publishes it as a new generation at its next safe point, so the next model
        request offers it. ValueError for a name another plugin's tool has; OSError
        where the view has no tool sets (a tool host's review)."""
        ...


# What a handler returns: a batch, one action, or None (nothing to do; allow). UI
# intents (Notify, Progress, Status) may be part of any batch.
# (The actions, smith.protocol.actions, load with msgspec: named here for types only, so
# the plugin contract costs no msgspec where no handler runs, as on `smith tools run`.)
Answer: TypeAlias = "Sequence[Action | HookAction | Shown] | Action | HookAction | Shown | None"
Handler = Callable[[dict[str, Any], RuntimeView], "Answer | Awaitable[Answer]"]


@dataclass(frozen=True, slots=True)
class QueuedItem:
    id: str
    mode: str  # steer | follow_up
    text: str
    images: tuple[Any, ...] = ()  # smith.runtime Image values attached to the text


class QueuePolicy(Protocol):
    """Chooses, of the items given (in queue order, all of one mode), those delivered at
    one point, in the order it returns them."""

    def __call__(self, items: Sequence[QueuedItem]) -> Sequence[QueuedItem]: ...


class RuntimeHandle(Protocol):
    """What a command may do with the runtime: submit operations (smith.protocol.ops,
    typed or as data) and read the one status view (Runtime.status); nothing else of
    its internals."""

    @property
    def model(self) -> str: ...
    @property
    def thinking(self) -> str: ...
    def submit(self, op: Operation | Mapping[str, Any]) -> object: ...
    def status(self) -> dict[str, Any]: ...


class CommandHost(Protocol):
    """What an interactive command may do: the frontend's side of the contract. Every
    frontend that offers commands implements it; commands never ask which one it is."""

    @property
    def runtime(self) -> RuntimeHandle: ...

    def tell(self, text: str, *, error: bool = False) -> None: ...  # a notice to the user
    # UI intents (smith.ui): a Notify, Progress, Status, Todos or Hatch (an escape hatch
    # the plugin declares), sent out as a `ui` event and shown by the frontend's policy;
    # a Question or Confirm, answered or refused.
    def post(self, value: Shown) -> None: ...
    async def ask(self, question: Asked) -> Reply: ...
    def edit(self, text: str) -> None: ...  # put text in the input for the user to edit
    def show(self, title: str, lines: Sequence[str]) -> None: ...
    # A unified diff to page through file by file; False: the frontend has no pager
    # (then show the patch's lines instead).
    def show_diff(self, title: str, summary: str, patch: str) -> bool: ...
    def choose(self, title: str, options: Sequence[tuple[str, str]],
               then: Callable[[str], object]) -> None: ...  # fmt: skip
    # The frontend's own navigator, if it has one: "tree" (then: an entry id to select)
    # or "models" (then: a model spec). False: it has none (use choose instead).
    def navigate(self, what: str, then: Callable[[str], object]) -> bool: ...
    def switch_session(self, which: str) -> None: ...  # "new", "latest" or a session id
    def sessions(self) -> Sequence[tuple[str, str]]: ...  # (id, label) of this project
    def branches(self) -> Sequence[tuple[str, str]]: ...  # (leaf id, label) of this session
    def select(self, leaf: str) -> None: ...
    def fork(self) -> None: ...
    def quit(self) -> None: ...
    def commands(self) -> Sequence[Command]: ...
    # (keys, what they do) of the keys the frontend answers, as bound now (help lists them).
    def key_help(self) -> Sequence[tuple[str, str]]: ...
    def plugin_names(self) -> Sequence[str]: ...
    # The frontend's layouts (smith.ui, Plugin.layouts): (name, what it shows), the one
    # in use first (none: it has no layouts); use_layout arranges it by one for this run
    # (False: it offers no layout of that name).
    def layouts(self) -> Sequence[tuple[str, str]]: ...
    def use_layout(self, name: str) -> bool: ...


@dataclass(frozen=True)
class Command:
    """An interactive command (`/name args` or the command palette)."""

    name: str
    description: str
    # (host, the text after the name); a coroutine function may await host.ask(...)
    run: Callable[[CommandHost, str], object]
    usage: str = ""  # e.g. "MODEL"


@dataclass(frozen=True, slots=True)
class ListedModel:
    """One model as a provider's model list reported it; None where it did not say."""

    id: str
    context_window: int | None = None
    max_output: int | None = None
    thinking: tuple[str, ...] | None = None  # the thinking levels it takes, if it said


@dataclass(frozen=True, slots=True)
class ModelList:
    """How `smith models --refresh` reads a provider's model list, one page at a time.

    `page(base_url, key, token)` gives the URL and headers of one page (`token` None for
    the first, else what `parse` gave for the next; `key` None when there is none);
    `parse(data)` gives the models of one page's JSON body and the next page's token,
    None at the end, and raises ValueError (its message shown to the user) for a body of
    the wrong shape. smith does the rest: the request through its HTTP engine, limits,
    redaction, the page count, the cache and merging into the catalog.
    """

    page: Callable[[str, str | None, str | None], tuple[str, Mapping[str, str]]]
    parse: Callable[[object], tuple[Sequence[ListedModel], str | None]]


# The facts of a ProviderSpec that smith reads before the plugin's module is imported
# (ProviderFacts): a built-in states them once, in its manifest (smith.plugins.MANIFESTS).
FACTS = ("api", "credential_env", "default_base_url", "first_party", "offline")


@dataclass(frozen=True, slots=True)
class ProviderFacts:
    """What smith knows of a provider without creating it, or importing its module: the
    facts of its ProviderSpec (see there), under the provider's name."""

    name: str
    api: str | None = None
    credential_env: tuple[str, ...] = ()
    default_base_url: str | None = None
    first_party: bool = False
    offline: bool = False

    def spec_fields(self) -> dict[str, Any]:
        """These facts as ProviderSpec's keyword arguments (a spec built from them)."""
        return {fact: getattr(self, fact) for fact in FACTS}


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    """A provider a plugin offers: what the model registry needs to create it, and the
    facts about the vendor that the rest of smith reads (they live here, not in smith).

    `create(model, host)` builds an HTTP provider from its `ProviderHost` (catalog entry,
    settings, engine); an `offline` one (no network, no credentials) takes `create(model)`.
    The facts:

    - `api`: the wire format of its models when the catalog does not say
      (smith.providers' APIS: anthropic-messages, openai-responses, openai-chat, ...);
    - `credential_env`: the environment variables that hold its key, in order of
      preference (also withheld from commands the model runs, and redacted);
    - `default_base_url`: where its API is unless configuration says otherwise;
    - `first_party`: a vendor's own API, with a fixed list of models and a key always
      needed: a model id the catalog does not know is an error, and `smith models
      --refresh` asks it only with a key. Otherwise (a server you run) unknown ids are
      assumed, a key is optional, and refresh asks it only where configured;
    - `list_models`: how its model list is read (`ModelList`), if it has one.

    `hooks` carries the provider's optional credential hooks, read by smith.providers'
    credential lookup: `find_credential(provider, env)` and `refresh_credential(record)`
    (a built-in passes its own module).
    """

    create: Callable[..., Any]
    default_model: str | None = None  # chosen when no model is configured (and for hints)
    default_base_url: str | None = None
    offline: bool = False
    hooks: object = None
    api: str | None = None
    credential_env: tuple[str, ...] = ()
    first_party: bool = False
    list_models: ModelList | None = None

    def facts(self, name: str) -> ProviderFacts:
        """Its facts, as provider `name` (the name its plugin offers it under)."""
        return ProviderFacts(name, **{fact: getattr(self, fact) for fact in FACTS})


@dataclass(frozen=True, slots=True)
class SecretRoute:
    """Where the value of the secret `secret` (a registered secret's name) may go: the
    HTTP `hosts` (patterns: "api.github.com", "*.example.com") whose requests may carry
    it, the `commands` (programs by name: "gh") that may get it in their words, and
    whether a plugin granted the secret may read it as `plaintext`. A route allows; it
    never grants: a plugin still needs the secret (and the host or command) in its
    grants."""

    secret: str
    hosts: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    plaintext: bool = False


def _smith_version() -> str:
    from smith import __version__

    return __version__


@dataclass(frozen=True)
class Plugin:
    name: str
    handlers: Mapping[str, Handler] = field(default_factory=dict)
    queue_policies: Mapping[str, QueuePolicy] = field(default_factory=dict)
    tools: Sequence[ToolSpec] = ()
    commands: Sequence[Command] = ()
    # Default key for each app action or command name (configuration may override).
    keybindings: Mapping[str, str] = field(default_factory=dict)
    theme: str | None = None  # a Textual theme name
    providers: Mapping[str, ProviderSpec] = field(default_factory=dict)
    prompts: Mapping[str, str] = field(default_factory=dict)
    templates: Mapping[str, str] = field(default_factory=dict)  # name -> Markdown
    # name -> the app's regions, top to bottom (smith.ui.LAYOUT_REGIONS).
    layouts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    secret_routes: Sequence[SecretRoute] = ()
    frontend: Sequence[str] = ()  # the escape hatches it uses (smith.ui.HATCHES)
    # smith's own configuration keys the plugin owns (e.g. "queue.steer"), with defaults:
    # the schema's (held equal by a test), or the plugin's where smith has none (None:
    # tui.keys.*); handlers read the configured values in view.settings.
    settings: Mapping[str, object] = field(default_factory=dict)
    # Its own configuration, plugins.<name>.<key>: Options (type, default, doc).
    options: Sequence[Option] = ()
    version: str = field(default_factory=_smith_version)
    # What it asks to be allowed (a sandboxed plugin's grants; a Python plugin runs with
    # smith's own rights and asks for nothing).
    grants: Sequence[str] = ()
    # Its lifecycle, both optional: `await start(view)` when a runtime is built (in the
    # background: the plugin is "starting" until it returns, then "ready"; its handlers
    # are called only once it is ready), `await stop()` when the runtime closes; each
    # under a deadline (docs/architecture.md, Plugins).
    start: Callable[[RuntimeView], Awaitable[None]] | None = None
    stop: Callable[[], Awaitable[None]] | None = None
    # Its settings (what view.settings holds), handed once, at once, when a runtime or a
    # tool host is built with it: before any handler, tool or queue policy of it is
    # called (a sandboxed plugin's tool call has no view: its grants are set here).
    configure: Callable[[Mapping[str, object]], None] | None = None
    # The most one of its handlers may take, in seconds, where that is more than the
    # runtime's Limits.handler_deadline: for a plugin whose handlers wait on work with
    # deadlines of their own (the hooks plugin runs commands, each with its timeout).
    handler_deadline: float | None = None
    # Whether it has anything to do at an event, asked before its handler of that event
    # type is called: `wants(type, view)`, on the runtime's loop, so it must answer at
    # once (a lookup, never I/O). False: the handler is not called and no thread is
    # started for it (a plugin whose handlers mostly have nothing to do: the hooks plugin
    # with no hook at that event). None: every handler is always called.
    wants: Callable[[str, RuntimeView], bool] | None = None
    # What the editor's `@` completes besides the project's paths: the words after the
    # `@` it offers now (the mcp plugin's `alias:uri` resources of the servers that are
    # ready), asked each time the list is drawn, so it must answer at once (a lookup).
    mentions: Callable[[], Sequence[str]] | None = None

    def contributions(self) -> dict[str, list[str]]:
        """What the plugin contributes: kind -> the names of each (kinds it contributes
        nothing of are left out)."""
        every = {
            "providers": list(self.providers),
            "commands": [c.name for c in self.commands],
            "keybindings": list(self.keybindings),
            "themes": [self.theme] if self.theme else [],
            "prompts": list(self.prompts),
            "templates": list(self.templates),
            "layouts": list(self.layouts),
            "secret_routes": [r.secret for r in self.secret_routes],
            "frontend": list(self.frontend),
            "queue_policies": list(self.queue_policies),
            "tools": [t.name for t in self.tools],
            "settings": [*self.settings, *(f"plugins.{self.name}.{o.key}" for o in self.options)],
            "handlers": list(self.handlers),
        }
        return {kind: names for kind, names in every.items() if names}
