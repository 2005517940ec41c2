"""Making and opening a shadow repository (smith/vcs/_repo.py): owner-only, like all
smith keeps under its data directory, with the rule files libgit2 reads outside the
work tree made safe for it (smith/vcs/_rules.py).

- `init` makes the repository aside, then renames it into place, every path in it 0700
  or 0600.
- `open_repo` gives libgit2 a loose-object backend that writes objects 0400 in 0700
  directories (its default is 0444 and 0777, less the umask); the other files libgit2
  writes (the index, the branch, the configuration) ShadowRepo sets to 0600 after each
  write.
- `RuleGuard` keeps the shadow's own `info/exclude` neutralised and gives libgit2 a
  neutralised copy of the user's global excludes (`core.excludesFile` points at it), so
  no line there can make libgit2 loop; the user's global attributes are not read at all.
"""

from __future__ import annotations

import os
import threading

import pygit2

from smith._atomic import PRIVATE_DIR, PRIVATE_FILE, private_dirs, private_mode, private_tree
from smith.vcs import _rules

ATTRIBUTES = "* -text -eol -filter -ident -working-tree-encoding -crlf\n"
EXCLUDES = "info/global-excludes"  # the user's global excludes, as libgit2 may read them
# Never made: info/attributes decides every attribute smith's history uses, so the user's
# global attributes file (another file libgit2 would open, FIFO or not) is not read.
NO_ATTRIBUTES = "info/no-global-attributes"


def init(path: str, root: str, home: str) -> None:
    """Create the shadow repository of `root` (atomically: made aside, then renamed),
    owner-only like everything under smith's data directory."""
    private_dirs(os.path.dirname(path), home)
    tmp = f"{path}.{os.getpid()}.tmp"
    repo = pygit2.init_repository(tmp, bare=True, initial_head="snapshots")
    config = repo.config
    for key, value in (
        ("core.bare", False),
        ("core.worktree", root),
        ("core.autocrlf", False),
        ("core.safecrlf", False),
        ("core.filemode", True),
        ("core.symlinks", True),
        ("core.ignorecase", False),
        ("core.precomposeunicode", False),
        ("core.logallrefupdates", False),
        ("core.excludesFile", os.path.join(path, EXCLUDES)),
        ("core.attributesFile", os.path.join(path, NO_ATTRIBUTES)),
        ("gc.auto", 0),
        ("smith.project", root),
    ):
        config[key] = value
    os.makedirs(os.path.join(tmp, "info"), exist_ok=True)
    exclude = [".git"]
    home = os.path.realpath(home)
    if home == root or home.startswith(root + os.sep):
        exclude.append("/" + _rules.literal(os.path.relpath(home, root).replace(os.sep, "/")) + "/")
    write_private(os.path.join(tmp, "info", "exclude"), "\n".join(exclude).encode() + b"\n")
    write_private(os.path.join(tmp, "info", "attributes"), ATTRIBUTES.encode())
    private_tree(tmp)
    try:
        os.rename(tmp, path)
    except OSError:  # another process made it first
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
        if not os.path.exists(os.path.join(path, "HEAD")):
            raise


def open_repo(path: str) -> pygit2.Repository:
    """The repository at `path`, writing objects owner-only."""
    repo = pygit2.Repository(path)
    objects = os.path.join(path, "objects")
    odb = pygit2.Odb()
    odb.add_backend(pygit2.OdbBackendPack(objects), 2)  # libgit2's default priorities
    odb.add_backend(pygit2.OdbBackendLoose(objects, -1, False, PRIVATE_DIR, 0o400), 1)
    repo.set_odb(odb)
    return repo


def write_private(path: str, data: bytes) -> None:
    """Replace `path` with `data`, owner-only (through a file renamed over it)."""
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    with open(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def global_excludes() -> str:
    """The user's global excludes file, as git finds it: core.excludesFile of the global,
    XDG or system configuration (in that order), else $XDG_CONFIG_HOME/git/ignore."""
    for level in (
        pygit2.Config.get_global_config,
        pygit2.Config.get_xdg_config,
        pygit2.Config.get_system_config,
    ):
        try:
            config = level()
            if "core.excludesFile" in config:
                return os.path.expanduser(str(config["core.excludesFile"]))
        except (OSError, pygit2.GitError, ValueError):
            continue
    return os.path.join(_xdg_config(), "git", "ignore")


def _xdg_config() -> str:
    return os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")


class RuleGuard:
    """The rule files of the shadow repository at `path` that live outside the work tree."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.copy = os.path.join(path, EXCLUDES)
        self._source: tuple[str, _rules.Stamp | None] | None = None  # (file, stat copied)

    def guard(self, repo: pygit2.Repository) -> None:
        """Make them safe for libgit2: the shadow's own `info/exclude` neutralised if it
        is not, and the user's global excludes read from a neutralised copy."""
        exclude = os.path.join(self.path, "info", "exclude")
        data = _rules.read_regular(exclude)
        if data is not None and _rules.hanging_line(data) is not None:
            write_private(exclude, _rules.neutralised(data))
        config = repo.config
        wanted = {"core.excludesFile": self.copy,
                  "core.attributesFile": os.path.join(self.path, NO_ATTRIBUTES)}  # fmt: skip
        for key, value in wanted.items():
            if (config[key] if key in config else None) != value:  # noqa: SIM401
                config[key] = value  # a repository an earlier smith made
                private_mode(os.path.join(self.path, "config"))
        self.sync()

    def sync(self) -> None:
        """Copy the user's global excludes (neutralised) where libgit2 reads them, when
        they changed since the last copy (one `stat` when they did not)."""
        if self._source is None:
            self._source = (global_excludes(), None)
        source, seen = self._source
        try:
            st = os.stat(source)
            now: _rules.Stamp | None = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        except OSError:
            now = None
        if now == seen and (now is None or os.path.exists(self.copy)):
            return
        data = _rules.read_regular(source)  # a FIFO, a device, too large: as if none
        write_private(self.copy, _rules.neutralised(data or b""))
        self._source = (source, now)

    def sources(self) -> list[str]:
        """The files outside the work tree whose change can change what is ignored."""
        files = [os.path.join(self.path, "info", "exclude"), os.path.join(self.path, "config")]
        files += [os.path.expanduser("~/.gitconfig"), f"{_xdg_config()}/git/config"]
        files.append(self._source[0] if self._source else global_excludes())
        return files
