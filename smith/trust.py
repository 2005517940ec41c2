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
"""

from __future__ import annotations

import os

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
TRUST_NOT_A_DIRECTORY = DiagnosticKind(
    "trust.not-a-directory",
    what="cannot trust {path}: it is not a directory",
    why="trust applies to a project root, the directory holding .smith/config.kdl",
    fix="pass the project's root directory, or run `smith trust` inside the project",
)


def _store(home: str) -> str:
    return os.path.join(home, TRUST_FILE)


def _load(home: str) -> dict[str, dict[str, object]]:
    import json

    path = _store(home)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise TRUST_UNREADABLE.error(source=Source("file", path), reason=str(exc)) from exc
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


def read_bounded(path: str, limit: int, *, follow: bool = True) -> bytes:
    """The bytes of the regular file `path`, at most `limit` (ValueError past it; OSError
    when it is no regular file, or a symlink and not `follow`). Opened without blocking,
    so a FIFO in its place never hangs smith."""
    import stat

    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        data = b""
        while len(data) <= limit and (chunk := os.read(fd, limit + 1 - len(data))):
            data += chunk
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ValueError(f"it is over {limit // 1024} KB")
    return data


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


def approved_templates(home: str, project: str) -> dict[str, str] | None:
    """The templates (name -> SHA-256) approved with `project`, if it is trusted with
    its configuration as it is now; None otherwise."""
    if not is_trusted(home, project):
        return None
    record = approval(home, project) or {}
    templates = record.get("templates")
    return {str(k): str(v) for k, v in templates.items()} if isinstance(templates, dict) else {}


def _config_text(project: str) -> str | None:
    """The project's configuration file as text; None when it has none (or it cannot be
    read: configuration reports that when it reads the file)."""
    from smith.paths import project_config_path

    try:
        with open(project_config_path(project), encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
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
    text = _config_text(project) if text is None else text
    return text is None or record.get("sha256") == digest(text)


def trusted_projects(home: str) -> dict[str, dict[str, object]]:
    return _load(home)


def _update(home: str, change: str, project: str) -> bool:
    """Add `project` with its configuration's current content, or remove it; return
    whether the list changed."""
    import fcntl
    import json
    import time

    from smith._atomic import write_atomic

    os.makedirs(home, exist_ok=True)
    with open(os.path.join(home, TRUST_FILE + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        projects = _load(home)
        if change == "add":
            text = _config_text(project)
            record: dict[str, object] = {
                "trusted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            }
            if text is not None:
                record.update(sha256=digest(text), content=text)
            record["templates"] = template_digests(project)
            old = projects.get(project)
            same = ("sha256", "templates")
            if old is not None and all(old.get(k) == record.get(k) for k in same):
                return False
            projects[project] = record
        elif projects.pop(project, None) is None:
            return False
        text = json.dumps({"version": 1, "projects": projects}, indent=2, sort_keys=True)
        write_atomic(_store(home), text + "\n")
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
