"""`smith config`: show, get, set, path."""

from __future__ import annotations

from smith.diagnostics import Source

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from smith.cli._main import Context
    from smith.config import Config, Setting


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    show = actions.add_parser("show", help="every setting: value, layer and source (default)")
    show.add_argument("--json", action="store_true", help="print the same as JSON")
    get = actions.add_parser("get", help="print one setting's value")
    get.add_argument("key", metavar="KEY")
    get.add_argument("--json", action="store_true", help="print value, layer and source as JSON")
    put = actions.add_parser("set", help="store a setting in the user configuration file")
    put.add_argument("key", metavar="KEY")
    put.add_argument("value", metavar="VALUE", help="text, parsed by the setting's type")
    where = actions.add_parser("path", help="where configuration files are, and which apply")
    where.add_argument("--json", action="store_true", help="print the same as JSON")


def _literal(setting: Setting, config: Config) -> str:
    from smith.config import format_value

    option = config.schema.get(setting.key)
    if option is not None and option.secret and setting.value is not None:
        return "[secret]"
    return format_value(setting.value)


VALUE_MAX = 60  # characters of a value `config show` prints; `config get` prints it whole
COLUMN_MAX = 40  # a column is padded to at most this


def _cut(literal: str) -> str:
    """A value as `config show` lists it: a long one cut, with a marker saying so."""
    if len(literal) <= VALUE_MAX:
        return literal
    return f"{literal[: VALUE_MAX - 20]}… ({len(literal):,} characters)"


def _record(setting: Setting, config: Config) -> dict[str, object]:
    option = config.schema.get(setting.key)
    assert option is not None
    secret = option.secret and setting.value is not None
    return {
        "key": setting.key,
        "value": "[secret]" if secret else setting.value,
        "layer": setting.layer,
        "source": {"surface": setting.source.surface, "location": setting.source.location},
        "type": option.type.describe(),
        "env": option.env,
        "flag": option.flag,
        "doc": option.doc,
    }


def _show(args: argparse.Namespace, ctx: Context) -> int:
    import json

    from smith.sdk import resolve_plugins

    config = ctx.config(warn=not getattr(args, "json", False))
    # The plugins check their own settings (plugins.NAME.KEY): their warnings too.
    plugin_warnings = resolve_plugins(config).warnings
    if getattr(args, "json", False):
        data = {
            "settings": [_record(s, config) for s in config],
            "files": _files(config),
            "warnings": [w.to_dict() for w in (*config.warnings, *plugin_warnings)],
        }
        ctx.out(json.dumps(data, indent=2))
        return 0
    for warning in plugin_warnings:
        ctx.print_diagnostic(warning)
    rows = [
        (
            s.key,
            _cut(_literal(s, config)),
            s.layer,
            "" if s.layer == "default" else s.source.location,
        )
        for s in config
    ]
    # Columns as wide as their widest cell, up to a bound: one long key or value (a 10 MB
    # string) must not pad every other row to its width.
    widths = [min(max(len(row[i]) for row in rows), COLUMN_MAX) for i in range(3)]
    for key, value, layer, where in rows:
        ctx.out(f"{key:<{widths[0]}}  {value:<{widths[1]}}  {layer:<{widths[2]}}  {where}".rstrip())
    return 0


def _get(args: argparse.Namespace, ctx: Context) -> int:
    import json

    config = ctx.config()
    if args.key not in config.schema:
        from smith.config import UNKNOWN_KEY

        raise UNKNOWN_KEY.error(
            source=Source("argument", args.key), key=args.key, hint=config.schema.hint(args.key)
        )
    setting = config.origin(args.key)
    literal = _literal(setting, config)
    if args.json:
        ctx.out(json.dumps(_record(setting, config), indent=2))
    elif isinstance(setting.value, str) and literal != "[secret]":
        ctx.out(setting.value)  # plain text, for shell use: $(smith config get model)
    else:
        ctx.out(literal)
    return 0


def _set(args: argparse.Namespace, ctx: Context) -> int:
    from smith.config import format_value, set_value
    from smith.text import TEXT_REPLACED, replace_surrogates

    # Tolerant: `config set` is how a broken configuration gets fixed.
    config = ctx.config(strict=False, warn=False)
    # A byte that is not UTF-8 arrives as a lone surrogate, which no file can hold.
    text, replaced = replace_surrogates(args.value)
    if replaced:
        ctx.print_diagnostic(TEXT_REPLACED(count=replaced, where=f"the value of {args.key}"))
    value, located = set_value(config.user_file, args.key, text)
    option = config.schema.get(args.key)
    shown = "[secret]" if option is not None and option.secret else format_value(value)
    ctx.out(f"{args.key} = {shown}  ({located.source})")
    after = ctx.config(strict=False, warn=False, fresh=True)
    winner = after.origin(args.key)
    if winner.layer in ("project", "env", "flag"):
        ctx.out(
            f"note: {winner.source} ({winner.layer}) overrides the user file for "
            f"{args.key}, so the value in effect is still {_literal(winner, after)}"
        )
    for problem in after.errors:
        ctx.print_diagnostic(problem)
    return 2 if after.errors else 0


def _files(config: Config) -> dict[str, object]:
    import os

    return {
        "user": config.user_file,
        "user_exists": os.path.exists(config.user_file),
        "project_root": config.project_root,
        "project": config.project_file,
        "project_exists": os.path.exists(config.project_file),
        "project_trusted": config.project_trusted,
        "home": config.home,
    }


def _path(args: argparse.Namespace, ctx: Context) -> int:
    import json

    files = _files(ctx.config(strict=False, warn=not args.json))
    if args.json:
        ctx.out(json.dumps(files, indent=2))
        return 0
    user_state = "exists" if files["user_exists"] else "not created yet"
    if not files["project_exists"]:
        project_state = "none"
    elif files["project_trusted"]:
        project_state = "applied (trusted)"
    else:
        project_state = "ignored until `smith trust`"
    ctx.out(f"user config     {files['user']}  ({user_state})")
    ctx.out(f"project config  {files['project']}  ({project_state})")
    ctx.out(f"data directory  {files['home']}")
    return 0


def run(args: argparse.Namespace, ctx: Context) -> int:
    action = args.action or "show"
    handler = {"show": _show, "get": _get, "set": _set, "path": _path}[action]
    return handler(args, ctx)
