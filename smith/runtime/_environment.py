"""The environment block: where the agent is and what with (docs/context.md).

    env = environment(cwd=cwd, root=root, model="anthropic/claude-sonnet-4-5")
    env.text          # what the model is sent
    env.fields        # the same as data (recorded with it, shown by replay)

Stable lines first (directories, platform, shell, versions), then the date (a date, not
a time of day, so the block does not change every turn), then the git summary, which
changes the most. The runtime records the block as an `environment` entry when a prompt
starts with a block different from the one in the context, so the prompt's prefix stays
the same from request to request (smith.runtime._notes).
"""

from __future__ import annotations

import datetime
import os
import platform
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Environment:
    text: str
    fields: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """The content of an `environment` entry."""
        return {**self.fields, "text": self.text}


def environment(
    *,
    cwd: str,
    root: str,
    model: str,
    now: datetime.datetime | None = None,
    safety: str = "",
    confine: Callable[[list[str], str], list[str]] | None = None,
) -> Environment:
    """The block for a runtime in `cwd` on project `root` using `model`. It reads the
    project's git state (bounded: smith.vcs.git_state), so it may take up to that
    timeout: call it off the event loop."""
    from smith import __version__
    from smith.vcs import git_state

    moment = (now or datetime.datetime.now()).astimezone()
    offset = moment.strftime("%z")
    zone = f"UTC{offset[:3]}:{offset[3:]}" if offset else "UTC"
    name = moment.tzname()
    if name and name not in ("UTC", zone):
        zone = f"{name}, {zone}"
    git = git_state(root, confine=confine, env=helper_env())  # read, never run: see there
    system = platform.system() or "unknown OS"
    fields: dict[str, Any] = {
        "cwd": cwd,
        "root": root,
        "platform": f"{system} {platform.release()} ({platform.machine()})".strip(),
        "shell": shutil.which("bash") or "/bin/sh",
        "smith": __version__,
        "model": model,
        "date": moment.date().isoformat(),
        "timezone": zone,
        "git": None if git is None else git.to_dict(),
        "safety": safety,
    }
    lines = [
        "<environment>",
        f"Working directory: {cwd}",
        f"Project root: {root}" + (" (the working directory)" if _same(cwd, root) else ""),
        f"Platform: {fields['platform']}; the bash tool runs {fields['shell']}",
        f"smith {__version__}; model: {model}",
        *([safety] if safety else []),
        f"Date: {fields['date']} ({zone})",
        "Git: " + ("not a repository" if git is None else git.summary()),
        "</environment>",
    ]
    return Environment("\n".join(lines), fields)


def helper_env() -> dict[str, str]:
    """The environment of a process smith starts for itself (the git status reader):
    what a command gets, without the provider key variables (every built-in provider's)
    and without any variable holding a credential smith has read (providers.NAME's
    api-key-env among them), since nothing of smith's own needs one."""
    from smith._spawn import process_env
    from smith.providers import credential_variables

    return process_env(credential_variables(None), secrets=True)


def _same(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)
