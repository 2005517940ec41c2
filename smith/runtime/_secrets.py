"""The secret proxy: registered secrets never leave the process as plaintext.

    proxy = SecretProxy.from_environment(["GITHUB_TOKEN"], os.environ)
    request = replace(request, messages=proxy.redact(request.messages))  # remote dispatch
    session.append("message", proxy.redact(message))                    # persistence
    command = proxy.restore(arguments["command"])                        # authorised effect

A registered secret is replaced by its placeholder `{{secret:NAME}}` before anything is
sent to a provider or written to a session, and the placeholder is turned back into the
plaintext only inside an authorised local effect (a bash command and its environment).
The model can therefore use a credential by name without ever seeing it. The session
records that a secret exists (name, placeholder, source), never its value.

A provider credential (an API key or token smith read for a provider) is *protected*:
redacted the same way, but never restored and never put in a process's environment, so
the model cannot get it used on its behalf either (`protect`).

`redact_text` is the other half: log redaction of credential-looking material that was
never registered (Authorization headers, `api_key=...`, well-known key shapes).
"""

from __future__ import annotations

import logging
import re
import weakref
from typing import Any

from smith._redact import redact_text
from smith.diagnostics import register_secret, spellings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from smith.effects import SecretRoutes
    from smith.session import Entry, Session

SECRET_KIND = "secret"  # the session entry kind of a registration record
MIN_LENGTH = 4  # shorter values would be found inside ordinary words and corrupt text
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLACEHOLDER = re.compile(r"\{\{secret:([A-Za-z_][A-Za-z0-9_]*)\}\}")
_MARK = "{{secret:"  # cheap test before running the placeholder pattern
# What makes a command more than one program with its arguments (as a plugin's `run`).
_OPERATORS = re.compile(r"[;&|`$<>\n\r(){}]")


def placeholder(name: str) -> str:
    return f"{{{{secret:{name}}}}}"


class SecretProxy:
    """Registered secrets: redaction before dispatch and persistence, restoration inside
    authorised local effects. `missing` and `rejected` are filled by `from_environment`."""

    def __init__(self) -> None:
        self._values: dict[str, str] = {}  # name -> plaintext
        self._sources: dict[str, str] = {}  # name -> where the value came from
        self._protected: set[str] = set()  # names that are redacted only (`protect`)
        # Replaced as a whole (never mutated) so a redaction running in another thread
        # sees one consistent pattern and mapping.
        self._matcher: tuple[re.Pattern[str], dict[str, str]] | None = None
        self.missing: list[str] = []
        self.rejected: dict[str, str] = {}  # name -> why it was not registered

    def __repr__(self) -> str:  # names only: a repr ends up in tracebacks and logs
        return f"<SecretProxy {sorted(self._values)}>"

    def __len__(self) -> int:
        return len(self._values)

    def names(self) -> list[str]:
        return list(self._values)

    def register(self, name: str, value: str, *, source: str) -> str:
        """Register `value` under `name` (replacing an earlier value of that name) and
        return its placeholder. `source` says where it came from, e.g. "env:NAME"."""
        if not _NAME.fullmatch(name):
            raise ValueError(
                f"secret name {name!r} is not valid: use letters, digits and underscores, "
                "not starting with a digit (it becomes the placeholder {{secret:NAME}})"
            )
        if not isinstance(value, str) or len(value.strip()) < MIN_LENGTH:
            raise ValueError(
                f"the value of secret {name} ({source}) is empty or shorter than "
                f"{MIN_LENGTH} characters; replacing it everywhere would corrupt ordinary text"
            )
        register_secret(value)  # diagnostics never show it either
        self._values[name] = value
        self._sources[name] = source
        self._protected.discard(name)
        self._rebuild()
        return placeholder(name)

    def protect(self, name: str, value: str, source: str) -> None:
        """Redact `value` as {{secret:NAME}} without ever restoring it (a provider
        credential). A value already registered stays as it is; a name already taken by
        another value gets a numbered one (a renewed token keeps the old one redacted)."""
        if value in self._values.values() or len(value.strip()) < MIN_LENGTH:
            return
        base = name if _NAME.fullmatch(name) else "CREDENTIAL"
        unique, n = base, 1
        while unique in self._values:
            n += 1
            unique = f"{base}_{n}"
        self.register(unique, value, source=source)
        self._protected.add(unique)

    def add_all(self, other: SecretProxy) -> None:
        """Register every secret of `other` here too (as registered or protected there)."""
        for name, value in other._values.items():
            self.register(name, value, source=other._sources[name])
            if name in other._protected:
                self._protected.add(name)

    def _rebuild(self) -> None:
        # Plaintext -> placeholder; a value shared by two names maps to the later name.
        # Its escaped spellings too: a value with a quote or a backslash is shown escaped
        # by repr() (an exception's args) and by JSON, and must be caught there as well.
        by_value = {
            form: placeholder(name)
            for name, value in self._values.items()
            for form in spellings(value)
        }
        if not by_value:
            self._matcher = None
            return
        # At any position the alternation takes the first alternative that matches:
        # placeholders first, so text redacted before is left as it is (a secret such as
        # "secret" must not break them), then longest first, so that a secret containing
        # another is replaced whole.
        ordered = sorted(by_value, key=len, reverse=True)
        alternatives = [_PLACEHOLDER.pattern, *map(re.escape, ordered)]
        self._matcher = (re.compile("|".join(alternatives)), by_value)

    def _redact_str(self, text: str) -> str:
        matcher = self._matcher
        if matcher is None:
            return text
        pattern, by_value = matcher
        # One pass: a placeholder just written is never searched again.
        return pattern.sub(lambda m: by_value.get(m.group(0), m.group(0)), text)

    def redact(self, value: object) -> object:
        """A copy of `value` (str, dict, list, tuple, nested; dict keys too) with every
        registered plaintext replaced by its placeholder. Other objects are returned as
        they are; with no secrets registered, so is `value` itself."""
        if self._matcher is None:
            return value
        return self._redact(value)

    def _redact(self, value: object) -> object:
        if isinstance(value, str):
            return self._redact_str(value)
        if isinstance(value, dict):
            return {self._redact(k): self._redact(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._redact(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self._redact(v) for v in value)
        return value

    def redact_stream(self, pending: str) -> tuple[str, str]:
        """For text arriving in pieces (a model's deltas): the redacted part of `pending`
        that no later piece can change, and the raw rest to keep until more arrives (a
        secret's start may be at the end). Pass the rest again with the next piece; at
        the end, `redact` what is left."""
        matcher = self._matcher
        if matcher is None:
            return pending, ""
        pattern, _ = matcher
        longest = max(len(v) for v in self._values.values())
        cut = max(0, len(pending) - (longest - 1))
        for match in pattern.finditer(pending):
            if match.start() < cut < match.end():
                cut = match.end()  # a whole secret straddles the cut: take all of it
        return self._redact_str(pending[:cut]), pending[cut:]

    def restore(self, text: str, held: Mapping[str, str] | None = None) -> str:
        """Placeholders back to plaintext. Only for authorised local effects: the result
        must never be sent to a provider or recorded. Unknown placeholders stay; one of
        `held` (name -> why: `held`) is a ToolError saying why."""
        if _MARK not in text:
            return text
        values, protected = self._values, self._protected

        def one(m: re.Match[str]) -> str:
            if held and m.group(1) in held:
                from smith.effects import ToolError

                raise ToolError(held[m.group(1)])
            return m.group(0) if m.group(1) in protected else values.get(m.group(1), m.group(0))

        return _PLACEHOLDER.sub(one, text)

    def restore_args(
        self, args: dict[str, object], held: Mapping[str, str] | None = None
    ) -> dict[str, object]:
        """A copy of tool arguments with placeholders restored in every string value
        (one of `held` is a ToolError)."""
        return {k: self._restore(v, held) for k, v in args.items()}

    def _restore(self, value: object, held: Mapping[str, str] | None) -> object:
        if isinstance(value, str):
            return self.restore(value, held)
        if isinstance(value, dict):
            return {k: self._restore(v, held) for k, v in value.items()}
        if isinstance(value, list):
            return [self._restore(v, held) for v in value]
        if isinstance(value, tuple):
            return tuple(self._restore(v, held) for v in value)
        return value

    def held(self, routes: SecretRoutes | None, command: str) -> dict[str, str]:
        """The secrets the secret routes keep from `command` (a bash tool's), each with
        why: one that routes name is restored, and in the environment, only for one
        program with its arguments (no pipes, lists, substitutions or redirections) that
        a route names (docs/plugins.md, "Secret routing")."""
        if not routes:
            return {}
        import shlex

        program = ""
        if not _OPERATORS.search(_PLACEHOLDER.sub("secret", command)):
            try:
                program = next(iter(shlex.split(command)), "")
            except ValueError:  # an unclosed quote
                program = ""
        where = f"to the command {program}" if program else (
            "to a command that is not one program with its arguments")  # fmt: skip
        add = f'command "{program or "PROGRAM"}"'
        return {
            name: routes.refusal(name, where, add)
            for name in self.env()
            if routes.of_secret(name) and not (program and routes.command(name, program))
        }

    def env(self) -> dict[str, str]:
        """NAME -> plaintext, for the environment of an authorised process (protected
        credentials are not given)."""
        return {k: v for k, v in self._values.items() if k not in self._protected}

    def records(self) -> list[dict[str, str]]:
        """What the session may know of each registration: never the value. Protected
        credentials are not recorded: which ones a process has read depends on what ran
        before in it, not on the session, and their placeholders name them already."""
        return [
            # The source is redacted too, in case a caller put the value in it.
            {"name": name, "placeholder": placeholder(name), "source": self._redact_str(src)}
            for name, src in self._sources.items()
            if name not in self._protected
        ]

    def record(self, session: Session) -> list[Entry]:
        """Append (durably) a `secret` entry for each registration that the session's
        current branch does not record yet; return the new entries."""
        seen = [e.content for e in session.branch(kind=SECRET_KIND)]
        return [
            session.append(SECRET_KIND, rec, durable=True)
            for rec in self.records()
            if rec not in seen
        ]

    @classmethod
    def from_environment(cls, names: Iterable[str], environ: Mapping[str, str]) -> SecretProxy:
        """Register each named variable that is set and non-empty (source "env:NAME").
        Unset ones are listed in `missing`, unusable ones in `rejected`, for a warning."""
        proxy = cls()
        for name in names:
            value = environ.get(name)
            if not value:
                proxy.missing.append(name)
                continue
            try:
                proxy.register(name, value, source=f"env:{name}")
            except ValueError as exc:
                proxy.rejected[name] = str(exc)
        return proxy


class RedactingFilter(logging.Filter):
    """Redacts every record it sees: registered secrets become placeholders, then
    `redact_text` masks the rest. Attach it to handlers: a logger's own filters do not
    see records propagated from its children."""

    def __init__(self, proxy: SecretProxy | None = None, name: str = "") -> None:
        super().__init__(name)
        self.proxy = proxy

    def redact(self, text: str) -> str:
        if self.proxy is not None:
            text = self.proxy._redact_str(text)
        return redact_text(text)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()  # format the arguments first: they hold secrets
        except Exception:
            # The handler would report the failure with the raw arguments: keep them, but
            # only in redacted form.
            message = f"{record.msg!s} (arguments that did not format: {record.args!r})"
        record.msg, record.args = self.redact(message), None
        if record.exc_info and not record.exc_text:
            # Formatters reuse exc_text when set, so the traceback is shown redacted.
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        return True


# Records of smith's loggers (smith and smith.*, those made later included) are masked
# as they are made: a logger's filters see only the records made on that logger, and a
# library caller (smith.Agent) has handlers of its own, or none (Python's last resort).
_MASKING: weakref.WeakSet[SecretProxy] = weakref.WeakSet()


class _AtSource(RedactingFilter):
    """What masks smith's records as they are made: every live proxy's secrets, then
    `redact_text`."""

    def redact(self, text: str) -> str:
        for proxy in list(_MASKING):
            text = proxy._redact_str(text)
        return redact_text(text)


_AT_SOURCE = _AtSource()
_MADE: list[object] = []  # the record factory this module installed, once


def _smiths(name: object) -> bool:
    # (logging.makeLogRecord makes a record of no name, then fills it in)
    return isinstance(name, str) and (name == "smith" or name.startswith("smith."))


def mask_records(proxy: SecretProxy) -> None:
    """Mask `proxy`'s secrets (and credential-looking text) in every record smith's
    loggers make, as it is made, for as long as the proxy lives: so no handler sees them,
    not a library caller's own nor Python's last resort, not only smith's (`log_to`).
    Records of other loggers are left as they are."""
    _MASKING.add(proxy)
    if _MADE:
        return
    made = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = made(*args, **kwargs)
        if _smiths(record.name):
            _AT_SOURCE.filter(record)
        return record

    _MADE.append(factory)
    logging.setLogRecordFactory(factory)
