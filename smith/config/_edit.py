"""`smith config set`: the one path that writes configuration.

The user file is edited as text, not re-printed from a parse, so comments, ordering and
layout survive: an existing value is replaced where it stands (the last occurrence, the
one that wins); a new key is appended as `key value`. The result is parsed again before it
replaces the file, so a bad edit can never be written. Concurrent writers are serialised
by a lock file and the replacement is atomic.
"""

from __future__ import annotations

import contextlib
import os

from smith._atomic import write_atomic
from smith.config._kdl import blocks, read_settings
from smith.config._located import format_value
from smith.config._options import SCHEMA
from smith.config._resolve import BOOTSTRAP_IN_FILE, UNKNOWN_KEY, invalid
from smith.config._types import Mismatch, Strings
from smith.diagnostics import ConfigError, DiagnosticKind, Source

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from smith.config._kdl import Block
    from smith.config._located import Located
    from smith.config._schema import Option, Schema

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
        raise ConfigError([UNKNOWN_KEY(field=key, source=source, key=key, hint=schema.hint(key))])
    if option.bootstrap:
        raise ConfigError(
            [BOOTSTRAP_IN_FILE(field=key, source=source, key=key, env=option.env, flag=option.flag)]
        )
    try:
        value = option.parse(text)
    except Mismatch as exc:
        raise ConfigError([invalid(option, text, source, exc.expected)]) from None

    return _store(path, key, option, lambda _old: value)


def add_value(
    path: str, key: str, item: str, *, schema: Schema = SCHEMA, wait: float | None = None
) -> tuple[object, Located]:
    """Add `item` to the list setting `key` as the file at `path` has it (the file's own
    value, not the resolved one: a project's or the environment's never reaches the user
    file); nothing is written when it holds `item` already.

    Returns the list now stored and where it stands in the file. What a user approves
    "always" is kept so (the approval plugin, through RuntimeView.remember). `wait`:
    seconds to wait for another writer's lock (None: as long as it takes); then OSError.
    """
    option = schema.get(key)
    if option is None or not isinstance(option.type, Strings):
        raise ValueError(f"{key} is no list setting of smith's")

    def added(old: object) -> object:
        items = list(old) if isinstance(old, list) else []
        return items if item in items else [*items, item]

    return _store(path, key, option, added, wait)


def _store(
    path: str,
    key: str,
    option: Option,
    value_of: Callable[[object], object],
    wait: float | None = None,
) -> tuple[object, Located]:
    """Write `key` = value_of(the file's current value, or None) into the file, in place."""
    path = os.path.realpath(path)
    with _opened(path, wait) as (old, settings):
        existing = [s for s in settings if s.key == key]
        current = _typed(option, existing[-1].value) if existing else None
        value = value_of(None if current is _UNREADABLE else current)
        if existing and value == current:
            return value, existing[-1]  # as asked already: the file stays as it is
        literal = format_value(value)
        if existing:
            last = existing[-1]
            new = old[: last.start] + literal + old[last.end :]
        else:
            newline = "\r\n" if "\r\n" in old else "\n"
            separator = "" if old == "" or old.endswith("\n") else newline
            new = f"{old}{separator}{key} {literal}{newline}"
        written, problems = read_settings(path, new)
        stored = [s for s in written if s.key == key]
        if problems or not stored or _typed(option, stored[-1].value) != value:
            # Never write a file that does not read back as exactly what was asked for.
            raise RuntimeError(f"config set would not read back {key} = {literal}: {problems}")
        write_atomic(path, new)
    return value, stored[-1]


def rewrite(
    path: str,
    change: Callable[[str, list[Located], list[Block]], str],
    check: Callable[[list[Located], list[Located]], str | None],
    wait: float | None = None,
) -> tuple[str, str]:
    """Edit the user file at `path` by its structure, as `config set` does (under the
    lock, read back before it is kept, replaced atomically): `change(text, settings,
    blocks)` gives the new text (from the spans of its settings and nodes, smith.config
    blocks), `check(settings before, settings after)` says what is wrong with the
    result, or None. A result that does not parse, or that `check` refuses, is never
    written (ValueError saying why); the old text and the new one."""
    path = os.path.realpath(path)
    with _opened(path, wait) as (old, settings):
        new = change(old, settings, blocks(old))
        if new == old:
            return old, new
        written, problems = read_settings(path, new)
        wrong = "; ".join(p.render() for p in problems) or check(settings, written)
        if wrong:
            raise ValueError(f"the edited file would not read as intended ({wrong})")
        write_atomic(path, new)
    return old, new


@contextlib.contextmanager
def _opened(path: str, wait: float | None) -> Iterator[tuple[str, list[Located]]]:
    """The user file at `path` (its real path: a symlink into a dotfiles repository stays
    one) under the lock of its directory, as text and settings; ConfigError for a file
    that does not read as configuration (nothing is edited then)."""
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    with _locked(directory, wait):
        old = _current(path)
        settings, problems = read_settings(path, old)
        if problems:
            raise ConfigError([*problems, FILE_BROKEN(source=Source("file", path))])
        yield old, settings


def _current(path: str) -> str:
    """The user file's text as it is (\\r\\n kept), read as configuration is read
    (smith.config._files): "" when there is none, ConfigError when it is unusable."""
    from smith.config._files import read

    text, problem = read(path, exact=True)
    if problem is not None:
        raise ConfigError([problem, FILE_BROKEN(source=Source("file", path))])
    return text or ""


def _typed(option: Option, value: object) -> object:
    """A value as read from the file, typed as resolution types it (one KDL value for a
    list setting is a list of that one value)."""
    try:
        return option.check(value)
    except Mismatch:
        return _UNREADABLE


_UNREADABLE = object()  # equal to no value asked for


class _locked:
    """An exclusive lock on a directory (flock on its descriptor), so no lock file is left
    in the user's configuration directory."""

    def __init__(self, directory: str, wait: float | None = None) -> None:
        self.directory = directory
        self.wait = wait  # seconds to wait for another writer (None: as long as it takes)
        self.fd = -1

    def __enter__(self) -> None:
        import fcntl
        import time

        self.fd = os.open(self.directory, os.O_RDONLY)
        if self.wait is None:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            return
        until = time.monotonic() + self.wait
        while True:  # flock has no timeout: try, and try again shortly
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= until:
                    os.close(self.fd)
                    raise OSError(f"another process has been changing {self.directory} "
                                  f"for over {self.wait:g} s") from None  # fmt: skip
                time.sleep(0.02)

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)  # closing releases the lock
