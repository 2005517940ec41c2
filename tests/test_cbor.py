"""Canonical CBOR codec: differential against cbor2, RFC 8949 Appendix A, strict mode,
allocation and depth bounds, error paths, and fuzzing of the decoder."""

from __future__ import annotations

import array
import base64
import collections
import datetime
import enum
import json
import math
import random
import struct
import tracemalloc
from pathlib import Path
from typing import Any

import cbor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smith._fast._cbor import DecodeError, EncodeError, decode, encode

# RFC 8949 Appendix A as machine-readable vectors, from the cbor/test-vectors project.
VECTORS = Path(__file__).resolve().parent / "data" / "cbor-appendix-a.json"
MODEL = (
    "(smith's session values are None, bool, int, float, str, bytes, list and dict with text keys)"
)


def canonical(value: object) -> bytes:
    return cbor2.dumps(value, canonical=True)


def same(a: object, b: object) -> bool:
    """Equal as decoded values: tuples read back as lists, floats compared bit for bit."""
    if isinstance(a, tuple):
        a = list(a)
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or struct.pack(">d", a) == struct.pack(">d", b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


FLOAT32_MAX = struct.unpack(">f", bytes.fromhex("7f7fffff"))[0]
EDGES = [
    k + d for k in (0, 23, 24, 255, 256, 65535, 65536, 2**32, 2**63, 2**64) for d in (-1, 0, 1)
]
integers = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**72), max_value=2**72),
    st.integers(min_value=-(2**300), max_value=2**300),
    st.sampled_from(EDGES + [-k for k in EDGES]),
)
floats = st.one_of(
    st.floats(),  # nan, +/-inf, -0.0 and subnormals included
    st.floats(width=16),
    st.floats(width=32),
    st.sampled_from([5e-324, 2.0**-24, 2.0**-25, 2.0**-14, 65504.0, 65520.0, FLOAT32_MAX]),
)
texts = st.one_of(st.text(), st.text(max_size=400), st.text(st.characters(max_codepoint=0x7F)))
scalars = st.one_of(st.none(), st.booleans(), integers, floats, texts, st.binary())
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=6),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=10), inner, max_size=8),
    ),
    max_leaves=30,
)


@settings(deadline=None, max_examples=600)
@given(values)
def test_encode_is_byte_identical_to_cbor2_canonical(value: object) -> None:
    assert encode(value) == canonical(value)


@settings(deadline=None, max_examples=300)
@given(values)
def test_strict_round_trip_gives_back_the_value(value: object) -> None:
    data = encode(value)
    assert same(value, decode(data, strict=True))
    assert same(value, decode(bytearray(data))) and same(value, decode(memoryview(data)))


@settings(deadline=None, max_examples=300)
@given(values)
def test_strict_accepts_exactly_the_canonical_form(value: object) -> None:
    loose = cbor2.dumps(value)  # cbor2's default: doubles, insertion-ordered maps
    assert same(value, decode(loose))
    if loose == encode(value):
        assert same(value, decode(loose, strict=True))
    else:
        with pytest.raises(DecodeError, match="non-canonical"):
            decode(loose, strict=True)


@pytest.mark.parametrize(
    "value",
    [
        *("x" * n for n in (23, 24, 255, 256, 65535, 65536)),
        *(s * n for s in ("é", "→", "😀", "a→") for n in (7, 8, 12, 85, 86, 127, 128, 21845)),
        "ab" * 300 + "é",
        "→" * 3 + "abcdefgh" * 9 + "😀",
        b"\xff" * 70000,
        ["y" * 300, b"z" * 300, "é" * 300, {"k" * 300: "v" * 300}, "w" * 300],
    ],
    ids=lambda v: f"{type(v).__name__}-{len(v)}",
)
def test_string_lengths_around_head_and_buffer_boundaries(value: Any) -> None:
    # Long strings skip the scratch buffer; non-ASCII text is written after room for the
    # longest head it could need: both are exercised at every head size.
    assert encode(value) == canonical(value)
    assert same(value, decode(encode(value), strict=True))


@pytest.mark.parametrize("wide", ["é", "→", "😀", "\udc80"])
def test_one_wide_code_point_at_every_offset_of_an_ascii_run(wide: str) -> None:
    # ASCII runs are copied 16 or 8 code points at a time; a code point that is not ASCII
    # at any offset of a run (in each storage kind of str) must drop to the careful path.
    # A lone surrogate must be caught wherever it sits.
    for n in (15, 16, 17, 33, 40):
        for at in range(n):
            text = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH"[:n]
            text = text[:at] + wide + text[at + 1 :]
            if wide == "\udc80":
                with pytest.raises(EncodeError, match="surrogate"):
                    encode(text)
            else:
                assert encode(text) == canonical(text), (n, at)


def test_map_keys_sort_by_the_bytes_of_their_encoding() -> None:
    keys = ["b", "a", "aa", "é", "ab", "z" * 24, "y" * 23, "日", "😀", "", "\x7f", "\x80"]
    value = {k: i for i, k in enumerate(keys)}
    assert encode(value) == canonical(value)
    big = {f"key{i * 7919 % 1000}": i for i in range(300)}  # more keys than the stack sort
    assert encode(big) == canonical(big)
    assert list(decode(encode(big), strict=True)) == sorted(big, key=lambda k: (len(k), k))


def test_subclasses_encode_as_their_base_type_like_cbor2() -> None:
    class Kind(enum.StrEnum):
        MESSAGE = "message"

    class Level(enum.IntEnum):
        HIGH = 3

    point = collections.namedtuple("point", "x y")
    for value in (
        Kind.MESSAGE,
        {Kind.MESSAGE: Level.HIGH},
        collections.OrderedDict(b=1, a=2),
        point(1, 2.5),
        type("Big", (int,), {})(2**70),
        type("F", (float,), {})(1.5),
        type("B", (bytes,), {})(b"ab"),
    ):
        assert encode(value) == canonical(value)


def test_bytearray_and_memoryview_encode_as_bytes() -> None:
    assert encode(bytearray(b"abc")) == encode(memoryview(b"abc")) == encode(b"abc")
    assert encode([bytearray(b"x" * 300), "y"]) == canonical([b"x" * 300, "y"])
    ints = array.array("i", [1, 2])
    assert encode(memoryview(ints)) == encode(ints.tobytes())
    with pytest.raises(EncodeError, match=r"^\$\[0\]: cannot encode a memoryview"):
        encode([memoryview(b"abcd")[::2]])


# ---------------------------------------------------------------------------- Appendix A


def _vectors() -> list[Any]:
    return [pytest.param(v, id=v["hex"][:24]) for v in json.loads(VECTORS.read_text())]


def _diagnostic_value(text: str) -> object:
    """The value of the diagnostic-notation vectors inside the model; raises otherwise."""
    specials = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}
    if text in specials:
        return specials[text]
    if text.startswith("h'"):
        return bytes.fromhex(text[2:-1])
    if text.startswith("(_ h'"):
        return b"".join(bytes.fromhex(part.strip()[2:-1]) for part in text[3:-1].split(","))
    raise LookupError(text)


@pytest.mark.parametrize("vector", _vectors())
def test_rfc8949_appendix_a(vector: dict[str, Any]) -> None:
    data = base64.b64decode(vector["cbor"])
    assert data.hex() == vector["hex"]
    if "decoded" in vector:
        expected = vector["decoded"]
    else:
        try:
            expected = _diagnostic_value(vector["diagnostic"])
        except LookupError:
            # Outside the model: tags other than 2/3, undefined, simple values, non-text keys.
            for strict in (False, True):
                with pytest.raises(DecodeError, match=r"outside smith's value model|not a text"):
                    decode(data, strict=strict)
            return
    assert same(expected, decode(data))
    if vector["roundtrip"]:
        assert encode(expected) == data
        assert same(expected, decode(data, strict=True))
    else:
        # Indefinite lengths and floats wider than needed: readable, but not canonical.
        with pytest.raises(DecodeError, match="non-canonical"):
            decode(data, strict=True)


# ---------------------------------------------------------------------------- strict mode

NON_CANONICAL = [
    ("1817", 23, "head"),
    ("190017", 23, "head"),
    ("1a00000017", 23, "head"),
    ("1b0000000000000017", 23, "head"),
    ("1900ff", 255, "head"),
    ("1a0000ffff", 65535, "head"),
    ("1b00000000ffffffff", 2**32 - 1, "head"),
    ("3817", -24, "head"),
    ("580161", b"a", "head"),
    ("780161", "a", "head"),
    ("980100", [0], "head"),
    ("b801616100", {"a": 0}, "head"),
    ("5f4161ff", b"a", "indefinite"),
    ("7f6161ff", "a", "indefinite"),
    ("9f00ff", [0], "indefinite"),
    ("bf616100ff", {"a": 0}, "indefinite"),
    ("a2616201616101", {"b": 1, "a": 1}, "out of order"),
    ("a262616101616202", {"aa": 1, "b": 2}, "out of order"),
    ("fa3fc00000", 1.5, "float"),
    ("fb3ff8000000000000", 1.5, "float"),
    ("fb0000000000000000", 0.0, "float"),
    ("fa80000000", -0.0, "float"),
    ("fb40f86a0000000000", 100000.0, "float"),
    ("fa7f800000", math.inf, "float"),
    ("fbfff0000000000000", -math.inf, "float"),
    ("fa7fc00000", math.nan, "float"),
    ("fb7ff8000000000000", math.nan, "float"),
    ("f97e01", math.nan, "NaN"),
    ("f9fe00", math.nan, "NaN"),
    ("c240", 0, "bignum"),
    ("c24101", 1, "bignum"),
    ("c248ffffffffffffffff", 2**64 - 1, "bignum"),
    ("c348ffffffffffffffff", -(2**64), "bignum"),
    ("c24a00010000000000000000", 2**64, "bignum"),
    ("d80249010000000000000000", 2**64, "head"),
]


@pytest.mark.parametrize(("hex_", "value", "why"), NON_CANONICAL, ids=[c[0] for c in NON_CANONICAL])
def test_strict_rejects_each_non_canonical_form(hex_: str, value: object, why: str) -> None:
    data = bytes.fromhex(hex_)
    assert same(value, decode(data))
    with pytest.raises(DecodeError, match="non-canonical") as caught:
        decode(data, strict=True)
    assert why in str(caught.value)
    assert str(caught.value).startswith(f"offset {caught.value.offset}: ")
    assert encode(value) != data


MALFORMED = [
    ("", 0, "end of input"),
    ("18", 0, "end of input"),
    ("1900", 0, "end of input"),
    ("6261", 0, "input has left"),
    ("83010203" + "04", 4, "after the top-level item"),
    ("8301", 0, "input has left"),
    ("a16161", 3, "end of input"),
    ("ff", 0, "break"),
    ("1c", 0, "reserved"),
    ("8301021f", 3, "indefinite length on major type 0"),
    ("5f01ff", 1, "chunk"),
    ("5f5f4100ffff", 1, "chunk"),
    ("7f4100ff", 1, "chunk"),
    ("9f01", 2, "end of input"),
    ("c600", 0, "tag 6"),
    ("c001", 0, "tag 0"),
    ("c201", 1, "byte string"),
    ("e0", 0, "simple value 0"),
    ("f820", 0, "simple value 32"),
    ("f7", 0, "undefined"),
    ("a10102", 1, "not a text string"),
    ("a2616101616102", 4, "duplicate map key 'a'"),
    ("8262c328", 2, "invalid UTF-8"),
    ("7f616162c328ff", 4, "invalid UTF-8"),
    ("63eda080", 1, "invalid UTF-8"),  # an encoded surrogate
]


@pytest.mark.parametrize(("hex_", "offset", "why"), MALFORMED, ids=[m[0] or "-" for m in MALFORMED])
def test_malformed_input_names_the_offset_and_the_problem(hex_: str, offset: int, why: str) -> None:
    for strict in (False, True):
        if strict and hex_.startswith(("5f", "7f", "9f")):
            continue  # strict stops earlier, at the indefinite length itself
        with pytest.raises(DecodeError) as caught:
            decode(bytes.fromhex(hex_), strict=strict)
        assert caught.value.offset == offset, str(caught.value)
        assert why in str(caught.value)


def test_decode_takes_buffers_only() -> None:
    assert decode(array.array("B", [0x82, 1, 2])) == [1, 2]
    with pytest.raises(TypeError):
        decode("00")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- bounds


def _peak_while_rejecting(data: bytes, **bounds: int) -> tuple[str, int]:
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError) as caught:
            decode(data, **bounds)
        return str(caught.value), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("major", [2, 3, 4, 5])
@pytest.mark.parametrize("length", [2**60, 2**64 - 1, 2**31, 1000])
def test_declared_lengths_are_checked_before_anything_is_allocated(major: int, length: int) -> None:
    data = bytes([major << 5 | 27]) + length.to_bytes(8, "big") + b"\x00" * 64
    message, peak = _peak_while_rejecting(data)
    expected = "over max_length" if length > 64 * 1024 * 1024 else "input has left"
    assert expected in message
    message, peak_unbounded = _peak_while_rejecting(data, max_length=2**63 - 1)
    assert ("over max_length" if length > 2**63 - 1 else "input has left") in message
    assert max(peak, peak_unbounded) < 16 * 1024


def test_max_length_is_a_ceiling_on_each_declared_length() -> None:
    data = bytes.fromhex("590100") + b"x" * 256
    assert decode(data, max_length=256) == b"x" * 256
    with pytest.raises(DecodeError, match="over max_length 255"):
        decode(data, max_length=255)
    with pytest.raises(DecodeError, match="over max_length 2"):
        decode(bytes.fromhex("9f000000ff"), max_length=2)
    with pytest.raises(DecodeError, match="over max_length 3"):
        decode(bytes.fromhex("5f42000043000000ff"), max_length=3)


def test_nesting_depth_is_bounded_in_both_directions() -> None:
    nested: list[Any] = [0]
    for _ in range(255):
        nested = [nested]
    assert encode(nested) == canonical(nested)
    assert same(nested, decode(encode(nested), strict=True))
    with pytest.raises(EncodeError, match="nested deeper than 256"):
        encode([nested])
    with pytest.raises(DecodeError, match="nested deeper than 256"):
        decode(b"\x81" * 257 + b"\x00")
    with pytest.raises(DecodeError, match="nested deeper than 256"):
        decode(b"\x9f" * 100_000)
    with pytest.raises(DecodeError, match="nested deeper than 3"):
        decode(bytes.fromhex("a1616181818100"), max_depth=3)
    assert decode(b"\x00", max_depth=0) == 0
    with pytest.raises(ValueError, match="max_depth"):
        decode(b"\x00", max_depth=10**6)


def test_a_value_that_contains_itself_fails_cleanly() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(EncodeError, match=r"^\$\[0\]\[0\]\[0\].*nested deeper"):
        encode(loop)
    cycle: dict[str, Any] = {}
    cycle["self"] = cycle
    with pytest.raises(EncodeError, match=r"^\$\.self\.self\.self"):
        encode(cycle)


# ---------------------------------------------------------------------------- encode errors


def test_encode_error_names_the_path_to_the_value() -> None:
    when = datetime.datetime(2025, 1, 2, tzinfo=datetime.UTC)
    with pytest.raises(EncodeError) as caught:
        encode({"kind": "tool", "content": {"args": [1, 2, 3, when], "z": 1}})
    assert str(caught.value) == f"$.content.args[3]: cannot encode datetime.datetime {MODEL}"
    assert caught.value.path == "$.content.args[3]"
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({1, 2}, f"$: cannot encode set {MODEL}"),
        ([None, 1j], f"$[1]: cannot encode complex {MODEL}"),
        ({"a b": [object()]}, f"$['a b'][0]: cannot encode object {MODEL}"),
        ({"a": {1: "x"}}, "$.a: cannot encode a map key of type int: 1 (keys must be text)"),
        ({(1, 2): 3}, "$: cannot encode a map key of type tuple: (1, 2) (keys must be text)"),
        ({"a": ["x\ud800"]}, "$.a[0]: cannot encode text with a lone surrogate U+D800 at index 1"),
        ({"k\udfff": 1}, "$: map key 'k\\udfff' contains a lone surrogate"),
        ([{"é": 1, "x": [b"", bytearray(), float("nan"), ..., 2]}], "$[0].x[3]: cannot encode"),
    ],
)
def test_encode_errors(value: object, message: str) -> None:
    with pytest.raises(EncodeError) as caught:
        encode(value)
    assert str(caught.value).startswith(message)
    assert encode({"after": "an error"}) == canonical({"after": "an error"})  # state reset


def test_keys_that_encode_the_same_are_rejected() -> None:
    class Distinct(str):
        def __hash__(self) -> int:
            return id(self)

        def __eq__(self, other: object) -> bool:
            return self is other

    with pytest.raises(EncodeError, match="two map keys encode the same: 'a'"):
        encode({Distinct("a"): 1, "b": 2, Distinct("a"): 3})


# ---------------------------------------------------------------------------- fuzz


def _check_decode(data: bytes) -> None:
    """decode only ever returns a value of the model or raises DecodeError."""
    for strict in (False, True):
        try:
            value = decode(data, strict=strict)
        except DecodeError:
            continue
        if strict:
            assert encode(value) == data  # strict accepts exactly the canonical encoding
        else:
            assert same(value, decode(encode(value), strict=True))


@settings(deadline=None, max_examples=1500)
@given(st.binary(max_size=48))
def test_fuzz_random_bytes(data: bytes) -> None:
    _check_decode(data)


@settings(deadline=None, max_examples=400)
@given(values, st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2**16), st.binary(max_size=3))))
def test_fuzz_mutated_encodings(value: object, edits: list[tuple[int, int, bytes]]) -> None:
    data = bytearray(encode(value))
    for op, where, chunk in edits:
        at = where % (len(data) + 1)
        if op == 0:
            data[at:at] = chunk
        elif op == 1:
            del data[at : at + len(chunk) + 1]
        else:
            data[at : at + len(chunk)] = chunk
    _check_decode(bytes(data))


def test_fuzz_every_truncation_and_many_byte_flips() -> None:
    rng = random.Random(0)
    entry = {
        "id": "a1b2",
        "parent": None,
        "ts": 1_760_000_000_000,
        "kind": "message",
        "content": {"text": "héllo → 😀" * 3, "n": [2**70, -(2**70), 1.5, 1e300, b"\x00"]},
    }
    data = encode(entry)
    for cut in range(len(data)):
        with pytest.raises(DecodeError):
            decode(data[:cut])
    for _ in range(5000):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        _check_decode(bytes(mutated))
