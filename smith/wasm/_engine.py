"""The one wasmtime Engine of the process, and the clock its deadlines are counted on.

Every plugin instance runs with fuel (a bound on the instructions one call may run) and
an epoch deadline (a bound on its wall time, host calls included): a daemon thread
advances the engine's epoch every TICK seconds from the first use on, so a call's
deadline of N seconds is N / TICK epochs after the current one.
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
    stop = threading.Event()
    while not stop.wait(TICK):
        eng.increment_epoch()


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
