"""`@alias:uri` mentions of MCP resources (smith.plugins.mcp's `input` hook): the
resource's text attached after the typed text as an `@path`'s file is, in every frontend
(here `smith eval`), and a warning for each mention that cannot be attached. Servers
built on the official SDK's MCPServer (tests/mcp_client_kit.py)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests import mcp_client_kit as kit
from tests.conftest import Result, SmithEnv

PY = sys.executable


def _user_texts(request: dict[str, Any]) -> list[str]:
    user = [m for m in request["messages"] if m.get("role") == "user"][-1]
    content = user["content"]
    if isinstance(content, str):
        return [content]
    return [str(p.get("text")) for p in content if p.get("type") == "text"]


def test_a_mention_attaches_the_resource_and_a_bad_one_is_named_in_a_warning(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = senv.make_project()
    (project / "a.txt").write_text("FILE-TEXT\n")
    script = kit.write_server(senv.root / "srv")
    marks = project / "marks"  # the server runs in the sandbox: the project is writable
    marks.mkdir()
    block = f'server "files" command="{PY}" args="{script}" {{ env {{ MARKS "{marks}"; }}; }}'
    senv.write_user_config(f"mcp {{\n    {block}\n}}\n")
    model, log = kit.script(senv.root, [{"text": "done", "stop": "end"}])
    prompt = "sum up @files:notes://readme, @a.txt, @nope:notes://readme and @files:notes://missing"
    r = smith_process("eval", "--json", "--model", model, prompt, cwd=project)
    assert r.code == 0, r.err
    evs = kit.events(r.out)
    texts = _user_texts(kit.requests(log)[0])
    assert texts[0] == prompt  # the typed text stays as typed
    assert '<attached path="files:notes://readme" lines="1-1 of 1">\nRESOURCE-CONTENT-4242\n' \
        "</attached>" in texts[1:]  # fmt: skip
    assert any(t.startswith('<attached path="a.txt"') for t in texts[1:])
    assert len(texts) == 3  # the typed text, the resource and the file: nothing else
    warnings = [e["text"] for e in evs if e.get("type") == "ui" and e.get("level") == "warning"]
    assert any("'@nope:notes://readme' was not attached" in w and "no MCP server named nope"
               in w for w in warnings), warnings  # fmt: skip
    assert any("'@files:notes://missing' was not attached" in w for w in warnings), warnings
    assert "input.attach-failed" not in r.out + r.err  # a mention is never read as a path
    # Recorded as an @path's file is: the message notes what was attached, and by whom.
    (message,) = [e["message"] for e in evs if e.get("type") == "message_end"
                  and e["message"]["role"] == "user"]  # fmt: skip
    assert message["attached"] == [
        {"path": "files:notes://readme", "lines": "1-1 of 1", "bytes": 21, "cut": False,
         "plugin": "mcp"},
        {"path": "a.txt", "lines": "1-1 of 1", "bytes": 10, "cut": False},
    ]  # fmt: skip
    assert "transformed" not in message  # the typed text is what was sent


def test_what_a_mention_names() -> None:
    from smith.runtime import resource_mentions
    from smith.runtime._attach import mentions

    text = "see @files:notes://readme, @web:urn:x:1 @a.py (@files:notes://readme) @./d:e:f"
    assert resource_mentions(text) == [("files", "notes://readme"), ("web", "urn:x:1")]
    assert mentions(text) == ["a.py", "./d:e:f"]  # never read as paths
    assert resource_mentions("mail me@files:notes://x") == []  # not at a word's start


def _converse(tmp_path: Path, plugins: list[Any], prompt: str, **limits: Any) -> dict[str, Any]:
    """The user message recorded for `prompt` in a runtime with `plugins`."""
    from smith.effects import ToolContext
    from smith.runtime import Limits, Runtime
    from tests.runtime_kit import World, messages, run

    w = World(tmp_path)
    (w.project / "a.txt").write_text("FILE\n")
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"responses": [{"text": "done", "stop": "end"}]}))

    async def main() -> None:
        ctx = ToolContext(root=str(w.project), cwd=str(w.project), session=w.session)
        rt = Runtime(w.session, model=f"scripted:{script}", context=ctx, tools=[],
                     plugins=plugins, limits=Limits(retry_delay=0.001, **limits))  # fmt: skip
        rt.prompt(prompt)
        await rt.wait_idle()
        await rt.close()

    run(main)
    (user,) = [m for m in messages(w.reopened()) if m["role"] == "user"]
    return user


def test_a_plugins_attachment_is_cut_at_the_result_limit_and_never_read_for_mentions(
    tmp_path: Path,
) -> None:
    from smith.sdk import Plugin, TransformInput

    big = "line @a.txt\n" * 1000

    def attach(event: dict[str, Any], view: Any) -> list[Any]:
        return [TransformInput(event["text"], attach=(("k:big://1", big),))]

    user = _converse(tmp_path, [Plugin("k", handlers={"input": attach})], "look at @k:big://1",
                     result_bytes=2000)  # fmt: skip
    typed, part = user["content"]
    assert typed["text"] == "look at @k:big://1"
    assert part["text"].startswith('<attached path="k:big://1" lines="1-167 of 1000" cut="yes">')
    assert "[truncated: the result was 12000 bytes" in part["text"]
    # The @a.txt inside the attached text attaches nothing: only what was typed is read.
    assert user["attached"] == [{"path": "k:big://1", "lines": "1-167 of 1000",
                                 "bytes": 12000, "cut": True, "plugin": "k"}]  # fmt: skip


def test_an_attachment_adds_to_another_plugins_transformation_without_a_conflict(
    tmp_path: Path,
) -> None:
    from smith.sdk import Plugin, TransformInput

    def expand(event: dict[str, Any], view: Any) -> list[Any]:  # as /skill does
        return [TransformInput("instructions, then: " + event["text"])]

    def attach(event: dict[str, Any], view: Any) -> list[Any]:
        return [TransformInput(event["text"], attach=(("k:r://1", "R1"),))]

    plugins = [Plugin("expand", handlers={"input": expand}),
               Plugin("k", handlers={"input": attach})]  # fmt: skip
    user = _converse(tmp_path, plugins, "do @k:r://1 with @a.txt")
    texts = [p["text"] for p in user["content"]]
    assert texts == [
        "instructions, then: do @k:r://1 with @a.txt",
        '<attached path="k:r://1" lines="1-1 of 1">\nR1\n</attached>',
        '<attached path="a.txt" lines="1-1 of 1">\nFILE\n</attached>',
    ]
    assert user["transformed"] == {"plugin": "expand", "original": "do @k:r://1 with @a.txt"}
    assert [a["path"] for a in user["attached"]] == ["k:r://1", "a.txt"]


def test_the_apps_at_completion_offers_what_plugins_offer_beside_paths(tmp_path: Path) -> None:
    from smith.sdk import Plugin
    from tests.test_tui import SIZE, _app, run
    from tests.test_tui_complete import _listed, _shown

    offered = ["files:notes://readme", "files:notes://todo"]
    plugin = Plugin("res", mentions=lambda: list(offered))

    async def main() -> None:
        app = _app(tmp_path, plugins=[plugin])
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("@")
            await _listed(pilot, app)
            assert _shown(app)[:3] == ["src/", "README.md", "src/app.py"]  # paths first
            assert "files:notes://readme" in _shown(app)
            await pilot.press(*"files:r")  # a colon: the plugins' words first
            assert _shown(app)[0] == "files:notes://readme"
            await pilot.press("tab")
            assert app.editor.text == "@files:notes://readme "
            offered.append("web:page://home")  # asked again as the list is drawn
            await pilot.press("@", "w", "e", "b")
            assert _shown(app)[0] == "web:page://home"

    run(main())


def test_the_mcp_plugin_offers_the_ready_servers_resources(
    senv: SmithEnv,
) -> None:
    from smith.config import resolve
    from smith.effects import ToolContext
    from smith.plugins.mcp import PLUGIN, running
    from smith.plugins.mcp._manager import Manager

    project = senv.make_project()
    script = kit.write_server(senv.root / "srv")
    marks = project / "marks"
    marks.mkdir()
    block = f'server "files" command="{PY}" args="{script}" {{ env {{ MARKS "{marks}"; }}; }}'
    senv.write_user_config(f"mcp {{\n    {block}\n}}\n")
    config = resolve(env=senv.env, cwd=str(project))
    manager = Manager(config, ToolContext(root=str(project), cwd=str(project)), lambda _: None)
    assert PLUGIN.mentions is not None
    running_now = running()
    from smith.plugins import mcp

    mcp._RUNNING.append(manager)
    try:
        manager.begin()
        for _ in range(600):
            if manager.connections["files"].state == "ready":
                break
            time.sleep(0.05)
        assert list(PLUGIN.mentions()) == ["files:notes://readme"]
    finally:
        mcp._RUNNING.remove(manager)
        manager.close()
    assert running() == running_now
