"""Canonical CBOR: smith's codec against cbor2 on 1,000 representative session entries.

Each entry is encoded on its own, as the session writer does. The issue's targets: encode
at most 0.5 ms per 1,000 entries and at least 10x faster than cbor2 canonical.
"""

from __future__ import annotations

import timeit
from collections.abc import Callable
from typing import Any

import cbor2

from benchmarks._entries import representative_entries
from smith._fast._cbor import decode, encode

ENTRIES = 1000


def _best(run: Callable[[], object], number: int) -> float:
    return min(timeit.repeat(run, number=number, repeat=7)) / number


def _encoders(entries: list[dict[str, Any]]) -> tuple[Callable[[], object], Callable[[], object]]:
    def ours() -> object:
        return [encode(e) for e in entries]

    def baseline() -> object:
        return [cbor2.dumps(e, canonical=True) for e in entries]

    return ours, baseline


def encode_times(entries: list[dict[str, Any]] | None = None) -> tuple[float, float]:
    """Seconds for smith and for cbor2 canonical to encode the same 1,000 entries."""
    ours, baseline = _encoders(entries or representative_entries(ENTRIES))
    return _best(ours, 30), _best(baseline, 3)


def encode_speedup(entries: list[dict[str, Any]] | None = None) -> float:
    """cbor2 canonical's time over smith's for the same entries (higher is better)."""
    ours, baseline = encode_times(entries)
    return baseline / ours


class Encode:
    def setup(self) -> None:
        self.entries = representative_entries(ENTRIES)
        self.ours, self.baseline = _encoders(self.entries)

    def time_smith_encode(self) -> None:
        self.ours()

    def time_cbor2_canonical_baseline(self) -> None:
        self.baseline()


class EncodeRatio:
    number = 1
    repeat = 1
    unit = "x faster than cbor2 canonical"

    def setup(self) -> None:
        self.entries = representative_entries(ENTRIES)

    def track_encode_speedup(self) -> float:
        return encode_speedup(self.entries)


class Decode:
    def setup(self) -> None:
        self.encoded = [encode(e) for e in representative_entries(ENTRIES)]

    def time_smith_decode(self) -> None:
        for data in self.encoded:
            decode(data)

    def time_smith_decode_strict(self) -> None:
        for data in self.encoded:
            decode(data, strict=True)

    def time_cbor2_loads_baseline(self) -> None:
        for data in self.encoded:
            cbor2.loads(data)


class DecodeRatio:
    number = 1
    repeat = 1
    unit = "x faster than cbor2.loads"

    def setup(self) -> None:
        self.encoded = [encode(e) for e in representative_entries(ENTRIES)]

    def track_decode_speedup(self) -> float:
        def ours() -> object:
            return [decode(d, strict=True) for d in self.encoded]

        def baseline() -> object:
            return [cbor2.loads(d) for d in self.encoded]

        return _best(baseline, 10) / _best(ours, 10)
