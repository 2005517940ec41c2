"""`smith debug`: facts about this smith itself: how its compiled core was built, and
where one turn's memory goes (`smith debug memory`, smith.memory)."""

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
    memory = actions.add_parser(
        "memory",
        help="run one prompt and show its memory by scope (process, session, turn, ...)",
        description="Runs PROMPT through the runtime, as `smith eval --no-session` does, with "
        "memory accounting on, then prints one row per scope: allocations, frees, live "
        "blocks, bytes allocated, live and peak bytes, ceiling crossings.",
    )
    memory.add_argument("prompt", metavar="PROMPT", nargs="+", help="what to ask")
    memory.add_argument("--json", action="store_true", help="one JSON record per scope")


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
        from smith.cli._memory import run_memory

        return run_memory(args, ctx)
    return _build(args, ctx)
