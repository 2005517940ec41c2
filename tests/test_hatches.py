"""Frontend escape hatches (docs/ui.md, Escape hatches; docs/plugins.md): a plugin that
declares a hatch (`Plugin(frontend=...)`, plugin.kdl `frontend "clipboard"`) asks for
it with the `Hatch` intent and the app does it (the clipboard holds the value); one that
does not is refused with `plugin.undeclared-hatch` and nothing is done. The value is
plain text, `open-url` takes only http(s) URLs. Over RPC the `ui` event goes to the
client; eval drops it. A WebAssembly plugin (a C guest built once per session) asks
through the host function `hatch` (`plugin.grant-denied` undeclared) or an action."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from smith.effects import ToolContext, ToolResult, ToolSpec
from smith.frontends.rpc._ui import RpcFrontend
from smith.frontends.tui._app import SmithApp
from smith.sdk import Command, CommandHost, Hatch, Notify, Plugin, RuntimeView
from smith.ui import HATCH_MAX, Capabilities, deliver, intent_for
from tests.conftest import Result, SmithEnv
from tests.rpc_kit import Rpc
from tests.runtime_kit import Fake, World, call, say
from tests.test_tui import SIZE, _settle, _type, run
from tests.test_ui_tui import _app
from tests.wasm_sdk_fixtures import have_toolchain

# -- the intent -------------------------------------------------------------------------


def test_a_hatchs_value_is_plain_bounded_text_and_a_url_is_http() -> None:
    assert Hatch("clipboard", "a\x1b[31mb\x1b[0m\r\nc\u202ed\x07\tz").value == "ab\ncd\tz"
    assert Hatch("bell", "ignored").value == ""
    assert Hatch("open-url", " https://example.org/a?b=1 ").value == "https://example.org/a?b=1"
    for bad in ("file:///etc/passwd", "javascript:alert(1)", "https://u:p@example.org/",
                "http:///nohost", "https://example.org/a b", "example.org"):  # fmt: skip
        with pytest.raises(ValueError, match="open-url takes an http"):
            Hatch("open-url", bad)
    with pytest.raises(ValueError, match="at most 65536"):
        Hatch("clipboard", "x" * (HATCH_MAX + 1))
    with pytest.raises(ValueError, match="no escape hatch"):
        Hatch("camera", "")
    ev = {"type": "ui", "intent": "hatch", "origin": "p", "capability": "bell", "value": ""}
    intent = intent_for(ev)
    assert intent is not None and intent.kind == "hatch" and intent.unsupported == "drop"
    # Shown only by a frontend that names it; the default and eval leave it out.
    assert "hatch" not in Capabilities().shows


# -- the runtime's check ----------------------------------------------------------------


def _copying(name: str, frontend: tuple[str, ...]) -> Plugin:
    """A plugin asking for the clipboard at agent_start, from its tool, and its command."""

    def start(event: dict[str, Any], view: RuntimeView) -> list[Any]:
        return [Hatch("clipboard", "from a handler"), Notify("started")]

    def tool(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
        ctx.ui.show(Hatch("clipboard", "from a tool"))
        return ToolResult("copied")

    def copy(host: CommandHost, arg: str) -> None:
        host.post(Hatch("clipboard", arg))

    spec = ToolSpec("copy_it", "copy", {"type": "object", "properties": {}}, tool,
                    mutating=False)  # fmt: skip
    return Plugin(name, handlers={"agent_start": start}, tools=[spec],
                  commands=[Command("copy", "Copy the text", copy, "TEXT")],
                  frontend=frontend)  # fmt: skip


def _hatches(events: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(e["origin"], e["capability"], e["value"]) for e in events
            if e["type"] == "ui" and e["intent"] == "hatch"]  # fmt: skip


def _refusals(events: list[dict[str, Any]]) -> list[str]:
    return [e["diagnostic"]["what"] for e in events if e["type"] == "error"
            and e["diagnostic"]["code"] == "plugin.undeclared-hatch"]  # fmt: skip


def test_a_declared_hatch_goes_out_as_a_ui_event_from_a_handler_and_a_tool(
    tmp_path: Path,
) -> None:
    w = World(tmp_path)
    plugin = _copying("copier", ("clipboard",))
    w.converse(Fake(call(("copy_it", {})), say("done")), plugins=[plugin])
    assert _hatches(w.events) == [("copier", "clipboard", "from a handler"),
                                  ("copier", "clipboard", "from a tool")]  # fmt: skip
    assert not _refusals(w.events)
    assert "started" in [e.get("text") for e in w.of("ui")]  # the batch's notice still goes


def test_an_undeclared_hatch_is_refused_naming_the_plugin_and_the_hatch(tmp_path: Path) -> None:
    w = World(tmp_path)
    plugin = _copying("copier", ("open-url",))  # declares another one
    w.converse(Fake(call(("copy_it", {})), say("done")), plugins=[plugin])
    assert _hatches(w.events) == []
    refused = _refusals(w.events)
    assert refused == ["plugin 'copier' asked for the escape hatch clipboard, which it does "
                       "not declare: refused"] * 2  # fmt: skip
    (error,) = [e for e in w.of("error")][:1]
    assert 'frontend "clipboard"' in error["diagnostic"]["fix"]
    assert "started" in [e.get("text") for e in w.of("ui")]
    assert w.of("agent_end")[-1]["stop"] == "end"  # and the run goes on


# -- the app ----------------------------------------------------------------------------


def _app_events(app: SmithApp) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    made = app._factory

    def factory(session: Any) -> Any:
        rt = made(session)
        rt.on_event(seen.append)
        return rt

    app._factory = factory
    return seen


def test_the_app_copies_a_declared_hatchs_value_to_the_clipboard(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app(tmp_path, Fake(say("hi")), [_copying("copier", ("clipboard",))])
        opened: list[str] = []
        app.open_url = lambda url, new_tab=True: opened.append(url)  # type: ignore[method-assign]
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await _type(pilot, "/copy x")
            await _settle(app)
            await pilot.pause(0.05)
            assert app.clipboard == "x"
            await _type(pilot, "go")  # agent_start's hatch: copied in its turn
            await _settle(app)
            await pilot.pause(0.05)
            assert app.clipboard == "from a handler"
        assert not opened

    run(main())


def test_the_app_copies_nothing_for_an_undeclared_hatch_and_says_why(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app(tmp_path, Fake(say("hi")), [_copying("copier", ())])
        seen = _app_events(app)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await _type(pilot, "/copy x")
            await _settle(app)
            await pilot.pause(0.05)
            assert app.clipboard == ""
        assert _refusals(seen) == ["plugin 'copier' asked for the escape hatch clipboard, "
                                   "which it does not declare: refused"]  # fmt: skip

    run(main())


def test_the_app_opens_a_url_and_rings_the_bell(tmp_path: Path) -> None:
    def opening(host: CommandHost, arg: str) -> None:
        host.post(Hatch("open-url", arg))
        host.post(Hatch("bell"))

    plugin = Plugin("opener", commands=[Command("open", "Open", opening, "URL")],
                    frontend=("open-url", "bell"))  # fmt: skip

    async def main() -> None:
        app = _app(tmp_path, Fake(say("hi")), [plugin])
        opened: list[str] = []
        rung: list[bool] = []
        app.open_url = lambda url, new_tab=True: opened.append(url)  # type: ignore[method-assign]
        app.bell = lambda: rung.append(True)  # type: ignore[method-assign]
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await _type(pilot, "/open https://example.org/x")
            await _settle(app)
            await pilot.pause(0.05)
        assert opened == ["https://example.org/x"] and rung == [True]

    run(main())


def test_a_programs_call_review_refuses_an_undeclared_hatch_too(tmp_path: Path) -> None:
    """smith mcp's and the library's calls are reviewed outside a runtime (HostReview):
    a tool_call handler's hatch is checked there the same way."""
    from smith.effects import builtin_tools
    from smith.runtime import HostReview, Limits, SecretProxy
    from smith.ui import Reply, refused

    shown: list[tuple[str, Any]] = []
    warned: list[str] = []

    class Caller:
        def ask(self, question: Any, *, origin: str) -> Reply:
            return refused("nobody", "none")

        def show(self, value: Any, *, origin: str) -> None:
            shown.append((origin, value))

    def review(frontend: tuple[str, ...]) -> None:
        plugin = Plugin("guard", handlers={"tool_call": lambda e, v: [Hatch("bell")]},
                        frontend=frontend)  # fmt: skip
        tools = builtin_tools()
        host = HostReview((plugin,), lambda p: {}, tools=tools,
                          context=ToolContext(root=str(tmp_path), cwd=str(tmp_path)),
                          session_id="s", states=None, tool_sets=None, limits=Limits(),
                          secrets=SecretProxy(), caller=Caller(),
                          warn=lambda d: warned.append(d.what))  # fmt: skip
        host.review(tools["write"], {"path": "a", "content": ""}, "c")

    review(())
    assert shown == [] and warned == ["plugin 'guard' asked for the escape hatch bell, which "
                                      "it does not declare: refused"]  # fmt: skip
    review(("bell",))
    assert shown == [("guard", Hatch("bell"))] and len(warned) == 1


# -- RPC and eval -----------------------------------------------------------------------


def test_rpc_forwards_a_hatch_as_its_ui_event_and_eval_drops_it() -> None:
    from smith.frontends.eval import _EvalFrontend

    sent: list[Any] = []
    ev = {"type": "ui", "intent": "hatch", "origin": "p", "capability": "clipboard",
          "value": "x"}  # fmt: skip
    assert deliver(RpcFrontend(sent.append), ev) == "shown"
    assert sent == [{"jsonrpc": "2.0", "method": "event", "params": ev}]
    printed: list[Any] = []
    for json_events in (True, False):
        front = _EvalFrontend(printed.append, None, json_events=json_events)  # type: ignore[arg-type]
        assert deliver(front, ev) == "drop"
    assert printed == []


# -- a WebAssembly plugin ---------------------------------------------------------------

_C = r"""
#include "smith_plugin.h"

/* `/hatchy CAPABILITY VALUE`: asks smith for the escape hatch; replies how it went. */
bool smith_command(smith_string_t name, smith_string_t args, smith_string_t *ret,
                   smith_string_t *err) {
  (void)name;
  (void)err;
  size_t i = 0;
  while (i < args.len && args.ptr[i] != ' ') i++;
  smith_string_t capability = {args.ptr, i};
  size_t rest = i < args.len ? i + 1 : i;
  smith_string_t value = {args.ptr + rest, args.len - rest};
  smith_failure_t failure;
  if (smith_host_hatch(capability, value, &failure)) {
    smith_string_set(ret, "done");
  } else {
    smith_string_set(ret, "failed ");
    smith_string_append(ret, failure.code);
    smith_string_append_cstr(ret, ": ");
    smith_string_append(ret, failure.message);
    smith_failure_free(&failure);
  }
  return true;
}

/* agent_start: the hatch as an action. */
bool smith_on_event(smith_string_t event, smith_string_t *ret, smith_string_t *err) {
  (void)event;
  (void)err;
  smith_string_set(ret, "[{\"action\": \"hatch\", \"capability\": \"clipboard\", "
                        "\"value\": \"from an action\"}]");
  return true;
}
"""


@pytest.fixture(scope="session")
def hatchy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A C package declaring clipboard and open-url, built once per session."""
    from smith.wasm import build_package, scaffold

    if not have_toolchain("c"):
        pytest.skip("no C toolchain (pip install 'smith-agent[plugins]')")
    root = scaffold("hatchy", "c", tmp_path_factory.mktemp("hatchy"))
    (root / "plugin.c").write_text(_C)
    with (root / "plugin.kdl").open("a") as f:
        f.write('events "agent_start"\nfrontend "clipboard" "open-url"\n')
    build_package(root)
    return root


def _wasm(root: Path, cache_home: Path, declared: bool) -> Plugin:
    from smith.packages import read_package
    from smith.wasm import wasm_plugin

    package = read_package(str(root))
    assert package.frontend == ("clipboard", "open-url")
    if not declared:
        package = dataclasses.replace(package, frontend=())
    return wasm_plugin(package, cache_home=str(cache_home))


def _replies(w: World) -> list[str]:
    return [e["reply"] for e in w.of("input_handled")]


def test_a_wasm_plugin_uses_a_hatch_it_declares(
    hatchy: Path, cache_home: Path, tmp_path: Path
) -> None:
    w = World(tmp_path)
    plugin = _wasm(hatchy, cache_home, declared=True)
    prompts = ["/hatchy clipboard hi \x1b[31mthere", "/hatchy open-url file:///etc/passwd",
               "/hatchy bell", "go"]  # fmt: skip
    w.converse(Fake(say("ok")), plugins=[plugin], prompts=prompts)
    copied, url, bell = _replies(w)
    assert copied == "done"
    assert url.startswith("failed plugin.hatch-refused: open-url: open-url takes an http")
    assert bell.startswith("failed plugin.grant-denied: the escape hatch 'bell' is not "
                           "declared by plugin hatchy")  # fmt: skip
    assert _hatches(w.events) == [("hatchy", "clipboard", "hi there"),
                                  ("hatchy", "clipboard", "from an action")]  # fmt: skip


def test_a_wasm_plugin_is_refused_a_hatch_it_does_not_declare(
    hatchy: Path, cache_home: Path, tmp_path: Path
) -> None:
    w = World(tmp_path)
    plugin = _wasm(hatchy, cache_home, declared=False)
    w.converse(Fake(say("ok")), plugins=[plugin], prompts=["/hatchy clipboard hi", "go"])
    (reply,) = _replies(w)
    assert reply == ("failed plugin.grant-denied: the escape hatch 'clipboard' is not declared "
                     'by plugin hatchy (its plugin.kdl declares nothing): add `frontend '
                     '"clipboard"`')  # fmt: skip
    assert _hatches(w.events) == []  # the action's hatch: refused by the runtime
    assert _refusals(w.events) == ["plugin 'hatchy' asked for the escape hatch clipboard, "
                                   "which it does not declare: refused"]  # fmt: skip


def test_an_installed_wasm_plugin_shows_its_hatches_and_its_hatch_reaches_an_rpc_client(
    hatchy: Path, smith: Callable[..., Result], senv: SmithEnv
) -> None:
    r = smith("plugins", "install", str(hatchy), "--yes")
    assert r.code == 0, r.err
    assert "use the escape hatch clipboard: copy the value" in r.err
    assert "use the escape hatch open-url: open the value" in r.err
    with Rpc(senv, senv.make_project(), "--model", "demo") as rpc:
        rpc.call("prompt", {"text": "/hatchy clipboard over rpc"})
        handled = rpc.event("input_handled")
        rpc.call("wait_idle")
        code, err = rpc.close()
    assert code == 0, err
    assert handled["reply"] == "done"
    assert _hatches(rpc.events) == [("hatchy", "clipboard", "over rpc")]
