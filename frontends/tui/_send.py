"""What the app does with a message the user sent: a `/command` runs, `!command` is the
user's own shell command, anything else goes to the runtime as a prompt, a steer or a
follow-up, with the images the editor attached (`_images`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from smith.diagnostics import SmithError

if TYPE_CHECKING:
    from smith.runtime import Image

    from ._app import SmithApp


def send(app: SmithApp, text: str, mode: str = "prompt", images: Sequence[Image] = ()) -> None:
    """Run `/command`s; send the rest as a prompt, or while the agent works as a steer or
    a follow-up (`mode`; "prompt" queues a follow-up then). A message the runtime refuses
    (images for a model without image input) is told, and put back in the editor."""
    app.transcript.latest()  # what it does (a command's notice too) is shown at the bottom
    if text.startswith("/") and len(text) > 1 and not text.startswith("//"):
        name, _, arg = text[1:].partition(" ")
        app.run_command(name, arg.strip())
        return
    if text.startswith("//"):
        text = text[1:]  # a message that starts with a slash
    if app.runtime is None:
        return  # switching sessions: a moment
    if text.startswith("!"):  # the user's own command: `!cmd` tells the model, `!!cmd` not
        from smith.runtime.ops import Shell

        context = not text.startswith("!!")
        try:
            app.runtime.submit(Shell(text[1 if context else 2 :], context=context))
        except SmithError as exc:  # busy, or no command
            app.tell(f"{exc.diagnostic.what}\n  fix: {exc.diagnostic.fix}", error=True)
        return
    try:
        if mode == "steer":
            app.runtime.steer(text, images)
        elif mode == "follow_up":
            app.runtime.follow_up(text, images)
        else:
            app.runtime.prompt(text, images)
    except SmithError as exc:  # refused before anything was recorded: nothing is lost
        app.tell(f"{exc.diagnostic.what}\n  why: {exc.diagnostic.why}\n  fix: "
                 f"{exc.diagnostic.fix}", error=True)  # fmt: skip
        if not app.editor.text.strip():  # unless something new was typed meanwhile
            app.editor.restore(text, images)


__all__ = ["send"]
