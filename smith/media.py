"""What kind of image a file's bytes are: for the read tool (smith.effects) and for
images attached to messages (smith.runtime), so neither imports the other for it.

The media type is read from the first bytes (the signatures of PNG, JPEG, GIF and WebP),
never from a file name, so a text file called shot.png is text and a PNG called shot is
an image.
"""

from __future__ import annotations

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")  # what names an image file


def image_type(data: bytes) -> str | None:
    """The media type `data` starts as (PNG, JPEG, GIF, WebP), its header whole (a
    signature alone, or a header cut short, is no image a provider would take); None for
    anything else."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png" if len(data) >= 33 and data[12:16] == b"IHDR" else None
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg" if len(data) >= 4 else None
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif" if len(data) >= 13 else None
    if len(data) >= 16 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp" if data[12:15] == b"VP8" else None
    return None


def human_size(n: int) -> str:
    """`512 B`, `34 KB`, `1.2 MB`."""
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{round(n / 1024)} KB"
    return f"{n / (1024 * 1024):.1f} MB"


__all__ = ["IMAGE_SUFFIXES", "IMAGE_TYPES", "human_size", "image_type"]
