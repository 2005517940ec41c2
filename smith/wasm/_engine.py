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
code keeps the deadline it read; the epoch is what it compares it with.) That move is
made under the engine's lock (`deadline_lock(engine)`), and only while the cancelled
call still runs; the instance sets each deadline under the same lock, so a call that
starts once the cancelled one has stopped counts its deadline from after the move, and
is not stopped with it. A plugin that is stopped hands its engine back (`release`): the
ticker no longer advances it, and it is freed with the plugin's component.
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
    # Each engine's lock: held while its epoch is moved past a cancelled call's deadline,
    # and while a deadline is set on one of its stores.
    locks: ClassVar[weakref.WeakKeyDictionary[object, threading.Lock]] = weakref.WeakKeyDictionary()
    ticker: threading.Thread | None = None
    calls = 0  # calls running now
    busy = threading.Event()  # set while calls > 0
    # The running calls that may be cancelled: (their cancellation, their engine, their
    # deadline in epochs, when the ticker first saw the cancellation), by their `running`.
    watched: ClassVar[dict[running, tuple[threading.Event, wasmtime.Engine, int, list[float]]]] = {}


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


def release(eng: wasmtime.Engine) -> None:
    """Stop advancing `eng` (its plugin was stopped): what is left of it is freed with
    the last reference to it."""
    with _Shared.lock:
        _Shared.engines.discard(eng)
        _Shared.locks.pop(eng, None)


def advanced() -> int:
    """How many engines the ticker advances now (one per plugin loaded and not stopped,
    and the shared one once used)."""
    with _Shared.lock:
        return len(_Shared.engines)


def deadline_lock(eng: object) -> threading.Lock:
    """The lock of `eng`: hold it while setting a deadline on one of its stores, so the
    deadline is not set in the middle of moving the epoch past a cancelled call's."""
    with _Shared.lock:
        lock = _Shared.locks.get(eng)
        if lock is None:
            lock = _Shared.locks[eng] = threading.Lock()
        return lock


def _tick() -> None:
    while _Shared.busy.wait():
        time.sleep(TICK)
        _advance()  # (a function: no engine stays referenced while the ticker waits)


def _advance() -> None:
    with _Shared.lock:
        engines = list(_Shared.engines)
        watched = list(_Shared.watched.items())
    for eng in engines:
        eng.increment_epoch()
    now = time.monotonic()
    for run, (cancel, eng, deadline, seen) in watched:
        if not cancel.is_set():
            continue
        if not seen:
            seen.append(now)
        elif now - seen[0] >= GRACE and len(seen) == 1:
            seen.append(now)  # stopped once: its epoch is past its deadline now
            _stop(run, eng, deadline)


def _stop(run: running, eng: wasmtime.Engine, deadline: int) -> None:
    """Move `eng`'s epoch past `deadline` if the call `run` still runs: under the
    engine's lock, so the next call's deadline is set after the last of these moves (a
    call that ended meanwhile is left alone: the next one may have started)."""
    with deadline_lock(eng):
        with _Shared.lock:
            if run not in _Shared.watched:
                return
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
                _Shared.watched[self] = (self.cancel, self.engine, self.deadline, [])

    def __exit__(self, *exc: object) -> None:
        with _Shared.lock:
            _Shared.watched.pop(self, None)
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
