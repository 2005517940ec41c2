"""What smith knows about one model: its limits, its capabilities, its prices, and where
each of those facts came from.

Requests use only what a model advertises here (see smith.providers._wire): a capability
that is absent is never sent, and a request that needs one fails before dispatch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from smith.providers._stream import Pricing

# The wire formats smith speaks; each provider plugin implements one or more.
APIS = ("anthropic-messages", "openai-responses", "openai-chat", "google-gemini")


@dataclass(frozen=True, slots=True)
class ModelInfo:
    provider: str  # the provider plugin's name: anthropic, openai, google, openai-compatible
    id: str  # the id the provider's API takes
    api: str  # one of APIS
    context_window: int  # tokens
    max_output: int  # tokens
    input: tuple[str, ...] = ("text",)  # "text", "image"
    tools: bool = True
    # Thinking levels (smith.config THINKING_LEVELS minus "off") the model accepts; ()
    # means it does not think, or thinking cannot be controlled.
    thinking: tuple[str, ...] = ()
    strict_tools: bool = False  # strict / grammar-constrained tool input
    cache: str = "none"  # "none", "automatic" (provider caches by itself), "explicit"
    pricing: Pricing | None = None
    # field name -> where its value came from: "bundled catalog", "config FILE:LINE",
    # "assumed: unknown model on an openai-compatible endpoint", "refresh PROVIDER TIME"
    provenance: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def key(self) -> str:
        return f"{self.provider}/{self.id}"
