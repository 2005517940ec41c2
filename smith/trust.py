"""The trust list: the project configurations smith may apply.

A project's `.smith/config.kdl` can change which model is called, where a provider's key
is sent and what runs on the machine, so it is ignored, with a warning, until the user
runs `smith trust` for that project. Trust follows content, as direnv's does: what is
trusted is the file as it was when the user approved it (its SHA-256, and its text, to
say what changed). A file changed since (by `git pull`, or by a model's write) is not
applied until it is trusted again. The list lives in `$SMITH_HOME/trust.json`, keyed by
the project's real path; writes are atomic and serialised by a lock file, so concurrent
`smith trust` runs cannot lose each other's entries.
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
            old = projects.get(project)
            if old is not None and old.get("sha256") == record.get("sha256"):
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
