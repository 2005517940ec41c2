"""The trust list: the project configurations smith may apply.

A project's `.smith/config.kdl` can change which model is called, where a provider's key
is sent and what runs on the machine, so it is ignored, with a warning, until the user
runs `smith trust` for that project. Trust follows content, as direnv's does: what is
trusted is the file as it was when the user approved it (its SHA-256, and its text, to
say what changed). A file changed since (by `git pull`, or by a model's write) is not
applied until it is trusted again. The list lives in `$SMITH_HOME/trust.json`, keyed by
the project's real path; writes are atomic and serialised by a lock file, so concurrent
`smith trust` runs cannot lose each other's entries.

The project's prompt templates (`.smith/prompts/*.md`) become what the model is asked
to do, so trust approves them with the configuration: their SHA-256s are recorded, and
a template added or changed since is not loaded until the project is trusted again.
So are the other files of a project that decide what runs or what the model is told
(`PROJECT_FILES`): its MCP servers (`.mcp.json`), skills (each folder with a `SKILL.md`
under `.smith/skills`, `.claude/skills`, `.agents/skills`, approved whole: its scripts
and references with it), agent definitions (`.smith/agents`, `.claude/agents`) and
packages (each `.smith/plugins/NAME`, approved whole by its manifest: `approved_package`):
`approved_file` says whether a file's content now is what the user approved; one added
or changed since is not used until trusted again.
"""

from __future__ import annotations

import os

from smith._readfile import file_kind
from smith.diagnostics import DiagnosticKind, Source

TRUST_FILE = "trust.json"

TRUST_UNREADABLE = DiagnosticKind(
    "trust.unreadable",
    what="the trust list cannot be read: {reason}",
    why="without it smith cannot tell which projects' configuration you approved, so it "
    "trusts none",
    fix="repair or delete the file (deleting it forgets every trusted project), then run "
    "`smith trust` again in each project",
)
TRUST_CONFIG_UNUSABLE = DiagnosticKind(
    "trust.config-unusable",
    what="cannot trust this project: its configuration file {problem}",
    why="trust approves the project's .smith/config.kdl as it is, and smith reads "
    "configuration only from a regular UTF-8 file of at most 1 MiB inside the project",
    fix="make {path} such a file (or remove it), then run `smith trust` again",
)
TRUST_NOT_A_DIRECTORY = DiagnosticKind(
    "trust.not-a-directory",
    what="cannot trust {path}: it is not a directory",
    why="trust applies to a project root, the directory holding .smith/config.kdl",
    fix="pass the project's root directory, or run `smith trust` inside the project",
)


def _store(home: str) -> str:
    return os.path.join(home, TRUST_FILE)


# The trust list as last read, by its file's identity (device, inode, size, mtime): a
# start that asks about many project files reads it once.
_LOADED: dict[str, tuple[tuple[int, int, int, int], dict[str, dict[str, object]]]] = {}


def _identity(path: str) -> tuple[int, int, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def _load(home: str) -> dict[str, dict[str, object]]:
    path = _store(home)
    identity = _identity(path)
    cached = _LOADED.get(path)
    if identity is not None and cached is not None and cached[0] == identity:
        return dict(cached[1])
    projects = _read(path)
    if identity is not None:
        _LOADED[path] = (identity, projects)
    return dict(projects)


def _read(path: str) -> dict[str, dict[str, object]]:
    from smith.text import loads

    try:
        data = loads(read_bounded(path, TRUST_MAX_BYTES))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise TRUST_UNREADABLE.error(source=Source("file", path), reason=reason) from exc
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        raise TRUST_UNREADABLE.error(
            source=Source("file", path), reason='it has no "projects" object'
        )
    return {str(k): v if isinstance(v, dict) else {} for k, v in projects.items()}


def digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


TEMPLATE_MAX_BYTES = 64 * 1024  # a prompt template is a prompt, not a document
# Configuration is kilobytes: a file past this is a mistake or an attack, and would cost
# its size in time and memory on every command.
CONFIG_MAX_BYTES = 1 << 20
# The trust list holds the approved text of each trusted project's configuration.
TRUST_MAX_BYTES = 16 << 20


def read_bounded(path: str, limit: int, *, follow: bool = True) -> bytes:
    """The bytes of the regular file `path`, at most `limit`: `TooLarge` (a ValueError)
    past it, OSError when it is no regular file (`NotRegular`), or a symlink and not
    `follow`. Looked at before it is opened (opening a device can act: a tape rewinds, a
    terminal becomes the controlling one), opened without blocking (a FIFO swapped in
    meanwhile never hangs smith) and looked at again once open."""
    import stat

    mode = os.stat(path, follow_symlinks=follow).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegular(path, mode)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    fd = os.open(path, flags | (0 if follow else os.O_NOFOLLOW))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegular(path, info.st_mode)
        if info.st_size > limit:  # a sparse file's apparent size counts: it reads as such
            raise TooLarge(info.st_size, limit)
        chunks: list[bytes] = []
        size = 0
        while size <= limit and (chunk := os.read(fd, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:  # it grew while read
        raise TooLarge(size, limit)
    return b"".join(chunks)


def byte_size(n: int) -> str:
    """A byte count as a diagnostic gives it: `1 MiB`, `3.8 GiB (4,080,218,931 bytes)`."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            exact = "" if n % scale == 0 else f" ({n:,} bytes)"
            return f"{n / scale:.3g} {unit}{exact}" if exact else f"{n // scale} {unit}"
    return f"{n:,} bytes"


class NotRegular(OSError):
    """A file smith reads only as a regular file is something else; `kind` says what."""

    def __init__(self, path: str, mode: int) -> None:
        self.kind = file_kind(mode)
        super().__init__(f"{path} is {self.kind}, not a regular file")


class TooLarge(ValueError):
    """A file is larger than smith reads of its kind."""

    def __init__(self, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(f"it is {byte_size(size)}, over the {byte_size(limit)} bound")


def _unusable(project: str, exc: OSError | ValueError) -> Exception:
    from smith.paths import project_config_path

    path = project_config_path(project)
    if isinstance(exc, NotRegular):
        problem = f"is {exc.kind}, not a regular file"
    elif isinstance(exc, Outside):
        problem = f"is a symlink to {exc.target}, outside the project"
    elif isinstance(exc, UnicodeDecodeError):
        problem = f"is not UTF-8 text ({exc.reason} at byte {exc.start})"
    elif isinstance(exc, OSError):
        problem = f"cannot be read: {exc.strerror or exc}"
    else:
        problem = str(exc).replace("it is", "is", 1)
    return TRUST_CONFIG_UNUSABLE.error(source=Source("file", path), problem=problem, path=path)


def template_digests(project: str) -> dict[str, str]:
    """The SHA-256 of each prompt template in the project's `.smith/prompts` (NAME.md,
    regular files inside the project only): what `smith trust` approves with the
    configuration, so a template added or changed later is not applied unapproved."""
    import hashlib

    directory = os.path.join(project, ".smith", "prompts")
    real = os.path.realpath(directory)
    if not real.startswith(os.path.realpath(project) + os.sep):
        return {}  # a prompts directory that leads out of the project is no project's
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".md"))
    except OSError:
        return {}
    found = {}
    for name in names:
        try:
            data = read_bounded(os.path.join(directory, name), TEMPLATE_MAX_BYTES, follow=False)
        except (OSError, ValueError):
            continue
        found[name[:-3]] = hashlib.sha256(data).hexdigest()
    return found


# The project files trust approves by content (glob patterns relative to the root; a
# `*` is one path component), beside the configuration and the templates.
PROJECT_FILES = (
    ".mcp.json",
    ".smith/skills/*/SKILL.md",
    ".claude/skills/*/SKILL.md",
    ".agents/skills/*/SKILL.md",
    ".smith/agents/*.md",
    ".claude/agents/*.md",
    ".smith/plugins/*/plugin.kdl",
    ".smith/plugins/*/.claude-plugin/plugin.json",
)
PROJECT_FILE_MAX_BYTES = 1024 * 1024
# A skill is its whole folder (its scripts run, its references are read): trust approves
# each project skill's folder as one digest of every file in it, within these bounds.
SKILL_FOLDERS = (".smith/skills", ".claude/skills", ".agents/skills")
TREE_MAX_FILES = 2000
TREE_FILE_MAX_BYTES = 16 * 1024 * 1024


def file_digests(project: str) -> dict[str, str]:
    """The SHA-256 of each of the project's `PROJECT_FILES` that is a regular file inside
    it (a symlink may lead there, never out) of at most PROJECT_FILE_MAX_BYTES, by its
    path relative to the project; a skill's SKILL.md stands for its folder: the digest
    of every file in it (`tree_digest`)."""
    import glob
    import hashlib

    root = os.path.realpath(project)
    found: dict[str, str] = {}
    for pattern in PROJECT_FILES:
        for path in sorted(glob.glob(os.path.join(glob.escape(root), pattern))):
            relative = os.path.relpath(path, root)
            folder = _whole_folder(relative)
            if folder is not None:
                digest_of = tree_digest(root, os.path.join(root, folder))
                if digest_of is not None:
                    found[relative] = digest_of
                continue
            if not _inside(root, path):
                continue  # leads out of the project: no project's file
            try:
                data = read_bounded(path, PROJECT_FILE_MAX_BYTES)
            except (OSError, ValueError):
                continue
            found[relative] = hashlib.sha256(data).hexdigest()
    return found


def _is_skill(relative: str) -> bool:
    parts = relative.split(os.sep)
    return len(parts) == 4 and parts[-1] == "SKILL.md" and "/".join(parts[:2]) in SKILL_FOLDERS


def _whole_folder(relative: str) -> str | None:
    """The folder a project file stands for, approved whole (relative to the root): a
    skill's (its SKILL.md), a project package's (its plugin.kdl or
    .claude-plugin/plugin.json: every part it brings, its hooks and servers among them)."""
    if _is_skill(relative):
        return os.path.dirname(relative)
    parts = relative.split(os.sep)
    if parts[:2] == [".smith", "plugins"] and (
        parts[3:] == ["plugin.kdl"] or parts[3:] == [".claude-plugin", "plugin.json"]
    ):
        return os.path.join(*parts[:3])
    return None


def approved_package(home: str, project: str, package: str) -> bool:
    """Whether the project's package folder `package` (.smith/plugins/NAME) is, file for
    file, what the user approved when trusting `project` (approved_file of its manifest)."""
    for manifest in ("plugin.kdl", os.path.join(".claude-plugin", "plugin.json")):
        path = os.path.join(package, manifest)
        if os.path.lexists(path):
            return approved_file(home, project, path, b"")
    return False


def _inside(root: str, path: str) -> bool:
    return os.path.realpath(path).startswith(root.rstrip(os.sep) + os.sep)


def tree_digest(root: str, directory: str) -> str | None:
    """One digest of every file under `directory` (its path relative to it and its
    SHA-256), or None where it cannot stand for the folder: it leads out of `root`
    (itself or a file in it), holds more than TREE_MAX_FILES files or one larger than
    TREE_FILE_MAX_BYTES, or cannot be read."""
    import hashlib

    root = os.path.realpath(root)
    if not _inside(root, directory):
        return None
    manifest = hashlib.sha256()
    count = 0
    for here, dirs, files in os.walk(directory, followlinks=False):
        dirs.sort()
        for name in [*sorted(files), *(d for d in dirs if os.path.islink(os.path.join(here, d)))]:
            path = os.path.join(here, name)
            count += 1
            if count > TREE_MAX_FILES or not _inside(root, path):
                return None
            try:  # a symlink to a directory is no regular file: the folder is refused
                data = read_bounded(path, TREE_FILE_MAX_BYTES)
            except (OSError, ValueError):
                return None
            relative = os.path.relpath(path, directory)
            manifest.update(f"{relative}\0{hashlib.sha256(data).hexdigest()}\n".encode())
    return manifest.hexdigest()


UNAPPROVED_FILE = (
    "it was added or changed since you trusted the project, and a project's file that "
    "decides what runs is used only as you approved it; run `smith trust` to approve it as "
    "it is now"
)


def looked_into(home: str, project: str, *, applied: bool) -> bool:
    """Whether a project's PROJECT_FILES are looked at at all (each then only as
    approved, `approved_file`): the user trusts the project, its configuration applied
    (`applied`, Config.project_trusted) or, having none, on the trust list. An
    unreadable trust list trusts nothing."""
    from smith.diagnostics import SmithError
    from smith.paths import project_config_path

    if applied:
        return True
    if os.path.exists(project_config_path(project)):
        return False  # it has one, not applied: not trusted as it is
    try:
        return is_trusted(home, project)
    except SmithError:
        return False


def approved_file(home: str, project: str, path: str, data: bytes) -> bool:
    """Whether `data`, the content of the project file `path` (one of PROJECT_FILES),
    is what the user approved when trusting `project` with its configuration as it is
    now. False for an untrusted project, a file trust did not see, or one changed since;
    an unreadable trust list trusts nothing."""
    import hashlib

    from smith.diagnostics import SmithError

    try:
        if not is_trusted(home, project):
            return False
        record = approval(home, project) or {}
    except SmithError:
        return False
    files = record.get("files")
    root = os.path.realpath(project)
    relative = os.path.relpath(os.path.abspath(path), root)
    if not isinstance(files, dict) or relative not in files:
        return False
    folder = _whole_folder(relative)
    if folder is not None:  # the skill's or package's whole folder, as trusted
        return bool(files[relative] == tree_digest(root, os.path.join(root, folder)))
    return _inside(root, path) and bool(files[relative] == hashlib.sha256(data).hexdigest())


def approved_templates(home: str, project: str) -> dict[str, str] | None:
    """The templates (name -> SHA-256) approved with `project`, if it is trusted with
    its configuration as it is now; None otherwise."""
    if not is_trusted(home, project):
        return None
    record = approval(home, project) or {}
    templates = record.get("templates")
    return {str(k): str(v) for k, v in templates.items()} if isinstance(templates, dict) else {}


def config_text(path: str, *, inside: str | None = None, exact: bool = False) -> str:
    """The text of the configuration file `path`, as a text file reads (UTF-8, newlines
    made \\n; `exact`: kept as they are): a regular file of at most CONFIG_MAX_BYTES
    (`NotRegular`, `TooLarge`); with `inside` (a project root), one that stays in that
    directory once symlinks are resolved (`Outside`). UnicodeDecodeError when it is not
    UTF-8."""
    if inside is not None:
        real, root = os.path.realpath(path), os.path.realpath(inside)
        if not real.startswith(root.rstrip(os.sep) + os.sep):
            raise Outside(path, real)
    text = read_bounded(path, CONFIG_MAX_BYTES).decode("utf-8")
    return text if exact else text.replace("\r\n", "\n").replace("\r", "\n")


class Outside(OSError):
    """A project's file leads out of the project; `target` is where."""

    def __init__(self, path: str, target: str) -> None:
        self.target = target
        super().__init__(f"{path} is a symlink to {target}, outside the project")


def _config_text(project: str) -> str | None:
    """The project's configuration file as text; None when it has none. OSError or
    ValueError (see `config_text`) when it cannot be read as configuration."""
    from smith.paths import project_config_path

    try:
        return config_text(project_config_path(project), inside=project)
    except FileNotFoundError:
        return None


def approval(home: str, project: str) -> dict[str, object] | None:
    """What the user approved for `project` ("sha256" and "content" of its configuration,
    "trusted_at"); None when it is not trusted. An entry without "sha256" is from before
    trust followed content: it approves no particular file."""
    return _load(home).get(os.path.realpath(project))


def is_trusted(home: str, project: str, text: str | None = None) -> bool:
    """Whether `project` is trusted with its configuration as it is now (or as `text`)."""
    record = approval(home, project)
    if record is None:
        return False
    if text is None:
        try:
            text = _config_text(project)
        except (OSError, ValueError):
            return False  # what cannot be read is not what was trusted
    return text is None or record.get("sha256") == digest(text)


def trusted_projects(home: str) -> dict[str, dict[str, object]]:
    return _load(home)


def _update(home: str, change: str, project: str) -> bool:
    """Add `project` with its configuration's current content, or remove it; return
    whether the list changed."""
    import fcntl
    import json
    import time

    from smith._atomic import private_dirs, write_atomic

    private_dirs(home, home)  # owner-only, as everything under SMITH_HOME
    lock_fd = os.open(os.path.join(home, TRUST_FILE + ".lock"), os.O_WRONLY | os.O_CREAT, 0o600)
    with open(lock_fd, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        projects = _load(home)
        if change == "add":
            try:
                text = _config_text(project)
            except (OSError, ValueError) as exc:
                raise _unusable(project, exc) from None
            record: dict[str, object] = {
                "trusted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            }
            if text is not None:
                record.update(sha256=digest(text), content=text)
            record["templates"] = template_digests(project)
            record["files"] = file_digests(project)
            old = projects.get(project)
            same = ("sha256", "templates", "files")
            if old is not None and all(old.get(k) == record.get(k) for k in same):
                return False
            projects[project] = record
        elif projects.pop(project, None) is None:
            return False
        text = json.dumps({"version": 1, "projects": projects}, indent=2, sort_keys=True)
        write_atomic(_store(home), text + "\n", mode=0o600)
        return True


def trust(home: str, project: str) -> bool:
    """Trust `project` with its configuration as it is now; False when it already was."""
    real = os.path.realpath(project)
    if not os.path.isdir(real):
        raise TRUST_NOT_A_DIRECTORY.error(
            value=project, source=Source("argument", project), path=real
        )
    return _update(home, "add", real)


def revoke(home: str, project: str) -> bool:
    """Stop trusting `project`; False when it was not trusted."""
    return _update(home, "remove", os.path.realpath(project))
