"""The configuration schema: every option declared once.

An `Option` is the single declaration of a setting. Its key (``model.temperature``) is
what config files and `smith config` use; its command-line flag (``--model-temperature``)
and environment variable (``SMITH_MODEL_TEMPERATURE``) are derived from the key, so the
three surfaces cannot drift apart. A `Section` states the unknown-key policy of a key
prefix: an error with a did-you-mean for keys smith owns, a warning where another
schema (a plugin's) has the final word, or "open" where the user names the keys
(`catalog.<provider/model>.context-window`, `providers.<name>.base-url`): every
key under an open prefix is kept, with its layer and source, and read back as a subtree
(`Config.subtree("catalog")`). Configuration declares an open section (its prefix, doc
and owner); the check of its values may come with it (`Section.check`) or from its
owner above configuration, as `resolve(checks={prefix: check})`.

Loaded on the `smith --help` path: no imports beyond the standard library's cheapest.
"""

from __future__ import annotations

from smith.config._types import ValueType

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping
    from typing import Literal

    from smith.diagnostics import Source

    UnknownPolicy = Literal["error", "warn", "open"]
    DefaultFactory = Callable[[Mapping[str, str]], object]
    # (key, value, source) -> the value to keep; raises SmithError for a bad key or value
    OpenCheck = Callable[[str, object, Source], object]


def flag_for(key: str) -> str:
    return "--" + key.replace(".", "-")


def env_for(key: str) -> str:
    return "SMITH_" + key.replace(".", "_").replace("-", "_").upper()


class Option:
    """One setting: key, type, default, documentation, and where it may be set.

    `bootstrap` options decide where configuration files are (the config directory, the
    data directory, the project root), so they can come only from the environment or the
    command line. `secret` options never show their value in output or diagnostics.
    A callable default is computed from the environment (e.g. XDG directories).
    """

    __slots__ = ("bootstrap", "default", "doc", "key", "nullable", "owner", "secret", "type")

    def __init__(
        self,
        key: str,
        type: ValueType,
        default: object,
        doc: str,
        *,
        nullable: bool = False,
        bootstrap: bool = False,
        secret: bool = False,
        owner: str = "smith",
    ) -> None:
        self.key = key
        self.type = type
        self.default: object = default
        self.doc = doc
        self.nullable = nullable or default is None
        self.bootstrap = bootstrap
        self.secret = secret
        self.owner = owner

    def __repr__(self) -> str:
        return f"<Option {self.key} {self.type!r}>"

    @property
    def flag(self) -> str:
        return flag_for(self.key)

    @property
    def env(self) -> str:
        return env_for(self.key)

    def default_value(self, env: Mapping[str, str]) -> object:
        default = self.default
        if callable(default):
            return default(env)
        return list(default) if isinstance(default, list) else default  # never shared

    def check(self, value: object) -> object:
        """A typed value (KDL, plugin, Python) or raise `Mismatch`."""
        if value is None and self.nullable:
            return None
        return self.type.check(value)

    def parse(self, text: str) -> object:
        """A value given as text (environment, flag, `config set`) or raise `Mismatch`."""
        if self.nullable and text.strip() in ("", "null", "none"):
            return None
        return self.type.parse(text)


class Section:
    """A key prefix with its owner and its policy for keys the schema does not declare.

    With the "open" policy the keys below the prefix are named by the user (a model, a
    provider account), so no schema can list them: each is kept as it was given, after
    `check(key, value, source)` (if any) accepted it. `check` returns the value to keep
    (it may normalize it) or raises a SmithError whose diagnostic names what is wrong;
    text from the command line arrives as `str`, for `check` to parse. Values from the
    environment cannot reach an open key: a variable name cannot spell it back.
    A section whose values another package checks (its `owner`, e.g. smith.providers)
    has no `check` of its own: the owner contributes it to `resolve(checks=...)`.
    """

    __slots__ = ("check", "doc", "owner", "prefix", "unknown")

    def __init__(
        self,
        prefix: str,
        unknown: UnknownPolicy,
        doc: str,
        owner: str = "smith",
        *,
        check: OpenCheck | None = None,
    ):
        self.prefix = prefix
        self.unknown: UnknownPolicy = unknown
        self.doc = doc
        self.owner = owner
        self.check = check


class Schema:
    """Options by key, and sections by prefix."""

    def __init__(self) -> None:
        self._options: dict[str, Option] = {}
        self._sections: dict[str, Section] = {}

    def add(self, option: Option) -> Option:
        for other in self._options.values():
            if option.env == other.env:  # same key, or keys differing only in . and -
                raise ValueError(
                    f"configuration options {option.key!r} and {other.key!r} "
                    f"would share {option.flag} / {option.env}"
                )
        self._options[option.key] = option
        return option

    def add_section(self, section: Section) -> Section:
        self._sections[section.prefix] = section
        return section

    def get(self, key: str) -> Option | None:
        return self._options.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._options

    def __iter__(self) -> Iterator[Option]:
        return iter(sorted(self._options.values(), key=lambda o: o.key))

    def __len__(self) -> int:
        return len(self._options)

    def sections(self) -> list[Section]:
        return [self._sections[prefix] for prefix in sorted(self._sections)]

    def section_for(self, key: str) -> Section:
        """The most specific section whose prefix owns `key` (the root owns everything)."""
        parts = key.split(".")
        for n in range(len(parts) - 1, 0, -1):
            section = self._sections.get(".".join(parts[:n]))
            if section is not None:
                return section
        return self._sections.get("") or Section("", "error", "smith's own settings")

    def by_env(self) -> dict[str, Option]:
        return {option.env: option for option in self._options.values()}

    def hint(self, key: str, *, env: bool = False) -> str:
        """A did-you-mean fix for a misspelt key (or SMITH_ variable name)."""
        from smith.diagnostics import did_you_mean

        names = [o.env if env else o.key for o in self._options.values()]
        return did_you_mean(key, names, template="{}" if env else "'{}'")
