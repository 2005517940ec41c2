"""`smith plugins`: the plugin list every mode loads (`list`), and what is not built yet
(`install`, `remove`: they arrive with WebAssembly plugins)."""

from __future__ import annotations

from smith.diagnostics import DiagnosticKind, Source

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from smith.cli._main import Context
    from smith.sdk import LoadedPlugin

INSTALL_NOT_BUILT = DiagnosticKind(
    "cli.plugins-install-not-built",
    what="`smith plugins {action}` is not built yet: installing and removing plugins "
    "arrives with WebAssembly plugins",
    why="this version of smith loads only its built-in plugins, which are always installed",
    fix="`smith plugins list` shows the built-in plugins; turn one off with "
    '`plugins {{ disabled "NAME"; }}` in config.kdl',
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = actions.add_parser(
        "list", help="every plugin: version, source, state and what it contributes"
    )
    ls.add_argument("--json", action="store_true", help="print the same as JSON")
    for action in ("install", "remove"):
        unbuilt = actions.add_parser(
            action, help="not built yet (arrives with WebAssembly plugins)"
        )
        unbuilt.add_argument("args", nargs="*", metavar="ARG")


def run(args: argparse.Namespace, ctx: Context) -> int:
    if args.action in ("install", "remove"):
        raise INSTALL_NOT_BUILT.error(
            value=" ".join(args.args) or None,
            source=Source("argument", f"smith plugins {args.action}"),
            action=args.action,
        )
    import json

    from smith.sdk import resolve_plugins

    plugins = resolve_plugins(ctx.config(warn=True))
    for warning in plugins.warnings:
        ctx.print_diagnostic(warning)
    if args.json:
        ctx.out(json.dumps(plugins.to_dict(), indent=2))
        return 0
    rows = [("PLUGIN", "VERSION", "SOURCE", "STATE", "STATUS", "CONTRIBUTES")]
    rows += [_row(p) for p in plugins]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(w) for cell, w in zip(row, widths, strict=False)]
        ctx.out("  ".join([*cells, row[-1]]).rstrip())
    for item in plugins:
        if item.disabled_by is not None:
            ctx.out(f"{item.name} is disabled by plugins.disabled at {item.disabled_by}")
    return 0


def _row(item: LoadedPlugin) -> tuple[str, str, str, str, str, str]:
    kinds = item.manifest.contributions or {}  # a listed plugin's manifest says them
    contributes = "; ".join(
        f"{kind.replace('_', ' ')}: {_names(names)}" for kind, names in kinds.items()
    )
    return (item.name, item.version, item.source, item.state, item.status, contributes or "-")


def _names(names: Sequence[str], most: int = 6) -> str:
    if len(names) <= most:
        return ", ".join(names)
    return ", ".join(names[:most]) + f" (+{len(names) - most})"
