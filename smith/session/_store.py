"""Where sessions live: `$SMITH_HOME/sessions/<project>/<session id>.smith`.

`<project>` is derived from the session's working directory, so each project lists its own
sessions; ids are unique across projects, so any command can find a session by id (or an
unambiguous prefix of one) wherever it lives.
"""

from __future__ import annotations

import os
import zlib

from smith.diagnostics import DiagnosticKind, Source
from smith.session._session import EXISTS, Session

SUFFIX = ".smith"

BAD_ID = DiagnosticKind(
    "session.bad-id",
    what="'{id}' cannot be a session id",
    why="a session id names its file, so it may hold only letters, digits, '.', '_' and "
    "'-', start with a letter or digit, and be at most 128 characters",
    fix="import with --new-id to let smith choose an id",
)
NOT_FOUND = DiagnosticKind(
    "session.not-found",
    what="there is no session '{id}'",
    why="sessions are named by their ids, or an unambiguous prefix of one",
    fix="run `smith sessions list --all` to see every session id",
)
AMBIGUOUS = DiagnosticKind(
    "session.ambiguous",
    what="'{id}' matches {count} sessions: {matches}",
    why="a prefix must name exactly one session",
    fix="type more of the id",
)


def valid_id(id: str) -> bool:
    import re

    return re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}", id) is not None


def project_key(cwd: str) -> str:
    """A readable, collision-resistant directory name for a project path."""
    readable = cwd.strip("/").replace("/", "-").replace(":", "-")[-60:] or "root"
    return f"{readable}-{zlib.crc32(os.fsencode(cwd)):08x}"


class SessionStore:
    def __init__(self, home: str) -> None:
        self.root = os.path.join(home, "sessions")

    def path_for(self, id: str, cwd: str) -> str:
        if not valid_id(id):
            raise BAD_ID.error(value=id, source=Source("argument", id), id=id)
        return os.path.join(self.root, project_key(cwd), id + SUFFIX)

    def paths(self) -> list[str]:
        """Every session file, newest first by modification time."""
        found = []
        try:
            projects = os.listdir(self.root)
        except FileNotFoundError:
            return []
        for project in projects:
            directory = os.path.join(self.root, project)
            if not os.path.isdir(directory):
                continue
            for name in os.listdir(directory):
                if name.endswith(SUFFIX):
                    found.append(os.path.join(directory, name))
        return sorted(found, key=lambda p: (-os.stat(p).st_mtime_ns, p))

    def paths_for_project(self, cwd: str) -> list[str]:
        directory = os.path.join(self.root, project_key(cwd))
        return [p for p in self.paths() if os.path.dirname(p) == directory]

    def find(self, id: str) -> str:
        """The file of session `id` (or of the one session whose id starts with it)."""
        paths = self.paths()
        exact = [p for p in paths if os.path.basename(p) == id + SUFFIX]
        if exact:
            return exact[0]
        matches = [p for p in paths if os.path.basename(p).startswith(id)]
        if len(matches) == 1:
            return matches[0]
        source = Source("argument", id)
        if not matches:
            raise NOT_FOUND.error(value=id, source=source, id=id)
        names = ", ".join(os.path.basename(p)[: -len(SUFFIX)] for p in matches[:5])
        raise AMBIGUOUS.error(value=id, source=source, id=id, count=len(matches), matches=names)

    def exists(self, id: str) -> bool:
        return any(os.path.basename(p) == id + SUFFIX for p in self.paths())

    def create(self, *, name: str, cwd: str, id: str | None = None) -> Session:
        if id is not None and self.exists(id):
            raise EXISTS.error(value=id, source=Source("argument", id), id=id)
        import time

        from smith.session._session import new_id, now_ms

        sid = id or f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime(now_ms() / 1000))}-{new_id(3)}"
        return Session.create(self.path_for(sid, cwd), name=name, cwd=cwd, id=sid)

    def remove(self, id: str) -> str:
        """Delete a session; refused (session.locked) while a writer has it open."""
        from smith.session._session import _lock

        path = self.find(id)
        fd = _lock(path, 2.0)
        try:
            os.unlink(path)
        finally:
            os.close(fd)
        return path
