"""From a model setting to a provider: routing, plugins, accounts, credentials.

    registry = Registry.from_config(config)
    provider, model_id = registry.resolve("openai/gpt-5")      # or an alias, a group, ...

A setting resolves through smith.providers._routing to one or more targets; each target
names a provider contributed by a plugin of the resolved plugin list (`Plugin.providers`,
see smith.sdk.resolve_plugins; the built-ins are smith.plugins.providers.*) or an account
configured over one (`providers { work { plugin "anthropic"; api-key-env "WORK_KEY"; }; }`).
A provider whose plugin `plugins.disabled` turns off is refused with a diagnostic naming
that setting. A group becomes a `Group` the runtime fails over within. Plugins for HTTP
APIs take

    def create(model: str, host: ProviderHost) -> Provider

and read their catalog entry, settings (base URL, credential, headers, body extras) and
the HTTP engine from the host; the offline ones (scripted, demo) take only the model.
Resolution needs no network: credentials are looked up, and a renewable one that has
expired is renewed just before the request that needs it.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from smith.diagnostics import DiagnosticKind, SmithError, Source, did_you_mean
from smith.providers._routing import Routes, Target, resolve_route
from smith.providers._settings import ACCOUNT_PLUGIN

if TYPE_CHECKING:
    from smith.config import Config
    from smith.providers._auth import Credential
    from smith.providers._catalog import Catalog
    from smith.providers._http import HttpEngine
    from smith.providers._model import ModelInfo
    from smith.providers._stream import Provider
    from smith.providers._wire import ProviderSettings
    from smith.sdk import PluginList, ProviderSpec

UNKNOWN_PROVIDER = DiagnosticKind(
    "model.unknown-provider",
    what="no provider is called '{provider}' (from the model setting '{model}')",
    why="a model is named as provider/model, and smith knows the providers {known}",
    fix="{hint}; for example --model openai/gpt-5 or --model demo",
)
UNKNOWN_PLUGIN = DiagnosticKind(
    "config.unknown-provider-plugin",
    what="the account '{name}' is over the provider plugin '{plugin}', which does not exist",
    why="providers.{name}.plugin names the plugin an account or endpoint uses; the "
    "plugins are {known}",
    fix="{hint} (set at {where})",
)
BAD_BASE_URL = DiagnosticKind(
    "config.bad-base-url",
    what="the base URL '{url}' of provider {name} is not an http:// or https:// URL",
    why="smith sends {name}'s requests to this URL (set by {origin}), so it must start "
    "with http:// or https:// and name a host",
    fix="give the server's full address, for example --base-url http://127.0.0.1:8080/v1",
)
NO_MODEL = DiagnosticKind(
    "model.no-model",
    what="the model setting '{spec}' names the provider {provider} but no model",
    why="{provider} serves several models, and smith does not pick one for you",
    fix="name the model as {provider}/MODEL{example}; `smith models` lists the catalog",
)
BASE_URL_AMBIGUOUS = DiagnosticKind(
    "model.base-url-ambiguous",
    what="one base URL was given, but the model setting '{spec}' uses the providers {providers}",
    why="a base URL names one provider's endpoint: each of these providers would send its "
    "requests, and its key, to that one server",
    fix="set the endpoint of the provider it is for as providers.NAME.base-url in "
    "configuration, or choose a model of that provider alone",
)
PROVIDER_DISABLED = DiagnosticKind(
    "model.provider-disabled",
    what="the provider '{provider}' (from the model setting '{model}') is turned off",
    why="plugins.disabled (set at {where}) turns off the {plugin} plugin, which offers it",
    fix="choose a model of another provider, or remove {plugin} from plugins.disabled",
)
NO_BASE_URL = DiagnosticKind(
    "config.no-base-url",
    what="the provider '{name}' has no base URL",
    why="{name} is a server you run or choose (llama.cpp, Ollama, vLLM...), so smith "
    "cannot know where it is",
    fix="pass --base-url http://127.0.0.1:8080/v1 (your server's address) or set "
    "providers.{name}.base-url in configuration",
)


@dataclass(frozen=True, slots=True)
class Account:
    """A provider as configured: a plugin, or a named account/endpoint over one."""

    name: str
    plugin: str
    base_url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    extra: Mapping[str, object] = field(default_factory=dict)
    source: Source | None = None


def accounts_from(
    config: Config, plugins: PluginList | None = None
) -> tuple[dict[str, Account], dict[str, Account]]:
    """`providers.NAME.*` settings as accounts (a name that is not a provider is an
    account over `plugin`, by default openai-compatible: a self-hosted endpoint), and
    apart from them the accounts over a provider whose plugin is disabled."""
    from smith.sdk import resolve_plugins

    plugins = plugins if plugins is not None else resolve_plugins(config)
    known = plugins.providers
    grouped: dict[str, dict[str, Any]] = {}
    sources: dict[str, Source] = {}
    extras: dict[str, dict[str, object]] = {}
    for key, setting in config.subtree("providers").items():
        name, _, rest = key.partition(".")
        grouped.setdefault(name, {})[rest] = setting.value
        sources.setdefault(name, setting.source)
        if rest.startswith("extra."):
            # The wire contract, for the fields the runtime owns (imported only here: a
            # start that runs no model, `smith tools run`, need not import it).
            from smith.providers._wire import OWNED_EXTRA_FIELD, OWNED_FIELDS

            path = rest[6:].split(".")
            if path[0] in OWNED_FIELDS:  # refused here, naming its line, before anything runs
                raise OWNED_EXTRA_FIELD.error(
                    value=path[0],
                    source=setting.source,
                    field=f"providers.{rest}",
                    provider=name,
                    names=path[0],
                )
            _put(extras.setdefault(name, {}), path, setting.value)
    accounts: dict[str, Account] = {}
    disabled: dict[str, Account] = {}
    for name, values in grouped.items():
        offered = name in known or plugins.disabled_provider(name) is not None
        plugin = str(values.get("plugin") or (name if offered else ACCOUNT_PLUGIN))
        if plugin not in known and plugins.disabled_provider(plugin) is None:
            raise UNKNOWN_PLUGIN.error(
                value=plugin,
                source=sources[name],
                name=name,
                plugin=plugin,
                known=", ".join(sorted(known)),
                hint=did_you_mean(plugin, known, otherwise="name one of them"),
                where=str(sources[name]),
            )
        (accounts if plugin in known else disabled)[name] = Account(
            name,
            plugin,
            base_url=values.get("base-url"),
            headers={k[8:]: str(v) for k, v in values.items() if k.startswith("headers.")},
            extra=extras.get(name, {}),
            source=sources[name],
        )
    return accounts, disabled


def _put(tree: dict[str, object], path: list[str], value: object) -> None:
    """Set `value` at `path` in nested dicts: configuration flattens the blocks of
    `extra { reasoning { summary "detailed"; }; }` into the key reasoning.summary, and the
    request body wants them nested again."""
    for part in path[:-1]:
        child = tree.get(part)
        if not isinstance(child, dict):
            child = tree[part] = {}
        tree = child
    tree[path[-1]] = value


def routes_from(config: Config) -> Routes:
    """`models { alias { NAME "target"; }; group { NAME "a" "b"; }; }`."""
    aliases: dict[str, tuple[str, Source]] = {}
    groups: dict[str, tuple[tuple[str, ...], Source]] = {}
    for key, setting in config.subtree("models").items():
        kind, _, name = key.partition(".")
        value = setting.value
        members = tuple(str(v) for v in value) if isinstance(value, list) else (str(value),)
        if kind == "alias":
            aliases[name] = (members[0], setting.source)
        else:
            groups[name] = (members, setting.source)
    return Routes(aliases=aliases, groups=groups)


class Registry:
    def __init__(
        self,
        routes: Routes | None = None,
        accounts: Mapping[str, Account] | None = None,
        *,
        config: Config | None = None,
        env: Mapping[str, str] | None = None,
        home: str | None = None,
        base_url: str | None = None,
        engine: HttpEngine | None = None,
        plugins: PluginList | None = None,
        disabled_accounts: Mapping[str, Account] | None = None,
    ) -> None:
        self.routes = routes or Routes()
        self.accounts = dict(accounts or {})
        self.disabled_accounts = dict(disabled_accounts or {})  # over a disabled plugin
        self._plugins = plugins  # resolved from `config` on first use when not given
        self.config = config
        self.env = os.environ if env is None else env
        self.home = home if home is not None else (config.home if config is not None else None)
        self.base_url = base_url  # --base-url: the endpoint of the model setting's provider
        self._engine = engine
        self._catalog: Catalog | None = None

    @classmethod
    def from_config(cls, config: Config, plugins: PluginList | None = None, **kw: Any) -> Registry:
        """The registry of `config`: its routes and accounts, checked (providers' own
        sections, smith.providers.CONFIG_CHECKS) if resolving did not check them."""
        from smith.providers._checks import checked
        from smith.sdk import resolve_plugins

        checked(config)
        plugins = plugins if plugins is not None else resolve_plugins(config)
        accounts, disabled = accounts_from(config, plugins)
        base = config["base-url"]
        return cls(
            routes_from(config),
            accounts,
            config=config,
            base_url=None if base is None else str(base).rstrip("/"),
            plugins=plugins,
            disabled_accounts=disabled,
            **kw,
        )

    @property
    def plugins(self) -> PluginList:
        """The plugin list whose providers this registry routes to."""
        if self._plugins is None:
            from smith.sdk import resolve_plugins

            self._plugins = resolve_plugins(self.config)
        return self._plugins

    def spec(self, plugin: str) -> ProviderSpec:
        return self.plugins.providers[plugin]

    # -- resolution ------------------------------------------------------------------

    @property
    def providers(self) -> list[str]:
        return sorted({*self.plugins.providers, *self.accounts})

    @property
    def catalog(self) -> Catalog:
        if self._catalog is None:
            from smith.providers._refresh import load_catalog

            self._catalog = load_catalog(self.config, home=self.home)
        return self._catalog

    def resolve(self, spec: str, *, source: Source | None = None) -> tuple[Provider, str]:
        """The provider for a model setting and the model id to ask it for."""
        from smith.providers._failover import Group
        from smith.providers._routing import UNKNOWN_MODEL_NAME

        self._refuse_disabled(spec, source)
        try:
            targets = resolve_route(
                spec, self.routes, self.providers, self._offering, source=source
            )
        except SmithError as exc:
            named = re.search("[/:]", spec) is not None  # provider/model with no such provider
            if exc.diagnostic.code != UNKNOWN_MODEL_NAME.code or not named:
                raise
            name = re.split("[/:]", spec, maxsplit=1)[0]
            raise UNKNOWN_PROVIDER.error(
                value=spec,
                source=source or Source("argument", "--model"),
                provider=name,
                model=spec,
                known=", ".join(self.providers),
                hint=did_you_mean(name, self.providers, otherwise="check the provider name"),
            ) from None
        self._check(spec, targets, source or Source("argument", "--model"))
        built = [(t, self._create(t, source)) for t in targets]
        if len(built) == 1:
            target, provider = built[0]
            return provider, target.model or target.provider
        return Group(spec, built), built[0][0].model

    def _refuse_disabled(self, spec: str, source: Source | None) -> None:
        """A model setting naming a provider whose plugin is disabled: say so (rather than
        that no such provider exists), naming plugins.disabled and where it was set."""
        name = re.split("[/:]", spec, maxsplit=1)[0]
        if name in self.providers or name in self.routes.aliases or name in self.routes.groups:
            return
        account = self.disabled_accounts.get(name)
        item = self.plugins.disabled_provider(account.plugin if account else name)
        if item is None or item.disabled_by is None:
            return
        raise PROVIDER_DISABLED.error(
            value=spec,
            source=source or Source("argument", "--model"),
            provider=name,
            model=spec,
            plugin=item.name,
            where=str(item.disabled_by),
        )

    def _offline(self, provider: str) -> bool:
        account = self.accounts.get(provider)
        spec = self.plugins.providers.get(account.plugin if account else provider)
        return spec is not None and spec.offline

    def _check(self, spec: str, targets: list[Target], source: Source) -> None:
        """Refuse, before anything is created, a provider named without a model and a
        --base-url that would send several providers' requests (and keys) to one server."""
        for target in targets:
            account = self.accounts.get(target.provider)
            plugin = account.plugin if account is not None else target.provider
            if not target.model and not self.spec(plugin).offline:
                default = self.spec(plugin).default_model
                raise NO_MODEL.error(
                    value=spec,
                    source=source,
                    spec=spec,
                    provider=target.provider,
                    example=f", for example {target.provider}/{default}" if default else "",
                )
        remote = sorted({t.provider for t in targets if not self._offline(t.provider)})
        if self.base_url is not None and len(remote) > 1:
            raise BASE_URL_AMBIGUOUS.error(
                value=spec,
                source=self._base_url_source(),
                spec=spec,
                providers=", ".join(remote),
            )

    def _base_url_source(self) -> Source:
        """Where --base-url (the base-url setting) was given."""
        if self.config is None:
            return Source("argument", "--base-url")
        return self.config.origin("base-url").source

    def _offering(self, model_id: str) -> list[str]:
        if "/" in model_id or ":" in model_id:
            return []
        known = self.plugins.providers
        return [p for p in self.catalog.offering(model_id) if p in known or p in self.accounts]

    def _create(self, target: Target, source: Source | None) -> Provider:
        account = self.accounts.get(target.provider) or Account(target.provider, target.provider)
        spec = self.spec(account.plugin)
        if spec.offline:
            created: Provider = spec.create(target.model)
            return created
        host = _Host(self, account, spec, source or Source("argument", "--model"))
        created = spec.create(target.model, host)
        return created

    def default_model(self) -> str | None:
        """The model to use when none is configured: the default model of the first
        first-party provider, in plugin order, that has a credential; None when none has
        (the demo model then)."""
        from smith.providers._auth import find_credential

        for name, spec in self.plugins.providers.items():
            if spec.default_model is None or not spec.facts(name).first_party:
                continue  # a server you run, or an offline model: never chosen for you
            try:
                found = find_credential(
                    name,
                    env=self.env,
                    home=self.home or "",
                    config=self.config,
                    plugin=spec.hooks,
                    facts=spec.facts(name),
                )
            except Exception:
                continue
            if found is not None:
                return f"{name}/{spec.default_model}"
        return None


class _Host:
    """What one account's plugin gets: its catalog entries, settings and the engine."""

    def __init__(self, registry: Registry, account: Account, spec: ProviderSpec, source: Source):
        self.registry = registry
        self.account = account
        self.spec = spec
        self.module = spec.hooks  # the plugin's credential hooks
        self.facts = spec.facts(account.plugin)  # its key variables, first-party or not
        self.source = source

    @property
    def engine(self) -> HttpEngine:
        from smith.providers._http import limits_from, shared_engine

        if self.registry._engine is None:
            config = self.registry.config
            self.registry._engine = (
                shared_engine() if config is None else shared_engine(limits_from(config))
            )
        return self.registry._engine

    def model_info(self, provider: str, model_id: str) -> ModelInfo:
        from smith.providers._catalog import model_info

        return model_info(
            self.registry.catalog,
            self.account.name,
            model_id,
            plugin=self.account.plugin,
            source=self.source,
            facts=self.facts,
        )

    def settings(self, provider: str) -> ProviderSettings:
        from smith.providers._auth import find_credential, require_credential
        from smith.providers._wire import ProviderSettings

        account, registry = self.account, self.registry
        first_party = self.facts.first_party
        base, origin = self._base_url(first_party)
        find = require_credential if first_party else find_credential  # else a key is optional
        credential: Credential | None = find(
            account.name,
            env=registry.env,
            home=registry.home or "",
            config=registry.config,
            plugin=self.module,
            facts=self.facts,
        )
        settings = ProviderSettings(
            name=account.name,
            base_url=base,
            credential=None if credential is None else credential.value,
            headers=dict(account.headers),
            extra=dict(account.extra),
            base_url_origin=origin,
            credential_source=None if credential is None else credential.source,
        )
        if credential is not None and credential.kind == "oauth":
            return replace(settings, renew=self._renewer(credential))
        return settings

    def _base_url(self, first_party: bool) -> tuple[str, str | None]:
        """The account's base URL and where it came from (None for a first-party API's
        own endpoint): --base-url (or the base-url setting), providers.NAME.base-url
        (checked with configuration), or the plugin's default. A URL that is not http(s)
        fails here, before anything runs, naming the value and where it was set."""
        from smith.providers._settings import http_url

        account, registry = self.account, self.registry
        name = account.name
        if registry.base_url is not None:
            source = registry._base_url_source()
            url = http_url(registry.base_url)
            if url is None:
                raise BAD_BASE_URL.error(
                    value=registry.base_url,
                    source=source,
                    url=registry.base_url,
                    name=name,
                    origin=str(source),
                )
            return url, f"from {source}"
        if account.base_url:
            return str(account.base_url).rstrip("/"), f"from providers.{name}.base-url"
        default = self.spec.default_base_url
        if not default:
            raise NO_BASE_URL.error(value=name, source=self.source, name=name)
        if first_party:
            return str(default).rstrip("/"), None
        return str(default).rstrip("/"), (
            f"{account.plugin}'s default, as neither --base-url nor "
            f"providers.{name}.base-url is set"
        )

    def _renewer(self, credential: Credential) -> Any:
        registry, account, module, facts = self.registry, self.account, self.module, self.facts
        current = [credential]

        async def renew() -> str | None:
            """The credential for the next request, renewed first if it has expired."""
            from smith.providers._auth import resolve_credential

            if current[0].expired():
                found = await resolve_credential(
                    account.name,
                    env=registry.env,
                    home=registry.home or "",
                    config=registry.config,
                    plugin=module,
                    facts=facts,
                )
                if found is not None:
                    current[0] = found
            return current[0].value

        return renew


@functools.cache
def _default_registry() -> Registry:
    from smith.paths import default_data_home

    return Registry(home=default_data_home(os.environ))


def resolve_model(spec: str, *, source: Source | None = None) -> tuple[Provider, str]:
    """The provider for a model setting, with no configuration beyond the environment
    (the library's default; commands use `Registry.from_config`)."""
    return _default_registry().resolve(spec, source=source)
