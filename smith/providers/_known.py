"""What smith knows of each provider before any plugin loads: its wire format, where its
API is, which environment variables hold its key, and whether it has a fixed model list.

One table, read by the catalog (default wire format, first-party or not), credentials
(environment variables) and `smith models --refresh` (base URL, model-list endpoint).
A provider plugin owns its row: it may `declare()` a replacement when it is imported,
and the lead's registry may declare more providers the same way.

Also the check of `providers.<name>.*` settings that credentials and refresh read. It is
imported while configuration is resolved, so it needs nothing beyond diagnostics.
"""

from __future__ import annotations

import re

from smith.diagnostics import DiagnosticKind, Source

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


class Declaration:
    """One provider's fixed facts."""

    __slots__ = ("api", "base_url", "env", "first_party", "listing", "name")

    def __init__(
        self,
        name: str,
        api: str,
        env: tuple[str, ...],
        base_url: str | None,
        *,
        first_party: bool = True,
        listing: str = "openai",
    ) -> None:
        self.name = name
        self.api = api  # default wire format of its models (smith.providers._model.APIS)
        self.env = env  # environment variables holding its key, in order of preference
        self.base_url = base_url  # None: the user must configure one
        # A first-party provider has a known list of models: an id the catalog does not
        # know is an error. Otherwise (a self-hosted endpoint) unknown ids are assumed.
        self.first_party = first_party
        self.listing = listing  # the shape of its model-list response (refresh)

    def __repr__(self) -> str:
        return f"<Declaration {self.name} {self.api}>"


DECLARED: dict[str, Declaration] = {}


def declare(declaration: Declaration) -> Declaration:
    """Add or replace a provider's row (a plugin owning its facts)."""
    DECLARED[declaration.name] = declaration
    return declaration


declare(
    Declaration(
        "anthropic",
        "anthropic-messages",
        ("ANTHROPIC_API_KEY",),
        "https://api.anthropic.com/v1",
        listing="anthropic",
    )
)
declare(Declaration("openai", "openai-responses", ("OPENAI_API_KEY",), "https://api.openai.com/v1"))
declare(
    Declaration(
        "google",
        "google-gemini",
        ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        "https://generativelanguage.googleapis.com/v1beta",
        listing="google",
    )
)
# A server you run takes no one else's key: only the one configured for it.
declare(Declaration("openai-compatible", "openai-chat", (), None, first_party=False))


# -- providers.<name>.* settings ---------------------------------------------------------

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
