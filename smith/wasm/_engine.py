"""The wasmtime engines of the process, and the clock their deadlines are counted on.

Every plugin instance runs with fuel (a bound on the instructions one call may run) and
an epoch deadline (a bound on its wall time, host calls included): a daemon thread
advances each engine's epoch every TICK seconds while a call runs (`running()` around
each: an idle smith is not woken 100 times a second), so a call's deadline of N seconds
is `ticks(N)` epochs after the epoch it starts at (`Store.set_epoch_deadline`).

Each plugin has an engine of its own (`new_engine()`; the compiled code is the same, so
one cache serves them all): a call that is cancelled is stopped GRACE seconds after its
cancellation (time for a guest polling `cancelled()` to return) by moving its engine's
epoch past every deadline (`running(cancel=..., engine=...)`: the ticker watches it),
which stops that plugin's call and no other's, even in a loop that never calls the
host. (A running store's deadline cannot be moved from another thread: the compiled
code keeps the deadline it read; the epoch is what it compares it with.)
"""

from __future__ import annotations

import threading
import time
import weakref
from importlib import metadata
from typing import ClassVar

import wasmtime

TICK = 0.01  # seconds per epoch
GRACE = 0.2  # seconds from a call's cancellation to its stop (for a guest polling cancelled())
# The engine's settings that change the compiled code: part of the compiled-cache key.
CONFIG = {"consume_fuel": True, "epoch_interruption": True}


class _Shared:
    lock = threading.Lock()
    engine: wasmtime.Engine | None = None
    # The engines the ticker advances.
    engines: ClassVar[weakref.WeakSet[wasmtime.Engine]] = weakref.WeakSet()
    ticker: threading.Thread | None = None
    calls = 0  # calls running now
    busy = threading.Event()  # set while calls > 0
    # The running calls that may be cancelled: (their cancellation, their engine, their
    # deadline in epochs, when the ticker first saw the cancellation), by their `running`.
    watched: ClassVar[dict[int, tuple[threading.Event, wasmtime.Engine, int, list[float]]]] = {}


def new_engine() -> wasmtime.Engine:
    """An engine for one plugin (fuel and epoch interruption on), advanced by the ticker."""
    config = wasmtime.Config()
    config.consume_fuel = CONFIG["consume_fuel"]
    config.epoch_interruption = CONFIG["epoch_interruption"]
    made = wasmtime.Engine(config)
    with _Shared.lock:
        _Shared.engines.add(made)
        if _Shared.ticker is None:
            _Shared.ticker = threading.Thread(target=_tick, name="wasm epoch", daemon=True)
            _Shared.ticker.start()
    return made


def engine() -> wasmtime.Engine:
    """The process's shared engine: what compiles components into the cache (install)."""
    with _Shared.lock:
        shared = _Shared.engine
    if shared is None:
        shared = new_engine()
        with _Shared.lock:
            _Shared.engine = _Shared.engine or shared
            shared = _Shared.engine
    return shared


def _tick() -> None:
    while _Shared.busy.wait():
        time.sleep(TICK)
        with _Shared.lock:
            engines = list(_Shared.engines)
            watched = list(_Shared.watched.values())
        for eng in engines:
            eng.increment_epoch()
        now = time.monotonic()
        for cancel, eng, deadline, seen in watched:
            if not cancel.is_set():
                continue
            if not seen:
                seen.append(now)
            elif now - seen[0] >= GRACE and len(seen) == 1:
                seen.append(now)  # stopped once: its epoch is past its deadline now
                for _ in range(deadline + 1):
                    eng.increment_epoch()


class running:
    """`with running(cancel, engine, deadline):` around a call: the epoch advances while
    any call runs, and a call whose `cancel` is set is stopped GRACE seconds later (its
    engine's epoch moved past its `deadline`, in epochs)."""

    def __init__(
        self,
        cancel: threading.Event | None = None,
        engine: wasmtime.Engine | None = None,
        deadline: int = 0,
    ) -> None:
        self.cancel, self.engine, self.deadline = cancel, engine, deadline

    def __enter__(self) -> None:
        with _Shared.lock:
            _Shared.calls += 1
            _Shared.busy.set()
            if self.cancel is not None and self.engine is not None:
                _Shared.watched[id(self)] = (self.cancel, self.engine, self.deadline, [])

    def __exit__(self, *exc: object) -> None:
        with _Shared.lock:
            _Shared.watched.pop(id(self), None)
            _Shared.calls -= 1
            if _Shared.calls == 0:
                _Shared.busy.clear()


def ticks(seconds: float) -> int:
    """The epoch deadline, in ticks after the current epoch, for `seconds` of wall time."""
    return max(1, round(seconds / TICK))


def version() -> str:
    """The wasmtime package's version (compiled code is only valid for the same one)."""
    try:
        return metadata.version("wasmtime")
    except metadata.PackageNotFoundError:  # pragma: no cover - an unpackaged wasmtime
        return "unknown"


def key() -> str:
    """What the compiled code depends on besides the module: wasmtime's version and the
    engine's settings."""
    flags = ",".join(f"{k}={v}" for k, v in sorted(CONFIG.items()))
    return f"wasmtime {version()}; {flags}"
