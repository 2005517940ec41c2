"""The cost meter: known sums, unknown kept unknown (never 0), and honest formatting."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smith._fast import _cbor
from smith.providers import Pricing, Usage
from smith.runtime._cost import KINDS, SOURCES, CostMeter

SONNET = Pricing(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
NO_CACHE_PRICES = Pricing(input=3.0, output=15.0)
FULL = Usage(input=1_000_000, output=200_000, cache_read=500_000, cache_write=100_000)


def usage(input: int = 0, output: int = 0, cache_read: int = 0, cache_write: int = 0) -> Usage:
    """A fully reported usage (every kind known)."""
    return Usage(input=input, output=output, cache_read=cache_read, cache_write=cache_write)


def test_an_empty_meter_has_spent_exactly_nothing() -> None:
    meter = CostMeter()
    assert meter.to_dict() == {
        "usd": 0.0,
        "complete": True,
        "tokens": dict.fromkeys(KINDS, 0),
        "unknown": dict.fromkeys(KINDS, 0),
        "by_source": {},
    }
    assert meter.format() == "$0.0000"


@pytest.mark.parametrize("unknown", [None, Usage()], ids=["no-usage", "all-fields-none"])
def test_when_every_usage_is_unknown_the_cost_is_unknown(unknown: Usage | None) -> None:
    meter = CostMeter()
    meter.add(unknown, SONNET)
    meter.add(unknown, SONNET, source="compaction")
    d = meter.to_dict()
    assert d["usd"] is None and d["complete"] is False
    assert d["tokens"] == dict.fromkeys(KINDS, None)  # unknown, never 0
    assert d["unknown"] == dict.fromkeys(KINDS, 2)
    assert meter.format() == "unknown"
    assert meter.usd is None and not meter.complete and meter.tokens("input") is None


def test_known_usage_with_every_price_is_exact() -> None:
    meter = CostMeter()
    meter.add(FULL, SONNET)
    # 1M x $3 + 0.2M x $15 + 0.5M x $0.30 + 0.1M x $3.75
    assert meter.usd == pytest.approx(3.0 + 3.0 + 0.15 + 0.375, rel=1e-15)
    assert meter.complete
    assert meter.to_dict()["tokens"] == FULL.to_dict()
    assert meter.format() == "$6.5250"


def test_small_costs_format_to_four_places() -> None:
    meter = CostMeter()
    meter.add(usage(input=4100), SONNET)
    assert meter.format() == "$0.0123"


def test_partly_unknown_usage_reports_the_known_sum_as_a_lower_bound() -> None:
    meter = CostMeter()
    meter.add(usage(input=4100), SONNET)
    meter.add(None, SONNET)  # a response whose provider reported nothing
    d = meter.to_dict()
    assert d["usd"] == pytest.approx(0.0123) and d["complete"] is False
    assert d["tokens"] == {"input": 4100, "output": 0, "cache_read": 0, "cache_write": 0}
    assert d["unknown"] == dict.fromkeys(KINDS, 1)
    assert meter.format() == "≥ $0.0123 (some usage unknown)"


def test_a_field_the_provider_did_not_report_is_unknown_not_zero() -> None:
    meter = CostMeter()
    meter.add(Usage(input=4100, output=None, cache_read=None, cache_write=0), SONNET)
    d = meter.to_dict()
    assert d["tokens"] == {"input": 4100, "output": None, "cache_read": None, "cache_write": 0}
    assert d["complete"] is False
    assert meter.format() == "≥ $0.0123 (some usage unknown)"
    # A later report of the kind makes its total known, but still a lower bound.
    meter.add(usage(output=10), SONNET)
    assert meter.tokens("output") == 10 and meter.to_dict()["unknown"]["output"] == 1  # type: ignore[index]


def test_without_pricing_tokens_are_known_and_the_cost_is_not() -> None:
    meter = CostMeter()
    meter.add(FULL, None)
    d = meter.to_dict()
    assert d["usd"] is None and d["complete"] is False
    assert d["tokens"] == FULL.to_dict()
    assert meter.format() == "unknown"


def test_a_missing_price_for_a_kind_used_makes_the_cost_incomplete() -> None:
    meter = CostMeter()
    meter.add(usage(input=1_000_000, cache_write=100_000), NO_CACHE_PRICES)
    assert meter.usd == pytest.approx(3.0) and not meter.complete
    assert meter.format() == "≥ $3.0000 (some usage unknown)"


def test_a_missing_price_for_a_kind_not_used_costs_nothing() -> None:
    meter = CostMeter()
    meter.add(usage(input=1_000_000, output=1_000), NO_CACHE_PRICES)
    assert meter.complete and meter.usd == pytest.approx(3.015)
    assert meter.format() == "$3.0150"


def test_zero_tokens_need_no_price() -> None:
    meter = CostMeter()
    meter.add(usage(), None)
    assert meter.complete and meter.usd == 0.0 and meter.format() == "$0.0000"


def test_a_free_model_costs_exactly_zero() -> None:
    meter = CostMeter()
    meter.add(FULL, Pricing(0.0, 0.0, 0.0, 0.0))
    assert meter.complete and meter.usd == 0.0 and meter.format() == "$0.0000"


@pytest.mark.parametrize(
    "pricing",
    [Pricing(-1.0, 15.0, 0.3, 3.75), Pricing(math.nan, 15.0, 0.3, 3.75)],
    ids=["negative", "nan"],
)
def test_a_nonsensical_price_is_an_unknown_price(pricing: Pricing) -> None:
    meter = CostMeter()
    meter.add(FULL, pricing)
    assert not meter.complete
    assert meter.usd == pytest.approx(3.0 + 0.15 + 0.375)


def test_a_nonsensical_count_is_an_unknown_count() -> None:
    meter = CostMeter()
    meter.add(Usage(input=-5, output=10, cache_read=0, cache_write=0), SONNET)
    assert meter.tokens("input") is None and not meter.complete


def test_totals_are_kept_by_source() -> None:
    meter = CostMeter()
    meter.add(usage(input=1_000_000), SONNET)
    meter.add(usage(input=1_000_000, output=100_000), SONNET, source="response")
    meter.add(usage(output=1_000_000), SONNET, source="compaction")
    meter.add(None, SONNET, source="branch_summary")
    meter.add(usage(input=10), None, source="tool")
    d = meter.to_dict()
    by_source = d["by_source"]
    assert isinstance(by_source, dict)
    assert list(by_source) == ["response", "compaction", "branch_summary", "tool"]
    assert by_source["response"]["usd"] == pytest.approx(7.5)
    assert by_source["response"]["complete"] is True
    assert by_source["response"]["tokens"]["input"] == 2_000_000
    assert by_source["compaction"]["usd"] == pytest.approx(15.0)
    assert by_source["branch_summary"]["usd"] is None
    assert by_source["branch_summary"]["tokens"] == dict.fromkeys(KINDS, None)
    assert by_source["tool"]["usd"] is None and by_source["tool"]["tokens"]["input"] == 10
    assert d["usd"] == pytest.approx(22.5) and d["complete"] is False
    assert d["tokens"] == {
        "input": 2_000_010,
        "output": 1_100_000,
        "cache_read": 0,
        "cache_write": 0,
    }
    assert meter.format() == "≥ $22.5000 (some usage unknown)"


def test_an_unknown_source_is_refused() -> None:
    with pytest.raises(ValueError, match="not one of response, tool, compaction"):
        CostMeter().add(FULL, SONNET, source="subagent")
    assert SOURCES == ("response", "tool", "compaction", "branch_summary")


def test_the_dict_is_plain_data() -> None:
    meter = CostMeter()
    meter.add(FULL, SONNET)
    meter.add(None, None, source="tool")
    d = meter.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert _cbor.decode(_cbor.encode(d)) == d
    assert "≥" in repr(meter)


def test_many_small_responses_do_not_accumulate_float_error() -> None:
    meter = CostMeter()
    for _ in range(100_000):
        meter.add(usage(input=10), Pricing(input=0.1, output=0.4, cache_read=0, cache_write=0))
    naive = 0.0
    for _ in range(100_000):
        naive += 10 * 0.1 / 1e6
    assert meter.usd == 0.1  # one product per price: exact to the last bit
    assert naive != 0.1  # what summing per response would have reported


def test_a_price_change_mid_session_prices_each_part_at_its_own_rate() -> None:
    meter = CostMeter()
    meter.add(usage(input=1_000_000), SONNET)
    meter.add(usage(input=1_000_000), Pricing(input=1.0, output=5.0, cache_read=0, cache_write=0))
    assert meter.usd == pytest.approx(4.0) and meter.complete


COUNTS = st.one_of(st.none(), st.integers(min_value=0, max_value=10**9))
PRICES = st.one_of(st.none(), st.floats(min_value=0, max_value=100, allow_nan=False))


@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.builds(Usage, COUNTS, COUNTS, COUNTS, COUNTS)),
            st.one_of(st.none(), st.builds(Pricing, PRICES, PRICES, PRICES, PRICES)),
            st.sampled_from(SOURCES),
        ),
        max_size=8,
    )
)
def test_totals_agree_with_a_direct_computation(
    calls: list[tuple[Usage | None, Pricing | None, str]],
) -> None:
    meter = CostMeter()
    for u, p, source in calls:
        meter.add(u, p, source=source)
    parts: list[float] = []
    complete, bounded = True, False
    for u, p, _ in calls:
        for kind in KINDS:
            tokens = None if u is None else getattr(u, kind)
            price = None if p is None else getattr(p, kind)
            if tokens is None or (tokens and price is None):
                complete = False
            elif tokens:
                parts.append(tokens * price / 1e6)
                bounded = True
    assert meter.complete is complete
    if not complete and not bounded:
        assert meter.usd is None and meter.format() == "unknown"
    else:
        assert meter.usd == pytest.approx(math.fsum(parts), rel=1e-9, abs=1e-12)
        assert meter.format().startswith("$" if complete else "≥ $")
    d = meter.to_dict()
    assert sum(s["unknown"]["input"] for s in d["by_source"].values()) == d["unknown"]["input"]  # type: ignore[attr-defined,index]
