"""A sandboxed plugin's calls at their edges: the settings and narrowed grants it has
before any call (a tool call first among them), a cancellation during start or while a
request waits, UI intents bounded per call and in the app's status line, a plugin that is
off and handles input, a command's empty error, output over the limit."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from smith.effects import ToolCancelled, ToolContext
from smith.packages import Grants, ToolDecl
from smith.sdk import HandleInput, Plugin
from smith.wasm import Limits, wasm_plugin
from smith.wasm._hostfns import MAX_SHOWN
from smith.wasm._plugin import host_of
from tests.runtime_kit import Fake, World, call, say
from tests.wasm_fixtures import guest, package, settings

__all__ = ["guest"]  # the session fixture, used by name

HTTP = ToolDecl(
    "http", "Get a URL", {"type": "object", "properties": {"url": {"type": "string"}}}, "reads"
)
SETTINGS = ToolDecl("settings", "Its settings", {"type": "object", "properties": {}}, "reads")


@pytest.fixture
def server() -> Iterator[tuple[str, list[str], threading.Event]]:
    """A loopback server answering `pong` (after `release` is set, for /slow); the paths
    it was asked for."""
    seen: list[str] = []
    release = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            if self.path == "/slow":
                release.wait(20)
            self.send_response(200)
            self.send_header("content-length", "4")
            self.end_headers()
            self.wfile.write(b"pong")

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}", seen, release
    finally:
        release.set()
        httpd.shutdown()
        httpd.server_close()


def _tools(plugin: Plugin) -> dict[str, Any]:
    return {t.name: t for t in plugin.tools}


def _input(plugin: Plugin, text: str, root: Path) -> Any:
    class View:
        def __init__(self) -> None:
            self.settings: dict[str, object] = {}
            self.context = ToolContext(root=str(root), cwd=str(root))
            self.generation = 1

        def post(self, shown: object) -> None:
            pass

    view: Any = View()
    return plugin.handlers["input"]({"type": "input", "text": text, "mode": "prompt"}, view)


def test_a_tool_call_first_has_the_configured_settings_and_narrowed_grants(
    cache_home: Path, guest: Path, tmp_path: Path, server: tuple[str, list[str], Any]
) -> None:
    from smith.config import resolve
    from smith.sdk import resolve_plugins

    url, seen, _ = server
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "config.kdl").write_text(
        'plugins {\n  narrow {\n    grants "command sleep"\n    note "configured"\n  }\n}\n'
    )
    env = {"SMITH_HOME": str(tmp_path / "d"), "SMITH_CONFIG_HOME": str(tmp_path / "c")}
    config = resolve(env=env, flags={}, cwd=str(tmp_path))
    grants = Grants(hosts=("127.0.0.1",), commands=("sleep",))
    pkg = package(guest, "narrow", grants=grants, tools=(HTTP, SETTINGS),
                  options=settings(note="default"))  # fmt: skip
    listed = resolve_plugins(config, [wasm_plugin(pkg, cache_home=str(cache_home))])
    w = World(tmp_path / "w")
    fake = Fake(call(("http", {"url": f"{url}/x"})), call(("settings", {})), say("ok"))
    w.converse(fake, plugin_list=listed, prompts=["go"])
    fetched, told = (e["result"]["text"] for e in w.of("tool_end"))
    assert fetched.startswith("denied plugin.grant-denied"), fetched
    assert '"host 127.0.0.1" to plugins.narrow.grants' in fetched  # what narrowed it, named
    assert seen == []  # configuration narrowed the host away: nothing was sent
    assert '"note": "configured"' in told and '"command sleep"' in told  # start saw them


def test_a_tool_call_with_no_settings_known_has_no_grants(
    cache_home: Path, guest: Path, tmp_path: Path, server: tuple[str, list[str], Any]
) -> None:
    url, seen, _ = server
    pkg = package(guest, "unset", grants=Grants(hosts=("127.0.0.1",)), tools=(HTTP,))
    plugin = wasm_plugin(pkg, cache_home=str(cache_home))
    ctx = ToolContext(root=str(tmp_path), cwd=str(tmp_path))
    text = _tools(plugin)["http"].run(ctx, {"url": f"{url}/x"}).text
    assert text.startswith("denied plugin.grant-denied") and seen == []
    assert "not handed to it yet" in text
    assert plugin.configure is not None
    plugin.configure({})  # as a runtime does: unnarrowed, its installed grants
    assert _tools(plugin)["http"].run(ctx, {"url": f"{url}/x"}).text == "status 200"


def test_a_cancelled_request_is_stopped_within_the_grace(
    cache_home: Path, guest: Path, tmp_path: Path, server: tuple[str, list[str], Any]
) -> None:
    url, seen, _ = server
    pkg = package(guest, "slowhttp", grants=Grants(hosts=("127.0.0.1",)), tools=(HTTP,))
    plugin = wasm_plugin(pkg, cache_home=str(cache_home))
    assert plugin.configure is not None
    plugin.configure({})
    ctx = ToolContext(root=str(tmp_path), cwd=str(tmp_path))
    threading.Timer(1.0, ctx.cancelled.set).start()
    began = time.monotonic()
    try:  # stopped in the guest (the usual end), or its answer to plugin.cancelled
        text = _tools(plugin)["http"].run(ctx, {"url": f"{url}/slow"}).text
        assert text.startswith("denied plugin.cancelled"), text
    except ToolCancelled:
        pass
    assert time.monotonic() - began < 3  # the server holds it 20 s
    assert seen == ["/slow"]
    host = host_of("slowhttp")
    assert host is not None and host.faults == 0 and host.disabled is None


def test_a_cancellation_during_start_does_not_turn_the_plugin_off(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    pkg = package(guest, "spinstart", tools=(SETTINGS,), options=settings(mode="start-spins"))
    limits = Limits(seconds=10, fuel=10**15)  # neither would stop it soon
    plugin = wasm_plugin(pkg, cache_home=str(cache_home), limits=limits)
    assert plugin.configure is not None
    plugin.configure({"mode": "start-spins"})
    for _ in range(2):
        ctx = ToolContext(root=str(tmp_path), cwd=str(tmp_path))
        threading.Timer(0.3, ctx.cancelled.set).start()
        with pytest.raises(ToolCancelled):
            _tools(plugin)["settings"].run(ctx, {})
    host = host_of("spinstart")
    assert host is not None and host.disabled is None and host.faults == 0


def test_output_over_the_limit_drops_the_instance(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    plugin = wasm_plugin(package(guest, "huger"), cache_home=str(cache_home))
    (handled,) = _input(plugin, "/huger huge", tmp_path)
    assert "over the limit" in str(handled.error)
    host = host_of("huger")
    assert host is not None and host.instance is not None
    assert host.instance.store is None  # made anew on the next call
    (handled,) = _input(plugin, "/huger", tmp_path)
    assert handled.reply == "hello from huger" and host.instance.instantiated == 2


def test_a_disabled_plugin_that_handles_input_leaves_prompts_alone(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    pkg = package(guest, "inp", events=("input",))
    plugin = wasm_plugin(pkg, cache_home=str(cache_home))
    host = host_of("inp")
    assert host is not None
    host.disabled = "3 faults"
    assert _input(plugin, "hello there", tmp_path) is None
    (handled,) = _input(plugin, "/inp", tmp_path)
    assert "is off for the rest of this session" in str(handled.error)
    w = World(tmp_path / "w")
    w.converse(Fake(say("hi")), plugins=[plugin], prompts=["hello"])
    assert not w.of("error") and not w.of("input_handled")


def test_ui_intents_are_bounded_per_call(cache_home: Path, guest: Path, tmp_path: Path) -> None:
    plugin = wasm_plugin(package(guest, "spam"), cache_home=str(cache_home))
    w = World(tmp_path)
    w.converse(Fake(), plugins=[plugin], prompts=["/spam spam 500"])
    shown = [e for e in w.of("ui") if e["intent"] in ("notify", "status")]
    assert len(shown) == MAX_SHOWN
    assert [e["reply"] for e in w.of("input_handled")] == ["spammed"]


def test_an_empty_error_is_a_failure_with_a_reason(tmp_path: Path) -> None:
    from smith.runtime._hooks import NO_REASON

    plugin = Plugin("empty", handlers={"input": lambda ev, view: [HandleInput(error="")]})
    w = World(tmp_path)
    w.converse(Fake(), plugins=[plugin], prompts=["/x"])
    (handled,) = w.of("input_handled")
    assert handled["error"] == NO_REASON
    (entry,) = w.reopened().entries("input_handled")
    assert entry.content["error"] == NO_REASON  # type: ignore[index]


def test_the_apps_plugin_status_lines_are_bounded() -> None:
    from smith.frontends.tui._intents import MAX_STATUS_KEYS, MAX_STATUS_TEXT, show_plugin
    from smith.ui import Intent

    class App:
        def __init__(self) -> None:
            self.plugin_status: dict[tuple[str, str, str], str] = {}
            self.redrawn = 0

        def _status(self) -> None:
            self.redrawn += 1

    app: Any = App()
    for i in range(50):
        show_plugin(app, Intent("status", {"origin": "pr", "key": f"k{i}", "text": "y" * 9000}))
    show_plugin(app, Intent("status", {"origin": "other", "key": "k", "text": "ok"}))
    mine = [k for k in app.plugin_status if k[0] == "pr"]
    assert len(mine) == MAX_STATUS_KEYS and len(app.plugin_status) == MAX_STATUS_KEYS + 1
    assert all(len(v) <= MAX_STATUS_TEXT for v in app.plugin_status.values())
    show_plugin(app, Intent("status", {"origin": "pr", "key": "k0", "text": "new"}))
    assert app.plugin_status[("pr", "status", "k0")] == "new"  # a kept key still changes
