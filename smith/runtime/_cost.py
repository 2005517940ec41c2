"""Cost accounting: token totals and US dollars, where unknown stays unknown.

    meter = CostMeter()
    meter.add(usage, provider.pricing(model), source="response")
    meter.format()   # "$0.0123", "unknown", or "≥ $0.0123 (some usage unknown)"
    meter.to_dict()  # {"usd", "complete", "tokens", "unknown", "by_source"}

A provider that does not report a token count (a `Usage` field of None, or no `Usage`
at all) leaves that count unknown, and a model without a price for a kind leaves the
cost of those tokens unknown. Neither is ever counted as 0: the meter keeps the known
sums and how many reports were missing, so it can say "at least this much" instead of
silently under-reporting. A count of 0 needs no price, so it never makes a cost unknown.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from smith.providers import Pricing, Usage
    from smith.runtime._runtime import Runtime
    from smith.session import Session

KINDS = ("input", "output", "cache_read", "cache_write")
SOURCES = ("response", "tool", "compaction", "branch_summary")


def _count(value: object) -> int | None:
    """A token count as reported, or None when it is missing or nonsensical."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _price(pricing: Pricing | None, kind: str) -> float | None:
    """USD per million tokens of `kind`, or None when it is not known (or not a price)."""
    value = getattr(pricing, kind, None) if pricing is not None else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


class _Tally:
    """Totals of one scope (all usage, or one source)."""

    __slots__ = ("known", "priced", "reported", "unknown", "unpriced")

    def __init__(self) -> None:
        self.known = dict.fromkeys(KINDS, 0)  # sum of the counts that were reported
        self.reported = dict.fromkeys(KINDS, 0)  # how many reports gave a count
        self.unknown = dict.fromkeys(KINDS, 0)  # how many reports did not
        # (kind, price) -> tokens: summing exact integers per price, and multiplying once
        # when asked, keeps float error from piling up over a long session.
        self.priced: dict[tuple[str, float], int] = {}
        self.unpriced = 0  # nonzero counts of a kind with no known price

    def add(self, usage: Usage | None, pricing: Pricing | None) -> None:
        for kind in KINDS:
            tokens = _count(getattr(usage, kind, None)) if usage is not None else None
            if tokens is None:
                self.unknown[kind] += 1
                continue
            self.known[kind] += tokens
            self.reported[kind] += 1
            if tokens == 0:
                continue  # costs nothing at any price, known or not
            price = _price(pricing, kind)
            if price is None:
                self.unpriced += 1
            else:
                key = (kind, price)
                self.priced[key] = self.priced.get(key, 0) + tokens

    def merge(self, other: _Tally) -> None:
        for kind in KINDS:
            self.known[kind] += other.known[kind]
            self.reported[kind] += other.reported[kind]
            self.unknown[kind] += other.unknown[kind]
        for key, tokens in other.priced.items():
            self.priced[key] = self.priced.get(key, 0) + tokens
        self.unpriced += other.unpriced

    @property
    def complete(self) -> bool:
        """Every count was reported and every nonzero count had a price."""
        return not self.unpriced and not any(self.unknown.values())

    @property
    def usd(self) -> float | None:
        """The known cost: exact when `complete`, a lower bound otherwise, and None when
        nothing priced is known (an empty tally has cost exactly 0)."""
        if not self.complete and not self.priced:
            return None
        return math.fsum(tokens * price / 1e6 for (_, price), tokens in self.priced.items())

    def tokens(self, kind: str) -> int | None:
        """The known total of `kind`; None when no report gave it."""
        if self.reported[kind] == 0 and self.unknown[kind] > 0:
            return None
        return self.known[kind]

    def to_dict(self) -> dict[str, object]:
        return {
            "usd": self.usd,
            "complete": self.complete,
            "tokens": {kind: self.tokens(kind) for kind in KINDS},
            # How many reports left each kind unknown: a total next to a nonzero count
            # here is a lower bound.
            "unknown": dict(self.unknown),
        }


class CostMeter:
    """Token and dollar totals of a session's model calls, overall and by source."""

    __slots__ = ("_sources", "_total", "pending")

    def __init__(self) -> None:
        self._total = _Tally()
        self._sources: dict[str, _Tally] = {}
        # A resumed session's earlier calls are not counted yet (see `recorded`): the
        # totals say only what this runtime spent, and to_dict says so.
        self.pending = False

    def merge(self, other: CostMeter) -> None:
        """Add everything `other` counted (a resumed session's earlier calls)."""
        for mine, theirs in [(self._total, other._total)] + [
            (self._sources.setdefault(name, _Tally()), tally)
            for name, tally in other._sources.items()
        ]:
            mine.merge(theirs)

    def add(
        self, usage: Usage | None, pricing: Pricing | None, *, source: str = "response"
    ) -> None:
        """Count one model call: `usage` None when the provider reported none, `pricing`
        None when the model's prices are not known. `source` is one of SOURCES."""
        if source not in SOURCES:
            raise ValueError(f"cost source {source!r} is not one of {', '.join(SOURCES)}")
        self._total.add(usage, pricing)
        self._sources.setdefault(source, _Tally()).add(usage, pricing)

    @property
    def usd(self) -> float | None:
        return self._total.usd

    @property
    def complete(self) -> bool:
        return self._total.complete

    def tokens(self, kind: str) -> int | None:
        """The known total of one of KINDS; None when it was never reported."""
        return self._total.tokens(kind)

    def to_dict(self) -> dict[str, object]:
        """{"usd", "complete", "tokens", "unknown", "by_source"}; `by_source` has the
        same fields for each source that was added to, in the order first seen."""
        out = self._total.to_dict()
        out["by_source"] = {name: tally.to_dict() for name, tally in self._sources.items()}
        if self.pending:
            out["earlier"] = "pending"  # a long resumed session's: counted at its first run
        return out

    def format(self) -> str:
        """For a status line: `$0.0123` when exact, `≥ $0.0123 (some usage unknown)` when
        a lower bound, `unknown` when nothing priced is known."""
        return _format(self._total.usd, self._total.complete)

    def __repr__(self) -> str:
        return f"<CostMeter {self.format()}>"


def recorded(
    session: Session, count: int, pricing: Callable[[object, object], Pricing | None]
) -> CostMeter:
    """What the first `count` entries of `session` say was spent (a resumed session's
    earlier calls): every assistant message's usage, on any branch (an abandoned branch
    was paid for too), every compaction's, and what tools that called a model reported.
    `pricing(provider, model)` prices a call by the provider and model it recorded
    (model None: the one current then, for a compaction, which records none). An entry
    whose content cannot be decoded may have been a call: its cost counts as unknown."""
    from smith.diagnostics import SmithError
    from smith.providers import Usage

    def usage(value: object) -> Usage | None:
        if not isinstance(value, Mapping):
            return None
        return Usage(*(_count(value.get(kind)) for kind in KINDS))

    meter = CostMeter()
    for i in range(count):
        entry = session.at(i)
        if entry.kind not in ("message", "compaction"):
            continue
        try:
            content = entry.content
        except SmithError:  # undecodable (session.content-unreadable): its cost unknown
            meter.add(None, None, source="compaction" if entry.kind == "compaction" else "response")
            continue
        if not isinstance(content, Mapping):
            continue
        if entry.kind == "compaction":
            meter.add(usage(content.get("usage")), pricing(None, None), source="compaction")
        elif content.get("role") == "assistant":
            price = pricing(content.get("provider"), content.get("model", ""))
            meter.add(usage(content.get("usage")), price, source="response")
        elif content.get("role") == "tool_result":
            details = content.get("details")
            used = details.get("usage") if isinstance(details, Mapping) else None
            if isinstance(used, Mapping):  # a tool that called a model (_steps._finish)
                meter.add(usage(used), pricing("", used.get("model")), source="tool")
    return meter


CARRY_NOW = 2_000  # entries: a resumed session this short has its cost read at once


def carry_cost(rt: Runtime) -> None:
    """A resumed session's cost so far is its earlier calls' too, priced as the
    records say (`recorded`): read now from a short session, and from a long one (whose
    messages would all be decoded) in a thread when it first runs (`count_earlier`)."""
    if not rt.entries_at_start:
        return
    if rt.entries_at_start <= CARRY_NOW:
        rt.cost.merge(recorded(rt.session, rt.entries_at_start, _pricing(rt)))
    else:
        rt.cost.pending = True


async def count_earlier(rt: Runtime) -> None:
    """A long resumed session's earlier cost, counted in a thread beside its first run."""
    import asyncio

    def work() -> CostMeter:
        with rt.session.exclusive():
            return recorded(rt.session, rt.entries_at_start, _pricing(rt))

    earlier = await asyncio.to_thread(work)
    if rt.cost.pending:
        rt.cost.merge(earlier)
        rt.cost.pending = False


def _pricing(rt: Runtime) -> Callable[[object, object], Pricing | None]:
    """The price of a recorded call: known for the current model (a call that recorded
    no model is a compaction, made with it), else not known."""

    def price(provider: object, model: object) -> Pricing | None:
        gen = rt.current
        if model is None or (model == gen.model_id and provider in ("", gen.provider.name)):
            return gen.provider.pricing(gen.model_id)
        return None

    return price


def format_cost(cost: Mapping[str, object]) -> str:
    """CostMeter.format of a cost as `to_dict` gives it (the status view's `cost`)."""
    usd = cost.get("usd")
    return _format(usd if isinstance(usd, int | float) else None, cost.get("complete") is True)


def _format(usd: float | None, complete: bool) -> str:
    if usd is None:
        return "unknown"
    text = f"${usd:.4f}"
    return text if complete else f"≥ {text} (some usage unknown)"
