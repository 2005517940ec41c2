"""`smith config`: show, get, set, path."""

from __future__ import annotations

from smith.diagnostics import Source

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from smith.cli._main import Context
    from smith.config import Config, Schema, Setting


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


def _record(setting: Setting, config: Config, schema: Schema | None = None) -> dict[str, object]:
    option = (schema or config.schema).get(setting.key)
    assert option is not None
    own = setting.key in config.schema  # smith's: also an environment variable and a flag
    secret = option.secret and setting.value is not None
    return {
        "key": setting.key,
        "value": "[secret]" if secret else setting.value,
        "layer": setting.layer,
        "source": {"surface": setting.source.surface, "location": setting.source.location},
        "type": option.type.describe(),
        "env": option.env if own else None,
        "flag": option.flag if own else None,
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
    schema = _with_plugin_option(config, args.key)
    if args.key not in schema:
        from smith.config import UNKNOWN_KEY

        raise UNKNOWN_KEY.error(
            source=Source("argument", args.key), key=args.key, hint=schema.hint(args.key)
        )
    setting = _setting(config, args.key, schema)
    literal = _literal(setting, config)
    if args.json:
        ctx.out(json.dumps(_record(setting, config, schema), indent=2))
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
    schema = _with_plugin_option(config, args.key)
    value, located = set_value(config.user_file, args.key, text, schema=schema)
    option = schema.get(args.key)
    shown = "[secret]" if option is not None and option.secret else format_value(value)
    ctx.out(f"{args.key} = {shown}  ({located.source})")
    after = ctx.config(strict=False, warn=False, fresh=True)
    winner = _setting(after, args.key, schema)
    if winner.layer in ("project", "env", "flag"):
        ctx.out(
            f"note: {winner.source} ({winner.layer}) overrides the user file for "
            f"{args.key}, so the value in effect is still {_literal(winner, after)}"
        )
    for problem in after.errors:
        ctx.print_diagnostic(problem)
    return 2 if after.errors else 0


def _setting(config: Config, key: str, schema: Schema) -> Setting:
    """The setting `key` as configuration resolves it: smith's, or a plugin's own (its
    default, from `schema`, where nothing sets it)."""
    from smith.config import Setting

    if key in config.schema:
        return config.origin(key)
    found = config.subtree("plugins").get(key.removeprefix("plugins."))
    option = schema.get(key)
    default = option.default if option is not None else None
    owner = option.owner if option is not None else "the plugin"
    return found or Setting(key, default, "default", Source("default", f"defaults of {owner}"))


def _with_plugin_option(config: Config, key: str) -> Schema:
    """smith's schema, or for a plugin's own setting (plugins.NAME.KEY, which the plugin
    declares, not smith's schema) one holding that option under its full key: the value
    is checked by the plugin's type before it is written. A key of no plugin's stays
    unknown (the error names it and the keys it may have meant)."""
    from smith.config import Option, Schema
    from smith.diagnostics import SmithError
    from smith.sdk import builtin_plugins, resolve_plugins

    if key in config.schema or not key.startswith("plugins."):
        return config.schema
    try:  # the packages too; a broken configuration (being fixed) still has the built-ins
        plugins = [p.plugin for p in resolve_plugins(config)]
    except SmithError:
        plugins = list(builtin_plugins())
    rest = key.removeprefix("plugins.")
    options = {f"plugins.{p.name}.{o.key}": (p.name, o) for p in plugins for o in p.options}
    if key not in options:  # unknown: its plugin's settings are what the hint may name
        owner = [p for p in plugins if rest.startswith(p.name + ".")]
        schema = Schema()
        for option in (o for p in owner for o in p.options):
            full = f"plugins.{owner[0].name}.{option.key}"
            schema.add(Option(full, option.type, option.default, option.doc))
        return schema if owner else config.schema
    name, option = options[key]
    schema = Schema()
    schema.add(Option(key, option.type, option.default, option.doc, owner=name,
                      nullable=option.nullable, secret=option.secret))  # fmt: skip
    return schema


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
