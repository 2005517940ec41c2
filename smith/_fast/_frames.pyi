from collections.abc import Iterator

from typing_extensions import Buffer

MAGIC: bytes
FORMAT_VERSION: int
HEADER_SIZE: int
FRAME_OVERHEAD: int
FLAG_COMPRESSED: int
MAX_BODY: int
hardware_crc: bool
STATUS_NAMES: dict[int, str]

def crc32c(data: Buffer, crc: int = 0, *, software: bool = False) -> int: ...
def file_header(version: int = ...) -> bytes: ...
def read_file_header(data: Buffer) -> int: ...
def encode_frame(type: int, flags: int, body: Buffer) -> bytes: ...

class Scan:
    frames: list[tuple[int, int, int, int]]
    skipped: list[tuple[int, int]]
    resynced: list[tuple[int, int]]
    end: int
    truncated: int
    error: tuple[str, int] | None
    work: int

def scan(
    data: Buffer,
    *,
    start: int = ...,
    max_body: int = ...,
    max_skips: int = 16,
    resync: bool = False,
    check_entries: bool = False,
) -> Scan: ...
def data_extents(fd: int, start: int, end: int) -> Iterator[tuple[int, int]]: ...
def layout(fd: int, size: int) -> tuple[int, int] | None: ...
def readable_length(fd: int, size: int, max_body: int = ...) -> tuple[int, int | None]: ...
def read_into(fd: int, buf: Buffer, start: int, end: int, dest: int = 0) -> int: ...
