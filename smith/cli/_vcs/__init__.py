"""`smith undo`, `redo`, `restore`, `diff` and `history`: file history from the command
line, over the one API in smith.vcs. Each command is a module here (the command table
imports only the one that runs); this module holds what they share."""

from __future__ import annotations

import contextlib
import json

from smith.diagnostics import DiagnosticKind, SmithError, Source

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterator

    from smith.cli._main import Context
    from smith.config import Config
    from smith.session import Session
    from smith.vcs import FileHistory

HISTORY_NO_SESSION = DiagnosticKind(
    "history.no-session",
    what="this project ({root}) has no sessions yet",
    why="file history belongs to sessions: smith snapshots files around the turns of one",
    fix='run a prompt first (`smith` or `smith eval "..."`), or name a session with --session',
)
HISTORY_UNKNOWN_SESSION = DiagnosticKind(
    "history.unknown-session",
    what="this project has no session named '{name}'",
    why="--session takes a session's name or id (or an unambiguous prefix of an id)",
    fix="run `smith sessions list` to see this project's sessions",
)


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--session",
        metavar="NAME",
        help="the session (name or id; default: the one that made the project's latest file "
        "change)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def add_force(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--force",
        action="store_true",
        help="change files even where they were changed since smith recorded them (your "
        "versions are recorded first)",
    )


HISTORY_SESSION_BUSY = DiagnosticKind(
    "history.session-open",
    what="'{op}' acts on session {id}, which another smith has open",
    why="{op} records what it changes in that session, and one session has one writer: "
    "the smith holding it may be writing to it now",
    fix="run /{op} in the app holding it, or close that app and run `smith {op}` again "
    "(`smith history` and `smith diff` only read, so they work meanwhile)",
)

READ_ONLY = ("history", "diff")  # they only read: the session may be open in an app


def _session(config: Config, name: str | None, op: str) -> Session:
    """The session named, else the one `op` acts on by default: the session of the
    project's latest file change (smith.vcs.latest_session), whichever made it. Open
    for writing, save for the READ_ONLY operations, which read it as it is (a running
    app holding it is no reason to refuse to show its history)."""
    from smith.runtime import named_session, session_path
    from smith.session import Session, SessionStore
    from smith.vcs import HistorySettings, latest_session

    root = config.project_root
    if name is not None and op in READ_ONLY:
        try:
            return Session.load(session_path(config, name))
        except SmithError as exc:
            if exc.diagnostic.code != "session.not-found":
                raise
            raise HISTORY_UNKNOWN_SESSION.error(
                value=name, source=Source("argument", name), name=name
            ) from None
    if name is not None:
        found = named_session(config, name, create=False)
        if found is None:
            raise HISTORY_UNKNOWN_SESSION.error(
                value=name, source=Source("argument", name), name=name
            )
        return found
    store = SessionStore(config.home)
    settings = HistorySettings.from_config(config)
    path = (latest_session(settings, store, root, op) if settings.enabled else None) or (
        store.latest(root)
    )
    if path is None:
        raise HISTORY_NO_SESSION.error(root=root)
    if op in READ_ONLY:
        return Session.load(path)
    try:
        return Session.open(path)
    except SmithError as exc:
        if exc.diagnostic.code != "session.locked":
            raise
        found = Session.load(path)  # (read only: to name it)
        sid = found.id
        found.close()
        raise HISTORY_SESSION_BUSY.error(value=sid, source=Source("argument", op), op=op,
                                         id=sid) from None  # fmt: skip


@contextlib.contextmanager
def open_history(ctx: Context, args: argparse.Namespace, op: str) -> Iterator[FileHistory]:
    """The file history of the session `op` acts on (see `_session`), open (for writing,
    unless `op` only reads) until the block ends."""
    from smith.vcs import FileHistory, HistorySettings

    config = ctx.config()
    with _session(config, args.session, op) as session:
        found = FileHistory(HistorySettings.from_config(config), session, config.project_root)
        found.check_session()
        yield found


def named(session: Session) -> str:
    """How a session is named to the user: its name and id, or its id alone."""
    name = session.name
    if name and name != session.id:
        return f"session {name} ({session.id})"
    return f"session {session.id}"


def report(
    ctx: Context, args: argparse.Namespace, result: dict[str, object], done: str, session: Session
) -> int:
    """Print what an undo, redo or restore changed, in which session (`done` says what
    it did)."""
    if args.json:
        ctx.out(json.dumps({**result, "session": {"id": session.id, "name": session.name}},
                           indent=2))  # fmt: skip
        return 0
    done = f"{done} in {named(session)}"
    changed = result["changed"]
    assert isinstance(changed, list)
    if not changed:
        ctx.out(f"{done}: the files were already like that")
    else:
        ctx.out(f"{done}: {len(changed)} file{'s' if len(changed) != 1 else ''}")
        for item in changed:
            ctx.out(f"  {item['change']:<9} {item['path']}")
    overwritten = result.get("overwritten")
    if isinstance(overwritten, list) and overwritten:
        ctx.out(
            f"overwrote your changes to {', '.join(map(str, overwritten))} (recorded first: "
            "`smith history` and `smith restore` can bring them back)"
        )
    left = result.get("left")
    if isinstance(left, list) and left:
        ctx.out(
            f"left {', '.join(map(str, left))} as it is: ignored there, so not in that "
            "snapshot (smith deletes no file it cannot tell was absent)"
        )
    if result.get("conversation"):
        ctx.out(f"the session now continues from entry {result['conversation']}")
    return 0
