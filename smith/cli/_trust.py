"""`smith trust`: approve a project so its .smith/config.kdl applies; list; revoke."""

from __future__ import annotations

import os

from smith import trust

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from smith.cli._main import Context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path", nargs="?", metavar="PATH", help="project root (default: the current project)"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--revoke", action="store_true", help="stop trusting the project")
    mode.add_argument("--list", action="store_true", help="list trusted projects")
    parser.add_argument("--json", action="store_true", help="with --list: print JSON")


def run(args: argparse.Namespace, ctx: Context) -> int:
    if args.json and not args.list:
        from smith.cli._parser import USAGE

        raise USAGE.error(
            message="--json goes with --list", prog="smith trust", help="smith trust --help"
        )
    config = ctx.config(strict=False, warn=False)  # trust must work while config is broken
    home = config.home
    if args.list:
        projects = trust.trusted_projects(home)
        if args.json:
            import json

            # The approved text stays in the list (it says what changed), not on screen.
            shown = {p: {k: v for k, v in r.items() if k != "content"} for p, r in projects.items()}
            ctx.out(json.dumps({"projects": shown}, indent=2, sort_keys=True))
        elif not projects:
            ctx.out("no trusted projects")
        for path in sorted(projects) if not args.json else ():
            ctx.out(f"{path}  (since {projects[path].get('trusted_at', '?')})")
        return 0
    root = os.path.abspath(args.path) if args.path else config.project_root
    if args.revoke:
        changed = trust.revoke(home, root)
        ctx.out(f"no longer trusted: {root}" if changed else f"was not trusted: {root}")
        return 0
    changed = trust.trust(home, root)
    ctx.out(f"trusted: {root}" if changed else f"already trusted: {root}")
    project_file = os.path.join(root, ".smith", "config.kdl")
    if os.path.exists(project_file):
        ctx.out(f"{project_file} now applies")
    approved = trust.file_digests(root)
    if approved:  # a skill is its whole folder
        names = sorted(p.removesuffix("/SKILL.md") + "/" if p.endswith("/SKILL.md") else p
                       for p in approved)  # fmt: skip
        ctx.out(f"approved as they are now: {', '.join(names)}")
    return 0
