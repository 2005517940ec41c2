"""A cache of parsed configuration files, so that most commands never import kdl.

Importing kdl-py costs about as much as starting the interpreter (it pulls in
dataclasses, typing, decimal, uuid, ...), while a configuration file changes rarely. Each
file's located settings are kept in `$SMITH_HOME/cache/` together with the exact text
they were parsed from; an entry is used only when that text equals the file's current
text, so a stale entry can never apply. Files with problems are never cached (parsing
them again reports the problems). The cache is an optimisation only: any failure to read
or write it is ignored.
"""

from __future__ import annotations

import marshal
import os
import zlib

from smith._version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.config._located import Located

# Bump when the shape of Located or the KDL-to-key mapping changes.
_FORMAT = 1


def _entry(home: str, path: str) -> str:
    name = f"config-{zlib.crc32(os.fsencode(path)):08x}.marshal"
    return os.path.join(home, "cache", name)


def _stamp(path: str, text: str) -> tuple[int, str, str, str]:
    return (_FORMAT, __version__, path, text)


def load(home: str, path: str, text: str) -> list[Located] | None:
    from smith.trust import CONFIG_MAX_BYTES, read_bounded

    try:
        # An entry holds a file of at most CONFIG_MAX_BYTES and its settings; a larger
        # one, or one that is no regular file, is none of ours.
        stamp, rows = marshal.loads(read_bounded(_entry(home, path), 4 * CONFIG_MAX_BYTES))
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if stamp != _stamp(path, text):
        return None
    from smith.config._located import Located

    try:
        return [
            Located(k, v, path, ln, col, s, e, (kl, kc)) for k, v, ln, col, s, e, kl, kc in rows
        ]
    except (TypeError, ValueError):
        return None


def store(home: str, path: str, text: str, settings: list[Located]) -> None:
    import contextlib  # only on a miss, which has just paid for importing kdl

    rows = [(s.key, s.value, s.line, s.column, s.start, s.end, *s.key_at) for s in settings]
    entry = _entry(home, path)
    tmp = f"{entry}.{os.getpid()}.tmp"
    try:
        from smith._atomic import private_dirs

        private_dirs(os.path.dirname(entry), home)  # owner-only, as all under SMITH_HOME
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
            marshal.dump((_stamp(path, text), rows), f)
        os.replace(tmp, entry)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
