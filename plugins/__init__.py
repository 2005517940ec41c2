"""Built-in plugins, installed as `smith.plugins`, on the same contract as user plugins:
providers, the product plugin (layout, theme, keybindings, commands), queue policies.

`BUILTIN` names each built-in's module (each exports `PLUGIN`) in load order.
`PROVIDER_ONLY` names those that offer one provider, of their own name, and nothing else:
`smith.sdk.resolve_plugins` lists them without importing them, so a provider module is
imported only when its provider is used (tests/test_plugins_list.py holds each module's
PLUGIN to its entry here).

`PROVIDER_FACTS` gives, for every built-in provider, the facts of its ProviderSpec that
smith needs before (or without) importing its module: its wire format, the variables
that hold its key (withheld and redacted at every start), its base URL, whether it is a
vendor's own API, whether it runs offline. The module stays their one source: the same
test holds each entry equal to the module's ProviderSpec (`spec.facts(name)`), so the
two cannot drift. smith reads them through `smith.sdk.provider_facts()`. Plain data, no
imports: this package is imported by the core to read these tables.
"""

BUILTIN = (
    "smith.plugins.queue",
    "smith.plugins.approval",
    "smith.plugins.product",
    "smith.plugins.providers.anthropic",
    "smith.plugins.providers.openai",
    "smith.plugins.providers.google",
    "smith.plugins.providers.openai_compatible",
    "smith.plugins.providers.scripted",
    "smith.plugins.providers.demo",
)
PROVIDER_ONLY = {
    "smith.plugins.providers.anthropic": "anthropic",
    "smith.plugins.providers.openai": "openai",
    "smith.plugins.providers.google": "google",
    "smith.plugins.providers.openai_compatible": "openai-compatible",
    "smith.plugins.providers.scripted": "scripted",
    "smith.plugins.providers.demo": "demo",
}
PROVIDER_FACTS = {
    "anthropic": {
        "api": "anthropic-messages",
        "credential_env": ("ANTHROPIC_API_KEY",),
        "default_base_url": "https://api.anthropic.com/v1",
        "first_party": True,
    },
    "openai": {
        "api": "openai-responses",
        "credential_env": ("OPENAI_API_KEY",),
        "default_base_url": "https://api.openai.com/v1",
        "first_party": True,
    },
    "google": {
        "api": "google-gemini",
        "credential_env": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        "default_base_url": "https://generativelanguage.googleapis.com/v1beta",
        "first_party": True,
    },
    # A server you run: no one else's key, and no fixed list of models.
    "openai-compatible": {"api": "openai-chat", "default_base_url": "http://127.0.0.1:8080/v1"},
    "scripted": {"offline": True},
    "demo": {"offline": True},
}


__all__ = ["BUILTIN", "PROVIDER_FACTS", "PROVIDER_ONLY"]
