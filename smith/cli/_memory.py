"""`smith debug memory PROMPT`: one prompt through the runtime with memory accounting
on, then the figures of every scope (smith.memory, docs/memory.md).

The run records in a temporary session store under `$SMITH_HOME/tmp/`, removed after,
as `smith eval --no-session` does: the command is about the figures, not the session.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from smith.cli._main import Context
    from smith.runtime import Assembly
    from smith.session import Session

COLUMNS = ("scope", "kind", "state", "count", "blocks", "allocated", "live", "peak", "hits")
LATE = (
    "smith: memory accounting started late (after the command was parsed); the process "
    "row misses what came before"
)


def run_memory(args: argparse.Namespace, ctx: Context) -> int:
    import asyncio
    import logging
    import shutil
    import tempfile

    from smith import memory
    from smith._atomic import private_dirs
    from smith.runtime import build
    from smith.session import SessionStore

    if memory.install():  # `smith debug memory` turns it on at start; not in-process callers
        print(LATE, file=ctx.stderr)
    if not memory.enabled():  # refused: tracemalloc was tracing first
        raise memory.MEMORY_UNAVAILABLE.error()
    text = " ".join(args.prompt)
    config = ctx.config()
    assembly = build(config, cwd=ctx.cwd, surface="library", warn=ctx.print_diagnostic, env=ctx.env)
    parent = os.path.join(config.home, "tmp")
    private_dirs(parent, config.home)  # owner-only, as everything under SMITH_HOME
    scratch = tempfile.mkdtemp(prefix="memory-", dir=parent)
    # Ceiling crossings are said once, from the report at the end, not as scopes end.
    log, mute = logging.getLogger("smith.memory"), logging.NullHandler()
    propagate, log.propagate = log.propagate, False
    log.addHandler(mute)
    try:
        with SessionStore(scratch).create(name="debug memory", cwd=config.project_root) as s:
            stop = asyncio.run(_one_prompt(assembly, s, text))
    finally:
        log.removeHandler(mute)
        log.propagate = propagate
        shutil.rmtree(scratch, ignore_errors=True)
    records = memory.report()
    for warning in memory.ceiling_warnings(records):
        ctx.print_diagnostic(warning)
    if args.json:
        for record in records:
            ctx.out(json.dumps(record))
    else:
        ctx.out(table(records))
    if stop not in ("end", "done"):
        print(f"smith: the agent stopped: {stop}", file=ctx.stderr)
        return 1
    return 0


async def _one_prompt(assembly: Assembly, session: Session, text: str) -> str:
    runtime = assembly.runtime(session)
    final: dict[str, Any] = {}
    runtime.on_event(lambda ev: final.update(ev) if ev["type"] == "agent_end" else None)
    try:
        runtime.prompt(text)
        await runtime.wait_idle()
    finally:
        await runtime.close()
    return str(final.get("stop", "error"))


def _size(n: object) -> str:
    if not isinstance(n, int):
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return str(n)


def table(records: list[dict[str, object]]) -> str:
    """The records as aligned columns, bytes in binary units."""
    rows = [list(COLUMNS)]
    for r in records:
        rows.append(
            [
                str(r["scope"]),
                str(r["kind"]),
                str(r["state"]),
                f"{r['count']:,}",
                f"{r['blocks']:,}",
                _size(r["allocated"]),
                _size(r["live"]),
                _size(r["peak"]),
                str(r["ceiling_hits"]),
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = []
    for row in rows:
        cells = [
            cell.ljust(w) if i < 3 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)
