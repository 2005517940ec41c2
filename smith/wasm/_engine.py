"""The one wasmtime Engine of the process, and the clock its deadlines are counted on.

Every plugin instance runs with fuel (a bound on the instructions one call may run) and
an epoch deadline (a bound on its wall time, host calls included): a daemon thread
advances the engine's epoch every TICK seconds while a call runs (`running()` around
each: an idle smith is not woken 100 times a second), so a call's deadline of N seconds
is N / TICK epochs after the epoch it started at.
"""

from __future__ import annotations

import threading
from importlib import metadata

import wasmtime

TICK = 0.01  # seconds per epoch
# The engine's settings that change the compiled code: part of the compiled-cache key.
CONFIG = {"consume_fuel": True, "epoch_interruption": True}


class _Shared:
    lock = threading.Lock()
    engine: wasmtime.Engine | None = None
    ticker: threading.Thread | None = None
    calls = 0  # calls running now
    busy = threading.Event()  # set while calls > 0


def engine() -> wasmtime.Engine:
    """The process's engine (fuel and epoch interruption on), its ticker started."""
    with _Shared.lock:
        if _Shared.engine is None:
            config = wasmtime.Config()
            config.consume_fuel = CONFIG["consume_fuel"]
            config.epoch_interruption = CONFIG["epoch_interruption"]
            _Shared.engine = wasmtime.Engine(config)
        if _Shared.ticker is None:
            _Shared.ticker = threading.Thread(
                target=_tick, args=(_Shared.engine,), name="wasm epoch", daemon=True
            )
            _Shared.ticker.start()
        return _Shared.engine


def _tick(eng: wasmtime.Engine) -> None:
    import time

    while _Shared.busy.wait():
        time.sleep(TICK)
        eng.increment_epoch()


class running:
    """`with running():` around a call: the epoch advances while any call runs."""

    def __enter__(self) -> None:
        with _Shared.lock:
            _Shared.calls += 1
            _Shared.busy.set()

    def __exit__(self, *exc: object) -> None:
        with _Shared.lock:
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
