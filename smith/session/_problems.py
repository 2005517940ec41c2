"""What can be wrong with a session file or a request on it: the diagnostics of
smith.session._session (kept here so that module holds the session itself)."""

from __future__ import annotations

from smith.diagnostics import DiagnosticKind

NOT_A_SESSION = DiagnosticKind(
    "session.not-a-session",
    what="this file cannot be read as a smith session: {reason}",
    why="smith sessions start with a session file header; this file has none or a damaged one",
    fix="check the path; a session whose header checksum alone is damaged can be rewritten "
    "with `smith sessions repair` and its id",
)
FUTURE_VERSION = DiagnosticKind(
    "session.future-version",
    what="this session file has format version {version}; this smith reads up to {supported}",
    why="it was written by a newer smith, and guessing at its frames could lose data",
    fix="upgrade smith to open it; the file is left untouched",
)
DAMAGED = DiagnosticKind(
    "session.damaged",
    what="this session file is damaged at byte {offset} ({problem}); {count} entries before "
    "it were recovered",
    why="the frames after that point cannot be read safely, so smith will not append to the file",
    fix="run `smith sessions repair {id}`: it keeps every intact frame and a backup of the "
    "original",
)
SKIPPED = DiagnosticKind(
    "session.frames-skipped",
    severity="warning",
    what="session '{name}' ({id}) was read with damage: {damage}",
    why="a frame whose checksum does not match cannot be trusted, so its entries are left "
    "out; a tool call or result that lost its partner is answered as unknown or left out "
    "of requests, so the conversation goes on without them",
    fix="see what was kept with `smith sessions show {id}`, and rewrite the file keeping "
    "every intact frame (and a backup) with `smith sessions repair {id}`",
)
LOCKED = DiagnosticKind(
    "session.locked",
    what="this session is open for writing in another smith process",
    why="two writers appending to one session would interleave their histories",
    fix="close the other smith (or wait for it to finish), or fork this session to continue "
    "separately: `smith sessions fork {id}`",
)
EXISTS = DiagnosticKind(
    "session.exists",
    what="a session with id '{id}' already exists",
    why="session ids are unique, so one cannot be created twice",
    fix="remove the existing one first (`smith sessions rm {id}`), or import it with "
    "--new-id to keep both",
)
CONTENT_UNREADABLE = DiagnosticKind(
    "session.content-unreadable",
    what="the content of entry '{entry}' cannot be decoded: {reason}",
    why="its frame passed its checksum, so it was written this way (by another program or "
    "a damaged writer), not damaged on disk",
    fix="the rest of the session is intact; dump or fork around this entry, or report how "
    "the file was written",
)
SESSION_UNREADABLE = DiagnosticKind(
    "session.unreadable",
    what="this session file cannot be read: {reason}",
    why="smith reads a whole session file into memory to use it, and this one could not be",
    fix="check the file's permissions and the disk it is on; other sessions are not "
    "affected, and `smith sessions list` still lists them",
)
TAIL_NOT_KEPT = DiagnosticKind(
    "session.tail-not-kept",
    what="cannot keep the unfinished frame at the end of this session before cutting it: {reason}",
    why="opening a session for writing cuts an unfinished last frame so that new entries "
    "stay readable, and its bytes are first copied beside the file; that copy failed, so "
    "nothing was cut",
    fix="free some disk space (or fix the directory's permissions) and open it again; "
    "`smith sessions repair {id}` also rewrites it, keeping a backup",
)
UNKNOWN_ENTRY = DiagnosticKind(
    "session.unknown-entry",
    what="there is no entry '{entry}' in this session",
    why="entries are named by the ids that `smith sessions show` lists",
    fix="pick an id from `smith sessions show {id}`",
)

__all__ = [
    "CONTENT_UNREADABLE",
    "DAMAGED",
    "EXISTS",
    "FUTURE_VERSION",
    "LOCKED",
    "NOT_A_SESSION",
    "SESSION_UNREADABLE",
    "SKIPPED",
    "TAIL_NOT_KEPT",
    "UNKNOWN_ENTRY",
]
