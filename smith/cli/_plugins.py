"""`smith plugins`: the plugin list every mode loads (`list`, `info`), the installed packages
(`install`, `remove`, `update`: smith.packages' store in $SMITH_HOME/plugins), turning any
plugin off or on (`disable`, `enable`: plugins.disabled in the user's config.kdl, one
mechanism for the built-ins and the packages), and writing WebAssembly plugins (`new`,
`build`, `help`: smith.wasm's toolchains and SDK help)."""

from __future__ import annotations

import os
import sys

from smith.diagnostics import DiagnosticKind, SmithError, Source, did_you_mean

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from smith.cli._main import Context
    from smith.config import Block, Config, Located
    from smith.packages import PackageManifest
    from smith.sdk import LoadedPlugin, PluginList

INSTALL_NEEDS_YES = DiagnosticKind(
    "cli.plugins-install-unconfirmed",
    what="not installing {name}: nobody confirmed it (this is no terminal to ask on)",
    why="installing a package gives it what it asks for (shown above), so smith asks first",
    fix="read what it asks for and run `smith plugins {action} {source_arg} --yes`",
)
INSTALL_DECLINED = DiagnosticKind(
    "cli.plugins-install-declined",
    what="not installing {name}: the answer was no",
    why="installing a package gives it what it asks for, so smith asks first",
    fix="run `smith plugins install` again and answer y, or pass --yes",
)
PACKAGE_UNKNOWN = DiagnosticKind(
    "cli.plugins-unknown",
    what="{name} is no {what}",
    why="the {what}s are {known}",
    fix="{hint}; `smith plugins list` lists the plugins",
)
BUILTIN_NAME = DiagnosticKind(
    "cli.plugins-builtin-name",
    what="{name} is a plugin built into smith: {action} only takes installed packages",
    why="built-in plugins come with smith and cannot be installed, replaced or removed",
    fix="{remedy} ({action} leaves the built-ins as they are)",
)
RENAME_IT = "give the package another name in its plugin.kdl (the built-ins' names are taken)"
CANNOT_DISABLE = DiagnosticKind(
    "cli.plugins-cannot-disable",
    what="{name} cannot be turned off: {reason}",
    why="smith checked its plugins with {name} off and refused it: {why}",
    fix="leave {name} on: {file} was put back as it was",
)
MODULE_MISSING = DiagnosticKind(
    "cli.plugins-module-missing",
    what="{name}'s plugin.kdl names the module {module}, which is not in the package",
    why="a package with code is installed built: smith runs the module, not its source",
    fix="build it first (`smith plugins build {root}`), then install it",
)
DISABLED_ELSEWHERE = DiagnosticKind(
    "cli.plugins-disabled-elsewhere",
    what="{name} is disabled by plugins.disabled at {where}, which `smith plugins enable` "
    "does not edit",
    why="enable and disable edit the user's configuration file ({user_file}) only",
    fix="remove {name} from plugins.disabled at {where}",
)
UPDATE_SOURCE_GONE = DiagnosticKind(
    "cli.plugins-update-source-gone",
    what="cannot update {name}: it was installed from {origin}, and nothing is there now",
    why="update installs a package again from where it came from (recorded in {index})",
    fix="install it from where it is now (`smith plugins install PATH`), or keep it as it "
    "is; `smith plugins remove {name}` takes it out",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = actions.add_parser(
        "list", help="every plugin: version, source, state and what it contributes"
    )
    ls.add_argument("--json", action="store_true", help="print the same as JSON")
    install = actions.add_parser(
        "install", help="install a package from a directory, an archive or a git repository"
    )
    install.add_argument("source", metavar="SOURCE", help="DIR, ARCHIVE, or a git URL[@REF]")
    install.add_argument("--ref", help="the git branch, tag or commit to install")
    install.add_argument("--yes", "-y", action="store_true", help="install without asking")
    for action, what in (
        ("remove", "remove an installed package"),
        ("enable", "turn a plugin back on (plugins.disabled)"),
        ("disable", "turn a plugin off (plugins.disabled in config.kdl)"),
    ):
        actions.add_parser(action, help=what).add_argument("name", metavar="NAME")
    info = actions.add_parser("info", help="one plugin: what it is, brings and asks for")
    info.add_argument("name", metavar="NAME")
    info.add_argument("--json", action="store_true", help="print the same as JSON")
    update = actions.add_parser("update", help="install packages again from where they came from")
    update.add_argument("name", nargs="?", metavar="NAME", help="one package (default: all)")
    update.add_argument("--yes", "-y", action="store_true", help="update without asking")
    new = actions.add_parser("new", help="make a WebAssembly plugin's source folder")
    new.add_argument("name", metavar="NAME")
    new.add_argument(
        "--lang",
        choices=("python", "c", "zig"),
        default="python",
        help="the guest language: python (componentize-py), c or zig (ziglang)",
    )
    new.add_argument("--dir", metavar="D", help="where to make NAME/ (default: here)")
    build = actions.add_parser("build", help="build a plugin's WebAssembly module")
    build.add_argument("dir", nargs="?", metavar="DIR", help="the plugin's folder (default: here)")
    sdk = actions.add_parser("help", help="the plugin SDK: events, actions, host functions")
    sdk.add_argument("topic", nargs="?", metavar="TOPIC")


def run(args: argparse.Namespace, ctx: Context) -> int:
    from smith.cli import _plugins_sdk as sdk

    handler = {
        "list": _list,
        "install": _install,
        "remove": _remove,
        "enable": _enable,
        "disable": _disable,
        "info": _info,
        "update": _update,
        "new": sdk.new,
        "build": sdk.build,
        "help": sdk.help_topic,
    }[args.action]
    return handler(args, ctx)


def _plugins(ctx: Context) -> PluginList:
    from smith.sdk import resolve_plugins

    plugins = resolve_plugins(ctx.config(warn=True))
    for warning in plugins.warnings:
        ctx.print_diagnostic(warning)
    return plugins


def _list(args: argparse.Namespace, ctx: Context) -> int:
    import json

    plugins = _plugins(ctx)
    broken = _broken(plugins)
    if args.json:
        data = plugins.to_dict()
        data["plugins"] = [*data["plugins"], *broken]  # type: ignore[misc]
        ctx.out(json.dumps(data, indent=2))
        return 0
    rows = [("PLUGIN", "VERSION", "SOURCE", "STATE", "STATUS", "CONTRIBUTES")]
    rows += [_row(p) for p in plugins]
    rows += [(str(b["name"]), "?", str(b["source"]), "broken", "not loaded", "-") for b in broken]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(w) for cell, w in zip(row, widths, strict=False)]
        ctx.out("  ".join([*cells, row[-1]]).rstrip())
    for item in plugins:
        if item.disabled_by is not None:
            ctx.out(f"{item.name} is disabled by plugins.disabled at {item.disabled_by}")
    return 0


def _broken(plugins: PluginList) -> list[dict[str, object]]:
    """The packages found but not loaded (plugin.package-broken warnings), as list
    entries: state "broken", the reason, where."""
    return [
        {"name": _unquoted(w.value or ""), "version": "",
         "source": w.source.location if w.source else "", "state": "broken",
         "enabled": False, "status": "not loaded", "reason": w.what}
        for w in plugins.warnings
        if w.code == "plugin.package-broken"
    ]  # fmt: skip


def _unquoted(shown: str) -> str:
    """A diagnostic's value as it was (values are shown quoted)."""
    return shown[1:-1] if len(shown) > 1 and shown[0] == shown[-1] and shown[0] in "\"'" else shown


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


# -- install, update, remove --------------------------------------------------------------


def _builtin_names() -> list[str]:
    from smith.sdk import builtin_manifests

    return [m.name for m in builtin_manifests()]


def _describe(ctx: Context, package: PackageManifest, origin: str) -> None:
    from smith.packages import bundled

    say = ctx.stderr.write
    say(f"{package.name} {package.version} from {origin}\n")
    if package.description:
        say(f"  {package.description}\n")
    for line in bundled(package):
        say(f"  brings {line}\n")
    lines = package.asks()
    if lines:
        say("  asks to:\n")
    elif package.has_code:
        say("  asks for no grants: its module can reach nothing outside its sandbox\n")
    else:
        say("  asks for no grants (it has no module; hooks and MCP servers run sandboxed)\n")
    for line in lines:
        say(f"    - {line}\n")
    for note in package.notes:
        say(f"  note: {note}\n")


def _changed_asks(ctx: Context, before: object, now: list[str]) -> None:
    """Say what the new version asks for that the installed one did not, and what it no
    longer asks for (what the user approved is in the store's record)."""
    was = [str(line) for line in before] if isinstance(before, list) else []
    more = [line for line in now if line not in was]
    fewer = [line for line in was if line not in now]
    if more:
        ctx.stderr.write("  asks for more than the installed version:\n")
        ctx.stderr.writelines(f"    + {line}\n" for line in more)
    if fewer:
        ctx.stderr.write("  no longer asks to:\n")
        ctx.stderr.writelines(f"    - {line}\n" for line in fewer)


def _confirm(ctx: Context, package: PackageManifest, action: str, source: str, yes: bool) -> None:
    if yes:
        return
    where = Source("argument", f"smith plugins {action}")
    stdin = sys.stdin
    if stdin is None or not stdin.isatty():
        raise INSTALL_NEEDS_YES.error(source=where, name=package.name, action=action,
                                      source_arg=source)  # fmt: skip
    ctx.stderr.write(f"{action} {package.name}? [y/N] ")
    ctx.stderr.flush()
    if stdin.readline().strip().lower() not in ("y", "yes"):
        raise INSTALL_DECLINED.error(source=where, name=package.name)


def _fetch_and_install(
    ctx: Context, config: Config, source: str, ref: str | None, yes: bool, action: str,
    expect: str | None = None, known_hash: str = "",
) -> str:  # fmt: skip
    """Fetch `source`, copy it where only this run writes, show that copy, ask, install
    that copy (so what is installed is what was shown, however the source changes
    meanwhile): what happened, one line."""
    import shutil
    import tempfile

    from smith.packages import Store, content_hash, fetch, read_package

    store = Store(config.home)
    scratch = tempfile.mkdtemp(prefix="smith-package-")
    try:
        fetched = fetch(source, ref, scratch)
        copy = os.path.join(scratch, "package")
        store.snapshot(fetched.root, copy)  # refuses links out and FIFOs before asking
        read_package(fetched.root, ctx.print_diagnostic)  # what is wrong, named where it is
        package = read_package(copy)  # what is shown, asked about and installed
        where = Source("argument", source)
        if package.name in _builtin_names():
            raise BUILTIN_NAME.error(value=package.name, source=where, name=package.name,
                                     action=f"smith plugins {action}",
                                     remedy=RENAME_IT)  # fmt: skip
        if expect is not None and package.name != expect:
            raise PACKAGE_UNKNOWN.error(value=package.name, source=where, name=package.name,
                                        what=f"name of the package {expect} came from",
                                        known=expect, hint=f"{source} now holds "
                                        f"{package.name}: install it by that name")  # fmt: skip
        if package.module and not os.path.isfile(os.path.join(copy, package.module)):
            raise MODULE_MISSING.error(value=package.module, source=where, name=package.name,
                                       module=package.module, root=fetched.source)  # fmt: skip
        target = store.path(package.name)
        if known_hash and content_hash(copy) == known_hash and _intact(target, known_hash):
            return f"{package.name} is up to date ({package.version})"
        origin = fetched.source + (f" at {fetched.ref}" if fetched.ref else "")
        origin += f" (commit {fetched.commit[:12]})" if fetched.commit else ""
        _describe(ctx, package, origin)
        old = store.records().get(package.name)
        if old is not None:
            ctx.stderr.write(f"  replaces {package.name} {old.get('version', '?')} "
                             f"installed from {old.get('source', '?')}\n")  # fmt: skip
            _changed_asks(ctx, old.get("grants"), package.asks())
        _confirm(ctx, package, action, expect or source, yes)
        record: dict[str, object] = {"source": fetched.source, "ref": fetched.ref,
                                     "commit": fetched.commit, "from": fetched.kind}  # fmt: skip
        if old is not None and _same_path(fetched.source, target):
            # installed again from its own copy: it still came from where it came from
            record = {k: old.get(k, "") for k in ("source", "ref", "commit", "from")}
        with store.locked():
            staging = store.stage(copy)
            try:
                copied = _rooted(read_package(staging), target)
                target = store.install(staging, copied, record)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
        _precompile(ctx, copied, str(config["cache-home"]), config.home)
        return f"installed {package.name} {package.version} in {target}"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _intact(target: str, known_hash: str) -> bool:
    """Whether the installed copy at `target` is still what was installed."""
    from smith.packages import content_hash

    try:
        return os.path.isdir(target) and content_hash(target) == known_hash
    except OSError:
        return False


def _same_path(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _rooted(package: PackageManifest, root: str) -> PackageManifest:
    import dataclasses

    return dataclasses.replace(package, root=root)


def _precompile(ctx: Context, package: PackageManifest, cache_home: str, home: str) -> None:
    """Compile an installed module into the host's cache now, so that the first run
    after install does not wait for it; a failure is said and is no error."""
    if not package.module:
        return
    try:
        import smith.wasm

        module = os.path.join(package.root, package.module)
        smith.wasm.precompile(module, cache_home=cache_home, home=home)
    except Exception as exc:  # the host says what is wrong when it loads the plugin
        ctx.stderr.write(f"note: {package.name}'s module was not compiled ahead: {exc}\n")


def _install(args: argparse.Namespace, ctx: Context) -> int:
    config = ctx.config()
    ctx.out(_fetch_and_install(ctx, config, args.source, args.ref, args.yes, "install"))
    return 0


def _update(args: argparse.Namespace, ctx: Context) -> int:
    from smith.packages import Store

    config = ctx.config()
    store = Store(config.home)
    records = store.records()
    names = [args.name] if args.name else sorted(records)
    if args.name and args.name not in records:
        raise _unknown(args.name, list(records), "installed package", "update")
    if not names:
        ctx.out("no packages are installed")
    failed: list[str] = []
    for name in names:  # one that fails is said, and the others are still updated
        record = records[name]
        source, ref = str(record.get("source", "")), str(record.get("ref", "") or "") or None
        try:
            if source.startswith("/") and not os.path.lexists(source):  # a path, gone
                raise UPDATE_SOURCE_GONE.error(value=source, source=Source("file", store.index),
                                               name=name, origin=source,
                                               index=store.index)  # fmt: skip
            line = _fetch_and_install(ctx, config, source, ref, args.yes, "update", expect=name,
                                      known_hash=str(record.get("sha256", "")))  # fmt: skip
        except SmithError as exc:
            if args.name:
                raise
            for problem in getattr(exc, "diagnostics", [exc.diagnostic]):
                ctx.print_diagnostic(problem)
            failed.append(name)
            continue
        ctx.out(line)
    if failed:
        ctx.out(f"not updated: {', '.join(failed)} (said above why)")
        return 1
    return 0


def _unknown(name: str, known: Sequence[str], what: str, action: str) -> Exception:
    return PACKAGE_UNKNOWN.error(
        value=name,
        source=Source("argument", f"smith plugins {action}"),
        name=name,
        what=what,
        known=", ".join(known) or "none",
        hint=did_you_mean(name, list(known), otherwise="check the name"),
    )


def _remove(args: argparse.Namespace, ctx: Context) -> int:
    from smith.packages import Store

    config = ctx.config()
    name = args.name
    if name in _builtin_names():
        raise BUILTIN_NAME.error(value=name, source=Source("argument", name), name=name,
                                 action="smith plugins remove",
                                 remedy=f"turn it off with `smith plugins disable {name}` "
                                 "instead")  # fmt: skip
    store = Store(config.home)
    store.path(name)  # refuses what is no package name (a path, '..') before anything
    with store.locked():
        record = store.remove(name)
    if record is None:
        raise _unknown(name, sorted(store.records()), "installed package", "remove")
    _undisable(config, name)  # a name that is gone need not stay turned off
    ctx.out(f"removed {name} {record.get('version', '')}".rstrip())
    return 0


# -- enable, disable ------------------------------------------------------------------------


def _disable(args: argparse.Namespace, ctx: Context) -> int:
    from smith.config import add_value

    config = ctx.config()
    name = _known_plugin(ctx, args.name, "disable")
    _, located = add_value(config.user_file, "plugins.disabled", name)
    try:
        _plugins_fresh(ctx)  # refuses turning off what smith cannot run without
    except SmithError as exc:
        _undisable(config, name)  # the file is as it was: say so, not where it was set
        raise CANNOT_DISABLE.error(value=name, source=Source("argument", "smith plugins disable"),
                                   name=name, reason=exc.diagnostic.what, why=exc.diagnostic.why,
                                   file=config.user_file) from None  # fmt: skip
    except Exception:
        _undisable(config, name)
        raise
    ctx.out(f"disabled {name} (plugins.disabled at {located.path}:{located.line})")
    return 0


def _enable(args: argparse.Namespace, ctx: Context) -> int:
    config = ctx.config()
    name = _known_plugin(ctx, args.name, "enable")
    setting = config.origin("plugins.disabled")
    names = [str(v) for v in setting.value] if isinstance(setting.value, list) else []
    if name not in names:
        ctx.out(f"{name} is enabled")
        return 0
    location = setting.source.location
    if setting.layer != "user":
        raise DISABLED_ELSEWHERE.error(value=name, source=setting.source, name=name,
                                       where=location, user_file=config.user_file)  # fmt: skip
    _undisable(config, name)
    ctx.out(f"enabled {name}")
    return 0


def _known_plugin(ctx: Context, name: str, action: str) -> str:
    known = [p.name for p in _plugins(ctx)]
    if name not in known:
        raise _unknown(name, known, "plugin", action)
    return name


def _plugins_fresh(ctx: Context) -> None:
    from smith.sdk import resolve_plugins

    resolve_plugins(ctx.config(warn=False, fresh=True))


def _undisable(config: Config, name: str) -> None:
    """Take `name` out of plugins.disabled in the user's file (where it is there)."""
    from smith.config import format_value, rewrite

    if not os.path.exists(config.user_file):
        return

    def change(text: str, settings: list[Located], blocks: list[Block]) -> str:
        spans: list[tuple[int, int, str]] = []
        for s in settings:
            if s.key != "plugins.disabled":
                continue
            items = [str(v) for v in s.value] if isinstance(s.value, list) else [str(s.value)]
            if name not in items:
                continue
            rest = [i for i in items if i != name]
            if rest:
                spans.append((s.start, s.end, format_value(rest)))
            else:
                spans.append(_node_span(blocks, s.start))
        for start, end, new in sorted(spans, reverse=True):
            text = text[:start] + new + text[end:]
        return text

    def check(before: list[Located], after: list[Located]) -> str | None:
        for s in after:
            values = s.value if isinstance(s.value, list) else [s.value]
            if s.key == "plugins.disabled" and name in values:
                return f"{name} is still in plugins.disabled"
        return None

    rewrite(config.user_file, change, check)


def _node_span(blocks: list[Block], offset: int) -> tuple[int, int, str]:
    """The span to cut to take out the node holding the value at `offset`: that node,
    or its enclosing block when the node is all the block holds."""
    chain: list[Block] = []
    level = blocks
    while True:
        inner = next((b for b in level if b.start <= offset < b.end), None)
        if inner is None:
            break
        chain.append(inner)
        level = inner.children
    node = chain[-1]
    for parent in reversed(chain[:-1]):
        if len(parent.children) == 1 and not parent.valued:
            node = parent
        else:
            break
    return node.start, node.end, ""


# -- info -----------------------------------------------------------------------------------


def _info(args: argparse.Namespace, ctx: Context) -> int:
    import json

    from smith.packages import Store, bundled, read_package

    config = ctx.config()
    plugins = _plugins(ctx)
    item = next((p for p in plugins if p.name == args.name), None)
    broken = next((b for b in _broken(plugins) if b["name"] == args.name), None)
    if item is None and broken is not None:
        if args.json:
            ctx.out(json.dumps(broken, indent=2))
        else:
            ctx.out(f"{args.name} (broken: not loaded)\n  {broken['reason']}")
            ctx.out(f"  source: {broken['source']}")
        return 0
    if item is None:
        raise _unknown(args.name, [p.name for p in plugins], "plugin", "info")
    data = item.to_dict()
    record = None
    if item.manifest.loader == "package":  # a built-in's info never reads the store
        try:
            record = Store(config.home).records().get(item.name)
        except SmithError as exc:  # said, and the rest of its info still shown
            ctx.print_diagnostic(exc.diagnostic)
    package = read_package(item.manifest.entry) if item.manifest.loader == "package" else None
    if package is not None:
        data["description"] = package.description
        data["brings"] = bundled(package)
        data["notes"] = list(package.notes)
        data["grants"] = package.asks()
    if record is not None:
        data["installed"] = record
    if args.json:
        ctx.out(json.dumps(data, indent=2, default=str))
        return 0
    ctx.out(f"{item.name} {item.version} ({item.state})")
    if package is not None and package.description:
        ctx.out(f"  {package.description}")
    ctx.out(f"  source: {item.source}")
    if record is not None:
        origin = str(record.get("source", "?"))
        if record.get("ref"):
            origin += f" at {record['ref']}"
        if record.get("commit"):
            origin += f" (commit {str(record['commit'])[:12]})"
        ctx.out(f"  installed from {origin} on {record.get('installed_at', '?')}")
        ctx.out(f"  content sha256 {record.get('sha256', '?')}")
    for line in data.get("brings", []) if package is not None else []:  # type: ignore[attr-defined]
        ctx.out(f"  brings {line}")
    grants = data.get("grants") or []
    ctx.out("  grants: " + ("; ".join(map(str, grants)) if grants else "none"))  # type: ignore[call-overload]
    for kind, names in (item.manifest.contributions or {}).items():
        ctx.out(f"  {kind.replace('_', ' ')}: {', '.join(names)}")
    for note in package.notes if package is not None else ():
        ctx.out(f"  note: {note}")
    if item.disabled_by is not None:
        ctx.out(f"  disabled by plugins.disabled at {item.disabled_by}")
    return 0
