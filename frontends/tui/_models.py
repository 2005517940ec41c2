"""The models the model picker offers (/model with no argument).

The offline providers are always there; `catalog_choices` adds the catalog's models,
usable when their provider has a credential. The app is given the function that lists
them (SmithApp's `models`; `smith` passes `catalog_choices` over its configuration), so
tests and other hosts can offer their own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from smith.config import Config
    from smith.providers import ModelInfo


@dataclass(frozen=True, slots=True)
class ModelChoice:
    spec: str  # what /model and Runtime.set_model take: "provider/model"
    context_window: int | None  # tokens; None: not known
    usable: bool
    note: str = ""  # what it is, or why it cannot be picked (no credential, needs a path)


OFFLINE = (
    ModelChoice("demo", None, True, "offline demo, no API key needed"),
    ModelChoice("scripted", None, False, "replays a script: /model scripted:PATH"),
)


def model_choices(
    catalog: Iterable[ModelInfo] = (),
    problem: Callable[[ModelInfo], str | None] = lambda info: None,
) -> list[ModelChoice]:
    """The catalog's models (sorted by provider and id), then the offline ones.
    `problem(info)` says why a model cannot be used now (e.g. "no ANTHROPIC_API_KEY"),
    or None when it can."""
    out = []
    for info in sorted(catalog, key=lambda i: (i.provider, i.id)):
        why = problem(info)
        out.append(ModelChoice(info.key, info.context_window, why is None, why or ""))
    return [*out, *OFFLINE]


def catalog_choices(config: Config, env: Mapping[str, str]) -> list[ModelChoice]:
    """The catalog's models, each usable if its provider has a credential (looked for
    as `smith models` does: configuration, environment and the auth file; nothing is
    sent anywhere), then the offline ones."""
    from smith.cli import plugin_for
    from smith.diagnostics import SmithError
    from smith.providers import find_credential, load_catalog

    problems: dict[str, str | None] = {}

    def problem(info: ModelInfo) -> str | None:
        name = info.provider
        if name not in problems:
            try:
                found = find_credential(
                    name, env=env, home=config.home, config=config, plugin=plugin_for(name)
                )
            except SmithError as exc:  # e.g. a configured key variable that is unset
                problems[name] = exc.diagnostic.what
            else:
                ok = found is not None and not found.expired()
                problems[name] = None if ok else f"no API key: smith auth login {name}"
        return problems[name]

    return model_choices(load_catalog(config).models(), problem)


def context_label(tokens: int | None) -> str:
    """200000 -> "200k context"; unknown says so."""
    if tokens is None:
        return "context ?"
    if tokens >= 1_000_000 and tokens % 1_000_000 == 0:
        return f"{tokens // 1_000_000}M context"
    if tokens >= 1000:
        return f"{tokens / 1000:.0f}k context"
    return f"{tokens} context"


def matches(choice: ModelChoice, query: str) -> bool:
    """Every word of `query` appears in the model's name or note (case-insensitive)."""
    hay = f"{choice.spec} {choice.note}".lower()
    return all(word in hay for word in query.lower().split())
