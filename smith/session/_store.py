"""Where sessions live: `$SMITH_HOME/sessions/<project>/<session id>.smith`.

`<project>` is derived from the session's working directory, so each project lists its own
sessions; ids are unique across projects, so any command can find a session by id (or an
unambiguous prefix of one) wherever it lives, and by name within its project
(`SessionStore.lookup`, the one lookup every command uses).

Only regular files are sessions. Anything else with a session's name (a FIFO, a directory,
a symbolic link, a device) is skipped with a warning and never opened: opening a FIFO
would block forever, and what a link points at is not smith's to read or write.
"""

from __future__ import annotations

import logging
import os
import stat
from typing import TYPE_CHECKING

from smith._readfile import file_kind
from smith.diagnostics import DiagnosticKind, SmithError, Source
from smith.paths import project_key
from smith.session._problems import EXISTS
from smith.session._session import Session

if TYPE_CHECKING:
    from collections.abc import Callable

    from smith.diagnostics import Diagnostic

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

ODD_ENTRY = DiagnosticKind(
    "session.odd-entry",
    severity="warning",
    what="skipped {name} in the sessions directory: it is {kind}, not a session file",
    why="sessions are regular files named ID.smith in smith's sessions directory; anything "
    "else there was not written by smith, and opening it could block (a FIFO) or fail",
    fix="move or remove it; smith leaves it alone and skips it until then",
)
BAD_DIRECTORY = DiagnosticKind(
    "session.bad-directory",
    what="cannot keep this project's sessions in {name}: it is {kind}",
    why="each project's sessions live in that directory, and smith creates it when it is "
    "missing but never replaces what is there",
    fix="remove it (or point the link at a directory) and run the command again",
)


def describe(path: str) -> str:
    """What is at `path`, in words, without opening it ("a FIFO", "a symbolic link to
    /x, which does not exist", ...)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return "missing"
    if stat.S_ISLNK(mode):
        target = os.readlink(path)
        if not os.path.exists(path):
            return f"a symbolic link to {target}, which does not exist"
        return f"a symbolic link to {target}"
    return file_kind(mode)


def _log_warning(diagnostic: Diagnostic) -> None:
    logging.getLogger("smith.session").warning("%s", diagnostic.render())


def valid_id(id: str) -> bool:
    import re

    return re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}", id) is not None


class SessionStore:
    """The sessions under `home`. `warn` receives a warning for each odd entry met
    (once per entry); by default it goes to the `smith.session` logger."""

    def __init__(self, home: str, *, warn: Callable[[Diagnostic], None] | None = None) -> None:
        self.home = home
        self.root = os.path.join(home, "sessions")
        self._warn = warn or _log_warning
        self._warned: set[str] = set()

    def _skip(self, path: str) -> None:
        if path not in self._warned:
            self._warned.add(path)
            self._warn(
                ODD_ENTRY(
                    value=path,
                    source=Source("file", path),
                    name=os.path.basename(path),
                    kind=describe(path),
                )
            )

    def _files(self, directory: str) -> list[tuple[int, str]]:
        """(mtime, path) of each session file in one project's directory; odd entries
        are skipped with a warning, judged by lstat so nothing is opened or followed."""
        try:
            entries = list(os.scandir(directory))
        except FileNotFoundError:
            return []
        except OSError:
            self._skip(directory)
            return []
        found = []
        for entry in entries:
            if not entry.name.endswith(SUFFIX):
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except FileNotFoundError:  # removed since the directory was read
                continue
            if stat.S_ISREG(info.st_mode):
                found.append((info.st_mtime_ns, entry.path))
            else:
                self._skip(entry.path)
        return found

    @staticmethod
    def _newest_first(found: list[tuple[int, str]]) -> list[str]:
        return [path for _, path in sorted(found, key=lambda f: (-f[0], f[1]))]

    def directory(self, cwd: str) -> str:
        """The directory of `cwd`'s sessions, created if missing; session.bad-directory
        when something else (a dangling link, a file) is in its place."""
        from smith._atomic import private_dirs

        path = os.path.join(self.root, project_key(cwd))
        try:
            private_dirs(path, self.home)  # owner-only, as everything under SMITH_HOME
        except FileExistsError:
            kind = describe(path)
            raise BAD_DIRECTORY.error(
                source=Source("file", path), name=os.path.basename(path), kind=kind
            ) from None
        return path

    def path_for(self, id: str, cwd: str) -> str:
        if not valid_id(id):
            raise BAD_ID.error(value=id, source=Source("argument", id), id=id)
        return os.path.join(self.root, project_key(cwd), id + SUFFIX)

    def paths(self) -> list[str]:
        """Every session file, newest first by modification time."""
        try:
            projects = os.listdir(self.root)
        except FileNotFoundError:
            return []
        found = []
        for project in projects:
            directory = os.path.join(self.root, project)
            if os.path.isdir(directory):
                found += self._files(directory)
            else:
                self._skip(directory)
        return self._newest_first(found)

    def paths_for_project(self, cwd: str) -> list[str]:
        """This project's session files, newest first."""
        directory = os.path.join(self.root, project_key(cwd))
        if os.path.lexists(directory) and not os.path.isdir(directory):
            self._skip(directory)
            return []
        return self._newest_first(self._files(directory))

    def latest(self, cwd: str) -> str | None:
        """The file of this project's most recently written session, if it has one (what
        `--continue` and the app's /continue open)."""
        paths = self.paths_for_project(cwd)
        return paths[0] if paths else None

    def lookup(self, which: str, cwd: str | None = None) -> str:
        """The file of the session `which` names: the session of project `cwd` with that
        name or id, else the session whose id is or starts with `which` in any project;
        session.not-found or session.ambiguous otherwise. The one lookup of every command
        that takes a session. Files are only read here, never locked; a session the
        project holds by that id is found by its file name, without reading it (a name
        means reading each file until one has it)."""
        if cwd is not None:
            paths = self.paths_for_project(cwd)
            named = [p for p in paths if os.path.basename(p) == which + SUFFIX]
            if named:
                return named[0]
            for path in paths:
                try:
                    found = Session.load(path)
                except SmithError:
                    continue
                if which in (found.name, found.id):
                    return path
        return self.find(which)

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
        path = self.path_for(sid, cwd)
        self.directory(cwd)
        return Session.create(path, name=name, cwd=cwd, id=sid)

    def remove(self, which: str, cwd: str | None = None) -> str:
        """Delete the session `which` names (as `lookup`); refused (session.locked) while
        a writer has it open."""
        from smith.session._files import lock as _lock

        path = self.lookup(which, cwd)
        fd = _lock(path, 2.0)
        try:
            os.unlink(path)
        finally:
            os.close(fd)
        return path
