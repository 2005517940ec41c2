from smith._fast._cbor_decode import DecodeError as DecodeError
from smith._fast._cbor_decode import decode as decode
from smith._fast._cbor_encode import EncodeError as EncodeError
from smith._fast._cbor_encode import encode as encode

__all__ = ["DecodeError", "EncodeError", "decode", "encode"]
