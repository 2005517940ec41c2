"""Images in the app through Pilot: a pasted or typed image path, or Ctrl+V of an image
on the system clipboard, becomes a chip that is sent as an image part
(frontends/tui/_images.py, _editor.py)."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path
from typing import Any

from textual import events

from tests.runtime_kit import Fake, say
from tests.test_images import Seeing, png
from tests.test_tui import SIZE, _app, _settle, run, visible


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text("def app():\n    return 'hello'\n")
    (project / "shot.png").write_bytes(png(seed=3))
    return project


def _sent(fake: Fake) -> tuple[list[str], list[bytes]]:
    """The texts and image bytes of the last request's user message."""
    users = [m for m in fake.requests[-1].messages if m["role"] == "user" and not m.get("context")]
    parts: list[Any] = users[-1]["content"]
    texts = [p["text"] for p in parts if p["type"] == "text"]
    return texts, [base64.b64decode(p["data"]) for p in parts if p["type"] == "image"]


def test_a_pasted_image_path_is_a_chip_sent_as_an_image(tmp_path: Path) -> None:
    _project(tmp_path)
    fake = Seeing(say("a picture"))

    async def main() -> None:
        app = _app(tmp_path, (fake, "m"))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press(*"what", "space", *"is", "space")
            app.post_message(events.Paste("shot.png"))
            await pilot.pause()
            assert app.editor.text == "what is [image 1: shot.png 73 B]"
            await pilot.press("enter")
            await _settle(app)
            await pilot.pause()
            assert "you what is [image 1] [image 1: shot.png 73 B]" in visible(app)

    run(main())
    assert _sent(fake) == (["what is [image 1]"], [png(seed=3)])


def test_a_paste_of_several_image_paths_attaches_each(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / "b.gif").write_bytes(b"GIF89a" + b"\0" * 20)

    async def main() -> None:
        app = _app(tmp_path, (Seeing(say("ok")), "m"))
        async with app.run_test(size=SIZE) as pilot:
            app.post_message(events.Paste(f"'{project}/shot.png'\nfile://{project}/b.gif\n"))
            await pilot.pause()
            assert app.editor.text == "[image 1: shot.png 73 B] [image 2: b.gif 26 B]"

    run(main())


def test_a_typed_path_becomes_a_chip_and_backspace_removes_it_whole(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / "two.jpg").write_bytes(b"\xff\xd8\xff\xe0" + b"\0" * 60)
    fake = Seeing(say("ok"))

    async def main() -> None:
        app = _app(tmp_path, (fake, "m"))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press(*"compare", "space", *"shot.png", "space", *"two.jpg", "space")
            await pilot.pause()
            editor = app.editor
            assert editor.text == "compare [image 1: shot.png 73 B] [image 2: two.jpg 64 B] "
            await pilot.press("backspace", "backspace")  # the space, then the chip whole
            assert editor.text == "compare [image 1: shot.png 73 B] "
            await pilot.press(*"please", "enter")
            await _settle(app)

    run(main())
    assert _sent(fake) == (["compare [image 1] please"], [png(seed=3)])


def test_a_path_typed_last_becomes_an_image_when_enter_sends(tmp_path: Path) -> None:
    _project(tmp_path)
    fake = Seeing(say("ok"))

    async def main() -> None:
        app = _app(tmp_path, (fake, "m"))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press(*"see", "space", *"./shot.png", "enter")
            await _settle(app)
            assert app.editor.text == "" and not app.editor.images

    run(main())
    assert _sent(fake) == (["see [image 1]"], [png(seed=3)])


def test_a_path_that_is_no_image_stays_text_with_a_notice(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / "fake.png").write_text("I am text")

    async def main() -> None:
        app = _app(tmp_path, (Seeing(say("ok")), "m"))
        async with app.run_test(size=SIZE) as pilot:
            app.post_message(events.Paste("fake.png"))
            await pilot.pause()
            assert app.editor.text == "fake.png" and not app.editor.images
            assert "fake.png is not an image smith can send" in visible(app)
            # A word that names no file is left alone, and says nothing.
            await pilot.press("space", *"nothing.png", "space")
            await pilot.pause()
            assert app.editor.text == "fake.png nothing.png "

    run(main())


def _fake_xclip(tmp_path: Path, image: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "xclip"
    tool.write_text(
        "#!/bin/sh\n"
        'case "$*" in *TARGETS*) printf "TARGETS\\nimage/png\\ntext/plain\\n" ;;\n'
        f'  *image/png*) cat "{image}" ;;\n'
        "  *) exit 1 ;; esac\n"
    )
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return {"DISPLAY": ":99", "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}"}


def test_ctrl_v_attaches_the_clipboards_image(tmp_path: Path) -> None:
    project = _project(tmp_path)
    env = _fake_xclip(tmp_path, project / "shot.png")
    fake = Seeing(say("ok"))

    async def main() -> None:
        app = _app(tmp_path, (fake, "m"))
        async with app.run_test(size=SIZE) as pilot:
            assert app.editor.image_input is not None
            app.editor.image_input.env = env
            await pilot.press(*"see", "space", "ctrl+v")
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert app.editor.text == "see [image 1: clipboard 73 B]"
            await pilot.press("enter")
            await _settle(app)

    run(main())
    assert _sent(fake) == (["see [image 1]"], [png(seed=3)])


def test_ctrl_v_without_a_reachable_clipboard_says_why_and_pastes_text(tmp_path: Path) -> None:
    _project(tmp_path)

    async def main() -> None:
        app = _app(tmp_path, (Seeing(say("ok")), "m"))
        async with app.run_test(size=SIZE) as pilot:
            assert app.editor.image_input is not None
            app.editor.image_input.env = {"PATH": str(tmp_path / "nowhere")}
            app.copy_to_clipboard("copied text")
            await pilot.press("ctrl+v")
            await app.workers.wait_for_complete()
            await pilot.pause()
            screen = " ".join(visible(app).split())  # the notice wraps
            assert "no image from the system clipboard: it is not reachable here" in screen
            assert "wl-paste needs WAYLAND_DISPLAY" in screen
            assert "xclip needs DISPLAY" in screen
            assert app.editor.text == "copied text"  # the app's own clipboard, as before

    run(main())


def test_a_model_without_image_input_refuses_and_the_message_stays(tmp_path: Path) -> None:
    _project(tmp_path)
    fake = Fake(say("never"))

    async def main() -> None:
        app = _app(tmp_path, (fake, "m"))
        async with app.run_test(size=SIZE) as pilot:
            app.post_message(events.Paste("shot.png"))
            await pilot.pause()
            said = " ".join(visible(app).split())  # told at once, before sending
            assert "the model fake:m does not take image input: this message will be" in said
            await pilot.press("enter")
            await pilot.pause()
            screen = " ".join(visible(app).split())  # the notice wraps
            assert "the message was not sent" in screen
            assert "the model fake:m does not take image input" in screen
            # Put back: the text and the image, to send elsewhere or without it.
            assert app.editor.text == "[image 1: shot.png 73 B]"
            assert len(app.editor.images) == 1

    run(main())
    assert fake.requests == []
