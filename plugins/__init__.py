"""Built-in plugins, installed as `smith.plugins`, on the same contract as user plugins:
providers, the product plugin (layout, theme, keybindings, commands), queue policies.

`BUILTIN` names each built-in's module (each exports `PLUGIN`) in load order.
`PROVIDER_ONLY` names those that offer one provider, of their own name, and nothing else:
`smith.sdk.resolve_plugins` lists them without importing them, so a provider module is
imported only when its provider is used (tests/test_plugins_list.py holds each module's
PLUGIN to its entry here).
"""

BUILTIN = (
    "smith.plugins.queue",
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
