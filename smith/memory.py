"""Memory accounting by lifetime scope (docs/memory.md).

Every allocation, the interpreter's and extension modules' included, is charged to the
innermost scope active on its thread: process (no guard), session, turn, kernel (a tool
call), frame (a session frame's encode or decode) or io (a provider HTTP request). The
hooks and counters are C (smith/_fast/_memory_hooks.h); this module is the switch and
the guards.

Off (the default), nothing is installed and every guard is a shared no-op object:
`scope()` and `open_scope()` return it, `run()` and `iterate()` return what they were
given, and `framed` leaves the function undecorated. On (`--memory-accounting`,
`SMITH_MEMORY_ACCOUNTING=1`, tests), `install()` hooks the allocators once, for the rest
of the process; the CLI calls it before anything else so the figures start early.

Guards: `with scope(kind, name):` for synchronous code on one thread;
`await run(kind, name, coro)` and `iterate(kind, name, agen)` for asynchronous code,
which enter the scope around each step of that coroutine only, so other tasks sharing
the thread are not charged to it. A task created inside a scope is not in it.
"""

from __future__ import annotations

import os

from smith.diagnostics import DiagnosticKind

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
    from typing import Any, TypeVar

    from smith._fast._memory import Record, Scope
    from smith.config import Config
    from smith.diagnostics import Diagnostic

    T = TypeVar("T")
    F = TypeVar("F", bound=Callable[..., Any])

KINDS = ("process", "session", "turn", "kernel", "frame", "io")
_KIND = {kind: i for i, kind in enumerate(KINDS)}
FLAG = "--memory-accounting"
ENV = "SMITH_MEMORY_ACCOUNTING"
_TRUE = ("1", "true", "yes", "on")


class _Switch:
    """Whether the hooks are installed (a class attribute: no `global` needed)."""

    on = False


MEMORY_CEILING = DiagnosticKind(
    "memory.ceiling",
    severity="warning",
    what="the {kind} scope '{scope}' held up to {peak} bytes, over its ceiling of {ceiling} "
    "bytes ({hits} crossing(s))",
    why="memory.ceiling.{kind} is how much one {kind} scope is expected to hold live; "
    "crossing it is counted and reported, never enforced",
    fix="look at `smith debug memory` for where the memory goes, or raise "
    "memory.ceiling.{kind} if this much is expected",
)


MEMORY_UNAVAILABLE = DiagnosticKind(
    "memory.unavailable",
    what="memory accounting could not start: tracemalloc was already tracing allocations",
    why="the accounting hooks must wrap the allocators before tracemalloc does: stopping "
    "tracemalloc would put back allocators that know nothing of the hooks' block headers",
    fix="run smith without PYTHONTRACEMALLOC or -X tracemalloc",
)


def enabled() -> bool:
    """Whether the hooks are installed (then they stay for the life of the process)."""
    return _Switch.on


def requested(argv: Sequence[str], env: Mapping[str, str]) -> bool:
    """Whether the command line or environment asks for accounting, read before any
    parsing (parsing allocates): the last --[no-]memory-accounting flag wins over
    SMITH_MEMORY_ACCOUNTING; `smith debug memory` asks for it by itself."""
    for word in reversed(argv):
        if word == FLAG:
            return True
        if word == "--no-memory-accounting":
            return False
    if _debug_memory(argv):
        return True
    return env.get(ENV, "").strip().lower() in _TRUE


def _debug_memory(argv: Sequence[str]) -> bool:
    """Whether the command is `debug memory`. Settings come before the command
    (`smith --model M debug memory ...`), so a word right after a `--setting` may be
    its value; the first word that cannot be is the command, or a prompt."""
    for i, word in enumerate(argv):
        if word.startswith("-"):
            continue
        if tuple(argv[i : i + 2]) == ("debug", "memory"):
            return True
        before = argv[i - 1] if i else ""
        if not before.startswith("--") or "=" in before:
            return False
    return False


def install() -> bool:
    """Hook every allocator domain; False when already on or when tracemalloc is
    tracing (stopping it later would put back allocators that know nothing of the
    hooks' block headers)."""
    if _Switch.on:
        return False
    import tracemalloc

    if tracemalloc.is_tracing():
        return False
    from smith._fast import _memory

    _memory.install(int.from_bytes(os.urandom(8), "little"))
    _memory.on_ceiling = _ceiling_crossed
    _Switch.on = True
    return True


class _Off:
    """Every guard while accounting is off: it does nothing."""

    __slots__ = ()
    closed = False

    def __enter__(self) -> _Off:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def close(self) -> None:
        pass

    def run(self, awaitable: Awaitable[T]) -> Awaitable[T]:
        return awaitable

    def iterate(self, iterator: AsyncGenerator[T, None]) -> AsyncGenerator[T, None]:
        return iterator

    def record(self) -> None:
        return None


OFF = _Off()


def _kind(kind: str) -> int:
    try:
        return _KIND[kind]
    except KeyError:
        raise ValueError(f"{kind!r} is not a memory scope kind: {', '.join(KINDS)}") from None


def scope(kind: str, name: str = "") -> Scope | _Off:
    """A guard for one `with` block: entered on this thread, ended when the block ends."""
    if not _Switch.on:
        return OFF
    from smith._fast._memory import Scope

    return Scope(_kind(kind), name or kind, once=True)


def open_scope(kind: str, name: str = "") -> Scope | _Off:
    """A scope that outlives one block (enter it with `with`, `.run`, `.iterate` as
    often as needed); ends with `close()` or when it is collected."""
    if not _Switch.on:
        return OFF
    from smith._fast._memory import Scope

    return Scope(_kind(kind), name or kind)


def run(kind: str, name: str, awaitable: Awaitable[T]) -> Awaitable[T]:
    """`awaitable` in a new scope that ends with it."""
    return scope(kind, name).run(awaitable)


def iterate(kind: str, name: str, iterator: AsyncGenerator[T, None]) -> AsyncGenerator[T, None]:
    """`iterator` (an async generator) in a new scope that ends with it."""
    return scope(kind, name).iterate(iterator)


def framed(fn: F) -> F:
    """`fn` in the frame scope (one shared row for every frame encode and decode) when
    accounting was on when its module was imported; otherwise `fn` itself, at no cost."""
    if not _Switch.on:
        return fn
    import functools

    from smith._fast._memory import Scope

    frame = Scope(_KIND["frame"], shared=True)

    @functools.wraps(fn)
    def in_frame(*args: Any, **kwargs: Any) -> Any:
        with frame:
            return fn(*args, **kwargs)

    return in_frame  # type: ignore[return-value]


class measure:
    """Allocations made on this thread inside the block, in every scope (`count`,
    `allocated` bytes): how tests pin exact counts of an operation. Zero when off."""

    __slots__ = ("_start", "allocated", "count")

    def __init__(self) -> None:
        self._start = (0, 0)
        self.count = 0
        self.allocated = 0

    def __enter__(self) -> measure:
        if _Switch.on:
            from smith._fast._memory import thread_totals

            self._start = thread_totals()
        return self

    def __exit__(self, *exc: object) -> None:
        if _Switch.on:
            from smith._fast._memory import thread_totals

            count, allocated = thread_totals()
            self.count = count - self._start[0]
            self.allocated = allocated - self._start[1]


def _as_dict(rec: Record) -> dict[str, object]:
    from smith._fast._memory import ceiling

    _slot, kind, name, state, count, frees, allocated, live, peak, hits = rec
    limit = ceiling(_KIND[kind])
    return {
        "scope": name,
        "kind": kind,
        "state": state,
        "count": count,
        "frees": frees,
        "blocks": count - frees,
        "allocated": allocated,
        "live": live,
        "peak": peak,
        "ceiling": limit or None,
        "ceiling_hits": hits,
    }


def report() -> list[dict[str, object]]:
    """One JSON-able record per scope (empty when off): the process, each kind's row
    (scopes no longer listed on their own, and shared use such as frames) when it has
    counted anything, then every open scope and every ended one still in the table."""
    if not _Switch.on:
        return []
    from smith._fast._memory import records

    return [_as_dict(rec) for rec in records() if rec[0] == 0 or rec[0] >= len(KINDS) or rec[4]]


def status_of(session: Scope | _Off, turn: Scope | _Off) -> dict[str, int] | None:
    """Live bytes of a session scope and a turn scope, or None when off."""
    s, t = session.record(), turn.record()
    if s is None:
        return None
    return {"session": s[7], "turn": 0 if t is None else t[7]}


class RuntimeScopes:
    """A runtime's scopes: `session` for every task it runs, a new turn per round."""

    __slots__ = ("_turns", "session", "turn")

    def __init__(self, name: str) -> None:
        self.session = open_scope("session", name)
        self.turn: Scope | _Off = OFF
        self._turns = 0

    def run_turn(self, awaitable: Awaitable[T]) -> Awaitable[T]:
        if not _Switch.on:
            return awaitable
        self._turns += 1
        self.turn = scope("turn", f"turn {self._turns}")
        return self.turn.run(awaitable)

    def status(self) -> dict[str, int] | None:
        """For a status line: live bytes of the session and of the current (else the
        last) turn; None when accounting is off."""
        return status_of(self.session, self.turn)

    def close(self) -> None:
        self.session.close()


def configure(config: Config) -> None:
    """Apply the memory.ceiling.KIND settings (live bytes one scope of that kind should
    not pass; crossing one is counted and warned about, never enforced)."""
    if not _Switch.on:
        return
    from smith._fast._memory import set_ceiling

    for i, kind in enumerate(KINDS):
        value = config[f"memory.ceiling.{kind}"]
        set_ceiling(i, 0 if value is None else config.integer(f"memory.ceiling.{kind}"))


def ceiling_warnings(records: list[dict[str, object]]) -> list[Diagnostic]:
    """A warning per scope whose live bytes crossed its kind's ceiling."""
    return [
        MEMORY_CEILING(
            scope=r["scope"],
            kind=r["kind"],
            ceiling=r["ceiling"],
            peak=r["peak"],
            hits=r["ceiling_hits"],
        )
        for r in records
        if r["ceiling_hits"]
    ]


def _ceiling_crossed(rec: Record) -> None:
    """A scope that crossed its ceiling has ended: say so in the log (never raise)."""
    import logging

    try:
        [warning] = ceiling_warnings([_as_dict(rec)])
        logging.getLogger("smith.memory").warning("%s", warning.render())
    except Exception:  # a report must never break the code being measured
        logging.getLogger("smith.memory").debug("ceiling warning failed", exc_info=True)
