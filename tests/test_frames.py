"""Session file framing: checksums, torn tails, corrupt frames, damage, bounds, fuzz."""

from __future__ import annotations

import io
import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smith._fast import _frames
from smith._fast._arena import Arena

H = _frames.HEADER_SIZE
FO = _frames.FRAME_OVERHEAD


def _file(bodies: list[bytes], types: list[int] | None = None) -> bytes:
    types = types or [7] * len(bodies)
    return _frames.file_header() + b"".join(
        _frames.encode_frame(t, 0, b) for t, b in zip(types, bodies, strict=True)
    )


def test_crc32c_known_values_and_hardware_matches_software() -> None:
    assert _frames.crc32c(b"") == 0
    assert _frames.crc32c(b"123456789") == 0xE3069283
    assert _frames.crc32c(b"456789", _frames.crc32c(b"123")) == 0xE3069283
    data = os.urandom(5000)
    for start in range(0, 9):
        for length in (0, 1, 7, 8, 9, 31, 32, 33, 100, 1000, 4000):
            chunk = data[start : start + length]
            assert _frames.crc32c(chunk) == _frames.crc32c(chunk, software=True)


def test_frames_round_trip_and_header_checks() -> None:
    data = _file([b"a", b"bc" * 100])
    assert _frames.read_file_header(data) == _frames.FORMAT_VERSION
    s = _frames.scan(data)
    assert s.frames == [(H, 7, 0, 1), (H + FO + 1, 7, 0, 200)]
    assert (s.end, s.truncated, s.error, s.skipped) == (len(data), 0, None, [])
    with pytest.raises(ValueError, match="cannot be empty"):
        _frames.encode_frame(1, 0, b"")
    with pytest.raises(ValueError, match="not a smith session file"):
        _frames.read_file_header(b"PK\x03\x04 not a session at all")


def test_every_cut_keeps_every_complete_frame_before_it() -> None:
    bodies = [os.urandom(random.Random(i).randint(1, 300)) for i in range(6)]
    data = _file(bodies)
    ends = [H]
    for b in bodies:
        ends.append(ends[-1] + FO + len(b))
    for cut in range(ends[2], len(data) + 1):  # every byte offset of the last frames
        s = _frames.scan(data[:cut])
        complete = sum(1 for e in ends[1:] if e <= cut)
        assert len(s.frames) == complete, cut
        assert s.error is None and s.end == ends[complete]
        assert s.truncated == cut - ends[complete]
        arena = Arena.load(io.BytesIO(data[:cut]), cut)
        assert arena.report["frames"] == complete and arena.report["error"] is None


def test_a_zero_filled_tail_never_parses_as_frames() -> None:
    data = _file([b"x" * 50, b"y"])
    s = _frames.scan(data + b"\0" * 4096)
    assert len(s.frames) == 2 and s.truncated == 4096 and s.error is None


def test_a_torn_write_followed_by_zeros_is_a_tail_not_damage() -> None:
    data = _file([b"x" * 50])
    torn = _frames.encode_frame(7, 0, b"z" * 100)[:10]
    s = _frames.scan(data + torn + b"\0" * 500)
    assert len(s.frames) == 1 and s.truncated == 510 and s.error is None


def test_corrupt_bodies_are_skipped_counted_and_bounded() -> None:
    data = bytearray(_file([b"a" * 10, b"b" * 10, b"c" * 10]))
    data[H + FO + 10 + FO + 3] ^= 0xFF  # inside the second body
    s = _frames.scan(bytes(data))
    assert [f[3] for f in s.frames] == [10, 10] and s.skipped == [(H + FO + 10, 10)]
    assert s.error is None
    many = bytearray(_file([b"q" * 5] * 6))
    for i in range(6):
        many[H + i * (FO + 5) + FO] ^= 1
    bounded = _frames.scan(bytes(many), max_skips=3)
    assert len(bounded.skipped) == 3 and bounded.error == ("too-many-corrupt", H + 3 * (FO + 5))


def test_a_damaged_header_with_frames_after_it_is_an_explicit_error() -> None:
    data = bytearray(_file([b"a" * 10, b"b" * 10, b"c" * 10]))
    second = H + FO + 10
    data[second + 2] ^= 0x40  # the length field of the second header
    s = _frames.scan(bytes(data))
    assert len(s.frames) == 1 and s.error == ("damaged", second)
    resynced = _frames.scan(bytes(data), resync=True)
    assert len(resynced.frames) == 2 and resynced.resynced == [(second, second + FO + 10)]


def test_a_length_above_the_bound_is_rejected_before_allocating() -> None:
    data = _file([b"a" * 100])
    s = _frames.scan(data, max_body=50)
    assert s.frames == [] and s.error == ("too-large", H)
    import tracemalloc

    huge = bytearray(_frames.file_header() + _frames.encode_frame(7, 0, b"x"))
    tracemalloc.start()
    Arena.load(io.BytesIO(bytes(huge)), len(huge), max_body=1 << 30)
    assert tracemalloc.get_traced_memory()[1] < 1 << 20
    tracemalloc.stop()


@settings(deadline=None, max_examples=300)
@given(st.binary(max_size=600), st.integers(min_value=0, max_value=600))
def test_fuzz_the_frame_reader_never_crashes(noise: bytes, at: int) -> None:
    data = bytearray(_file([b"hello", b"world" * 20, b"!"]))
    data[at:at] = noise  # splice noise anywhere, including into headers
    for blob in (bytes(data), bytes(noise), _frames.file_header() + noise):
        s = _frames.scan(blob)
        assert s.end <= len(blob)
        try:
            a = Arena.load(io.BytesIO(blob), len(blob))
        except ValueError:
            continue  # no session file header at all
        for i in range(len(a)):
            a.id(i), a.kind(i), a.content(i), list(a.path(i))
