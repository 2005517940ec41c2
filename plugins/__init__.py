"""Built-in plugins, installed as `smith.plugins`, on the same contract as user plugins:
providers, the product plugin (layout, theme, keybindings, commands), queue policies.

`BUILTIN` names each built-in's module (each exports `PLUGIN`) in load order;
`smith.sdk.resolve_plugins` imports them when a plugin list is first resolved.
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
