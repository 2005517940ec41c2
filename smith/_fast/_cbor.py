"""Canonical CBOR for smith's value model: RFC 8949 §4.2.1 core deterministic encoding.

The value model is None, bool, int (bignums as tags 2/3), float, str, bytes (bytearray
and memoryview encode as bytes), list and tuple (arrays) and dict with text keys.
Subclasses of these (str and int enums, OrderedDict, named tuples) encode as their base
type, as cbor2 does. `encode` is byte-identical to `cbor2.dumps(x, canonical=True)` for the
model; `decode` reads any well-formed item of the model and, with `strict=True`, only the
canonical encoding of one.

    ValueError
    ├── EncodeError   a value outside the model; names its path ("$.content.args[3]")
    └── DecodeError   malformed, non-canonical (strict) or over a bound; names the offset

The codec is two extensions, _cbor_encode and _cbor_decode; this module is their public face.
"""

from smith._fast._cbor_decode import DecodeError, decode
from smith._fast._cbor_encode import EncodeError, encode

__all__ = ["DecodeError", "EncodeError", "decode", "encode"]
