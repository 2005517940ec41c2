"""Images the user attaches to a message: checked where they enter, stored once.

    image = load_image("shot.png", max_bytes=limits.image_bytes)   # or Image.from_base64
    runtime.prompt("what is wrong here?", images=(image,))

Where they enter (a path the app or `smith eval --image` was given, RPC's base64 data,
the library's bytes) an image is checked the same way: at most `images.max-bytes`, and
its media type read from its first bytes (PNG, JPEG, GIF, WebP; anything else is refused,
and a declared type that disagrees with the bytes too). Each failure is a diagnostic
naming the image and what to do.

A prompt with images is refused whole before anything is recorded or sent when the
current model's catalog entry does not list image input (`takes_images`): the
diagnostic names the model and some models that take images. Refusing the whole prompt,
rather than sending its text alone, keeps the user from getting an answer to a question
the model never saw the picture for; the text is not lost, since nothing was taken.

Recorded, an image is a blob of the session (`Session.blobs`: stored once per file by
SHA-256, however often it is sent) and the message's part names it:

    {"type": "image", "media_type": "image/png", "blob": "<sha256>", "name": "shot.png",
     "bytes": 34210}

`resolve` puts the bytes back (base64 `data`, what the provider plugins send) into the
messages of one request only, so the context cache and the records stay small.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from smith.diagnostics import DiagnosticKind, SmithError, Source
from smith.media import IMAGE_SUFFIXES as SUFFIXES
from smith.media import IMAGE_TYPES as MEDIA_TYPES
from smith.media import human_size
from smith.media import image_type as sniff
from smith.protocol import ops as protocol

if TYPE_CHECKING:
    from smith.diagnostics import Surface
    from smith.session import Session

MAX_BYTES = 5 * 1024 * 1024  # default of images.max-bytes

IMAGE_UNREADABLE = DiagnosticKind(
    "input.image-unreadable",
    what="the image {name} cannot be read: {reason}",
    why="an attached image is read from the file named, whole, before the message is sent",
    fix="check the path (a relative one is taken from the working directory) and that "
    "the file is readable",
)
NOT_AN_IMAGE = DiagnosticKind(
    "input.not-an-image",
    what="{name} is not an image smith can send: {reason}",
    why="images are sent as PNG, JPEG, GIF or WebP, recognised by their first bytes "
    "(not by the file name)",
    fix="attach a PNG, JPEG, GIF or WebP file (convert it first, e.g. with ImageMagick: "
    "`magick {name} out.png`)",
)
IMAGE_TOO_LARGE = DiagnosticKind(
    "input.image-too-large",
    what="the image {name} is {size}, over images.max-bytes ({limit})",
    why="images are kept in the session and sent with every request of the conversation, "
    "so each is bounded (images.max-bytes is set at {where})",
    fix="shrink it (e.g. `magick {name} -resize 50% smaller.png`), or raise images.max-bytes "
    "(`smith config set images.max-bytes {size_bytes}`)",
)
IMAGE_SHAPE = DiagnosticKind(
    "input.image-shape",
    what="{where} is not an image: {problem}",
    why='an image is given as {{"media_type": "image/png", "data": BASE64}} or '
    '{{"path": FILE}} (each may add "name"), in a list',
    fix="send each image in one of those two forms",
)
MAX_IMAGES = 20  # images in one message (providers take 20 to 100; each is resent)
TOO_MANY_IMAGES = DiagnosticKind(
    "input.too-many-images",
    what="the message was not sent: it has {count} images attached, more than {limit}",
    why="every image is kept with the conversation and sent again with each request, and "
    "providers refuse messages with many more",
    fix="send at most {limit} images a message (several messages, or fewer images)",
)
IMAGES_REFUSED = DiagnosticKind(
    "input.images-refused",
    what="the message was not sent: it has {count} attached and the model {model} does "
    "not take image input",
    why="its catalog entry lists input {inputs}; sending the text alone would ask about "
    "pictures the model never sees, so the whole message was refused and nothing was "
    "recorded",
    fix="switch to a model with image input (for example {examples}; `smith models` lists "
    "each model's input), or send the message again without the image",
)


def _too_large(name: str, size: int, max_bytes: int, where: str, source: Source) -> SmithError:
    limit = human_size(max_bytes)
    return IMAGE_TOO_LARGE.error(
        value=name, source=source, name=name, size=human_size(size), size_bytes=size,
        limit=limit, where=where,
    )  # fmt: skip


class Image(protocol.Image, frozen=True):
    """One image to send: its bytes, media type (from its first bytes) and a name to show
    (the file name, or what gave it: "clipboard", "image 1"); the protocol's Image
    (smith.protocol.ops), checked where it entered."""

    def __repr__(self) -> str:  # not its bytes
        return f"Image(media_type={self.media_type!r}, name={self.name!r}, {self.size} bytes)"

    @property
    def size(self) -> int:
        return len(self.data)

    def label(self) -> str:
        """How it is shown: `shot.png 34 KB` (control characters in the name made
        visible: a file name may carry terminal escapes)."""
        from smith.text import inert

        return f"{inert(self.name)} {human_size(self.size)}"

    @classmethod
    def from_bytes(
        cls,
        data: bytes,
        *,
        name: str = "image",
        media_type: str | None = None,
        max_bytes: int = MAX_BYTES,
        where: str = "the default",
        source: Source | None = None,
    ) -> Image:
        """The image `data` is; a diagnostic if it is too large, not an image, or not of
        the `media_type` declared."""
        source = source or Source("argument", name)
        if len(data) > max_bytes:
            raise _too_large(name, len(data), max_bytes, where, source)
        found = sniff(data)
        if found is None:
            reason = "its first bytes are not those of a PNG, JPEG, GIF or WebP file"
            if not data:
                reason = "it is empty"
            raise NOT_AN_IMAGE.error(value=name, source=source, name=name, reason=reason)
        if media_type is not None and media_type != found:
            reason = f"it is declared {media_type!r}, but its bytes are {found}"
            if media_type not in MEDIA_TYPES:
                reason = f"{media_type!r} is not one of {', '.join(MEDIA_TYPES)}"
            raise NOT_AN_IMAGE.error(value=name, source=source, name=name, reason=reason)
        return cls(data, found, name)

    @classmethod
    def from_base64(
        cls,
        text: str,
        *,
        name: str = "image",
        media_type: str | None = None,
        max_bytes: int = MAX_BYTES,
        where: str = "the default",
        source: Source | None = None,
    ) -> Image:
        """The image base64 `text` encodes (RPC's `data`)."""
        source = source or Source("argument", name)
        # Decoded size is 3/4 of the text: refuse what is far too large before decoding.
        if len(text) // 4 * 3 > max_bytes + 3:
            size = len(text) // 4 * 3
            raise _too_large(name, size, max_bytes, where, source)
        try:
            data = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError) as exc:
            reason = f"its data is not valid base64 ({exc})"
            raise NOT_AN_IMAGE.error(value=name, source=source, name=name,
                                     reason=reason) from None  # fmt: skip
        return cls.from_bytes(data, name=name, media_type=media_type, max_bytes=max_bytes,
                              where=where, source=source)  # fmt: skip


def load_image(
    path: str,
    *,
    max_bytes: int = MAX_BYTES,
    where: str = "the default",
    surface: Surface = "argument",
    cwd: str | None = None,
) -> Image:
    """The image file `path` (relative to `cwd`, default the current directory)."""
    from smith.effects import FileRefused, FileTooBig, Reach, read_file

    name = os.path.basename(path) or path
    source = Source(surface, path)
    full = os.path.abspath(os.path.join(cwd, path) if cwd else path)
    try:
        # The user's own choice, so anywhere; but a regular file, opened without
        # blocking: a FIFO or a terminal named as an image (/dev/stdin: the client's own
        # requests, over RPC) is refused, never waited on.
        data = read_file(full, limit=max_bytes, reach=Reach.anywhere())
    except FileTooBig as exc:
        raise _too_large(path, exc.size, max_bytes, where, source) from None
    except (FileRefused, OSError) as exc:
        reason = exc.reason if isinstance(exc, FileRefused) else exc.strerror or str(exc)
        raise IMAGE_UNREADABLE.error(value=path, source=source, name=path,
                                     reason=reason) from None  # fmt: skip
    # Diagnostics name the path as given; the image is shown by its file name.
    image = Image.from_bytes(data, name=path, max_bytes=max_bytes, where=where, source=source)
    return Image(image.data, image.media_type, name)


def looks_like_image_path(text: str) -> bool:
    """Whether `text` names an image file by its suffix (the app's paste and typed paths)."""
    return text.lower().endswith(SUFFIXES)


def model_inputs(provider: object) -> tuple[str, ...]:
    """What the provider's model takes, from its catalog entry (HTTP providers carry it
    as `model`) or its own `input` (offline providers); ("text",) when neither says."""
    from smith.providers import Group, ModelInfo

    if isinstance(provider, Group):
        provider = provider.members[provider.index][1]
    info = getattr(provider, "model", None)
    if isinstance(info, ModelInfo):
        return tuple(info.input)
    declared = getattr(provider, "input", None)
    if isinstance(declared, tuple | list) and all(isinstance(x, str) for x in declared):
        return tuple(declared)
    return ("text",)


def takes_images(provider: object) -> bool:
    return "image" in model_inputs(provider)


def checked(images: Sequence[Image], gen: Any, bound: int, surface: Surface) -> tuple[Image, ...]:
    """The images of a prompt for the generation `gen`'s model, refused (`refuse`) when
    it takes none or too many, and each one over `bound` bytes (images.max-bytes)."""
    refuse(images, gen.provider, gen.model, surface)
    for image in images:
        if image.size > bound:
            raise IMAGE_TOO_LARGE.error(
                value=image.name, source=Source(surface, "prompt"), name=image.name,
                size=human_size(image.size), size_bytes=image.size,
                limit=human_size(bound), where="the runtime's limits (images.max-bytes)",
            )  # fmt: skip
    return tuple(images)


def refuse(
    images: Sequence[Image], provider: object, model: str, surface: Surface, where: str = "prompt"
) -> None:
    """Raise IMAGES_REFUSED when there are images and the model does not take them, or
    TOO_MANY_IMAGES past MAX_IMAGES; `where`: what gave them (`--image`, the prompt)."""
    if len(images) > MAX_IMAGES:
        raise TOO_MANY_IMAGES.error(value=len(images), source=Source(surface, where),
                                    count=len(images), limit=MAX_IMAGES)  # fmt: skip
    if not images or takes_images(provider):
        return
    count = f"{len(images)} image" + ("s" if len(images) > 1 else "")
    names = ", ".join(image.name for image in images)
    raise IMAGES_REFUSED.error(
        value=names,
        source=Source(surface, where),
        count=f"{count} ({names})",
        model=model,
        inputs=", ".join(model_inputs(provider)),
        examples=", ".join(_examples()) or "a Claude, GPT-4.1 or Gemini model",
    )


def _examples() -> list[str]:
    """One model with image input of each first-party provider in the bundled catalog."""
    try:
        from smith.providers import load_catalog
        from smith.sdk import provider_facts

        models = load_catalog().models()
        facts = provider_facts()
    except Exception:  # the hint is only a hint
        return []
    seen: dict[str, str] = {}
    for info in models:
        own = facts.get(info.provider)
        if "image" in info.input and own is not None and own.first_party:
            seen.setdefault(info.provider, f"{info.provider}:{info.id}")
    return list(seen.values())


def image_part(session: Session, image: Image) -> dict[str, Any]:
    """The recorded part of `image`: its bytes stored once in `session`, named here."""
    digest = session.blobs.put(image.data, image.media_type)
    return {
        "type": "image",
        "media_type": image.media_type,
        "blob": digest,
        "name": image.name,
        "bytes": image.size,
    }


def resolve(session: Session, messages: list[dict[str, object]]) -> list[dict[str, object]]:
    """`messages` with every image part that names a blob given its base64 `data`; a
    blob the session does not hold becomes a note saying so. Without such parts the
    list itself comes back (each request runs this: no copy, next to no allocation)."""
    copied: list[dict[str, object]] | None = None
    for at, message in enumerate(messages):
        if _names_blob(message):
            if copied is None:
                copied = list(messages)
            content = message["content"]
            assert isinstance(content, list)
            copied[at] = {**message, "content": [_resolved(session, p) for p in content]}
    return messages if copied is None else copied


def _names_blob(message: Mapping[str, object]) -> bool:
    content = message.get("content")
    if not isinstance(content, list) or len(content) < 2:  # the text comes first
        return False
    return any(_refers(part) for part in content)


def _refers(part: object) -> bool:
    return isinstance(part, dict) and part.get("type") == "image" and "blob" in part


def _resolved(session: Session, part: object) -> object:
    if not _refers(part):
        return part
    assert isinstance(part, dict)
    found = session.blobs.get(str(part["blob"]))
    if found is None:
        name = part.get("name") or "an image"
        return {"type": "text", "text": f"[{name}: this session no longer holds the image]"}
    media_type, data = found
    sent = {k: v for k, v in part.items() if k != "blob"}
    sent["media_type"] = media_type
    sent["data"] = base64.b64encode(data).decode("ascii")
    return sent


def chip(part: Mapping[str, object], number: int | None = None) -> str:
    """How an image part is shown in a transcript: `[image 1: shot.png 34 KB]`."""
    size = part.get("bytes")
    name = str(part.get("name") or "image")
    shown = f"{name} {human_size(size)}" if isinstance(size, int) else name
    return f"[image {number}: {shown}]" if number is not None else f"[image: {shown}]"


__all__ = [
    "IMAGES_REFUSED",
    "IMAGE_SHAPE",
    "IMAGE_TOO_LARGE",
    "IMAGE_UNREADABLE",
    "MAX_BYTES",
    "MEDIA_TYPES",
    "NOT_AN_IMAGE",
    "SUFFIXES",
    "Image",
    "checked",
    "chip",
    "human_size",
    "image_part",
    "load_image",
    "looks_like_image_path",
    "model_inputs",
    "refuse",
    "resolve",
    "sniff",
    "takes_images",
]
