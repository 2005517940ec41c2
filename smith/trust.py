"""The trust list: projects whose own configuration smith may apply.

A project's `.smith/config.kdl` can change which model is called and (with later
capabilities) what runs on the machine, so it is ignored, with a warning, until the user
runs `smith trust` for that project. The list lives in `$SMITH_HOME/trust.json`, keyed by
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


def is_trusted(home: str, project: str) -> bool:
    return os.path.realpath(project) in _load(home)


def trusted_projects(home: str) -> dict[str, dict[str, object]]:
    return _load(home)


def _update(home: str, change: str, project: str) -> bool:
    """Add or remove `project`; return whether the list changed."""
    import fcntl
    import json
    import time

    from smith._atomic import write_atomic

    os.makedirs(home, exist_ok=True)
    with open(os.path.join(home, TRUST_FILE + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        projects = _load(home)
        if change == "add":
            if project in projects:
                return False
            projects[project] = {"trusted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        elif projects.pop(project, None) is None:
            return False
        text = json.dumps({"version": 1, "projects": projects}, indent=2, sort_keys=True)
        write_atomic(_store(home), text + "\n")
        return True


def trust(home: str, project: str) -> bool:
    """Trust `project`; False when it already was."""
    real = os.path.realpath(project)
    if not os.path.isdir(real):
        raise TRUST_NOT_A_DIRECTORY.error(
            value=project, source=Source("argument", project), path=real
        )
    return _update(home, "add", real)


def revoke(home: str, project: str) -> bool:
    """Stop trusting `project`; False when it was not trusted."""
    return _update(home, "remove", os.path.realpath(project))
