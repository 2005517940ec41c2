"""Runtime overhead per turn with the scripted provider.

One prompt runs TURNS provider rounds: each streams a short text (several deltas) and
one call of a no-op tool, so a turn is the full path: request building, streaming,
events, tool scheduling in a worker thread, two durable effect records, the tool result
and the assistant message in the session. The baseline, measured in the same run, is the
scripted provider streaming the same responses with nothing consuming them but a loop.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

TURNS = 100
TEXT = "Checking the next file before changing anything in it, as agreed."


def _script(directory: Path) -> str:
    step = {"text": TEXT, "tool_calls": [{"name": "noop", "arguments": {"n": 1}}]}
    path = directory / "script.json"
    path.write_text(json.dumps({"responses": [step] * (TURNS - 1) + [{"text": "done"}]}))
    return str(path)


def _noop() -> Any:
    import smith

    @smith.tool
    def noop(n: int) -> str:
        """Do nothing."""
        return "ok"

    return noop


async def _runtime_turns(script: str, directory: Path) -> tuple[float, int]:
    from smith.effects import ToolContext
    from smith.runtime import Limits, Runtime
    from smith.session import Session

    session = Session.create(str(directory / f"s-{time.monotonic_ns()}.smith"))
    ctx = ToolContext(root=str(directory), cwd=str(directory), session=session)
    rt = Runtime(session, model=f"scripted:{script}", tools=[_noop()], context=ctx,
                 limits=Limits(max_iterations=TURNS + 1))  # fmt: skip
    events = 0

    def count(event: dict[str, Any]) -> None:
        nonlocal events
        events += 1

    rt.on_event(count)
    start = time.perf_counter()
    rt.prompt("go")
    await rt.wait_idle()
    elapsed = time.perf_counter() - start
    await rt.close()
    session.close()
    return elapsed, events


async def _bare_stream(script: str) -> float:
    from smith.plugins.providers import scripted
    from smith.providers import Request

    provider = scripted.create(script)
    request = Request(model="m", messages=[])
    start = time.perf_counter()
    for _ in range(TURNS):
        async for _event in provider.stream(request):
            pass
    return time.perf_counter() - start


def figures(repeat: int = 3) -> dict[str, float]:
    directory = Path(tempfile.mkdtemp(prefix="smith-bench-"))
    try:
        script = _script(directory)
        runs = [asyncio.run(_runtime_turns(script, directory)) for _ in range(repeat)]
        elapsed, events = min(runs)
        bare = min(asyncio.run(_bare_stream(script)) for _ in range(repeat))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return {
        "turn_ms": elapsed / TURNS * 1e3,
        "events_per_s": events / elapsed,
        "stream_turn_ms": bare / TURNS * 1e3,
        "over_stream": elapsed / bare,
    }


class Turns:
    number = 1
    repeat = 1
    timeout = 300

    def setup(self) -> None:
        self.figures = figures()

    def track_ms_per_turn(self) -> float:
        return self.figures["turn_ms"]

    track_ms_per_turn.unit = "ms per turn"  # type: ignore[attr-defined]

    def track_events_per_second(self) -> float:
        return self.figures["events_per_s"]

    track_events_per_second.unit = "events/s"  # type: ignore[attr-defined]

    def track_over_bare_stream(self) -> float:
        return self.figures["over_stream"]

    track_over_bare_stream.unit = "x the bare scripted stream"  # type: ignore[attr-defined]
