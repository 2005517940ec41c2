"""The one wasmtime Engine of the process, and the clock its deadlines are counted on.

Every plugin instance runs with fuel (a bound on the instructions one call may run) and
an epoch deadline (a bound on its wall time, host calls included): a daemon thread
advances the engine's epoch every TICK seconds while a call runs (`running()` around
each: an idle smith is not woken 100 times a second), so a call's deadline of N seconds
is N / TICK epochs after the epoch it started at.

A store may instead be asked at every epoch whether its call goes on (`every_epoch`):
that is how a call is stopped when its deadline passes or shortly after it is cancelled,
even in a loop that never calls the host (moving a running store's deadline from another
thread is not seen: the compiled code keeps the deadline it read).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from importlib import metadata
from typing import Any

import wasmtime

TICK = 0.01  # seconds per epoch
GRACE = 0.2  # seconds from a call's cancellation to its stop (for a guest polling cancelled())
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


def every_epoch(store: wasmtime.Store, stop: Callable[[], str | None]) -> object:
    """Make `store`'s code ask `stop()` at every epoch (set its deadline to 1 tick): None
    goes on, a text traps the call with that text as its cause. The returned object must
    be kept as long as the store (it is the callback wasmtime holds)."""
    from wasmtime import _bindings as ffi

    def check(context: object, data: object, delta: Any, kind: Any) -> int:
        try:
            why = stop()
        except Exception as exc:  # never raise through wasmtime: stop the call instead
            why = f"smith: {exc}"
        if why is not None:
            error = ffi.wasmtime_error_new(why.encode())
            return ctypes.cast(error, ctypes.c_void_p).value or 0
        delta[0] = 1
        kind[0] = 0
        return 0

    # (store, callback(context, data, *next deadline in epochs, *then: 0 = trap at it),
    # data, finalizer): the binding's own types.
    _, kind_of_callback, _, kind_of_finalizer = ffi._wasmtime_store_epoch_deadline_callback.argtypes
    callback = kind_of_callback(check)
    ffi.wasmtime_store_epoch_deadline_callback(store.ptr(), callback, None, kind_of_finalizer())
    store.set_epoch_deadline(1)
    return callback


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
