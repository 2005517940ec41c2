"""An attached image reaches each vendor's wire format from a real prompt: loopback
servers speaking Anthropic, Gemini and OpenAI (Responses and Chat Completions), the
host's HTTP engine and the runtime (tests/http_kit.py, the vendor loopback tests' kit);
and the read tool's image comes back inside Anthropic's tool_result, named in the text
for the APIs whose tool results carry no images."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from smith.plugins.providers._openai_chat import ChatCompletions
from smith.providers._http import HttpEngine
from smith.providers._http_provider import HttpProvider
from smith.runtime import Image
from tests.http_kit import SSE, LoopbackServer, Recorded, Reply
from tests.openai_kit import GPT4O, GPT5, fixture, settings
from tests.runtime_kit import World, run
from tests.test_images import png
from tests.test_provider_openai_loopback import KEY, LIMITS, chat_chunk, events_of
from tests.test_provider_vendor_loopback import ANTHROPIC, GOOGLE, Vendor

PICTURE = png(seed=9)
DATA = base64.b64encode(PICTURE).decode()


@pytest.fixture
def srv() -> Any:
    with LoopbackServer() as server:
        yield server


def base(vendor: Vendor, srv: LoopbackServer) -> str:
    return srv.url + ("/v1" if vendor.name == "anthropic" else "/v1beta")


def _seeing(vendor: Vendor) -> Vendor:
    return replace(vendor, info=replace(vendor.info, input=("text", "image")))


def _ask(tmp_path: Path, provider: Any, text: str = "what is this?") -> World:
    world = World(tmp_path)

    async def main() -> None:
        rt = world.runtime(provider)
        rt.prompt(text, (Image(PICTURE, "image/png", "shot.png"),))
        await rt.wait_idle()

    run(main)
    return world


def test_anthropic_gets_a_base64_image_block(srv: LoopbackServer, tmp_path: Path) -> None:
    vendor = _seeing(ANTHROPIC)
    srv.script([Reply(200, SSE, vendor.stream(text="A red square."))])
    _ask(tmp_path, vendor.provider(base(vendor, srv)))
    (user,) = [m for m in srv.requests[0].json["messages"] if m["role"] == "user"]
    blocks = [b for b in user["content"] if b["type"] in ("text", "image")]
    assert blocks[-2]["text"] == "what is this?"
    image = blocks[-1]
    assert image["source"] == {"type": "base64", "media_type": "image/png", "data": DATA}


def test_google_gets_inline_data(srv: LoopbackServer, tmp_path: Path) -> None:
    vendor = _seeing(GOOGLE)
    srv.script([Reply(200, SSE, vendor.stream(text="A red square."))])
    _ask(tmp_path, vendor.provider(base(vendor, srv)))
    (user,) = [c for c in srv.requests[0].json["contents"] if c["role"] == "user"][-1:]
    assert {"text": "what is this?"} in user["parts"]
    assert user["parts"][-1] == {"inlineData": {"mimeType": "image/png", "data": DATA}}


def _openai(srv: LoopbackServer, wire: Any, model: Any) -> HttpProvider:
    config = settings(base_url=srv.url + "/v1", credential=KEY)
    return HttpProvider("openai", wire, model, config, HttpEngine(LIMITS))


def test_openai_responses_gets_an_input_image(srv: LoopbackServer, tmp_path: Path) -> None:
    from smith.plugins.providers import openai

    srv.script([Reply(200, SSE, events_of(fixture("openai_responses_text.sse")))])
    _ask(tmp_path, _openai(srv, openai.Responses(), GPT5))
    items = srv.requests[0].json["input"]
    (user,) = [i for i in items if i.get("role") == "user"][-1:]
    assert user["content"][-1] == {"type": "input_image",
                                   "image_url": f"data:image/png;base64,{DATA}"}  # fmt: skip


def test_openai_chat_gets_an_image_url(srv: LoopbackServer, tmp_path: Path) -> None:
    srv.script([Reply(200, SSE, events_of(fixture("openai_chat_text.sse")))])
    _ask(tmp_path, _openai(srv, ChatCompletions(), GPT4O))
    (user,) = [m for m in srv.requests[0].json["messages"] if m["role"] == "user"][-1:]
    url = f"data:image/png;base64,{DATA}"
    assert user["content"][-1] == {"type": "image_url", "image_url": {"url": url}}


def test_a_model_without_image_input_is_never_sent_the_bytes(
    srv: LoopbackServer, tmp_path: Path
) -> None:
    vendor = ANTHROPIC  # its catalog entry here lists text only
    world = World(tmp_path)

    async def main() -> None:
        rt = world.runtime(vendor.provider(base(vendor, srv)))
        with pytest.raises(Exception, match="does not take image input"):
            rt.prompt("what is this?", (Image(PICTURE, "image/png", "shot.png"),))

    run(main)
    assert srv.requests == []


# -- the read tool's image ---------------------------------------------------------------


def _read_then_answer(vendor: Vendor) -> Any:
    stop = "tool_use" if vendor.name == "anthropic" else "STOP"
    call = ("toolu_1", "read", '{"path": "shot.png"}')

    def answer(request: Recorded) -> Reply:
        sent = json.dumps(request.json)
        if '"tool_result"' in sent or '"functionResponse"' in sent:
            return Reply(200, SSE, vendor.stream(text="It is red."))
        return Reply(200, SSE, vendor.stream(call=call, stop=stop))

    return answer


def test_anthropic_gets_the_read_image_inside_the_tool_result(
    srv: LoopbackServer, tmp_path: Path
) -> None:
    vendor = _seeing(ANTHROPIC)
    srv.script(_read_then_answer(vendor))
    world = World(tmp_path)
    (world.project / "shot.png").write_bytes(PICTURE)
    world.converse(vendor.provider(base(vendor, srv)), prompts=["look at shot.png"])
    assert len(srv.requests) == 2
    last = srv.requests[1].json["messages"][-1]
    (result,) = [b for b in last["content"] if b["type"] == "tool_result"]
    kinds = [b["type"] for b in result["content"]]
    assert kinds == ["text", "image"]
    assert result["content"][1]["source"]["data"] == DATA


def test_google_names_the_read_image_in_the_function_response(
    srv: LoopbackServer, tmp_path: Path
) -> None:
    vendor = _seeing(GOOGLE)
    srv.script(_read_then_answer(vendor))
    world = World(tmp_path)
    (world.project / "shot.png").write_bytes(PICTURE)
    world.converse(vendor.provider(base(vendor, srv)), prompts=["look at shot.png"])
    body = json.dumps(srv.requests[-1].json)
    assert "an image the tool returned is not shown to the model" in body
    assert DATA not in body


def test_openai_chat_names_the_read_image_in_the_tool_message(
    srv: LoopbackServer, tmp_path: Path
) -> None:
    read = [
        chat_chunk({"role": "assistant", "content": None}),
        chat_chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "read", "arguments": '{"path": "shot.png"}'},
                    }
                ]
            }
        ),
        chat_chunk({}, "tool_calls"),
        b"data: [DONE]\n\n",
    ]

    def answer(request: Recorded) -> Reply:
        if any(m.get("role") == "tool" for m in request.json["messages"]):
            return Reply(200, SSE, events_of(fixture("openai_chat_text.sse")))
        return Reply(200, SSE, read)

    srv.script(answer)
    world = World(tmp_path)
    (world.project / "shot.png").write_bytes(PICTURE)
    world.converse(_openai(srv, ChatCompletions(), GPT4O), prompts=["look at shot.png"])
    (tool,) = [m for m in srv.requests[-1].json["messages"] if m["role"] == "tool"]
    assert "[shot.png: image/png image" in tool["content"]
    assert "an image the tool returned is not shown to the model" in tool["content"]
    assert DATA not in json.dumps(srv.requests[-1].json)
