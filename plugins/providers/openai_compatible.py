"""The openai-compatible provider: any server that speaks OpenAI's Chat Completions,
such as llama.cpp's llama-server, Ollama and vLLM, at the base URL that `--base-url` or
configuration gives (`smith --model openai-compatible/NAME --base-url URL`).

The wire format is smith.plugins.providers._openai_chat with what local servers take:
`max_tokens` (not OpenAI's newer `max_completion_tokens`), reasoning streamed as
`reasoning_content` or `reasoning` and, for a model configured with thinking levels, sent
back as `reasoning_content` so a template can keep it between tool calls. A key is
optional and never borrowed: a server gets one only when one is configured for it
(providers.NAME.api-key-env, or `smith auth login NAME`); without one no Authorization
header is sent at all. OPENAI_API_KEY is OpenAI's, and is never sent to another server.
Its model list is OpenAI's shape (GET {base}/models), read where one is configured.
"""

from __future__ import annotations

import sys

from smith._redact import redact_text
from smith.providers import Provider, ProviderHost
from smith.sdk import Plugin, ProviderSpec, provider_facts

from ._openai_chat import ChatCompletions
from ._openai_common import MODEL_LIST

NAME = "openai-compatible"
# Its facts are its manifest's (smith.plugins.MANIFESTS), the one copy.
FACTS = provider_facts()[NAME]
DEFAULT_BASE_URL = str(FACTS.default_base_url)
CREDENTIAL_ENV = FACTS.credential_env


def create(model: str, host: ProviderHost) -> Provider:
    from smith.providers import HttpProvider

    info = host.model_info(NAME, model)
    settings = host.settings(NAME)
    return HttpProvider(NAME, wire(settings.base_url), info, settings, host.engine, info.pricing)


def wire(base_url: str = DEFAULT_BASE_URL) -> ChatCompletions:
    """The wire format for the server at `base_url` (named in its errors)."""
    return ChatCompletions(
        label=f"the OpenAI-compatible server at {redact_text(base_url)}",
        max_tokens_field="max_tokens",
        replay_reasoning=True,
        reasoning_temperature=True,
        base_url_form=f"{DEFAULT_BASE_URL}: the server's API root, usually ending in /v1 "
        "(smith adds /chat/completions to it)",
    )


# What this module contributes: the provider, for the model registry; its facts are its
# manifest's (smith.plugins.MANIFESTS), which smith reads before importing this module:
# not first-party, so unknown model ids are assumed and a key is optional.
PLUGIN = Plugin(
    NAME,
    providers={
        NAME: ProviderSpec(
            create,
            hooks=sys.modules[__name__],
            list_models=MODEL_LIST,
            **FACTS.spec_fields(),
        )
    },
)
