"""`smith config set`: the one path that writes configuration.

The user file is edited as text, not re-printed from a parse, so comments, ordering and
layout survive: an existing value is replaced where it stands (the last occurrence, the
one that wins); a new key is appended as `key value`. The result is parsed again before it
replaces the file, so a bad edit can never be written. Concurrent writers are serialised
by a lock file and the replacement is atomic.
"""

from __future__ import annotations

import os

from smith._atomic import write_atomic
from smith.config._kdl import read_settings
from smith.config._located import format_value
from smith.config._options import SCHEMA
from smith.config._resolve import UNKNOWN_KEY, invalid
from smith.config._types import Mismatch
from smith.diagnostics import ConfigError, DiagnosticKind, Source

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.config._located import Located
    from smith.config._schema import Schema

SET_BOOTSTRAP = DiagnosticKind(
    "config.set-bootstrap",
    what="'{key}' cannot be stored in the configuration file",
    why="it decides where configuration is read from, so it must be known before any file is read",
    fix="export {env} in your shell profile, or pass {flag} when you run smith",
)
FILE_BROKEN = DiagnosticKind(
    "config.set-broken-file",
    what="cannot update this file: it has errors",
    why="smith edits configuration in place and will not guess around a broken file",
    fix="fix the errors reported above (or move the file away), then run `smith config set` again",
)


def set_value(path: str, key: str, text: str, *, schema: Schema = SCHEMA) -> tuple[object, Located]:
    """Store `key` = `text` (parsed by the option's type) in the file at `path`.

    Returns the stored value and where it now stands in the file.
    """
    option = schema.get(key)
    source = Source("argument", f"smith config set {key}")
    if option is None:
        close = schema.suggest(key)
        hint = f"did you mean '{close}'?" if close else "check the spelling"
        raise ConfigError([UNKNOWN_KEY(field=key, source=source, key=key, hint=hint)])
    if option.bootstrap:
        raise ConfigError(
            [SET_BOOTSTRAP(field=key, source=source, key=key, env=option.env, flag=option.flag)]
        )
    try:
        value = option.parse(text)
    except Mismatch as exc:
        raise ConfigError([invalid(option, text, source, exc.expected)]) from None

    import fcntl

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(path, encoding="utf-8") as f:
                old = f.read()
        except FileNotFoundError:
            old = ""
        settings, problems = read_settings(path, old)
        if problems:
            raise ConfigError([*problems, FILE_BROKEN(source=Source("file", path))])
        literal = format_value(value)
        existing = [s for s in settings if s.key == key]
        if existing:
            last = existing[-1]
            new = old[: last.start] + literal + old[last.end :]
        else:
            separator = "" if old == "" or old.endswith("\n") else "\n"
            new = f"{old}{separator}{key} {literal}\n"
        written, problems = read_settings(path, new)
        stored = [s for s in written if s.key == key]
        # Never write a file that does not read back as exactly what was asked for.
        assert not problems and stored and stored[-1].value == value, (new, problems)
        write_atomic(path, new)
    return value, stored[-1]
