"""What this session last saw of a file, for stale-edit detection.

read, write and edit record the file's SHA-256 in their completion's details; the latest
such record for a path is what the model last knew. Found by walking the session from
its newest entry backwards, decoding completion records only, so a recent read is found
after a few steps however long the session is.
"""

from __future__ import annotations

import hashlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.session import Session


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def last_seen(session: Session | None, path: str) -> str | None:
    """The SHA-256 the session last recorded for `path` (relative to the root), or None."""
    if session is None:
        return None
    from smith.diagnostics import SmithError
    from smith.effects._journal import COMPLETION

    for entry in session.latest():
        if entry.kind != COMPLETION:
            continue
        try:
            content = entry.content
        except SmithError:
            continue
        if not isinstance(content, dict) or (
            content.get("mutation") == "unknown" and content.get("outcome") == "unknown"
        ):
            continue
        output = content.get("output")
        details = output.get("details") if isinstance(output, dict) else None
        if (
            isinstance(details, dict)
            and details.get("path") == path
            and isinstance(details.get("sha256"), str)
        ):
            return str(details["sha256"])
    return None
