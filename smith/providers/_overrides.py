"""Catalog overrides in configuration: a human's word on a model, above any bundled or
refreshed fact.

    catalog {
        "openai-compatible/qwen2.5-coder:32b" {
            context-window 32768
            max-output 8192
            input "text"                      // or "text" "image"
            tools true
            thinking "low" "medium" "high"    // or false: it does not think
            strict-tools false
            cache "none"                      // "automatic", "explicit"
            api "openai-chat"
            pricing input=0.2 output=0.6 cache-read=0.02 cache-write=0.2   // null: unknown
        }
    }

Each setting becomes the key `catalog.<provider/model>.<field>` of the open `catalog`
section; `check_override` is that section's check, so a bad field or value is reported
with its file position when configuration is resolved, like any other setting.
"""

from __future__ import annotations

import math

from smith.config import THINKING_LEVELS
from smith.diagnostics import DiagnosticKind, Source, did_you_mean, show_value
from smith.providers._model import APIS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


CATALOG_KEY = DiagnosticKind(
    "config.catalog-key",
    what="'{key}' does not name a model as provider/model",
    why="a catalog override is a block named after the model it describes, such as "
    '"openai-compatible/qwen3" (quoted: KDL names cannot hold a slash otherwise)',
    fix='write it as catalog {{ "PROVIDER/MODEL" {{ context-window 32768; }}; }}',
)
CATALOG_FIELD = DiagnosticKind(
    "config.catalog-field",
    what="'{name}' is not a field of a catalog entry (for {model})",
    why="a model's entry has the fields {fields}",
    fix="{hint} (docs/providers.md describes each field)",
)
CATALOG_VALUE = DiagnosticKind(
    "config.catalog-value",
    what="{name} of {model} takes {expected}, got {got}",
    why="smith sends a model only what its entry says it accepts, so the entry must be exact",
    fix="edit that line to a value such as {example}",
)

LEVELS = tuple(level for level in THINKING_LEVELS if level != "off")
INPUTS = ("text", "image")
CACHES = ("none", "automatic", "explicit")


class Invalid(Exception):
    """A value does not fit a field."""


def _positive_int(value: object) -> object:
    if isinstance(value, str):
        value = int(value.replace("_", "")) if value.strip().isdigit() else value
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 10**9:
        raise Invalid
    return value


def _boolean(value: object) -> object:
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if not isinstance(value, bool):
        raise Invalid
    return value


def _one_of(choices: tuple[str, ...]) -> Callable[[object], object]:
    def check(value: object) -> object:
        if not isinstance(value, str) or value not in choices:
            raise Invalid
        return value

    return check


def _subset(choices: tuple[str, ...], *, empty: bool) -> Callable[[object], object]:
    """A list of names from `choices` (one name alone, or comma-separated text, too);
    with `empty`, false, "none" or an empty list mean none."""

    def check(value: object) -> object:
        if empty and (value is False or value in ("none", [])):
            return ()
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",")]
        if not isinstance(value, list) or not value:
            raise Invalid
        if any(not isinstance(v, str) or v not in choices for v in value):
            raise Invalid
        return tuple(dict.fromkeys(v for v in value if isinstance(v, str)))

    return check


def _price(value: object) -> object:
    if value is None or value == "null":
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise Invalid from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Invalid
    if not math.isfinite(value) or value < 0:
        raise Invalid
    return float(value)


# config field -> (ModelInfo attribute or pricing.<kind>, check, what it takes, example)
FIELDS: dict[str, tuple[str, Callable[[object], object], str, str]] = {
    "api": ("api", _one_of(APIS), "one of " + ", ".join(APIS), '"openai-chat"'),
    "context-window": ("context_window", _positive_int, "a positive integer (tokens)", "32768"),
    "max-output": ("max_output", _positive_int, "a positive integer (tokens)", "4096"),
    "input": (
        "input",
        _subset(INPUTS, empty=False),
        "one or more of " + ", ".join(INPUTS),
        '"text" "image"',
    ),
    "tools": ("tools", _boolean, "true or false", "true"),
    "thinking": (
        "thinking",
        _subset(LEVELS, empty=True),
        "thinking levels from " + ", ".join(LEVELS) + ", or false",
        '"low" "medium" "high"',
    ),
    "strict-tools": ("strict_tools", _boolean, "true or false", "false"),
    "cache": ("cache", _one_of(CACHES), "one of " + ", ".join(CACHES), '"none"'),
}
for _kind in ("input", "output", "cache-read", "cache-write"):
    FIELDS[f"pricing.{_kind}"] = (
        "pricing." + _kind.replace("-", "_"),
        _price,
        "a price in US dollars per million tokens (0 or more), or null when unknown",
        "0.5",
    )


# "pricing.input" before "input": a key ending in the one ends in the other too.
_LONGEST_FIRST = sorted(FIELDS, key=len, reverse=True)


def split_key(key: str, source: Source) -> tuple[str, str, str]:
    """`catalog.openai/gpt-4.1.pricing.input` -> ("openai", "gpt-4.1", "pricing.input").
    Model ids may hold dots, so the field is found from the end of the key."""
    rest = key.partition(".")[2]
    field = next((f for f in _LONGEST_FIRST if rest.endswith("." + f)), None)
    spec, name = (rest[: -len(field) - 1], field) if field else rest.rpartition(".")[::2]
    provider, slash, model = spec.partition("/")
    if not slash or not provider or not model:
        raise CATALOG_KEY.error(field=key, value=spec or rest, source=source, key=spec or rest)
    if field is None:
        raise CATALOG_FIELD.error(
            field=key,
            source=source,
            name=name,
            model=spec,
            fields=", ".join(FIELDS),
            hint=did_you_mean(name, FIELDS, otherwise="remove it, or correct its name"),
        )
    return provider, model, field


def check_override(key: str, value: object, source: Source) -> object:
    """The check of the open `catalog` section: the value to keep, or a SmithError."""
    provider, model, field = split_key(key, source)
    _attribute, check, expected, example = FIELDS[field]
    try:
        return check(value)
    except (Invalid, ValueError):
        raise CATALOG_VALUE.error(
            field=key,
            value=value,
            source=source,
            name=field,
            model=f"{provider}/{model}",
            expected=expected,
            got=show_value(value),
            example=example,
        ) from None


class Override:
    """One configured field of one model: attribute, value, and where it was set."""

    __slots__ = ("attribute", "source", "value")

    def __init__(self, attribute: str, value: object, source: str) -> None:
        self.attribute = attribute  # a ModelInfo attribute, or pricing.<kind>
        self.value = value
        self.source = source  # "config /path/config.kdl:3:9"

    def __repr__(self) -> str:
        return f"Override({self.attribute}={self.value!r} from {self.source})"
