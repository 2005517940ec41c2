"""One diagnostic type for every user-facing error and warning.

The law (docs/architecture.md, "Errors"): say what happened, why, and the next corrective
action; name the offending value and the surface that supplied it; never a bare code; never
a secret.

Every kind of diagnostic smith can produce is declared once, at import time, as a
`DiagnosticKind` whose three parts are templates. Code never builds a `Diagnostic` by hand:
it calls a kind (``UNKNOWN_KEY(key=..., source=...)``) or raises ``kind.error(...)``. That
makes the whole catalogue walkable, and a test checks every kind renders all its parts.

    SmithError(Exception)          carries one Diagnostic; the CLI renders it, RPC sends it
    └── ConfigError                a diagnostic raised while resolving configuration

This module is imported on the startup path of every command: keep it free of imports.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import logging
    from collections.abc import Iterable
    from typing import Literal

    Severity = Literal["error", "warning"]
    # eval, tui, rpc, mcp, tools, replay, library: the interface that asked for an operation
    Surface = Literal[
        "file", "env", "flag", "argument", "default", "plugin", "internal",
        "eval", "tui", "rpc", "mcp", "tools", "replay", "library",
    ]  # fmt: skip

_MAX_VALUE_CHARS = 200
_REDACTED = "[secret]"
_secrets: set[str] = set()


def spellings(value: str) -> tuple[str, ...]:
    """`value` and the escaped forms text may hold it in (repr's, as in an exception's
    args, and JSON's), when they differ from it: a secret is masked in each."""
    import json

    forms = (
        value,
        repr(value)[1:-1],
        json.dumps(value)[1:-1],
        value.encode("unicode_escape").decode(),
    )
    return tuple(dict.fromkeys(f for f in forms if f))


def register_secret(text: str) -> None:
    """Never show `text` in any diagnostic from now on (API keys, tokens), in any of its
    spellings."""
    if len(text) >= 4:
        _secrets.update(spellings(text))


def scrub(text: str) -> str:
    """Replace every registered secret in `text`."""
    for secret in sorted(_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, _REDACTED)
    return text


def masked(text: str) -> str:
    """`text` as smith may print it anywhere: registered secrets replaced, and what looks
    like a credential masked (a traceback under --debug, too)."""
    return _shown(text)


def _shown(text: str) -> str:
    """Text a diagnostic shows: registered secrets replaced, and anything that looks like
    a credential (an Authorization header, an api_key=, a token) masked as well."""
    from smith._redact import redact_text

    return redact_text(scrub(text))


def did_you_mean(
    word: str,
    candidates: Iterable[str],
    *,
    template: str = "'{}'",
    otherwise: str = "check the spelling",
) -> str:
    """A fix hint naming the closest candidate to a misspelt `word`, e.g.
    "did you mean 'model'?"; `otherwise` when nothing is close."""
    import difflib

    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f"did you mean {template.format(close[0])}?" if close else otherwise


def show_value(value: object) -> str:
    """A short, unambiguous rendering of an offending value (strings quoted)."""
    if isinstance(value, str):
        text = '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    elif value is None:
        text = "null"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    else:
        try:
            text = repr(value)
        except ValueError:  # an integer past sys.get_int_max_str_digits has no repr
            text = f"<{type(value).__name__} too large to show>"
    if len(text) > _MAX_VALUE_CHARS:
        text = text[: _MAX_VALUE_CHARS - 1] + "…"
    return text


class Source:
    """The surface that supplied a value: where a user goes to change it."""

    __slots__ = ("location", "surface")

    def __init__(self, surface: Surface, location: str) -> None:
        self.surface: Surface = surface
        #: "/path/config.kdl:3:9", "SMITH_MODEL", "--model", "product defaults"
        self.location = location

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Source) and (self.surface, self.location) == (
            other.surface,
            other.location,
        )

    def __hash__(self) -> int:
        return hash((self.surface, self.location))

    def __repr__(self) -> str:
        return f"Source({self.surface!r}, {self.location!r})"

    def __str__(self) -> str:
        if self.surface == "env":
            return f"env {self.location}"
        return self.location


class Diagnostic:
    """A rendered diagnostic. Build one by calling a `DiagnosticKind`."""

    __slots__ = ("code", "field", "fix", "severity", "source", "value", "what", "why")

    def __init__(
        self,
        code: str,
        severity: Severity,
        what: str,
        why: str,
        fix: str,
        field: str | None = None,
        value: str | None = None,
        source: Source | None = None,
    ) -> None:
        self.code = code
        self.severity: Severity = severity
        self.what = what
        self.why = why
        self.fix = fix
        self.field = field
        self.value = value
        self.source = source

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Diagnostic) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<Diagnostic {self.code} {self.headline()!r}>"

    def headline(self) -> str:
        """`source: field: what`, compiler style. Arguments the user just typed are
        named in `what` itself, so they are not repeated as a prefix."""
        where = str(self.source) if self.source and self.source.surface != "argument" else None
        prefix = "".join(f"{part}: " for part in (where, self.field) if part)
        return f"{prefix}{self.what}"

    def render(self) -> str:
        """Human form for a terminal: headline, then why and fix, indented."""
        lines = [f"{self.severity}: {self.headline()}"]
        if self.value is not None and self.value.strip('"') not in self.what:
            lines.append(f"  value: {self.value}")
        lines.append(f"  why: {self.why}")
        lines.append(f"  fix: {self.fix}")
        from smith._inert import inert  # values quoted from outside stay inert on a terminal

        return inert("\n".join(lines))

    def to_dict(self) -> dict[str, object]:
        """Structured form for RPC and `--json` output."""
        return {
            "code": self.code,
            "severity": self.severity,
            "what": self.what,
            "why": self.why,
            "fix": self.fix,
            "field": self.field,
            "value": self.value,
            "source": None
            if self.source is None
            else {"surface": self.source.surface, "location": self.source.location},
        }


class SmithError(Exception):
    """An error meant for the user; its diagnostic says everything there is to say."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.headline())
        self.diagnostic = diagnostic


class ConfigError(SmithError):
    """Configuration could not be resolved; `diagnostics` lists every problem found."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        super().__init__(diagnostics[0])
        self.diagnostics = diagnostics


_kinds: dict[str, DiagnosticKind] = {}


class DiagnosticKind:
    """A declared kind of diagnostic: stable code, severity and the three templates.

    Templates use `str.format` fields filled from the call's keyword arguments.
    """

    __slots__ = ("code", "fix", "severity", "what", "why")

    def __init__(
        self, code: str, *, what: str, why: str, fix: str, severity: Severity = "error"
    ) -> None:
        if code in _kinds:
            raise ValueError(f"diagnostic code {code!r} is declared twice")
        for reserved in ("{value}", "{field}", "{source}", "{secret}"):
            if reserved in what + why + fix:
                raise ValueError(
                    f"diagnostic {code!r} uses {reserved} in a template: that name is a "
                    "parameter of every kind; name the field after what it holds"
                )
        self.code = code
        self.what = what
        self.why = why
        self.fix = fix
        self.severity: Severity = severity
        _kinds[code] = self

    def params(self) -> set[str]:
        """The template fields a caller must supply."""
        import string

        formatter = string.Formatter()
        return {
            name
            for template in (self.what, self.why, self.fix)
            for _, name, _, _ in formatter.parse(template)
            if name
        }

    def __call__(
        self,
        *,
        field: str | None = None,
        value: object = None,
        source: Source | None = None,
        secret: bool = False,
        **params: object,
    ) -> Diagnostic:
        """Fill the templates. `secret=True` hides the offending value entirely."""
        shown = _REDACTED if secret and value is not None else show_value(value)
        if secret and value is not None:
            params = {k: (_REDACTED if v == value else v) for k, v in params.items()}
        fill = {k: v if isinstance(v, str) else show_value(v) for k, v in params.items()}
        return Diagnostic(
            code=self.code,
            severity=self.severity,
            what=_shown(self.what.format(**fill)),
            why=_shown(self.why.format(**fill)),
            fix=_shown(self.fix.format(**fill)),
            field=field,
            value=None if value is None else _shown(shown),
            source=source,
        )

    def error(
        self,
        *,
        field: str | None = None,
        value: object = None,
        source: Source | None = None,
        secret: bool = False,
        **params: object,
    ) -> SmithError:
        """The diagnostic wrapped in an exception, ready to raise."""
        return SmithError(self(field=field, value=value, source=source, secret=secret, **params))


def log_formatter(fmt: str, *, debug: bool) -> logging.Formatter:
    """The formatter of every log handler that writes to a person's terminal (eval,
    rpc and mcp log to stderr): a record's traceback only with --debug (otherwise one
    line that says how to see it), and the text inert, since log messages quote
    values from outside (model output, file names, provider errors)."""
    import logging

    from smith._inert import inert

    class _Formatter(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            if debug or not record.exc_info:
                return inert(super().format(record))
            # Another handler may have cached the traceback text on the record already.
            kind = record.exc_info[0].__name__ if record.exc_info[0] else "error"
            quiet = logging.makeLogRecord(record.__dict__)
            quiet.exc_info, quiet.exc_text, quiet.stack_info = None, None, None
            hint = f" ({kind}; re-run with --debug to see the traceback)"
            return inert(super().format(quiet) + hint)

    return _Formatter(fmt)


def kinds() -> list[DiagnosticKind]:
    """Every diagnostic kind declared by the modules imported so far."""
    return list(_kinds.values())


INTERNAL = DiagnosticKind(
    "internal",
    what="smith hit an internal error: {error}",
    why="this is a bug in smith, not something you did",
    fix="rerun with --debug to see the traceback, and report it with the command you ran",
)
