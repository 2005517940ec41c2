"""What the working indicator and the status line cost: over a second while the agent
works (the baseline, measured in the same run) and over a second idle after it settled.

Counted, headless at 80x24: how often each widget was drawn (`render` calls of
`WorkingLine` and `StatusLine`), how many screen updates the app produced (`App._display`
calls), and how many timers of the indicator were running. Idle, all of them should be
0: nothing changes, so nothing is drawn (issue 27: no more than a frame a second, none
when nothing changes). Working, the spinner is drawn FPS times a second.

    python benchmarks/bench_tui_idle.py
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

WINDOW = 1.0  # seconds counted in each state


async def _count(seconds: float, counts: dict[str, int]) -> dict[str, int]:
    start = dict(counts)
    await asyncio.sleep(seconds)  # a measuring window, not a synchronisation
    return {k: counts[k] - start[k] for k in counts}


def figures() -> dict[str, int]:
    from smith.effects import ToolContext
    from smith.frontends.tui._app import SmithApp
    from smith.frontends.tui._statusline import StatusLine
    from smith.frontends.tui._working import WorkingLine
    from smith.providers import End, TextDelta
    from smith.runtime import Runtime
    from smith.session import Session

    release = asyncio.Event()

    class Slow:
        name = "bench"

        def pricing(self, model: str) -> Any:
            return None

        async def stream(self, request: Any) -> Any:
            yield TextDelta("working on it")
            await release.wait()
            yield End("success")

    counts = {"indicator": 0, "status": 0, "frames": 0}

    def counted(cls: Any, name: str) -> None:
        render = cls.render

        def wrapper(self: Any) -> Any:
            counts[name] += 1
            return render(self)

        cls.render = wrapper

    counted(WorkingLine, "indicator")
    counted(StatusLine, "status")
    root = Path(tempfile.mkdtemp(prefix="smith-bench-idle-"))
    session = Session.create(str(root / "s.smith"), name="bench", cwd=str(root))

    def factory(session: Session) -> Runtime:
        ctx = ToolContext(root=str(root), cwd=str(root), session=session)
        return Runtime(session, model=(Slow(), "m"), tools=[], context=ctx)

    out: dict[str, int] = {}

    async def main() -> None:
        app = SmithApp(factory, session)
        display = app._display

        def frames(*args: Any, **kw: Any) -> Any:
            counts["frames"] += 1
            return display(*args, **kw)

        app._display = frames  # type: ignore[method-assign]
        async with app.run_test(size=(80, 24)) as pilot:
            assert app.runtime is not None
            app.runtime.prompt("go")
            await pilot.pause(0.3)
            working = await _count(WINDOW, counts)
            out.update({f"working_{k}": v for k, v in working.items()})
            out["working_timers"] = int(app.query_one(WorkingLine).timer is not None)
            release.set()
            await app.runtime.wait_idle()
            await pilot.pause(0.3)
            idle = await _count(WINDOW, counts)
            out.update({f"idle_{k}": v for k, v in idle.items()})
            out["idle_timers"] = int(app.query_one(WorkingLine).timer is not None)

    asyncio.run(asyncio.wait_for(main(), 60))
    return out


def line(f: dict[str, int]) -> str:
    return (
        f"tui idle         over {WINDOW:g} s idle: indicator drawn {f['idle_indicator']}x, "
        f"status {f['idle_status']}x, {f['idle_frames']} frames, {f['idle_timers']} timers; "
        f"working (baseline): {f['working_indicator']}x, {f['working_status']}x, "
        f"{f['working_frames']} frames, {f['working_timers']} timer"
    )


class Idle:
    """asv: measured once (setup_cache), each track_ method reads one figure."""

    def setup_cache(self) -> dict[str, int]:
        return figures()

    def track_idle_draws(self, f: dict[str, int]) -> int:
        return f["idle_indicator"] + f["idle_status"]

    def track_idle_frames(self, f: dict[str, int]) -> int:
        return f["idle_frames"]

    def track_working_draws(self, f: dict[str, int]) -> int:
        return f["working_indicator"] + f["working_status"]


if __name__ == "__main__":
    print(line(figures()))
