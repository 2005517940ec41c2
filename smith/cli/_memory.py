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
    records = memory.report() + stop[1]
    for warning in memory.ceiling_warnings(records):
        ctx.print_diagnostic(warning)
    if args.json:
        for record in records:
            ctx.out(json.dumps(record))
    else:
        ctx.out(table(records))
    if stop[0] not in ("end", "done"):
        print(f"smith: the agent stopped: {stop[0]}", file=ctx.stderr)
        return 1
    return 0


async def _one_prompt(
    assembly: Assembly, session: Session, text: str
) -> tuple[str, list[dict[str, object]]]:
    """How the agent stopped, and a record of each WebAssembly plugin's instance as the
    prompt left it (taken before the runtime closes and drops the instances)."""
    runtime = assembly.runtime(session)
    final: dict[str, Any] = {}

    def ended(ev: dict[str, Any]) -> None:
        if ev["type"] == "agent_end":
            final.update(ev)
        elif ev["type"] == "input_handled":  # a command: no turn, and how it went
            error = ev.get("error")
            final["stop"] = f"{ev.get('text', '')} failed: {error}" if error else "done"

    runtime.on_event(ended)
    try:
        runtime.prompt(text)
        await runtime.wait_idle()
        instances = wasm_records()
    finally:
        await runtime.close()
    return str(final.get("stop", "error")), instances


def wasm_records() -> list[dict[str, object]]:
    """A record per WebAssembly plugin made in this process, in memory.report()'s form:
    its instance's linear memory (wasmtime maps it outside Python's allocators, so
    smith.memory's scopes cannot count it) resident now as live, allocated and peak,
    its memory limit as the ceiling (a call that would pass it fails: a fault, counted
    in faults), its calls as count and the instances it made as blocks."""
    import sys

    if "smith.wasm" not in sys.modules:  # no plugin of this run has a module
        return []
    from smith.wasm import usage

    records: list[dict[str, object]] = []
    for used in usage():
        resident = used["memory"] if isinstance(used["memory"], int) else None
        records.append({
            "scope": f"plugin {used['plugin']}", "kind": "wasm-instance",
            "state": "disabled" if used["disabled"] else "open", "count": used["calls"],
            "frees": 0, "blocks": used["instances"], "allocated": resident, "live": resident,
            "peak": resident, "ceiling": used["memory_limit"], "ceiling_hits": 0,
            "faults": used["faults"],
        })  # fmt: skip
    return records


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
