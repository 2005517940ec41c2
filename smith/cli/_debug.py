"""`smith debug`: facts about this smith itself."""

from __future__ import annotations

import argparse

from smith.diagnostics import DiagnosticKind

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.cli._main import Context

NO_EXTENSIONS = DiagnosticKind(
    "debug.no-extensions",
    what="smith's compiled extensions are not importable: {error}",
    why="the Cython core was not built for this interpreter, or the build failed",
    fix="reinstall from the checkout with `pip install -e '.[dev]'` (it builds the "
    "extensions) and read the compiler output if it fails",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    build = actions.add_parser("build", help="how the compiled core was built")
    build.add_argument("--json", action="store_true", help="print the same as JSON")
    memory = actions.add_parser("memory", help="per-scope memory accounting (not built yet)")
    memory.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)


def _build(args: argparse.Namespace, ctx: Context) -> int:
    import platform

    import smith

    try:
        from smith._fast import _buildinfo
    except ImportError as exc:
        raise NO_EXTENSIONS.error(error=str(exc)) from exc
    info = {
        "version": smith.__version__,
        "python": platform.python_version(),
        "variant": _buildinfo.variant(),
        "line_trace": _buildinfo.line_trace,
        "debug": _buildinfo.debug,
        "c_assertions": _buildinfo.c_assertions,
        "compiler": _buildinfo.compiler,
        "cython": _buildinfo.cython_version,
        "extension": _buildinfo.__file__,
    }
    if args.json:
        import json

        ctx.out(json.dumps(info, indent=2))
    else:
        for key, value in info.items():
            ctx.out(f"{key:<13} {value}")
    return 0


def run(args: argparse.Namespace, ctx: Context) -> int:
    if args.action == "memory":
        from smith.cli._main import NOT_BUILT

        raise NOT_BUILT.error(what="`smith debug memory`", capability="memory accounting")
    return _build(args, ctx)
