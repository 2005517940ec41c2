"""Building the runtime's pieces from configuration: the tool context, the session, the
model. Shared by every command that runs tools (`smith tools run`, `smith eval`, ...)."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from smith.diagnostics import SmithError

if TYPE_CHECKING:
    from smith.config import Config
    from smith.effects import ToolContext
    from smith.session import Session

OUTPUT_DAYS = 7
DEMO = "demo"
DEMO_BANNER = (
    "smith: no model is configured, so this is the offline demo model (it really runs "
    "tools, but it is not an AI). To use a real model, pass --model PROVIDER/MODEL or run "
    "`smith config set model PROVIDER/MODEL`, with the provider's API key in its "
    "environment variable."
)


def _strings(value: object) -> list[str]:
    assert isinstance(value, list)
    return [str(v) for v in value]


def prune_outputs(directory: str) -> None:
    """Saved command output older than a week goes: it is only for looking into recent
    runs (the session records each run's result)."""
    cutoff = time.time() - OUTPUT_DAYS * 86400
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return
    for entry in entries:
        try:
            if entry.is_file() and entry.stat().st_mtime < cutoff:
                os.unlink(entry.path)
        except OSError:
            continue


def tool_context(config: Config, cwd: str, session: Session | None) -> ToolContext:
    from smith.effects import ToolContext

    outputs = os.path.join(config.home, "outputs")
    prune_outputs(outputs)
    return ToolContext(
        root=config.project_root,
        cwd=cwd,
        session=session,
        limits={
            "read.max-lines": config.integer("tools.read.max-lines"),
            "read.max-bytes": config.integer("tools.read.max-bytes"),
            "bash.timeout": config.integer("tools.bash.timeout"),
        },
        spill_dir=outputs,
        ignore=tuple(_strings(config["tools.ignore"])),
        extra_roots=tuple(
            os.path.join(config.project_root, os.path.expanduser(p))
            for p in _strings(config["tools.extra-roots"])
        ),
    )


def named_session(config: Config, name: str, *, create: bool = True) -> Session | None:
    """This project's session called `name` (or with that id), open for writing; created
    when there is none and `create`."""
    from smith.session import Session, SessionStore

    store = SessionStore(config.home)
    for path in store.paths_for_project(config.project_root):
        try:
            found = Session.load(path)
        except SmithError:
            continue
        if name in (found.name, found.id):
            return Session.open(path)
    try:
        return Session.open(store.find(name))
    except SmithError:
        pass
    return store.create(name=name, cwd=config.project_root) if create else None


def model_setting(config: Config) -> tuple[str, bool]:
    """The model to use and whether it is the demo fallback (no model configured)."""
    model = config["model"]
    if model:
        return str(model), False
    return DEMO, True
