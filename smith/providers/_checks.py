"""The checks smith.providers contributes to configuration, for the open sections it owns:

    catalog     model overrides          catalog { "provider/model" { context-window N; }; }
    models      aliases and groups       models { alias { fast "anthropic/..."; }; }
    providers   accounts and endpoints   providers { NAME { base-url "..."; }; }

Configuration declares these sections but imports nothing of smith.providers; whoever
resolves configuration for real use passes the checks:

    config = smith.config.resolve(checks=CONFIG_CHECKS)     # the command line

and what reads these sections here (the registry, the catalog's overrides, credentials,
refresh) first calls `checked(config)`, which checks a Config resolved without them (a
test, a library caller) the same way, and does nothing for one resolved with them.

Each check imports the module that knows its rules on first use, so contributing them
costs nothing until configuration holds a key under one of these sections.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from smith.config import Config
    from smith.diagnostics import Source


def _catalog(key: str, value: object, source: Source) -> object:
    from smith.providers._overrides import check_override

    return check_override(key, value, source)


def _models(key: str, value: object, source: Source) -> object:
    from smith.providers._routing import check_route

    return check_route(key, value, source)


def _providers(key: str, value: object, source: Source) -> object:
    from smith.providers._settings import check_provider_setting

    return check_provider_setting(key, value, source)


CONFIG_CHECKS: Mapping[str, Callable[[str, object, Source], object]] = {
    "catalog": _catalog,
    "models": _models,
    "providers": _providers,
}


def checked(config: Config) -> Config:
    """`config` with the values of these sections checked: raises ConfigError as
    resolving with CONFIG_CHECKS would have; a no-op once they are (Config.checked)."""
    config.apply_checks(CONFIG_CHECKS)
    return config
