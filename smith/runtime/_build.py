"""The one assembly of a runtime from configuration, shared by every mode.

    assembly = build(config, cwd=cwd, surface="eval", warn=print_diagnostic)
    session = assembly.new_session("eval 2026-12-02 prompt")
    runtime = assembly.runtime(session)        # the agent loop over it
    host = assembly.tool_host(session)         # or: tools run outside a turn (MCP, tools run)
    parts = assembly.context_parts(session)    # what the model is told (`smith context`)

`build` checks everything a run depends on before anything is created (the model and its
route, the context policy, the limits, the prompt files), reads every credential (so the
secret proxy redacts them all), registers the secrets of `secrets.env` (what cannot be protected is
warned about, in every mode), and keeps the plugin list. Every mode then gets its
runtime, tool host, sessions and log handler from the assembly, so the modes cannot
drift apart: the same secrets, snapshots, confinement and redaction everywhere.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from typing import TYPE_CHECKING, Any

from smith.diagnostics import DiagnosticKind
from smith.sdk import PluginList

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping, Sequence
    from typing import TextIO

    from smith.config import Config
    from smith.diagnostics import Diagnostic, Surface
    from smith.effects import ToolContext, ToolSpec
    from smith.providers import Provider
    from smith.runtime._host import ToolHost
    from smith.runtime._images import Image
    from smith.runtime._limits import Limits
    from smith.runtime._project import ProjectContext
    from smith.runtime._prompt import Part, PromptConfig
    from smith.runtime._runtime import Runtime
    from smith.runtime._secrets import SecretProxy
    from smith.runtime._sessionface import ProjectSessions
    from smith.runtime._templates import Template
    from smith.runtime._toolsets import ToolSets
    from smith.sdk import Plugin
    from smith.session import Session, SessionStore
    from smith.vcs import HistorySettings

    Warn = Callable[[Diagnostic], None]

MISSING_SECRET = DiagnosticKind(
    "secrets.missing",
    severity="warning",
    what="the secret variable {name} (from secrets.env) is not set",
    why="only variables that are set can be kept out of requests and records",
    fix="set {name} in the environment, or remove it from secrets.env",
)
REJECTED_SECRET = DiagnosticKind(
    "secrets.rejected",
    severity="warning",
    what="the secret variable {name} (from secrets.env) cannot be protected: {reason}",
    why="a secret is replaced wherever its value appears, which needs a usable name and a "
    "value long enough not to match ordinary text",
    fix="rename or lengthen it, or remove {name} from secrets.env; until then its value is "
    "NOT kept out of requests and records",
)
UNKNOWN_EFFECT = DiagnosticKind(
    "tools.unknown-effect",
    severity="warning",
    what="effect {effect} ({name}) has no recorded completion: its outcome is unknown",
    why="the process running it stopped before recording what happened; smith never re-runs "
    "such an effect by itself",
    fix="check what it would have changed ({summary}) and run it again by hand if needed",
)
NO_PROJECT_SESSION = DiagnosticKind(
    "session.none-in-project",
    what="this project ({project}) has no sessions yet",
    why="this opens the project's most recent session, and it has none yet",
    fix='run a prompt first (`smith` or `smith eval "..."`), or `smith sessions list --all` '
    "to find a session of another project",
)


def _ignore(diagnostic: Diagnostic) -> None:
    pass


def session_name(label: str, detail: str = "") -> str:
    return f"{label} {time.strftime('%Y-%m-%d %H:%M:%S')} {detail}".strip()


class Assembly:
    """What every mode builds its runtime, tool host and sessions from (see `build`)."""

    def __init__(
        self,
        config: Config,
        *,
        cwd: str,
        surface: Surface,
        secrets: SecretProxy,
        options: dict[str, Any],
        model: str,
        is_demo: bool,
        warn: Warn,
        prompt: PromptConfig | None = None,
    ) -> None:
        self.config = config
        self.cwd = cwd
        self.surface: Surface = surface
        self.secrets = secrets
        self.options = options  # Runtime keyword arguments (limits, policies, history)
        self.model = model
        self.is_demo = is_demo  # no model configured: the offline demo model
        self.warn = warn
        self.prompt = prompt  # prompt.system and prompt.append, read (None: not read yet)
        self.templates: dict[str, Template] = {}  # prompt templates by name (load_templates)

    def load_templates(self) -> dict[str, Template]:
        """The prompt templates, by name: the plugins' (the product plugin's /init), the
        user's ($SMITH_CONFIG_HOME/prompts) and the trusted project's (.smith/prompts),
        each shadowing the earlier with a notice (said through `warn`); none named as a
        plugin's command (left out, said too)."""
        from smith.runtime._templates import load, without_commands
        from smith.trust import approved_templates

        active = self.plugin_list.active
        contributed = {p.name: p.templates for p in active if p.templates}
        commands = {c.name: p.name for p in reversed(active) for c in p.commands}
        root = self.config.project_root
        loaded = load(
            contributed,
            str(self.config["config-home"]),
            root,
            approved=approved_templates(self.config.home, root),
            warn=self.warn,
            private=(self.config.home, str(self.config["config-home"])),
        )
        self.templates = without_commands(loaded, commands, self.warn)  # the command wins
        return self.templates

    @property
    def thinking(self) -> str:
        return str(self.options["thinking"])

    @property
    def plugin_list(self) -> PluginList:
        """The one plugin list, resolved once from configuration, that every runtime of
        this assembly and the app take their plugins from."""
        found = self.options["plugin_list"]
        assert isinstance(found, PluginList)
        return found

    @functools.cached_property
    def tool_sets(self) -> ToolSets:
        """The tools each active plugin offers now: its declared ones until it sets others
        (RuntimeView.set_tools). Shared by this assembly's runtimes (published at their
        next safe point) and tool hosts (served at once)."""
        from smith.effects import builtin_tools
        from smith.runtime._toolsets import ToolSets

        return ToolSets(self.plugin_list.active, builtin=builtin_tools())

    # -- sessions ---------------------------------------------------------------------

    @property
    def sessions(self) -> ProjectSessions:
        """This project's sessions, as frontends get them (they open no session file
        themselves): new, open, latest, listing, fork, read (smith.runtime._sessionface)."""
        from smith.runtime._sessionface import ProjectSessions

        return ProjectSessions(self.config.home, self.config.project_root, warn=self.warn)

    def store(self) -> SessionStore:
        from smith.session import SessionStore

        return SessionStore(self.config.home, warn=self.warn)

    def new_session(self, label: str, detail: str = "") -> Session:
        """A new session of this project named for `label`, the time and `detail` ('eval
        2026-12-02 18:30:05 what does it do'): a generated name is a label, never a key
        by which a later run reopens it."""
        return self.store().create(name=session_name(label, detail),
                                   cwd=self.config.project_root)  # fmt: skip

    def named_session(self, name: str, *, create: bool = True) -> Session | None:
        """This project's session called `name` (or with that id, or an id prefix in any
        project), open for writing; created when there is none and `create`."""
        from smith.runtime._setup import named_session

        return named_session(self.config, name, create=create, warn=self.warn)

    def find_session(self, which: str) -> str:
        """The file of the session `which` names (the lookup of every command that takes
        a session); raises session.not-found or session.ambiguous."""
        from smith.runtime._setup import session_path

        return session_path(self.config, which, warn=self.warn)

    def latest_session(self) -> Session:
        """This project's most recently written session, open for writing."""
        from smith.session import Session

        path = self.store().latest(self.config.project_root)
        if path is None:
            raise NO_PROJECT_SESSION.error(
                value=self.config.project_root, project=self.config.project_root
            )
        return Session.open(path)

    # -- what runs over a session -------------------------------------------------------

    def tools(self, limits: Mapping[str, int] | None = None) -> list[ToolSpec]:
        """The built-in tools, as the configured limits bind them (their definitions
        state those bounds)."""
        from smith.effects import builtin_tools

        return [t.for_limits(limits or {}) for t in builtin_tools().values()]

    def prepare(self, session: Session) -> None:
        """Before anything runs in `session`: effects an earlier process left unfinished
        are recorded as unknown (never re-run) and said; damage read in it is said."""
        import json

        from smith.effects import EffectJournal

        for intent in EffectJournal(session).reconcile():
            inp = intent.get("input")
            summary = json.dumps(inp)[:120] if inp else "its input"
            effect, name = intent.get("effect"), intent.get("name")
            self.warn(UNKNOWN_EFFECT(effect=effect, name=name, summary=summary))
        if (damaged := session.damage_warning()) is not None:
            self.warn(damaged)

    def project(self) -> ProjectContext:
        """What the model is told about the project (docs/context.md), read now: the
        instruction files (warnings about refused ones go to `warn`) and the prompt
        files configuration names."""
        from smith.runtime._project import ProjectContext

        project = ProjectContext.from_config(self.config, self.cwd, self.prompt)
        for problem in project.problems:
            self.warn(problem)
        return project

    def context_parts(self, session: Session | None = None) -> list[Part]:
        """What the model would be told now besides the conversation, part by part, in
        the order a request sends it: the system prompt's parts (each with its source:
        a plugin, a file, a configuration key), the tool definitions, the notes recorded
        in `session`'s context (environment blocks, instruction files reached later)
        and the environment block the next prompt would record. Reads git for the
        environment: call it off the event loop. A live runtime has its own
        (`Runtime.context_parts`), which also shows what plugin handlers changed."""
        from smith.providers import watch_credentials
        from smith.runtime._project import context_parts, recorded_notes

        project = self.project()
        from smith.runtime._setup import tool_limits

        builtin = self.tools(tool_limits(self.config))
        tools = [*builtin, *(t for p in self.plugin_list.active for t in p.tools)]
        system = project.system_parts(self.plugin_list.active, [t.name for t in tools])
        notes = recorded_notes(session) if session is not None else []
        # Shown with credentials as a runtime's requests carry them ({{secret:NAME}}).
        watch_credentials(self.secrets.protect)
        upcoming = project.environment(self.model)
        return context_parts(system, tools, notes, upcoming, secrets=self.secrets)

    def runtime(
        self,
        session: Session,
        *,
        model: str | tuple[Provider, str] | None = None,
        thinking: str | None = None,
        tools: Sequence[ToolSpec] | None = None,
        system_prompt: str | None = None,
        plugins: Sequence[Plugin] = (),
        limits: Limits | None = None,
        prepare: bool = True,
        parent: Runtime | None = None,
        offered: Collection[str] | None = None,
    ) -> Runtime:
        """The agent loop over `session` (prepared first), with this assembly's tools,
        secrets, plugins, limits, file history and what the model is told about the
        project (`project`); a caller (smith.Agent) may give its own model (a name, or a
        provider and model id), tools, system prompt (it replaces the default parts;
        instruction files and prompt.append still follow), limits and plugins (after
        those of the assembly's plugin list). Its tools can start child runtimes on new
        branches of `session` (ToolContext.spawn_child: smith.runtime._children, which
        builds them here with `prepare` off, on a smith.session.Branch, and `parent`:
        the runtime whose plugins' lifecycle a child shares; `offered`: the names of the
        tools it offers, of `tools` and its plugins' (a child's definition), None: all)."""
        from smith.runtime._children import Children
        from smith.runtime._parts import Parts
        from smith.runtime._runtime import Runtime

        if prepare:
            self.prepare(session)
        options = dict(self.options)
        if thinking is not None:
            options["thinking"] = thinking
        if limits is not None:
            options["limits"] = limits
        if system_prompt is not None:
            options["system_prompt"] = system_prompt
        if parent is not None:
            options["lifecycle"] = parent.lifecycle
        context = self.tool_context(session)
        children = context.children = Children(self, session, model or self.model)
        given = self.tools() if tools is None else list(tools)
        tool_sets = self.tool_sets
        if offered is not None:
            given = [t for t in given if t.name in offered]
            tool_sets = tool_sets.within(offered)
        parts = Parts.of(
            model=model or self.model,
            tools=[t.for_limits(context.limits) for t in given],
            context=context,
            project=self.project(),
            secrets=self.secrets,
            plugins=plugins,  # the assembly's own are in its plugin list
            surface=self.surface,
            templates=self.templates,
            tool_sets=tool_sets,
            **options,
        )
        runtime = children.parent = Runtime.of(session, parts)
        return runtime

    def load_images(
        self, paths: Sequence[str], surface: Surface, where: str = "prompt"
    ) -> tuple[Image, ...]:
        """The image files `paths` (relative to the working directory), each within
        images.max-bytes, and checked against the model's image input: a diagnostic
        before any session is made or anything is sent (smith.runtime._images)."""
        from smith.runtime._images import load_image, refuse

        bound = self.config.origin("images.max-bytes")
        images = tuple(
            load_image(path, max_bytes=self.config.integer("images.max-bytes"),
                       where=str(bound.source), surface=surface, cwd=self.cwd)
            for path in paths
        )  # fmt: skip
        if images:
            provider, _ = self.options["resolve"](self.model)
            refuse(images, provider, self.model, surface, where)
        return images

    @property
    def history_settings(self) -> HistorySettings:
        """File history as configured (history.*)."""
        from smith.vcs import HistorySettings

        settings = self.options["history"]
        assert isinstance(settings, HistorySettings)
        return settings

    def tool_context(self, session: Session | None) -> ToolContext:
        """Where a tool call of this assembly runs: the project, the configured limits,
        ignores and protected paths, the sandbox, the provider credentials withheld."""
        from smith.runtime._setup import tool_context

        return tool_context(self.config, self.cwd, session)

    def tool_host(self, session: Session) -> ToolHost:
        """Tools run outside a model turn (MCP, `smith tools run`), each as a recorded
        effect with snapshots around it, so `smith undo` takes its change back."""
        from smith.effects import SecretRoutes
        from smith.runtime._host import ToolHost
        from smith.vcs import FileHistory

        self.prepare(session)
        context = self.tool_context(session)
        settings = self.history_settings
        history = FileHistory(settings, session, context.root) if settings.enabled else None
        from smith.runtime._toolsets import LiveTools

        tools = LiveTools({t.name: t for t in self.tools(context.limits)}, self.tool_sets)
        listed = self.plugin_list  # their tool_call handlers review a program's calls
        context.routes = SecretRoutes.of(listed.active)  # where secrets may go, as in a turn
        listed.configure(listed.active)  # their settings (grants), before any call of theirs
        return ToolHost(session, tools, context, self.secrets, history=history,
                        warn=self.warn, origins=tools.origins(),
                        limits=self.options.get("limits"), reviewers=listed.active,
                        settings=listed.settings_for, config=self.config)  # fmt: skip

    def host_tools(
        self, limits: Mapping[str, int] | None = None
    ) -> tuple[dict[str, ToolSpec], dict[str, str]]:
        """The tools a tool host serves, by name: the built-in ones and those the active
        plugins offer now (the caller's, smith.Agent's, among them: `tool_sets`), as they
        would run in a turn; and the plugin that offers each of the latter."""
        from smith.runtime._setup import tool_limits
        from smith.runtime._toolsets import LiveTools

        bound = tool_limits(self.config) if limits is None else limits
        tools = LiveTools({t.name: t for t in self.tools(bound)}, self.tool_sets)
        return dict(tools), tools.origins()

    # -- logs ----------------------------------------------------------------------------

    def log_to(self, stream: TextIO, *, name: str = "smith", fmt: str | None = None) -> None:
        """smith's log records (and those of `name`'s loggers) on `stream`, with
        credentials and registered secrets masked; DEBUG with --debug, else WARNING."""
        from smith.diagnostics import log_formatter
        from smith.runtime._secrets import RedactingFilter

        debug = self.config["debug"] is True
        handler = logging.StreamHandler(stream)
        handler.set_name("smith-assembly")
        text = fmt or "smith: %(levelname)s: %(message)s"
        handler.setFormatter(log_formatter(text, debug=debug))
        handler.addFilter(RedactingFilter(self.secrets))
        for logger_name in dict.fromkeys(("smith", name)):
            log = logging.getLogger(logger_name)
            for old in [h for h in log.handlers if h.get_name() == "smith-assembly"]:
                log.removeHandler(old)
            log.addHandler(handler)
            log.setLevel(logging.DEBUG if debug else logging.WARNING)
            log.propagate = False


def _protect_plugin_secrets(plugins: PluginList, secrets: SecretProxy) -> None:
    """Plugins' options declared secret (an API key a plugin takes) are redacted from
    what the model is sent and the session records, like provider credentials."""
    import re

    for item in plugins.enabled_items():
        if item.provider_only:
            continue
        for option in item.plugin.options:
            setting = item.configured.get(option.key)
            if option.secret and setting is not None and isinstance(setting.value, str):
                name = re.sub(r"\W", "_", f"{item.name}_{option.key}").upper()
                secrets.protect(name, setting.value, str(setting.source))


def build(
    config: Config,
    *,
    cwd: str,
    surface: Surface,
    warn: Warn | None = None,
    plugins: Sequence[Plugin] = (),
    model: bool = True,
    env: Mapping[str, str] | None = None,
    secrets: SecretProxy | None = None,
) -> Assembly:
    """The assembly of `config` for one mode (`surface`): everything checked before
    anything is created (raises SmithError with the diagnostic); warnings (secrets that
    cannot be protected, unknown effects, damage) go to `warn`. `model`: whether the mode
    runs a model (MCP and `tools run` do not: a model setting cannot stop them). `env`:
    where the secrets of `secrets.env` are read (default: the process's environment).
    `secrets`: a proxy of the caller's own (smith.Agent), then also holding those of
    `secrets.env`."""
    from smith.runtime._prompt import PromptConfig
    from smith.runtime._secrets import SecretProxy, mask_records
    from smith.runtime._setup import model_setting, plugin_list, runtime_options

    say = warn or _ignore
    # The prompt files: one that cannot be read is an error before anything runs (modes
    # that run no model never read them).
    prompt = PromptConfig.from_config(config, cwd) if model else None
    # Resolved once, with the caller's plugins (their settings checked the same way):
    # its warnings are said here.
    listed = plugin_list(config, warn=say, extra=plugins)
    # Reads every credential, so the proxy redacts them all.
    options = runtime_options(config, check_model=model)
    options["plugin_list"] = listed
    options["remember"] = _keeper(config.user_file)
    setting, is_demo = model_setting(config) if model else ("", False)
    names = config["secrets.env"]
    from_config = SecretProxy.from_environment(
        [str(n) for n in names] if isinstance(names, list) else [],
        os.environ if env is None else env,
    )
    if secrets is None:
        secrets = from_config
    else:
        secrets.add_all(from_config)
    _protect_plugin_secrets(listed, secrets)
    # Every record smith's loggers make is masked where it is made, whatever handles it
    # (the modes' own handlers, `log_to`, or a library caller's).
    mask_records(secrets)
    _say_sandbox(config, say)
    for name in from_config.missing:
        say(MISSING_SECRET(name=name))
    for name, reason in from_config.rejected.items():
        say(REJECTED_SECRET(name=name, reason=reason))
    assembly = Assembly(
        config,
        cwd=cwd,
        surface=surface,
        secrets=secrets,
        options=options,
        model=setting,
        is_demo=is_demo,
        warn=say,
        prompt=prompt,
    )
    if model:  # the modes that prompt a model take prompt templates (said here)
        assembly.load_templates()
    return assembly


def _keeper(user_file: str) -> Callable[[str, str], str]:
    """RuntimeView.remember: an item added to a list setting in the user's file."""

    def remember(key: str, item: str) -> str:
        from smith.config import add_value
        from smith.diagnostics import ConfigError

        try:
            # Within a handler's deadline: another writer holding the file is waited
            # for a second at most.
            _, where = add_value(user_file, key, item, wait=1.0)
        except ConfigError as exc:  # the file has errors: it is not guessed around
            raise OSError(f"{user_file} has errors, so it was not changed: {exc}") from None
        return f"{where.path}:{where.line}"

    return remember


def _say_sandbox(config: Config, say: Warn) -> None:
    """At start: the sandbox is off, or cannot run here (smith.effects.Sandbox.warnings)."""
    from smith.effects import Sandbox

    for warning in Sandbox.from_config(config).warnings(config.origin("sandbox.mode").source):
        say(warning)


__all__ = ["Assembly", "build"]
