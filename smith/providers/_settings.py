"""The check of `providers.<name>.*` settings (the credentials' variable, an endpoint's
base URL), contributed to configuration through smith.providers.CONFIG_CHECKS, and the
check of every base URL. Vendor-neutral; imports nothing beyond diagnostics, as it runs
while configuration is resolved.
"""

from __future__ import annotations

import re

from smith.diagnostics import DiagnosticKind, Source

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

# The plugin a configured name that is no provider is over, unless it names one: a
# server you run (providers { lab { base-url "http://..."; }; }).
ACCOUNT_PLUGIN = "openai-compatible"

PROVIDER_SETTING = DiagnosticKind(
    "config.provider-setting",
    what="this provider setting is not valid: {problem}",
    why="settings under 'providers' configure one provider or account each, as "
    "providers.NAME.SETTING; {about}",
    fix="{remedy} (docs/providers.md lists the provider settings)",
)

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _env_name(value: object) -> str | None:
    return value if isinstance(value, str) and _ENV_NAME.match(value) else None


def http_url(value: object) -> str | None:
    """`value` without a trailing slash if it is an http:// or https:// URL with a host;
    None otherwise (the check of every base URL, configured or given as --base-url)."""
    if isinstance(value, str) and re.match(r"https?://[^\s/]+", value):
        return value.rstrip("/")
    return None


# setting -> (normalize or None when invalid, what it takes, an example)
CHECKED: dict[str, tuple[Callable[[object], object | None], str, str]] = {
    "api-key-env": (
        _env_name,
        "the name of the environment variable that holds this provider's key",
        '"WORK_ANTHROPIC_KEY"',
    ),
    "base-url": (http_url, "an http:// or https:// URL", '"http://127.0.0.1:8080/v1"'),
}


def check_provider_setting(key: str, value: object, source: Source) -> object:
    """The check of the open `providers` section for the settings listed in CHECKED; the
    others pass through unchanged for the modules that own them (routing, plugins)."""
    parts = key.split(".")
    if len(parts) < 3 or not parts[1]:
        raise PROVIDER_SETTING.error(
            field=key,
            source=source,
            problem=f"'{key}' names no provider and setting",
            about="for example providers.openai-compatible.base-url",
            remedy="write it as a block per provider: providers { NAME { SETTING VALUE; }; }",
        )
    setting = ".".join(parts[2:])
    checked = CHECKED.get(setting)
    if checked is None:
        return value
    normalize, takes, example = checked
    result = normalize(value)
    if result is None:
        raise PROVIDER_SETTING.error(
            field=key,
            value=value,
            source=source,
            problem=f"{setting} takes {takes}",
            about=f"{setting} is {takes}",
            remedy=f"set it to a value such as {example}",
        )
    return result
