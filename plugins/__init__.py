"""Built-in plugins, installed as `smith.plugins`, on the same contract as user plugins:
providers, the product plugin (layout, theme, keybindings, commands), queue policies, and
the agent library's: mcp (the MCP client), skills, agents (sub-agents: the task tool),
hooks (commands configuration runs at events), plan (the todo tool and plan mode).

`BUILTIN` names each built-in's module (each exports `PLUGIN`) in load order.
`MANIFESTS` is each built-in's manifest as plain data (smith.sdk.PluginManifest), read
without importing any plugin module: its name and, for a provider plugin, what it
contributes (its provider, and nothing else: the list routes to it before importing it,
so a provider module is imported only when its provider is used) and the facts of its
provider that smith needs before (or without) importing the module: its wire format, the
variables that hold its key (withheld and redacted at every start), its base URL,
whether it is a vendor's own API, whether it runs offline. These are the one copy: each
provider module builds its ProviderSpec from them (`smith.sdk.provider_facts()`), and
tests/test_plugins_list.py holds each module's PLUGIN to its manifest. A built-in that
contributes more (queue, approval, product) states its name here and the rest in its
module. Plain data, no imports: this package is imported by the core to read these tables.
"""

# The order is the order of review too: a call plan mode or the user's hooks deny is
# never put to the user by approval (the first deny ends a call's review).
BUILTIN = (
    "smith.plugins.queue",
    "smith.plugins.product",  # first of those with commands: its own lead the `/` menu
    "smith.plugins.plan",
    "smith.plugins.hooks",
    "smith.plugins.approval",
    "smith.plugins.mcp",
    "smith.plugins.skills",
    "smith.plugins.agents",
    "smith.plugins.providers.anthropic",
    "smith.plugins.providers.openai",
    "smith.plugins.providers.google",
    "smith.plugins.providers.openai_compatible",
    "smith.plugins.providers.scripted",
    "smith.plugins.providers.demo",
)
MANIFESTS = {
    "smith.plugins.queue": {"name": "queue"},
    "smith.plugins.approval": {"name": "approval"},
    "smith.plugins.product": {"name": "product"},
    "smith.plugins.mcp": {"name": "mcp"},
    "smith.plugins.skills": {"name": "skills"},
    "smith.plugins.agents": {"name": "agents"},
    "smith.plugins.hooks": {"name": "hooks"},
    "smith.plugins.plan": {"name": "plan"},
    "smith.plugins.providers.anthropic": {
        "name": "anthropic",
        "contributions": {"providers": ["anthropic"]},
        "providers": {
            "anthropic": {
                "api": "anthropic-messages",
                "credential_env": ("ANTHROPIC_API_KEY",),
                "default_base_url": "https://api.anthropic.com/v1",
                "first_party": True,
            },
        },
    },
    "smith.plugins.providers.openai": {
        "name": "openai",
        "contributions": {"providers": ["openai"]},
        "providers": {
            "openai": {
                "api": "openai-responses",  # a catalog entry may say openai-chat instead
                "credential_env": ("OPENAI_API_KEY",),
                "default_base_url": "https://api.openai.com/v1",
                "first_party": True,
            },
        },
    },
    "smith.plugins.providers.google": {
        "name": "google",
        "contributions": {"providers": ["google"]},
        "providers": {
            "google": {
                "api": "google-gemini",
                "credential_env": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
                "default_base_url": "https://generativelanguage.googleapis.com/v1beta",
                "first_party": True,
            },
        },
    },
    "smith.plugins.providers.openai_compatible": {
        "name": "openai-compatible",
        "contributions": {"providers": ["openai-compatible"]},
        # A server you run: no one else's key, and no fixed list of models (not first-party).
        "providers": {
            "openai-compatible": {
                "api": "openai-chat",
                "default_base_url": "http://127.0.0.1:8080/v1",  # llama-server's default
            },
        },
    },
    "smith.plugins.providers.scripted": {
        "name": "scripted",
        "contributions": {"providers": ["scripted"]},
        "providers": {"scripted": {"offline": True}},
    },
    "smith.plugins.providers.demo": {
        "name": "demo",
        "contributions": {"providers": ["demo"]},
        "providers": {"demo": {"offline": True}},
    },
}


__all__ = ["BUILTIN", "MANIFESTS"]
