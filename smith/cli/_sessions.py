"""`smith sessions`: list, show, dump, import, fork, repair, rm."""

from __future__ import annotations

import json
import os

from smith.diagnostics import Source

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from smith.cli._main import Context
    from smith.session import Session, SessionStore


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = actions.add_parser("list", help="sessions of this project (--all: every project)")
    ls.add_argument("--all", action="store_true", help="sessions of every project")
    ls.add_argument("--json", action="store_true", help="print the same as JSON")
    show = actions.add_parser("show", help="a session's tree, selected path marked")
    which = "session name (in this project), id or unambiguous id prefix"
    show.add_argument("id", metavar="SESSION", help=which)
    show.add_argument(
        "--json", action="store_true", help="summary, recovery report and entries as JSON"
    )
    dump = actions.add_parser("dump", help="a session as JSONL")
    dump.add_argument("id", metavar="SESSION", help=which)
    dump.add_argument("--output", "-o", metavar="FILE", help="write to FILE, not stdout")
    imp = actions.add_parser("import", help="create a session from a JSONL dump")
    imp.add_argument("file", metavar="FILE.jsonl")
    imp.add_argument("--name", help="name the new session (default: the dump's name)")
    imp.add_argument(
        "--new-id", action="store_true", help="give the session a new id instead of the dump's"
    )
    fork = actions.add_parser(
        "fork", help="copy a session's history up to an entry into a new session"
    )
    fork.add_argument("id", metavar="SESSION", help=which)
    fork.add_argument("--at", metavar="ENTRY", help="entry to fork at (default: the leaf)")
    fork.add_argument("--name", help="name of the new session")
    repair = actions.add_parser(
        "repair", help="rewrite a damaged session file, keeping every intact frame and a backup"
    )
    repair.add_argument("id", metavar="SESSION", help=which)
    repair.add_argument("--json", action="store_true", help="print the report as JSON")
    repair.add_argument(
        "--resync",
        action="store_true",
        help="after a damaged frame header, look for the next intact frame "
        "(may pick up frames that were content of the damaged one)",
    )
    rm = actions.add_parser("rm", help="delete a session")
    rm.add_argument("id", metavar="SESSION", help=which)


def _store(ctx: Context) -> SessionStore:
    """The session store, warning on stderr about odd entries in it."""
    from smith.session import SessionStore

    return SessionStore(ctx.config().home, warn=ctx.print_diagnostic)


def _find(ctx: Context, which: str) -> str:
    """The file of the session `which` names: the same lookup as `eval --session`,
    `replay` and every other command (a name in this project, an id, an id prefix)."""
    from smith.runtime import entered_name

    which = entered_name(which, ctx.print_diagnostic)
    return _store(ctx).lookup(which, ctx.config().project_root)


def _summary(session: Session, ctx: Context) -> dict[str, object]:
    """What list and show say of a session; a header field smith cannot use (a file
    made elsewhere) is null, with a warning naming it."""
    from smith.session import checked_header

    header, warnings = checked_header(session)
    for warning in warnings:
        ctx.print_diagnostic(warning)
    return {
        "id": header["id"],
        "name": header["name"],
        "created": header["created"],
        "cwd": header["cwd"],
        "entry_count": len(session),
        "leaf": session.leaf,
        "path": session.path,
        "size": os.path.getsize(session.path),
    }


def _list(args: argparse.Namespace, ctx: Context) -> int:
    from smith.diagnostics import SmithError
    from smith.session import Session

    store = _store(ctx)
    paths = store.paths() if args.all else store.paths_for_project(ctx.config().project_root)
    items = []
    for path in paths:  # one session that cannot be read never fails the list
        try:
            session = Session.load(path)
            summary = _summary(session, ctx)
        except SmithError as exc:
            ctx.print_diagnostic(exc.diagnostic)
            continue
        except OSError as exc:  # removed or made unreadable since it was listed
            from smith.cli._main import OS_ERROR

            reason = exc.strerror or str(exc)
            ctx.print_diagnostic(OS_ERROR(source=Source("file", path), path=path, reason=reason))
            continue
        damage = session.damage
        items.append({**summary, "damaged": damage is not None, "damage": damage})
    if args.json:
        ctx.out(json.dumps({"sessions": items}, indent=2))
        return 0
    if not items:
        where = "" if args.all else " for this project (try --all)"
        ctx.out(f"no sessions{where}")
    for s in items:
        note = f"  (damaged: {s['damage']}; see `smith sessions show`)" if s["damaged"] else ""
        noun = "entry  " if s["entry_count"] == 1 else "entries"
        ctx.out(f"{s['id']}  {s['entry_count']:>7} {noun}  {s['name'] or '(unnamed)'}{note}")
    return 0


def _tree_lines(session: Session) -> list[str]:
    from smith.diagnostics import SmithError

    children = session.children()
    selected = {e.id for e in session.branch()}
    leaf = session.leaf
    lines: list[str] = []

    def label(eid: str) -> str:
        e = session.entry(eid)  # by id: an entry repeating an id is not in the tree
        try:
            content = e.content
        except SmithError:
            content = {"text": "(content unreadable)"}
        text = ""
        if isinstance(content, dict):
            text = " ".join(_text(content.get("text") or content.get("name") or "").split())[:60]
        mark = "*" if eid in selected else " "
        tail = "  <- leaf" if eid == leaf else ""
        return f"{mark} {eid} {e.kind}{': ' + text if text else ''}{tail}"

    stack: list[tuple[str, str]] = [(root, "") for root in reversed(children.get(None, []))]
    while stack:
        eid, indent = stack.pop()
        lines.append(indent + label(eid))
        kids = children.get(eid, [])
        nested = indent + ("  " if len(kids) > 1 else "")
        stack.extend((kid, nested) for kid in reversed(kids))
    return lines


def _show(args: argparse.Namespace, ctx: Context) -> int:
    from smith.session import Session

    session = Session.load(_find(ctx, args.id))
    damage = session.damage  # as `sessions list` says it, in both forms
    summary = {**_summary(session, ctx), "damaged": damage is not None, "damage": damage,
               "recovery": session.recovery}  # fmt: skip
    if args.json:
        from smith._jsonout import with_rows

        # json.dumps(summary, indent=2)'s bytes, the entries by orjson (1.7 s of the
        # standard library's pure-Python indenting for 100,000 entries): their ids and
        # kinds are strings and their ts int64 integers, which orjson writes as it does.
        records = session.records  # read by index: no Entry object per entry
        ids = [records.id(i) for i in range(len(records))]
        parents = [records.parent(i) for i in range(len(records))]
        entries: list[dict[str, object]] = [
            {"id": ids[i], "parent": ids[p] if p >= 0 else None, "ts": records.ts(i),
             "kind": records.kind(i)}
            for i, p in enumerate(parents)
        ]  # fmt: skip
        ctx.out(with_rows(summary, "entries", entries))
        return 0
    cwd = summary["cwd"] or "unknown"
    name = summary["name"] or "(unnamed)"
    count = f"{len(session)} {'entry' if len(session) == 1 else 'entries'}"
    ctx.out(f"{summary['id']}  {name}  ({count}, cwd {cwd})")
    _report(ctx, session)
    for line in _tree_lines(session):
        ctx.out(line)
    return 0


def _report(ctx: Context, session: Session) -> None:
    damage = session.damage
    if damage is not None:
        # The file's own name: a copy whose header names another id is repaired as itself.
        which = os.path.basename(session.path).removesuffix(".smith") or session.id
        ctx.out(f"damaged: {damage}; `smith sessions repair {which}` rewrites the file "
                "keeping every intact frame, with a backup")  # fmt: skip
    recovery = session.recovery
    if recovery["frames_skipped"] or recovery["truncated_bytes"]:
        ctx.out(
            f"recovery: {recovery['frames_recovered']} frames read, "
            f"{recovery['frames_skipped']} corrupt frames skipped, "
            f"{recovery['truncated_bytes']} trailing bytes ignored"
        )
    error = recovery["error"]
    if isinstance(error, dict):
        from smith.session import DAMAGED

        ctx.print_diagnostic(
            DAMAGED(
                source=Source("file", session.path),
                offset=error["offset"],
                problem=error["problem"],
                count=len(session),
                id=session.id,
            )
        )


def _dump(args: argparse.Namespace, ctx: Context) -> int:
    from smith.session import Session, dump

    session = Session.load(_find(ctx, args.id))
    if args.output:
        from smith._atomic import write_atomic

        write_atomic(args.output, "".join(line + "\n" for line in dump(session)))
        return 0
    for line in dump(session):
        ctx.out(line, exact=True)
    return 0


def _import(args: argparse.Namespace, ctx: Context) -> int:
    from smith.session import import_jsonl

    name = _typed_name(args.name, ctx)
    session = import_jsonl(args.file, _store(ctx), name=name, keep_id=not args.new_id)
    count = f"{len(session)} {'entry' if len(session) == 1 else 'entries'}"
    ctx.out(f"imported {session.id}: {count} ({session.path})")
    return 0


def _fork(args: argparse.Namespace, ctx: Context) -> int:
    from smith.session import Session, checked_header, new_session_id

    store = _store(ctx)
    source = Session.load(_find(ctx, args.id))
    at = source.entry(args.at).id if args.at is not None else source.leaf
    header, _ = checked_header(source)  # the fork's header is made sound: nothing to warn
    cwd = header["cwd"]
    if cwd is None and "cwd" in source.info:  # unusable: the fork is this project's
        cwd = ctx.config().project_root
        ctx.out(f"note: the fork belongs to this project ({cwd}): the session's own "
                "working directory cannot be used")  # fmt: skip
    # The fork's header is sound: a new id and time, and the fields checked above.
    source.info.update(cwd=cwd, name=header["name"] or "")
    name = _typed_name(args.name, ctx)
    new_id = new_session_id()
    path = store.path_for(new_id, str(cwd or ""))
    source.fork(path, at=at, name=name, id=new_id).close()
    ctx.out(f"forked {header['id']} at {at or '(the empty start)'} into {new_id}")
    return 0


def _typed_name(name: str | None, ctx: Context) -> str | None:
    """A name given on the command line, as a session can hold it: a byte that is not
    UTF-8 arrives as a lone surrogate, which no session file can hold."""
    if name is None:
        return None
    from smith.text import TEXT_REPLACED, replace_surrogates

    fixed, replaced = replace_surrogates(name)
    if replaced:
        ctx.print_diagnostic(TEXT_REPLACED(count=replaced, where="--name"))
    return str(fixed)


def _text(value: object) -> str:
    """Content shown in a tree line: text as it is; anything else as it prints, or by
    what it is when it cannot print (an integer of thousands of digits)."""
    if isinstance(value, str):
        return value
    try:
        return str(value)
    except ValueError:
        return f"({type(value).__name__} too large to show)"


def _repair(args: argparse.Namespace, ctx: Context) -> int:
    from smith.session import repair

    report = repair(_find(ctx, args.id), resync=args.resync)
    if args.json:
        ctx.out(json.dumps(report, indent=2))
        return 0
    ctx.out(
        f"repaired {report['path']}: kept {report['frames_kept']} frames, dropped "
        f"{report['frames_skipped']} corrupt ones and {report['truncated_bytes']} "
        f"trailing bytes; the original is kept as {report['backup']}"
    )
    dropped = [
        (report["duplicates_dropped"], "entries repeating an earlier entry's id"),
        (report["unreadable_meta_dropped"], "session info frames that do not decode"),
    ]
    for count, what in dropped:
        if count:
            ctx.out(f"dropped {count} {what} (kept in the backup)")
    if report["bytes_resynced"]:
        ctx.out(f"jumped over {report['bytes_resynced']} damaged bytes to later frames")
    if report["bytes_left_in_backup"]:
        ctx.out(
            f"{report['bytes_left_in_backup']} bytes after a damaged frame header were "
            f"left in the backup; `smith sessions repair {args.id} --resync` tries to "
            "recover frames from them"
        )
    return 0


def _rm(args: argparse.Namespace, ctx: Context) -> int:
    path = _store(ctx).remove(args.id, ctx.config().project_root)
    ctx.out(f"removed {path}")
    return 0


def run(args: argparse.Namespace, ctx: Context) -> int:
    handlers = {
        "list": _list,
        "show": _show,
        "dump": _dump,
        "import": _import,
        "fork": _fork,
        "repair": _repair,
        "rm": _rm,
    }
    return handlers[args.action](args, ctx)
