"""One plugin's sandboxed instance: a wasmtime Store with its limits, the component
instantiated with the host functions linked to the plugin's HostCalls, and calls of
its exports under fuel and an epoch deadline.

    inst = Instance(component, host, limits)
    text = inst.call("command", "hello", "", seconds=2.0)   # the ok text
    # GuestError(message): the export returned its error case
    # Fault(reason): it trapped (fuel, deadline, memory, unreachable) or returned too much

After a Fault the instance is gone (a trapped component cannot be entered again); the
next call instantiates afresh (about half a millisecond: the guest is pre-initialised).
Calls of one instance take turns (a lock): a Store is used by one thread at a time. A
call waiting for its turn is not faulted: its deadline counts from when it runs; one
that waits longer than any call may run is refused (Busy, not a fault). A call whose
cancellation is set is stopped shortly after (Cancelled, not a fault either). `close()`
(the plugin was stopped) releases the instance, the component and the engine.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import wasmtime
from wasmtime.component import Linker, Record, Variant

from smith.wasm._engine import deadline_lock, release, running, ticks
from smith.wasm._hostfns import HOST_FUNCTIONS, TAGGED, Call, Failure, HostCalls
from smith.wasm._wrap import wasi_call

if TYPE_CHECKING:
    from collections.abc import Callable

    from wasmtime.component import Component, Func

HOST_INTERFACE = "smith:plugin/host@1.0.0"
_MAKING = threading.Lock()
EXPORTS = ("start", "on-event", "command", "call-tool", "choose")


@dataclass(frozen=True, slots=True)
class Limits:
    """What one plugin may use: per call, `seconds` of wall time (host calls included)
    and `fuel` instructions (a tool call: `tool_seconds`, `tool_fuel`); per instance,
    `memory` bytes of linear memory (in its one memory: a component with more than one
    core memory is refused at instantiation, so the limit is the instance's) and
    `instances`/`tables` counts; `output` characters of any text an export returns;
    `faults` before the plugin is off for the session."""

    seconds: float = 2.0
    tool_seconds: float = 30.0
    fuel: int = 4_000_000_000
    tool_fuel: int = 40_000_000_000
    memory: int = 256 * 1024 * 1024
    instances: int = 100
    tables: int = 100
    table_elements: int = 100_000
    output: int = 1024 * 1024
    faults: int = 3


class GuestError(Exception):
    """The export returned its error case (`result::err(message)`)."""


class Cancelled(GuestError):
    """The call was cancelled (its caller's cancellation) and stopped: not a fault."""


class Busy(GuestError):
    """The instance stayed busy with other calls longer than a call may run: not a
    fault of this call."""


class StartFailed(GuestError):
    """A new instance's `start` returned an error: the plugin cannot run."""


class Fault(Exception):
    """The call did not end as the interface says: `reason` completes "plugin P ...".
    The instance is destroyed."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def linker(host: HostCalls, engine: wasmtime.Engine) -> Linker:
    """A linker of `engine` offering the WIT's host interface, bound to `host`."""
    lk = Linker(engine)
    with lk.root() as root, root.add_instance(HOST_INTERFACE) as iface:
        for name, fn in HOST_FUNCTIONS.items():
            iface.add_func(name, _adapter(host, name, fn))
    return lk


def _adapter(host: HostCalls, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    tagged = name in TAGGED

    def call(store: object, *args: Any) -> Any:
        try:
            value = fn(host, *(_plain(a) for a in args))
        except Failure as failure:
            rec = _record({"code": failure.code, "message": failure.message})
            return Variant("err", rec) if tagged else rec
        except Exception as exc:  # a host bug must not trap the guest: say it
            rec = _record({"code": "plugin.host-failed", "message": f"{name}: {exc}"})
            return Variant("err", rec) if tagged else rec
        if isinstance(value, dict):
            value = _record(value)
        return Variant("ok", value) if tagged else value

    return call


def _record(fields: dict[str, Any]) -> Record:
    rec = Record()
    for key, value in fields.items():
        setattr(rec, key, value)
    return rec


def _plain(value: Any) -> Any:
    """A lifted argument as plain Python: records as dicts (lists, tuples kept)."""
    if isinstance(value, Record):
        return {k: _plain(v) for k, v in vars(value).items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class Instance:
    """The plugin's live instance, made on first use and after every fault."""

    def __init__(
        self,
        component: Component,
        host: HostCalls,
        limits: Limits,
        settings: Callable[[], str],
        engine: wasmtime.Engine,
    ) -> None:
        # Compiled for `engine`, the plugin's own; both released when it is stopped (close).
        self.component: Component | None = component
        self.engine: wasmtime.Engine | None = engine
        self.closed = False
        self.settings = settings  # the JSON `start` is called with, on each new instance
        self.host = host
        self.limits = limits
        self.linker: Linker | None = linker(host, engine)
        self.lock = threading.Lock()
        self.store: wasmtime.Store | None = None
        self.funcs: dict[str, Func] = {}
        self.instantiated = 0  # how many instances were made (1 + one per fault)
        self.regions: list[tuple[int, int]] = []  # its linear memory's address ranges
        self.fuel_used = 0

    def _fresh(self) -> None:
        assert self.engine is not None and self.linker is not None and self.component
        store = wasmtime.Store(self.engine)
        lim = self.limits
        store.set_limits(
            memory_size=lim.memory,
            table_elements=lim.table_elements,
            instances=lim.instances,
            tables=lim.tables,
            memories=1,  # memory_size bounds each memory: one, so it bounds the instance
        )
        store.set_fuel(lim.fuel)
        with deadline_lock(self.engine):  # instantiating may run guest code: bounded too
            store.set_epoch_deadline(ticks(lim.seconds))
        with _MAKING:  # one at a time: the new mappings are this instance's
            before = _mappings()
            inst = self.linker.instantiate(store, self.component)
            self.regions = _new_regions(before, _mappings())
        funcs = {}
        for name in EXPORTS:
            func = inst.get_func(store, name)
            if func is not None:
                funcs[name] = func
        self.store, self.funcs = store, funcs
        self.instantiated += 1

    def drop(self) -> None:
        """Destroy the instance (the next call makes a new one)."""
        self.store, self.funcs, self.regions = None, {}, []

    def close(self) -> None:
        """Release the instance, the component and the engine (the plugin was stopped;
        a call running now releases them when it ends, and later calls are refused)."""
        self.closed = True
        if self.lock.acquire(blocking=False):
            try:
                self._release()
            finally:
                self.lock.release()

    def _release(self) -> None:
        self.drop()
        if self.engine is not None:
            release(self.engine)  # no longer advanced by the ticker
        self.component, self.engine, self.linker = None, None, None

    def resident(self) -> int | None:
        """Bytes of the live instance's linear memory resident now (None where the
        system does not say: not Linux)."""
        return _resident(self.regions) if self.store is not None else 0

    def call(
        self, export: str, *args: str, call: Call, seconds: float, fuel: int | None = None
    ) -> str:
        """Call `export` with `args` as `call` (what the host functions see: set while
        this call holds the instance); its ok text (GuestError, Fault otherwise). A new
        instance is started first (StartFailed: its `start` returned an error)."""
        patience = max(seconds, self.limits.tool_seconds) + 5  # past any call's deadline
        if not self.lock.acquire(timeout=patience):
            raise Busy(f"was still busy with other calls after {patience:g} s")
        try:
            if self.closed:
                raise Cancelled(f"{export} was not called: the plugin was stopped")
            self.host.call = call
            call.ends = time.monotonic() + seconds
            with running(call.cancel, self.engine, ticks(seconds)):
                if self.store is None:
                    self._make(seconds)
                return self._call(export, args, seconds, fuel or self.limits.fuel)
        finally:
            if self.closed:
                self._release()
            self.lock.release()

    def _make(self, seconds: float) -> None:
        try:
            self._fresh()
        except wasmtime.WasmtimeError as exc:
            self.drop()
            raise Fault(f"could not be instantiated: {_first_line(exc)}") from exc
        try:
            self._call("start", (self.settings(),), seconds, self.limits.fuel)
        except Cancelled:  # the call's own cancellation, not the plugin's: tried again later
            self.drop()
            raise
        except GuestError as exc:
            self.drop()
            raise StartFailed(str(exc)) from exc

    def _call(self, export: str, args: tuple[str, ...], seconds: float, fuel: int) -> str:
        store = self.store
        assert store is not None
        func = self.funcs.get(export)
        if func is None:
            raise Fault(f"does not export {export}")
        store.set_fuel(fuel)
        started = time.monotonic()
        with deadline_lock(self.engine):  # not amid a cancelled call's stop (_engine)
            store.set_epoch_deadline(ticks(seconds))
        try:
            result = func(store, *args)
        except wasmtime.WasmtimeError as exc:  # a trap (Trap is one)
            self.drop()
            if self.host.call.cancel.is_set() and "interrupt" in _first_line(exc):
                raise Cancelled(f"{export} was cancelled and stopped") from exc
            raise Fault(_trap_reason(exc, seconds, fuel, self.limits, started)) from exc
        finally:
            self.fuel_used += fuel - store.get_fuel()  # a faulted call's too
        if export == "start":  # result<_, string>: None, or the error's text
            if isinstance(result, str):
                raise GuestError(result[: self.limits.output])
            return ""
        if not isinstance(result, Variant) or not isinstance(result.payload, str):
            self.drop()
            raise Fault(f"returned {type(result).__name__} from {export}, not a result of text")
        if len(result.payload) > self.limits.output:
            self.drop()
            raise Fault(
                f"returned {len(result.payload):,} characters from {export}, over the "
                f"limit of {self.limits.output:,}"
            )
        if result.tag == "err":
            raise GuestError(result.payload)
        return result.payload


def _first_line(exc: BaseException) -> str:
    """What a wasmtime error says in one line: its cause (`wasm trap: ...`) rather than
    the backtrace it starts with."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    traps = [line for line in lines if line.startswith("wasm trap:")]
    if traps:
        return traps[-1].removeprefix("wasm trap:").strip()
    if "Caused by:" in lines and lines[-1] != "Caused by:":
        return lines[lines.index("Caused by:") + 1]
    return lines[0] if lines else type(exc).__name__


def _trap_reason(
    exc: BaseException, seconds: float, fuel: int, limits: Limits, started: float
) -> str:
    text = _first_line(exc)
    took = time.monotonic() - started
    if "fuel" in text:
        return (
            f"ran out of fuel ({fuel:,} instructions) after {took:.2f} s: an endless "
            "loop, or more work than one call may do"
        )
    if "interrupt" in text:
        return f"did not return within {seconds:g} s and was stopped"
    cause = _first_line(exc)
    mib = limits.memory // (1024 * 1024)
    wasi = wasi_call(str(exc)) if "unreachable" in cause else None
    if wasi:  # print(), stdio, a clock: WASI, which the plugin is not given
        return (
            f"called WASI {wasi}, which smith does not offer (a plugin has no ambient "
            "authority): use host.log rather than print() or stdio, and the host functions "
            "for files, commands and the network (a Python plugin's uncaught error, a "
            f"MemoryError at its {mib} MiB too, ends this way: printing its traceback)"
        )
    if "unreachable" in cause:  # how a guest aborts: its own error, or memory refused
        return (
            f"trapped ({cause}): it aborted, on an error of its own or at its memory "
            f"limit of {mib} MiB"
        )
    if "memory" in cause or "out of bounds" in cause:
        return f"trapped ({cause}; its memory limit is {mib} MiB)"
    return f"trapped ({cause})"


# -- the instance's memory, as the system sees it ----------------------------------------
# wasmtime maps a linear memory itself (a reservation of several GiB, the touched part
# resident), outside Python's allocators and so outside smith.memory's counts. The
# mappings that appear while an instance is made, merged where they touch, and at least
# RESERVATION long, are its memories; what of them is resident is what it holds.
RESERVATION = 1 << 30


def _mappings() -> dict[int, int]:
    try:
        with open("/proc/self/maps") as f:
            ranges = (line.split(maxsplit=1)[0].split("-") for line in f)
            return {int(lo, 16): int(hi, 16) for lo, hi in ranges}
    except (OSError, ValueError):
        return {}


def _new_regions(before: dict[int, int], after: dict[int, int]) -> list[tuple[int, int]]:
    new = sorted((lo, hi) for lo, hi in after.items() if before.get(lo) != hi)
    merged: list[list[int]] = []
    for lo, hi in new:
        if merged and merged[-1][1] == lo:
            merged[-1][1] = hi
        else:
            merged.append([lo, hi])
    return [(lo, hi) for lo, hi in merged if hi - lo >= RESERVATION]


def _resident(regions: list[tuple[int, int]]) -> int | None:
    if not regions:
        return None
    total, inside = 0, False
    try:
        with open("/proc/self/smaps") as f:
            for line in f:
                head = line.split(maxsplit=1)[0]
                if head.endswith(":"):
                    if inside and head == "Rss:":
                        total += int(line.split()[1]) * 1024
                    continue
                lo, _, hi = head.partition("-")
                start, end = int(lo, 16), int(hi, 16)
                inside = any(a <= start and end <= b for a, b in regions)
    except (OSError, ValueError):
        return None
    return total
