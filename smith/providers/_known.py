"""What smith knows of each provider before any plugin loads: its wire format, where its
API is, which environment variables hold its key, and whether it has a fixed model list.

One table, read by the catalog (default wire format, first-party or not), credentials
(environment variables) and `smith models --refresh` (base URL, model-list endpoint).
A provider plugin owns its row: it may `declare()` a replacement when it is imported,
and the lead's registry may declare more providers the same way.
"""

from __future__ import annotations


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
