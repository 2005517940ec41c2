"""Images attached to messages (smith/runtime/_images.py, smith/session/_blobs.py): typed
through the runtime, refused before dispatch for a model without image input, checked
where they enter, recorded once per session and resolved for each request."""

from __future__ import annotations

import asyncio
import base64
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from smith.diagnostics import SmithError
from smith.runtime import Image, Limits, load_image, ops
from smith.runtime._images import resolve, sniff
from smith.session import Session
from tests.runtime_kit import Fake, Gate, World, call, messages, run, say


def png(width: int = 2, height: int = 2, *, seed: int = 0, pad: int = 0) -> bytes:
    """A real PNG (`pad` bytes of an ancillary chunk make it as large as a test needs)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = b"".join(b"\0" + bytes([seed % 256, 0, 0]) * width for _ in range(height))
    extra = chunk(b"tEXt", b"c\0" + os.urandom(pad)) if pad else b""
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + extra
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


class Seeing(Fake):
    """A fake provider whose model takes images (as a catalog entry with image input)."""

    input = ("text", "image")


def _image_parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in message["content"] if p.get("type") == "image"]


# -- what an image is --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "media_type"),
    [
        (png(), "image/png"),
        (b"\xff\xd8\xff\xe0\0\x10JFIF", "image/jpeg"),
        (b"GIF89a\x01\0\x01\0\0\0\0", "image/gif"),  # the whole 13-byte header
        (b"GIF89a\x01\0\x01\0", None),  # cut short
        (b"\x89PNG\r\n\x1a\n", None),  # a signature alone
        (b"RIFF\x24\0\0\0WEBPVP8 ", "image/webp"),
        (b"%PDF-1.7", None),
        (b"RIFF\x24\0\0\0WAVEfmt ", None),
        (b"", None),
    ],
)
def test_the_media_type_comes_from_the_first_bytes(data: bytes, media_type: str | None) -> None:
    assert sniff(data) == media_type


def test_a_file_that_is_no_image_is_refused_naming_it(tmp_path: Path) -> None:
    fake = tmp_path / "notes.png"  # the name says png; the bytes do not
    fake.write_text("just text")
    with pytest.raises(SmithError) as caught:
        load_image(str(fake))
    d = caught.value.diagnostic
    assert d.code == "input.not-an-image"
    assert str(fake) in d.what and "PNG, JPEG, GIF or WebP" in d.why


def test_an_image_over_the_bound_is_refused_naming_the_file_and_the_bound(
    tmp_path: Path,
) -> None:
    big = tmp_path / "big.png"
    big.write_bytes(png(pad=3000))
    with pytest.raises(SmithError) as caught:
        load_image(str(big), max_bytes=2048, where="/home/me/config.kdl:3")
    d = caught.value.diagnostic
    assert d.code == "input.image-too-large"
    assert str(big) in d.what and "images.max-bytes (2 KB)" in d.what
    assert "/home/me/config.kdl:3" in d.why and "images.max-bytes" in d.fix


def test_a_missing_file_says_it_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(SmithError) as caught:
        load_image(str(tmp_path / "gone.png"))
    assert caught.value.diagnostic.code == "input.image-unreadable"
    assert "No such file" in caught.value.diagnostic.what


def test_base64_data_is_checked_against_its_declared_type() -> None:
    data = base64.b64encode(png()).decode()
    assert Image.from_base64(data, media_type="image/png").media_type == "image/png"
    with pytest.raises(SmithError) as caught:
        Image.from_base64(data, media_type="image/jpeg", name="shot")
    assert "declared 'image/jpeg', but its bytes are image/png" in caught.value.diagnostic.what
    with pytest.raises(SmithError) as caught:
        Image.from_base64("not base64!", media_type="image/png")
    assert "not valid base64" in caught.value.diagnostic.what
    with pytest.raises(SmithError) as caught:
        Image.from_base64(data, media_type="image/bmp")
    assert "'image/bmp' is not one of image/png" in caught.value.diagnostic.what


def test_operations_take_images_as_data_and_give_them_back() -> None:
    data = base64.b64encode(png()).decode()
    op = ops.parse_op({"op": "prompt", "text": "look", "images": [
        {"media_type": "image/png", "data": data, "name": "a.png"}]})  # fmt: skip
    assert isinstance(op, ops.Prompt)
    (image,) = op.images
    assert (image.name, image.media_type, image.data) == ("a.png", "image/png", png())
    assert ops.parse_op(op.to_dict()) == op
    with pytest.raises(SmithError) as caught:
        ops.parse_op({"op": "steer", "text": "x", "images": [{"data": data}]})
    assert caught.value.diagnostic.code == "input.image-shape"
    assert "steer.images[0]" in caught.value.diagnostic.what


# -- through the runtime -----------------------------------------------------------------


def test_a_prompt_with_an_image_reaches_the_provider_as_an_image_part(tmp_path: Path) -> None:
    world = World(tmp_path)
    provider = Seeing(say("a red square"))
    image = Image(png(), "image/png", "shot.png")

    async def main() -> None:
        rt = world.runtime(provider)
        rt.submit(ops.Prompt("what is this?", images=(image,)))
        await rt.wait_idle()

    run(main)
    (request,) = provider.requests
    (user,) = [m for m in request.messages if m["role"] == "user" and not m.get("context")]
    text, part = user["content"]
    assert text == {"type": "text", "text": "what is this?"}
    assert part["type"] == "image" and part["media_type"] == "image/png"
    assert base64.b64decode(part["data"]) == png()
    assert "blob" not in part  # the reference is resolved for the provider
    # Recorded: the message names the blob; the session holds its bytes once.
    (recorded,) = _image_parts(messages(world.session)[0])
    assert "data" not in recorded
    assert recorded["name"] == "shot.png" and recorded["bytes"] == len(png())
    assert world.reopened().blobs.get(recorded["blob"]) == ("image/png", png())


def test_a_model_without_image_input_refuses_the_prompt_before_anything_is_recorded(
    tmp_path: Path,
) -> None:
    world = World(tmp_path)
    provider = Fake(say("never"))  # declares no image input

    async def main() -> None:
        rt = world.runtime(provider)
        with pytest.raises(SmithError) as caught:
            rt.prompt("what is this?", (Image(png(), "image/png", "shot.png"),))
        d = caught.value.diagnostic
        assert d.code == "input.images-refused"
        assert "the model fake:m does not take image input" in d.what
        assert "shot.png" in d.what and "does not take image input" in d.what
        assert "nothing was recorded" in d.why
        assert "anthropic:" in d.fix and "without the image" in d.fix
        assert not rt.busy
        await rt.wait_idle()

    run(main)
    assert provider.requests == []
    assert messages(world.session) == []
    assert len(world.session.blobs) == 0


def test_steer_and_follow_up_carry_their_images_through_the_queue(tmp_path: Path) -> None:
    world = World(tmp_path)
    gate = Gate()
    provider = Seeing([gate, *say("first")], say("second"))
    one, two = (
        Image(png(seed=1), "image/png", "one.png"),
        Image(png(seed=2), "image/png", "two.png"),
    )

    async def main() -> None:
        rt = world.runtime(provider)
        rt.prompt("go")
        await gate.reached.wait()
        rt.submit(ops.FollowUp("and this", images=(one, two)))
        (queued,) = rt.state()["queue"]
        assert queued["images"] == [one.label(), two.label()]
        gate.opened.set()
        await rt.wait_idle()

    run(main)
    last = provider.requests[-1].messages[-1]
    assert last["role"] == "user"
    parts = _image_parts(last)
    assert [base64.b64decode(p["data"]) for p in parts] == [one.data, two.data]


def test_the_same_image_twice_and_a_resume_do_not_store_it_again(tmp_path: Path) -> None:
    world = World(tmp_path)
    provider = Seeing(say("one"), say("two"), say("three"))
    image = Image(png(pad=200_000), "image/png", "big.png")

    async def main() -> None:
        rt = world.runtime(provider)
        rt.prompt("first", (image,))
        await rt.wait_idle()
        size = os.path.getsize(world.path)
        assert size > 200_000  # stored once
        rt.prompt("again", (image,))
        await rt.wait_idle()
        rt.prompt("no image, but the history has two")
        await rt.wait_idle()
        # Two more messages and answers: a few hundred bytes, not the image again.
        assert os.path.getsize(world.path) - size < 5_000
        await rt.close()

    run(main)
    assert len(provider.requests[-1].messages) >= 5
    sent = [p for m in provider.requests[-1].messages for p in _image_parts(m)]
    assert len(sent) == 2 and all(base64.b64decode(p["data"]) == image.data for p in sent)
    world.session.close()
    # Resumed in a later process: the context resolves the same blob.
    world.session = resumed = Session.open(world.path)
    again = Seeing(say("four"))

    async def resume() -> None:
        rt = world.runtime(again)
        before = os.path.getsize(world.path)
        rt.prompt("resumed")
        await rt.wait_idle()
        assert os.path.getsize(world.path) - before < 5_000
        await rt.close()

    run(resume)
    sent = [p for m in again.requests[0].messages for p in _image_parts(m)]
    assert len(sent) == 2 and base64.b64decode(sent[0]["data"]) == image.data
    assert len(resumed.blobs) == 1


def test_the_runtime_bound_applies_to_images_given_as_values(tmp_path: Path) -> None:
    world = World(tmp_path)

    async def main() -> None:
        rt = world.runtime(Seeing(), limits=Limits(image_bytes=100))
        with pytest.raises(SmithError) as caught:
            rt.prompt("x", (Image(png(pad=500), "image/png", "p.png"),))
        assert caught.value.diagnostic.code == "input.image-too-large"
        assert "p.png" in caught.value.diagnostic.what

    run(main)


def test_a_blob_the_session_lost_becomes_a_note_for_the_provider(tmp_path: Path) -> None:
    session = Session.create(str(tmp_path / "s.smith"))
    lost = {"type": "image", "media_type": "image/png", "blob": "0" * 64, "name": "x.png"}
    message = {"role": "user", "content": [{"type": "text", "text": "see"}, lost]}
    (out,) = resolve(session, [message])
    assert out["content"][1] == {
        "type": "text",
        "text": "[x.png: this session no longer holds the image]",
    }
    plain = {"role": "user", "content": [{"type": "text", "text": "no images"}]}
    assert resolve(session, [plain])[0] is plain  # untouched, not copied


def test_blob_frames_survive_fork_and_are_ignored_when_damaged(tmp_path: Path) -> None:
    session = Session.create(str(tmp_path / "s.smith"))
    entry = session.append("message", {"role": "user", "content": []})
    digest = session.blobs.put(png(), "image/png")
    assert session.leaf == entry.id  # a blob is no entry: the branch is unchanged
    fork = session.fork(str(tmp_path / "f.smith"))
    assert fork.blobs.get(digest) == ("image/png", png())
    fork.close()
    session.close()
    assert Session.load(str(tmp_path / "f.smith")).blobs.get(digest) == ("image/png", png())


# -- the read tool and @path -------------------------------------------------------------


def _shot(world: World, data: bytes | None = None) -> bytes:
    data = png(seed=7) if data is None else data
    (world.project / "shot.png").write_bytes(data)
    return data


def _result(session: Session) -> dict[str, Any]:
    (result,) = [m for m in messages(session) if m["role"] == "tool_result"]
    return result


def test_read_returns_an_image_to_a_model_that_takes_images(tmp_path: Path) -> None:
    world = World(tmp_path)
    data = _shot(world)
    provider = Seeing(call(("read", {"path": "shot.png"})), say("a red pixel"))
    world.converse(provider)
    recorded = _result(world.session)
    text, part = recorded["content"]
    assert text["text"] == f"[shot.png: image/png image, {len(data)} B]"
    assert part["blob"] == world.session.blobs.put(data, "image/png")
    assert recorded["details"]["image"] == "image/png"
    # The next request carries the bytes in the tool result.
    sent = provider.requests[1].messages[-1]
    assert sent["role"] == "tool_result"
    (image,) = _image_parts(sent)
    assert base64.b64decode(image["data"]) == data
    # The effect record holds no bytes: the blob holds them, once.
    completions = [e for e in world.session.entries("effect_completion")]
    assert all(not isinstance(v, bytes) and len(str(v)) < 600 for v in
               (e.content for e in completions))  # fmt: skip
    assert data not in str(completions[0].content).encode()


def test_read_tells_a_model_without_image_input_why_it_sees_no_image(tmp_path: Path) -> None:
    world = World(tmp_path)
    _shot(world)
    provider = Fake(call(("read", {"path": "shot.png"})), say("ok"))
    world.converse(provider)
    recorded = _result(world.session)
    (text,) = recorded["content"]
    assert (
        "the image itself is not shown: the model fake:m does not take image input"
        in (text["text"])
    )
    assert len(world.session.blobs) == 0


def test_read_refuses_an_image_over_the_bound(tmp_path: Path) -> None:
    world = World(tmp_path)
    _shot(world, png(pad=4000))
    provider = Seeing(call(("read", {"path": "shot.png"})), say("ok"))

    async def main() -> None:
        rt = world.runtime(provider)
        rt.context.limits["images.max-bytes"] = 1024
        rt.prompt("go")
        await rt.wait_idle()

    run(main)
    recorded = _result(world.session)
    assert recorded["is_error"]
    assert "over images.max-bytes (1 KB); it was not read" in recorded["content"][0]["text"]


def test_an_at_path_to_an_image_attaches_the_image(tmp_path: Path) -> None:
    world = World(tmp_path)
    data = _shot(world)
    provider = Seeing(say("seen"))
    world.converse(provider, prompts=["what is in @shot.png?"])
    (user,) = [m for m in provider.requests[0].messages if m["role"] == "user"
               and not m.get("context")]  # fmt: skip
    text, image = user["content"]
    assert text["text"] == "what is in @shot.png?"
    assert base64.b64decode(image["data"]) == data
    (message,) = [m for m in messages(world.session) if m["role"] == "user"]
    assert message["attached"] == [{"path": "shot.png", "image": "image/png", "bytes": len(data)}]


def test_dump_and_import_keep_the_blobs_and_stay_byte_identical(tmp_path: Path) -> None:
    from smith.session import SessionStore, dump, import_jsonl

    world = World(tmp_path)
    provider = Seeing(say("seen"))

    async def main() -> None:
        rt = world.runtime(provider)
        rt.prompt("look", (Image(png(seed=5), "image/png", "five.png"),))
        await rt.wait_idle()

    run(main)
    lines = list(dump(world.session))
    assert '"type":"blob"' in lines[-1]
    path = tmp_path / "dump.jsonl"
    path.write_text("\n".join(lines) + "\n")
    world.session.close()
    store = SessionStore(str(tmp_path / "home"))
    imported = import_jsonl(str(path), store, keep_id=False)
    (part,) = _image_parts(messages(imported)[0])
    assert imported.blobs.get(part["blob"]) == ("image/png", png(seed=5))
    again = list(dump(imported))
    assert again[1:] == lines[1:]  # the header names the new id
    # A blob whose bytes are not its digest is refused with the line.
    bad = lines[-1].replace(part["blob"], "0" * 64)
    path.write_text("\n".join([*lines[:-1], bad]) + "\n")
    with pytest.raises(SmithError) as caught:
        import_jsonl(str(path), store, keep_id=False)
    assert "do not have the digest" in caught.value.diagnostic.what


def test_the_library_sends_images_as_values_or_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import smith

    monkeypatch.setenv("SMITH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SMITH_CONFIG_HOME", str(tmp_path / "config"))
    (tmp_path / "b.png").write_bytes(png(seed=2))
    provider = Seeing(say("two pictures"))

    async def main() -> None:
        async with smith.Agent((provider, "m"), cwd=str(tmp_path)) as agent:
            one = smith.Image(png(seed=1), "image/png", "a.png")
            await agent.send("compare", [one, "b.png"])
            with pytest.raises(SmithError):
                await agent.send("again", ["missing.png"])

    run(main)
    (request,) = provider.requests
    sent = [base64.b64decode(p["data"]) for p in _image_parts(request.messages[-1])]
    assert sent == [png(seed=1), png(seed=2)]


def test_images_stay_with_their_input_through_the_input_hook_and_an_abort(
    tmp_path: Path,
) -> None:
    import threading

    from smith.sdk import HandleInput, Plugin, TransformInput

    world = World(tmp_path)
    called, release = threading.Event(), threading.Event()

    def hook(event: dict[str, Any], view: Any) -> list[Any]:
        if event["text"] == "a command":
            return [HandleInput("done")]  # its image goes with it: nothing is recorded
        if event["text"] == "slow":
            called.set()
            release.wait(10)
        return [TransformInput(event["text"].upper())]

    one, two = (
        Image(png(seed=1), "image/png", "one.png"),
        Image(png(seed=2), "image/png", "two.png"),
    )
    provider = Seeing(say("ok"), say("ok"))

    async def main() -> None:
        rt = world.runtime(provider, plugins=[Plugin("p", handlers={"input": hook})],
                           limits=Limits(handler_deadline=10))  # fmt: skip
        rt.prompt("a command", (one,))
        await rt.wait_idle()
        rt.prompt("look", (two,))
        await rt.wait_idle()
        rt.prompt("slow", (one,))
        assert await asyncio.to_thread(called.wait, 10)
        rt.abort()
        await rt.wait_idle()
        release.set()

    run(main)
    users = [m for m in messages(world.session) if m["role"] == "user"]
    assert [(m["content"][0]["text"], [p["name"] for p in _image_parts(m)]) for m in users] == [
        ("LOOK", ["two.png"]),
        ("slow", ["one.png"]),  # aborted while the hook ran: recorded as typed, image kept
    ]
