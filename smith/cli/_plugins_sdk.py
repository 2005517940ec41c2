"""`smith plugins new`, `build` and `help`: writing WebAssembly plugins, through smith.wasm's
toolchains and SDK help (imported when used)."""

from __future__ import annotations

import os

from smith.diagnostics import DiagnosticKind, Source

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import Any

    from smith.cli._main import Context

BAD_NEW_NAME = DiagnosticKind(
    "cli.plugins-bad-name",
    what="{name} cannot name a plugin",
    why="a plugin's name is a letter, then letters, digits, '-' or '_' (64 at most): it "
    "names its /command, its folder and its settings",
    fix="choose such a name, e.g. `smith plugins new hello1`",
)


# -- new, build, help (smith.wasm) --------------------------------------------------------


def new(args: argparse.Namespace, ctx: Context) -> int:
    from smith.packages import valid_name

    if not valid_name(args.name):
        raise BAD_NEW_NAME.error(value=args.name, source=Source("argument", "smith plugins new"),
                                 name=args.name)  # fmt: skip
    dest = os.path.abspath(args.dir or ctx.cwd)
    made = wasm("scaffold")(args.name, args.lang, dest)
    ctx.out(f"made {made}")
    ctx.out(f"build it: smith plugins build {made}")
    ctx.out(f"then install it: smith plugins install {made}")
    return 0


def build(args: argparse.Namespace, ctx: Context) -> int:
    folder = os.path.abspath(args.dir or ctx.cwd)

    def say(text: str) -> None:
        ctx.stderr.write(text.rstrip("\n") + "\n")

    # zig keeps what it builds once (its C library: about half a minute) in smith's
    # cache directory, not under HOME.
    cache_home = str(ctx.config(strict=False, warn=False)["cache-home"])
    built = wasm("build_package")(folder, say, cache_home=cache_home)
    ctx.out(f"built {built}")
    return 0


def help_topic(args: argparse.Namespace, ctx: Context) -> int:
    ctx.out(str(wasm("sdk_help")(args.topic)))
    return 0


def wasm(name: str) -> Callable[..., Any]:
    """smith.wasm's `name` (scaffold, build_package, sdk_help), imported when used."""
    import smith.wasm

    found: Callable[..., Any] = getattr(smith.wasm, name)
    return found
