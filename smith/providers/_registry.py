"""From a model setting to a provider: `provider:model` (or `provider/model`).

Each provider plugin is a module under smith.plugins.providers with

    def create(model: str) -> Provider

where `model` is the part after the provider name (for `scripted:PATH`, the script's
path). The catalog, aliases and credentials of real providers come with them; the
offline ones need none of that.
"""

from __future__ import annotations

import importlib

from smith.diagnostics import DiagnosticKind, Source, did_you_mean
from smith.providers._stream import Provider

# Built-in provider plugins: name -> module.
BUILTIN = {
    "scripted": "smith.plugins.providers.scripted",
    "demo": "smith.plugins.providers.demo",
}

UNKNOWN_PROVIDER = DiagnosticKind(
    "model.unknown-provider",
    what="no provider is called '{provider}' (from the model setting '{model}')",
    why="a model is named as provider:model, and smith knows the providers {known}",
    fix="{hint}; for example --model scripted:PATH/TO/script.json or --model demo",
)


def split_model(spec: str) -> tuple[str, str]:
    """`scripted:/a/b.json` -> ("scripted", "/a/b.json"); `demo` -> ("demo", "")."""
    for sep in (":", "/"):
        name, found, rest = spec.partition(sep)
        if found and name in BUILTIN:
            return name, rest
    name, _, rest = spec.partition(":")
    return name, rest


def resolve_model(spec: str, *, source: Source | None = None) -> tuple[Provider, str]:
    """The provider for a model setting and the model id to ask it for."""
    name, model = split_model(spec)
    module_name = BUILTIN.get(name)
    if module_name is None:
        raise UNKNOWN_PROVIDER.error(
            value=spec,
            source=source or Source("argument", "--model"),
            provider=name,
            model=spec,
            known=", ".join(sorted(BUILTIN)),
            hint=did_you_mean(name, BUILTIN, otherwise="check the provider name"),
        )
    module = importlib.import_module(module_name)
    provider: Provider = module.create(model)
    return provider, model or name
