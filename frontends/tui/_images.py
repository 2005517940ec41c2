"""Images in the app's editor: a pasted or typed path to an image file, or Ctrl+V of an
image on the system clipboard, becomes a chip (`[image 1: shot.png 34 KB]`) that is sent
as an image part of the message.

A path becomes an image when it is the whole paste, or a whole typed word (ended by a
space or by sending) that ends in .png, .jpg, .jpeg, .gif or .webp and names an existing
file (relative to the working directory, absolute, `~/...`, quoted or a `file://` URL, as
file managers paste them). Ctrl+V asks the system clipboard for an image through
`wl-paste` (Wayland) or `xclip` (X11); where neither is reachable (no display, say over
SSH) or the clipboard holds no image, a notice says why and the editor pastes the app's
own clipboard text as before. Reading or checking an image (not an image, over
images.max-bytes) that fails is a notice naming the file and what to do, never an error.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from smith.diagnostics import SmithError
from smith.runtime import Image, looks_like_image_path

if TYPE_CHECKING:
    from smith.runtime import Runtime

CLIPBOARD_TIMEOUT = 3.0  # seconds a clipboard tool gets to answer
# The clipboard tools asked, in order: (what must be set, tool, list types, read a type).
CLIPBOARDS = (
    ("WAYLAND_DISPLAY", "wl-paste", ["--list-types"], ["--no-newline", "--type"]),
    ("DISPLAY", "xclip", ["-selection", "clipboard", "-t", "TARGETS", "-o"],
     ["-selection", "clipboard", "-o", "-t"]),
)  # fmt: skip
CLIPBOARD_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def _helper_env() -> dict[str, str]:
    """The clipboard tools' environment: what every process smith starts gets, without
    the provider keys (smith.effects.process_env)."""
    from smith.effects import process_env
    from smith.providers import credential_variables

    return process_env(credential_variables(None), secrets=True)


class ImageInput:
    """Where the editor's images come from: files (relative to the runtime's working
    directory) and the system clipboard, each bounded by the runtime's images.max-bytes."""

    def __init__(self, runtime: Callable[[], Runtime | None], env: dict[str, str] | None = None):
        self._runtime = runtime
        self.env = _helper_env() if env is None else env

    def _bounds(self) -> tuple[str, int]:
        runtime = self._runtime()
        if runtime is None:
            return os.getcwd(), 5 * 1024 * 1024
        status = runtime.status()
        return status["cwd"], status["images"]["max_bytes"]

    def path_of(self, text: str) -> str | None:
        """The image file `text` names (a path, quoted, `~/`, `file://`), if it exists: as
        the user wrote it, without quotes (relative to the working directory)."""
        word = text.strip()
        if len(word) >= 2 and word[0] == word[-1] and word[0] in "'\"":
            word = word[1:-1]
        elif "\\ " in word:  # a shell-escaped path, as some terminals drop it
            try:
                (word,) = shlex.split(word)
            except ValueError:
                return None
        if word.startswith("file://"):
            word = unquote(urlparse(word).path)
        if not word or "\n" in word or not looks_like_image_path(word):
            return None
        cwd, _ = self._bounds()
        word = os.path.expanduser(word)
        return word if os.path.isfile(os.path.join(cwd, word)) else None

    def model_note(self) -> str | None:
        """What to say when an image is attached while the model takes none."""
        runtime = self._runtime()
        if runtime is None or runtime.status()["images"]["accepted"]:
            return None
        return (
            f"the model {runtime.model} does not take image input: this message will be "
            "refused as it is; pick a model with image input (/model) or remove the image "
            "(Backspace after its chip)"
        )

    def load(self, path: str) -> Image | str:
        """The image file at `path`; or what to tell the user when it cannot be sent."""
        from smith.runtime import load_image

        cwd, bound = self._bounds()
        try:
            return load_image(path, max_bytes=bound, where="images.max-bytes", surface="tui",
                              cwd=cwd)  # fmt: skip
        except SmithError as exc:
            return f"{exc.diagnostic.what}\n  fix: {exc.diagnostic.fix}"

    def clipboard(self) -> Image | str:
        """The image on the system clipboard; or why there is none to attach."""
        tried = []
        for variable, tool, list_types, read in CLIPBOARDS:
            if not self.env.get(variable):
                tried.append(f"{tool} needs {variable}, which is not set")
                continue
            found = shutil.which(tool, path=self.env.get("PATH"))
            if found is None:
                tried.append(f"{tool} is not installed")
                continue
            listed = self._run([found, *list_types])
            if isinstance(listed, str):
                tried.append(listed)
                continue
            offered = listed.decode("utf-8", "replace").split()
            kind = next((t for t in CLIPBOARD_TYPES if t in offered), None)
            if kind is None:
                return "the clipboard holds no image (it offers text or nothing)"
            data = self._run([found, *read, kind])
            if isinstance(data, str):
                return data
            _, bound = self._bounds()
            try:
                return Image.from_bytes(data, name="clipboard", max_bytes=bound,
                                        where="images.max-bytes")  # fmt: skip
            except SmithError as exc:
                return f"{exc.diagnostic.what}\n  fix: {exc.diagnostic.fix}"
        return (
            "no image from the system clipboard: it is not reachable here ("
            + "; ".join(tried)
            + "); paste or type the image file's path instead"
        )

    def _run(self, argv: list[str]) -> bytes | str:
        try:
            done = subprocess.run(argv, capture_output=True, timeout=CLIPBOARD_TIMEOUT,
                                  env=dict(self.env), check=False)  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{os.path.basename(argv[0])} failed: {exc}"
        if done.returncode != 0:
            said = done.stderr.decode("utf-8", "replace").strip().splitlines()
            why = said[-1] if said else f"exit status {done.returncode}"
            return f"{os.path.basename(argv[0])} could not read the clipboard: {why}"
        return done.stdout


__all__ = ["CLIPBOARDS", "ImageInput"]
