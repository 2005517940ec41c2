"""Images from the modes without a screen: `smith eval --image FILE` and RPC `prompt`
with image parts, through the scripted provider's requests log (docs/scripted.md)."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from smith.session import Session
from tests.conftest import Result, SmithEnv
from tests.rpc_kit import Rpc
from tests.test_images import png


def _script(senv: SmithEnv, *, images: bool = True, responses: int = 3) -> tuple[str, Path]:
    log = senv.root / "requests.jsonl"
    log.unlink(missing_ok=True)
    script = senv.root / "script.json"
    body: dict[str, Any] = {"responses": [{"text": "ok"}] * responses, "requests_log": str(log)}
    if images:
        body["input"] = ["text", "image"]
    script.write_text(json.dumps(body))
    return f"scripted:{script}", log


def _requests(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def _users(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "user" and not m.get("context")]


def _sessions(senv: SmithEnv) -> list[Path]:
    return sorted((senv.data_home / "sessions").rglob("*.smith"))


# -- eval --------------------------------------------------------------------------------


def test_eval_sends_each_image_after_the_text(senv: SmithEnv, smith: Callable[..., Result]) -> None:
    project = senv.make_project()
    (project / "a.png").write_bytes(png(seed=1))
    (project / "b.png").write_bytes(png(seed=2))
    model, log = _script(senv)
    r = smith("eval", "--model", model, "--image", "a.png", "--image", "b.png", "compare",
              cwd=project)  # fmt: skip
    assert r.code == 0, r.err
    ((user,),) = [_users(q) for q in _requests(log)]
    text, one, two = user["content"]
    assert text == {"type": "text", "text": "compare"}
    assert [base64.b64decode(p["data"]) for p in (one, two)] == [png(seed=1), png(seed=2)]
    assert one["name"] == "a.png" and one["media_type"] == "image/png"


def test_eval_refuses_images_for_a_text_model_before_a_session_is_made(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = senv.make_project()
    (project / "a.png").write_bytes(png())
    model, log = _script(senv, images=False)
    r = smith("eval", "--model", model, "--image", "a.png", "what is this?", cwd=project)
    assert r.code != 0
    assert "error: --image: the message was not sent: it has 1 image (a.png)" in r.err
    assert "does not take image input" in r.err and "without the image" in r.err
    assert not log.exists()  # no request
    assert _sessions(senv) == []  # and nothing recorded


def test_eval_names_a_file_that_is_no_image_and_the_bound_of_one_too_large(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = senv.make_project()
    (project / "notes.png").write_text("text, not a picture")
    (project / "big.png").write_bytes(png(pad=5000))
    model, _ = _script(senv)
    r = smith("eval", "--model", model, "--image", "notes.png", "x", cwd=project)
    assert r.code != 0 and "notes.png is not an image smith can send" in r.err
    r = smith("eval", "--model", model, "--images-max-bytes", "4096", "--image", "big.png",
              "x", cwd=project)  # fmt: skip
    assert r.code != 0
    assert "the image big.png is 5 KB, over images.max-bytes (4 KB)" in r.err
    assert "--images-max-bytes" in r.err  # where the bound was set


def test_the_same_image_in_two_evals_of_one_session_is_stored_once(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = senv.make_project()
    (project / "big.png").write_bytes(png(pad=300_000))
    model, log = _script(senv)
    args = ("eval", "--model", model, "--session", "pics", "--image", "big.png")
    assert smith(*args, "first", cwd=project).code == 0
    (path,) = _sessions(senv)
    size = path.stat().st_size
    assert size > 300_000
    assert smith(*args, "second", cwd=project).code == 0
    assert path.stat().st_size - size < 5_000
    last = _requests(log)[-1]
    sent = [p for m in _users(last) for p in m["content"] if p["type"] == "image"]
    assert len(sent) == 2  # the history's image and the new one, both resolved
    assert len(Session.load(str(path)).blobs) == 1


# -- RPC ---------------------------------------------------------------------------------


def test_rpc_prompt_takes_images_as_base64_or_paths(senv: SmithEnv) -> None:
    project = senv.make_project()
    (project / "b.png").write_bytes(png(seed=2))
    model, log = _script(senv)
    data = base64.b64encode(png(seed=1)).decode()
    with Rpc(senv, project, "--model", model) as rpc:
        images = [{"media_type": "image/png", "data": data, "name": "a.png"}, {"path": "b.png"}]
        assert rpc.call("prompt", {"text": "compare", "images": images})["status"] == "started"
        rpc.event("agent_end")
        code, err = rpc.close()
    assert code == 0, err
    (user,) = _users(_requests(log)[0])
    _, one, two = user["content"]
    assert base64.b64decode(one["data"]) == png(seed=1) and one["name"] == "a.png"
    assert base64.b64decode(two["data"]) == png(seed=2) and two["name"] == "b.png"
    # The event names the blob; it carries no bytes.
    (message,) = [e["message"] for e in rpc.events if e.get("type") == "message_end"
                  and e["message"]["role"] == "user"]  # fmt: skip
    assert all("data" not in p and "blob" in p for p in message["content"][1:])


def test_rpc_refuses_bad_images_as_invalid_params(senv: SmithEnv) -> None:
    project = senv.make_project()
    model, log = _script(senv)
    good = base64.b64encode(png()).decode()
    cases = [
        ([{"media_type": "image/png", "data": "%%%"}], "input.not-an-image", "not valid base64"),
        ([{"media_type": "image/tiff", "data": good}], "input.not-an-image", "image/tiff"),
        ([{"data": good}], "input.image-shape", "prompt.images[0]"),
        ([{"path": "missing.png"}], "input.image-unreadable", "missing.png"),
        ("a.png", "rpc.bad-param", "an array"),
    ]
    with Rpc(senv, project, "--model", model, "--images-max-bytes", "100000") as rpc:
        for images, code, words in cases:
            error = rpc.error("prompt", {"text": "look", "images": images})
            assert error["code"] == -32602, error
            assert error["data"]["code"] == code, error
            assert words in json.dumps(error["data"]), error
        big = base64.b64encode(png(pad=200_000)).decode()
        error = rpc.error("prompt", {"text": "x", "images": [{"media_type": "image/png",
                                                              "data": big}]})  # fmt: skip
        assert (error["code"], error["data"]["code"]) == (-32602, "input.image-too-large")
        code_, err = rpc.close()
    assert code_ == 0, err
    assert not log.exists()  # nothing reached the model


def test_rpc_refuses_images_for_a_text_model_and_records_nothing(senv: SmithEnv) -> None:
    project = senv.make_project()
    model, log = _script(senv, images=False)
    good = base64.b64encode(png()).decode()
    with Rpc(senv, project, "--model", model) as rpc:
        images = [{"media_type": "image/png", "data": good}]
        error = rpc.error("prompt", {"text": "what is this?", "images": images})
        assert error["code"] == -32602
        assert error["data"]["code"] == "input.images-refused"
        assert "does not take image input" in error["data"]["what"]
        # The text alone still goes through.
        assert rpc.call("prompt", {"text": "hello"})["status"] == "started"
        rpc.event("agent_end")
        code, err = rpc.close()
    assert code == 0, err
    (request,) = _requests(log)
    assert [m["content"] for m in _users(request)] == [[{"type": "text", "text": "hello"}]]
    assert os.path.getsize(_sessions(senv)[0]) < 20_000


# -- replay ------------------------------------------------------------------------------


def test_replay_shows_each_image_as_a_chip_and_needs_no_bytes_in_events(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = senv.make_project()
    (project / "a.png").write_bytes(png(seed=1))
    model, _ = _script(senv)
    live = smith("eval", "--json", "--model", model, "--image", "a.png", "what is it?",
                 cwd=project)  # fmt: skip
    assert live.code == 0, live.err
    sid = live.err.split("(", 1)[1].split(")", 1)[0]
    shown = smith("replay", sid, "--instant", cwd=project)
    assert shown.code == 0, shown.err
    assert "> what is it?\n  [image 1: a.png 73 B]\n" in shown.out
    replay = smith("replay", sid, "--json", "--instant", cwd=project)
    (message,) = [e["message"] for e in map(json.loads, replay.out.splitlines())
                  if e["type"] == "message_end" and e["message"]["role"] == "user"]  # fmt: skip
    (image,) = [p for p in message["content"] if p["type"] == "image"]
    assert set(image) == {"type", "media_type", "blob", "name", "bytes"}
    assert len(replay.out) < 10_000


# -- MCP ---------------------------------------------------------------------------------


def test_mcp_read_of_an_image_returns_image_content(senv: SmithEnv) -> None:
    from tests.test_mcp import Client, _serve, _with_client

    project = senv.make_project()
    (project / "shot.png").write_bytes(png(seed=4))
    got: dict[str, Any] = {}

    async def body(client: Client) -> None:
        got["read"] = await client.call_tool("read", {"path": "shot.png"})

    _with_client(_serve(senv, project), body)
    text, image = got["read"].content
    assert text.text.startswith("[shot.png: image/png image")
    assert (image.type, image.mime_type) == ("image", "image/png")
    assert base64.b64decode(image.data) == png(seed=4)


def test_rpc_refuses_a_fifo_a_device_a_cut_header_and_too_many_images(senv: SmithEnv) -> None:
    """A FIFO or /dev/stdin named as an image once blocked the server (the client's own
    next requests were read as image bytes); a bare PNG signature was taken as an image;
    any number of images went with one message."""
    import os

    project = senv.make_project()
    os.mkfifo(project / "fifo.png")
    (project / "cut.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    model, log = _script(senv)
    good = {"media_type": "image/png", "data": base64.b64encode(png()).decode()}
    with Rpc(senv, project, "--model", model) as rpc:
        for path in ("fifo.png", "/dev/stdin"):
            error = rpc.error("prompt", {"text": "x", "images": [{"path": path}]})
            assert error["data"]["code"] == "input.image-unreadable", error
            assert "not a regular file" in json.dumps(error["data"])
        error = rpc.error("prompt", {"text": "x", "images": [{"path": "cut.png"}]})
        assert error["data"]["code"] == "input.not-an-image", error
        error = rpc.error("prompt", {"text": "x", "images": [good] * 21})
        assert error["data"]["code"] == "input.too-many-images", error
        assert rpc.call("get_state")  # the server goes on answering
        code, err = rpc.close()
    assert code == 0, err
    assert not log.exists()
