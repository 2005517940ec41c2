"""Building the runtime's pieces from configuration: the tool context, the session, the
model. Shared by every command that runs tools (`smith tools run`, `smith eval`, ...)."""

from __future__ import annotations

import os
import weakref
from typing import TYPE_CHECKING, Any

from smith.diagnostics import DiagnosticKind, SmithError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from smith.config import Config
    from smith.diagnostics import Diagnostic
    from smith.effects import ToolContext
    from smith.providers import Registry
    from smith.runtime import ContextPolicy
    from smith.sdk import Plugin, PluginList
    from smith.session import Session

    Warn = Callable[[Diagnostic], None]

DEMO = "demo"
DEMO_BANNER = (
    "smith: no model is configured, so this is the offline demo model (it really runs "
    "tools, but it is not an AI). To use a real model, pass --model PROVIDER/MODEL or run "
    "`smith config set model PROVIDER/MODEL`, with the provider's API key in its "
    "environment variable."
)


def _strings(value: object) -> list[str]:
    assert isinstance(value, list)
    return [str(v) for v in value]


def tool_limits(config: Config) -> dict[str, int]:
    """The built-in tools' configured bounds (ToolContext.limits)."""
    return {
        "read.max-lines": config.integer("tools.read.max-lines"),
        "read.max-bytes": config.integer("tools.read.max-bytes"),
        "bash.timeout": config.integer("tools.bash.timeout"),
        "bash.outputs-max-bytes": config.integer("tools.bash.outputs-max-bytes"),
        # on-request: bash takes `unsandboxed` and `reason` (the model may ask).
        "bash.unsandboxed": int(config["approval"] == "on-request"),
        "images.max-bytes": config.integer("images.max-bytes"),
    }


def tool_context(config: Config, cwd: str, session: Session | None) -> ToolContext:
    from smith.effects import Sandbox, ToolContext, prune_outputs
    from smith.providers import credential_variables

    outputs = os.path.join(config.home, "outputs")
    saved_max = config.integer("tools.bash.outputs-max-bytes")
    prune_outputs(outputs, saved_max)
    return ToolContext(
        root=config.project_root,
        cwd=cwd,
        session=session,
        limits=tool_limits(config),
        spill_dir=outputs,
        ignore=tuple(_strings(config["tools.ignore"])),
        protected=tuple(_strings(config["tools.protected"])),
        extra_roots=tuple(
            os.path.join(config.project_root, os.path.expanduser(p))
            for p in _strings(config["tools.extra-roots"])
        ),
        # Provider keys stay out of processes the model starts unless passed through.
        withhold=frozenset(credential_variables(config) - set(_strings(config["tools.bash.env"]))),
        sandbox=Sandbox.from_config(config),
        approval=str(config["approval"]),
    )


def session_path(config: Config, which: str, *, warn: Warn | None = None) -> str:
    """The file of this project's session named `which` (or with that id), else of the
    session whose id is or starts with `which` in any project; raises session.not-found
    or session.ambiguous otherwise (SessionStore.lookup, the lookup of every command that
    takes a session). Files are only read here, never locked. `warn` receives warnings
    about odd entries in the sessions directory."""
    from smith.session import SessionStore

    which = entered_name(which, warn)
    return SessionStore(config.home, warn=warn).lookup(which, config.project_root)


def entered_name(name: str, warn: Warn | None = None) -> str:
    """A session name as given on the command line, where a byte that is not UTF-8 is
    a lone surrogate (surrogateescape) that no record can hold: replaced with U+FFFD,
    with a warning, the same way for creating and for finding a session."""
    from smith.text import TEXT_REPLACED, replace_surrogates

    fixed, count = replace_surrogates(name)
    if count and warn is not None:
        warn(TEXT_REPLACED(count=count, where="the session name"))
    return str(fixed)


def named_session(
    config: Config, name: str, *, create: bool = True, warn: Warn | None = None
) -> Session | None:
    """This project's session called `name` (or with that id), open for writing; created
    when there is none and `create`."""
    from smith.session import Session, SessionStore

    store = SessionStore(config.home, warn=warn)
    name = entered_name(name, warn)
    try:
        path = store.lookup(name, config.project_root)
    except SmithError as exc:
        if exc.diagnostic.code != "session.not-found":
            raise
        return store.create(name=name, cwd=config.project_root) if create else None
    return Session.open(path)


def model_setting(config: Config) -> tuple[str, bool]:
    """The model to use and whether it is the demo fallback: unset, it is the default
    model of the first provider with a credential, else the offline demo model."""
    model = config["model"]
    if model:
        return str(model), False
    found = registry(config).default_model()
    return (found, False) if found else (DEMO, True)


def plugin_list(
    config: Config, warn: Warn | None = None, extra: Sequence[Plugin] = ()
) -> PluginList:
    """The plugin list of this configuration, resolved once per Config (with `extra`,
    a caller's plugins, when they come with the first resolution; later ones get a list
    of their own); its warnings (an unknown name in plugins.disabled, an unknown plugin
    setting) go to `warn` then, else to the log."""
    import logging

    from smith.sdk import resolve_plugins

    made = _PLUGINS.get(config)
    if made is None or extra:
        made = resolve_plugins(config, extra)
        if config not in _PLUGINS:
            _PLUGINS[config] = made
        for warning in made.warnings:
            if warn is not None:
                warn(warning)
            else:
                logging.getLogger("smith.plugins").warning("%s", warning.render())
    return made


def registry(config: Config) -> Registry:
    """The model registry of this configuration (one per Config: routes, accounts,
    catalog and the HTTP engine's limits), over the providers of its plugin list."""
    from smith.providers import Registry

    made = _REGISTRIES.get(config)
    if made is None:
        made = _REGISTRIES[config] = Registry.from_config(config, plugin_list(config))
    return made


_REGISTRIES: weakref.WeakKeyDictionary[Config, Registry] = weakref.WeakKeyDictionary()
_PLUGINS: weakref.WeakKeyDictionary[Config, PluginList] = weakref.WeakKeyDictionary()


BAD_WINDOW = DiagnosticKind(
    "config.bad-context-window",
    what="context.window is '{window}', which is not a context policy",
    why="it is `full` or a number and a unit: messages, chars or tokens",
    fix='set it to full or, for example, "40 messages" (from {where})',
)


def context_policy(config: Config) -> ContextPolicy:
    from smith.runtime import ContextPolicy

    text = str(config["context.window"]).strip()
    if text == "full":
        return ContextPolicy()
    number, _, unit = text.partition(" ")
    if number.isdigit() and int(number) > 0 and unit.strip() in ("messages", "chars", "tokens"):
        return ContextPolicy("window", unit.strip(), int(number))
    origin = config.origin("context.window")
    raise BAD_WINDOW.error(value=text, source=origin.source, window=text, where=str(origin.source))


UNKNOWN_QUEUE_POLICY = DiagnosticKind(
    "config.unknown-queue-policy",
    what="{key} is '{name}', which no enabled plugin offers as a queue policy",
    why="queued messages are delivered by a plugin's queue policy; the enabled plugins "
    "offer {known}",
    fix="{hint}: set {key} to one of them (at {where}), or install or enable the plugin "
    "that brings '{name}' (`smith plugins list`)",
)


def queue_policies(config: Config, plugins: PluginList) -> tuple[str, str]:
    """queue.steer and queue.follow-up, each a queue policy of an enabled plugin (the
    queue plugin's or a package's): a diagnostic naming the value and its source else."""
    from smith.diagnostics import did_you_mean

    known = [name for p in plugins.active for name in p.queue_policies]
    chosen = []
    for key in ("queue.steer", "queue.follow-up"):
        name = str(config[key])
        if name not in known:
            origin = config.origin(key)
            raise UNKNOWN_QUEUE_POLICY.error(
                value=name, source=origin.source, key=key, name=name,
                known=", ".join(known) or "none", where=str(origin.source),
                hint=did_you_mean(name, known, otherwise="check the name"),
            )  # fmt: skip
        chosen.append(name)
    return chosen[0], chosen[1]


def runtime_options(config: Config, *, check_model: bool = True) -> dict[str, Any]:
    """Runtime keyword arguments from configuration (limits, policies, sampling, file
    history); `check_model`: resolve the model first, so a bad one fails before anything
    runs (modes that run no model, such as MCP, skip it)."""
    from smith import memory
    from smith.providers import read_credentials
    from smith.runtime import Limits
    from smith.vcs import HistorySettings

    memory.configure(config)  # the ceilings (nothing to do when accounting is off)

    def optional(key: str) -> int | None:
        value = config[key]
        return None if value is None else config.integer(key)

    settings: dict[str, object] = {}
    if config["model.temperature"] is not None:
        settings["temperature"] = config["model.temperature"]
    if config["model.max-tokens"] is not None:
        settings["max_tokens"] = config["model.max-tokens"]
    deadline = optional("agent.deadline")
    models = registry(config)
    # Every credential smith could use is read, and so registered, before the runtime
    # exists: its secret proxy redacts them all (smith.providers.read_credentials).
    read_credentials(models.env, config.home, config)
    if check_model:
        model, _ = model_setting(config)
        models.resolve(model, source=config.origin("model").source)  # fail before anything runs
    return {
        "resolve": models.resolve,
        "config": config,  # what plugins read (RuntimeView.config: mcp, hooks, skills)
        "plugin_list": models.plugins,
        "thinking": str(config["thinking"]),
        "settings": settings,
        "limits": Limits(
            max_iterations=config.integer("agent.max-iterations"),
            token_budget=optional("agent.token-budget"),
            deadline=None if deadline is None else float(deadline),
            tool_timeout=float(config.integer("tools.timeout")),
            context_limit=optional("context.limit"),
            image_bytes=config.integer("images.max-bytes"),
        ),
        "context_policy": context_policy(config),
        "queue_policy": queue_policies(config, models.plugins),
        "history": HistorySettings.from_config(config),
    }
