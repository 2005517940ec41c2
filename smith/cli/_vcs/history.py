"""`smith history`: the turns that changed files, with their prompts and line counts;
`smith history gc`: drop old snapshots to free space."""

from __future__ import annotations

import json
import time

from smith.cli._vcs import add_common, named, open_history

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from smith.cli._main import Context
    from smith.config import Config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common(parser)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    gc = actions.add_parser(
        "gc", help="drop snapshots older than --keep-days or beyond the newest --keep"
    )
    gc.add_argument("--keep-days", type=int, metavar="DAYS", help="default: vcs.keep-days")
    gc.add_argument("--keep", type=int, metavar="N", help="default: vcs.keep-count")
    gc.add_argument("--dry-run", action="store_true", help="say what would go, change nothing")
    gc.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace, ctx: Context) -> int:
    if args.action == "gc":
        return _gc(args, ctx)
    with open_history(ctx, args, "history") as files:
        items = files.history()
        session, where = files.session.id, named(files.session)
    if args.json:
        ctx.out(json.dumps({"session": session, "turns": items}, indent=2))
        return 0
    if not items:
        ctx.out(f"no turn of {where} changed files")
        return 0
    ctx.out(f"{where}:")
    for item in items:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(int(str(item["ts"])) / 1000))
        count = f"{item['files']} file{'s' if item['files'] != 1 else ''}"
        lines = f"+{item['insertions']} -{item['deletions']}"
        mark = "  (undone)" if item["undone"] else "  (pruned)" if item["pruned"] else ""
        ctx.out(f"{item['entry']}  {when}  {count:>9}  {lines:>11}  {item['text']}{mark}")
    return 0


def _gc(args: argparse.Namespace, ctx: Context) -> int:
    from smith.vcs import HistorySettings, ShadowRepo

    config = ctx.config()
    settings = HistorySettings.from_config(config)
    repo = ShadowRepo.open(settings.home, config.project_root, create=False)
    if repo is None:
        ctx.out("this project has no file history yet")
        return 0
    keep_days = settings.keep_days if args.keep_days is None else max(args.keep_days, 0)
    keep = settings.keep_count if args.keep is None else max(args.keep, 1)
    needed = _needed(config)
    with repo.locked():
        report = repo.gc(keep_days=keep_days, keep_count=keep, dry_run=args.dry_run, needed=needed)
    report["lost"] = [need for tree in report["lost"] for need in needed[tree]]
    if args.json:
        ctx.out(json.dumps(report, indent=2))
        return 0
    verb = "would drop" if args.dry_run else "dropped"
    ctx.out(
        f"{verb} {report['pruned']} of {report['snapshots']} snapshots; the history takes "
        f"{_size(report['bytes_after'])} (was {_size(report['bytes_before'])})"
    )
    for need in report["lost"]:
        made = "would make" if args.dry_run else "made"
        ctx.out(
            f"{made} the {need['op']} of {need['kind']} {need['entry']} in session "
            f"{need['session']} impossible: it needs a dropped snapshot"
        )
    return 0


def _needed(config: Config) -> dict[str, list[dict[str, str]]]:
    """What the next undo and redo of each of this project's sessions need."""
    from smith.diagnostics import SmithError
    from smith.session import Session, SessionStore
    from smith.vcs import needed_trees

    needed: dict[str, list[dict[str, str]]] = {}
    for path in SessionStore(config.home).paths_for_project(config.project_root):
        try:
            session = Session.load(path)
        except (OSError, SmithError):
            continue  # a session that cannot be read has no undo to lose
        for tree, needs in needed_trees(session).items():
            needed.setdefault(tree, []).extend(needs)
    return needed


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} bytes"
    value = count / 1024
    for unit in ("KiB", "MiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"
