"""smith's WebAssembly host (smith.wasm: engine, cache, instance, host functions, the
Plugin of a package's module) with a guest built from tests/wasm_guest by
componentize-py, through the runtime: commands through the input hook, events, tools,
queue policies, and the hostile set (an endless loop, a handler that never returns, a
memory bomb, a path outside the grant, the network without a grant, huge output,
malformed JSON and actions, a trap in the middle of a batch, two plugins whose actions
conflict), each a diagnostic naming the plugin with the runtime still working after."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from smith.packages import Grants
from smith.sdk import QueuedItem
from smith.wasm import HOST_FUNCTIONS, Limits, wasm_plugin
from smith.wasm._plugin import host_of
from tests.runtime_kit import Fake, World, call, say
from tests.wasm_fixtures import BOOM, WC, guest, notices, package, settings

__all__ = ["guest"]  # the session fixture, used by name


def _trapped(plugin: str, text: str) -> bool:
    """A Python guest's uncaught error traps, or traps printing its traceback (WASI)."""
    return f"plugin '{plugin}' trapped" in text or f"plugin '{plugin}' called WASI" in text


def replies(w: World) -> list[str]:
    return [e["reply"] for e in w.of("input_handled")]


def errors(w: World) -> list[str]:
    return [e["diagnostic"]["what"] for e in w.of("error")]


def test_a_command_answers_through_the_input_hook(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    w = World(tmp_path)
    fake = Fake(say("model answer"))
    plugin = wasm_plugin(package(guest, "wg"), cache_home=str(cache_home))
    w.converse(fake, plugins=[plugin], prompts=["/wg", "/wg state", "/wg state", "plain"])
    assert replies(w) == ["hello from wg", "calls 1", "calls 2"]
    assert len(fake.requests) == 1  # only "plain" reached the model
    assert [c.name for c in plugin.commands] == ["wg"]
    assert "\x1b" not in plugin.commands[0].description  # control sequences stripped


def test_an_endless_loop_is_stopped_and_named_and_the_runtime_goes_on(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    w = World(tmp_path)
    fake = Fake(say("still here"))
    plugin = wasm_plugin(package(guest, "loopy"), cache_home=str(cache_home))
    w.converse(fake, plugins=[plugin], prompts=["/loopy loop", "/loopy state", "hi"])
    (fault,) = [n for n in notices(w) if "loopy" in n]
    assert "plugin 'loopy' ran out of fuel" in fault
    # The command was the plugin's: handled (not sent on), then a fresh instance answers.
    assert replies(w)[-1] == "calls 1"
    assert len(fake.requests) == 1 and w.of("agent_end")[-1]["stop"] == "end"


def test_a_handler_that_never_returns_is_stopped_at_its_deadline(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    w = World(tmp_path)
    limits = Limits(seconds=0.3, fuel=10**15)  # fuel enough for hours: the clock stops it
    plugin = wasm_plugin(package(guest, "slow"), cache_home=str(cache_home), limits=limits)
    w.converse(Fake(), plugins=[plugin], prompts=["/slow loop", "/slow"])
    assert any("plugin 'slow' did not return within 0.3 s" in n for n in notices(w))
    assert replies(w)[-1] == "hello from slow"


def test_a_memory_bomb_ends_at_the_memory_limit(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    w = World(tmp_path)
    plugin = wasm_plugin(
        package(guest, "bomb"), cache_home=str(cache_home), limits=Limits(memory=64 * 1024 * 1024)
    )
    w.converse(Fake(), plugins=[plugin], prompts=["/bomb bomb", "/bomb state"])
    (fault,) = [n for n in notices(w) if "bomb" in n]
    assert "plugin 'bomb' " in fault and "64 MiB" in fault  # trapped, or its traceback printed
    assert replies(w)[-1] == "calls 1"
    usage = host_of("bomb")
    assert usage is not None and usage.usage()["instances"] == 2


def test_files_only_within_the_grant_and_journaled(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    w = World(tmp_path)
    (tmp_path / "secret.txt").write_text("top secret")
    (w.project / "docs").mkdir()
    (w.project / "docs" / "a.md").write_text("granted text")
    (w.project / "docs" / "escape").symlink_to(tmp_path / "secret.txt")
    pkg = package(guest, "files", grants=Grants(paths=("docs",)))
    plugin = wasm_plugin(pkg, cache_home=str(cache_home))
    prompts = ["/files read docs/a.md", "/files read ../secret.txt", "/files read docs/escape"]
    w.converse(Fake(), plugins=[plugin], prompts=prompts)
    granted, outside, link = replies(w)
    assert granted == "granted text"
    assert outside.startswith("denied plugin.grant-denied") and "files" in outside
    assert link.startswith("denied plugin.grant-denied")  # the real path decides
    intents = [e.content for e in w.reopened().entries("effect_intent")]
    (read,) = [i for i in intents if i["name"] == "files.read-file" and "a.md" in str(i)]
    assert read["kind"] == "plugin" and read["cause"]["plugin"] == "files"
    assert read["input"] == {"path": "docs/a.md"}


def test_no_network_command_or_secret_without_a_grant(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    w = World(tmp_path)
    plugin = wasm_plugin(package(guest, "net"), cache_home=str(cache_home))
    prompts = [
        "/net http https://example.com/",
        "/net run ls",
        "/net secret GITHUB_TOKEN",
        "/net run git status; rm -rf /",
    ]
    w.converse(Fake(), plugins=[plugin], prompts=prompts)
    for reply in replies(w):
        assert reply.startswith("denied plugin.grant-denied"), reply
    assert "example.com" in replies(w)[0]


def test_a_granted_command_runs_through_the_sandbox_journaled(
    cache_home: Path, guest: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from functools import partial

    from smith.effects import Sandbox, ToolContext
    from tests import runtime_kit

    sandbox = Sandbox(mode="workspace-write", network=True)  # bubblewrap (no seccomp here)
    if sandbox.problem() is not None:
        pytest.skip(f"the sandbox cannot run here: {sandbox.problem()}")
    monkeypatch.setattr(runtime_kit, "ToolContext", partial(ToolContext, sandbox=sandbox))
    monkeypatch.setenv("TOKEN", "s3cret-run")
    w = World(tmp_path)
    pkg = package(guest, "runner", grants=Grants(commands=("echo",), secrets=("TOKEN",)))
    plugin = wasm_plugin(pkg, cache_home=str(cache_home))
    prompts = ["/runner run echo hi", "/runner secret TOKEN", "/runner run echo {{secret:TOKEN}}"]
    w.converse(Fake(), plugins=[plugin], prompts=prompts)
    # The reference is the value in the command only: what comes back is the reference.
    assert replies(w) == ["exit 0: hi", "ref {{secret:TOKEN}}", "exit 0: {{secret:TOKEN}}"]
    assert "s3cret-run" not in Path(w.path).read_text(errors="replace")
    intents = [e.content for e in w.reopened().entries("effect_intent")]
    bash = [i for i in intents if i["name"] == "bash"]
    assert bash and bash[0]["cause"]["plugin"] == "runner"


def test_huge_output_is_a_fault(cache_home: Path, guest: Path, tmp_path: Path) -> None:
    w = World(tmp_path)
    plugin = wasm_plugin(package(guest, "big"), cache_home=str(cache_home))
    w.converse(Fake(), plugins=[plugin], prompts=["/big huge", "/big"])
    assert any("plugin 'big' returned 3,145,728 characters" in n for n in notices(w))
    assert replies(w) == [None, "hello from big"]


def test_rendered_text_carries_no_control_sequences(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    w = World(tmp_path)
    plugin = wasm_plugin(package(guest, "esc"), cache_home=str(cache_home))
    w.converse(Fake(), plugins=[plugin], prompts=["/esc notify"])
    assert replies(w) == ["notified red"]
    (notice,) = notices(w)
    assert notice == "look here"
    shown = [e for e in w.of("ui") if e["intent"] == "status"]
    assert shown and shown[0]["text"] == "busy"


@pytest.mark.parametrize(
    ("mode", "said"),
    [("bad-json", "not JSON"), ("unknown-action", "an action smith does not take")],
)
def test_malformed_output_is_a_fault_naming_the_plugin(
    cache_home: Path, guest: Path, tmp_path: Path, mode: str, said: str
) -> None:
    w = World(tmp_path)
    pkg = package(guest, "bad", events=("turn_start",), options=settings(mode=mode))
    plugin = wasm_plugin(pkg, cache_home=str(cache_home))
    fake = Fake(say("answered"))
    w.converse(fake, plugins=[plugin], prompts=["go"])
    (what,) = [e for e in errors(w) if "'bad'" in e]
    assert said in what
    assert w.of("agent_end")[-1]["stop"] == "end"  # the turn went on without its actions


def test_events_give_actions_and_a_trap_mid_batch_recovers(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    w = World(tmp_path)
    pkg = package(
        guest, "ev", events=("turn_start",), options=settings(mode="trap-second"), tools=(WC, BOOM)
    )
    plugin = wasm_plugin(pkg, cache_home=str(cache_home))
    words = ("wc", {"text": "one two three"})
    fake = Fake(call(words, ("boom", {}), words), say("done"))
    w.converse(fake, plugins=[plugin], prompts=["go"])
    ends = sorted(w.of("tool_end"), key=lambda e: e["tool_call_id"])
    results = [(e["name"], e["is_error"], e["result"]["text"]) for e in ends]
    assert results[0] == ("wc", False, "3") and results[2] == ("wc", False, "3")
    assert results[1][:2] == ("boom", True) and _trapped("ev", results[1][2])
    assert "wasm note 1" in fake.requests[0].system
    assert w.of("agent_end")[-1]["stop"] == "end"


def test_a_trapping_event_handler_is_reported_and_made_anew(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    w = World(tmp_path)
    pkg = package(guest, "ev2", events=("turn_start",), options=settings(mode="trap-second"))
    fake = Fake(say("one"), say("two"), say("three"))
    w.converse(
        fake, plugins=[wasm_plugin(pkg, cache_home=str(cache_home))], prompts=["a", "b", "c"]
    )
    # turn 1 appended its note; turn 2's handler trapped (reported: the turn went on
    # without its actions, so no note 2); turn 3 ran on a new instance, counting from 1.
    notes = [re.findall(r"wasm note \d", r.system) for r in fake.requests]
    assert notes[0] == ["wasm note 1"] and "wasm note 2" not in str(notes)
    assert any(_trapped("ev2", e) for e in errors(w))
    assert [e["stop"] for e in w.of("agent_end")] == ["end"] * 3


def test_repeated_faults_turn_the_plugin_off_for_the_session(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    w = World(tmp_path)
    plugin = wasm_plugin(package(guest, "flaky"), cache_home=str(cache_home))
    w.converse(Fake(), plugins=[plugin], prompts=["/flaky trap"] * 3 + ["/flaky"])
    said = [n for n in notices(w) if "flaky" in n]
    assert "off for the rest of this session: 3 faults, the last: it " in said[2]
    assert "trapped" in said[2] or "called WASI" in said[2]
    assert "off for the rest of this session" in said[3]
    assert replies(w)[-1] is None  # still the plugin's command: not sent to the model


def test_conflicting_batches_of_two_wasm_plugins_name_both(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    w = World(tmp_path)
    one = package(
        guest, "left", events=("turn_start",), options=settings(mode="conflict", model="a")
    )
    two = package(
        guest, "right", events=("turn_start",), options=settings(mode="conflict", model="b")
    )
    plugins = [wasm_plugin(p, cache_home=str(cache_home)) for p in (one, two)]
    w.converse(Fake(say("ok")), plugins=plugins, prompts=["go"])
    conflicts = [
        e["diagnostic"] for e in w.of("error") if e["diagnostic"]["code"] == "plugin.conflict"
    ]
    assert conflicts and "left" in conflicts[0]["what"] and "right" in conflicts[0]["what"]


def test_a_queue_policy_and_a_tool_call_gate(cache_home: Path, guest: Path, tmp_path: Path) -> None:
    pkg = package(guest, "q", queue_policies=("newest-first", "bad"), events=("tool_call",))
    plugin = wasm_plugin(pkg, cache_home=str(cache_home))
    items = [QueuedItem(str(i), "steer", f"t{i}") for i in range(3)]
    assert [i.id for i in plugin.queue_policies["newest-first"](items)] == ["2", "1", "0"]
    assert list(plugin.queue_policies["bad"](items)) == items  # a bad choice loses nothing
    w = World(tmp_path)
    fake = Fake(call(("bash", {"command": "rm -rf /"})), say("ok"))
    w.converse(fake, plugins=[plugin], prompts=["go"])
    (end,) = w.of("tool_end")
    assert end["is_error"] and "no rm -rf here" in end["result"]["text"]


def test_the_host_functions_are_the_wits() -> None:
    wit = (Path(__file__).parent.parent / "smith/wasm/wit/smith-plugin.wit").read_text()
    body = wit.split("interface host {", 1)[1].split("\n}", 1)[0]
    assert sorted(HOST_FUNCTIONS) == sorted(re.findall(r"^\s*([a-z-]+): func", body, re.M))


def usage_of(name: str) -> dict[str, Any]:
    host = host_of(name)
    assert host is not None
    return host.usage()


class _View:
    """What the input handler reads of a RuntimeView, settings as configuration gives."""

    def __init__(self, root: Path, settings: dict[str, object]) -> None:
        from smith.effects import ToolContext

        self.settings = settings
        self.context = ToolContext(root=str(root), cwd=str(root))
        self.generation = 1

    def post(self, shown: object) -> None:
        pass


def test_configuration_narrows_the_grants_never_widens_them(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    grants = Grants(paths=("docs",), secrets=("A", "B"))
    plugin = wasm_plugin(package(guest, "narrow", grants=grants), cache_home=str(cache_home))
    assert "grants" in [o.key for o in plugin.options]  # plugins.narrow.grants
    (tmp_path / "docs" / "api").mkdir(parents=True)
    (tmp_path / "docs" / "api" / "x.md").write_text("api text")
    (tmp_path / "docs" / "y.md").write_text("other")
    configured = ["path docs/api", "secret A", "secret C", "host x", "nonsense"]
    view = _View(tmp_path, {"grants": configured})
    handler = plugin.handlers["input"]

    def reply(text: str) -> str:
        (handled,) = handler({"type": "input", "text": text, "mode": "prompt"}, view)
        return str(handled.reply)

    assert reply("/narrow read docs/api/x.md") == "api text"
    assert reply("/narrow secret A") == "ref {{secret:A}}"
    for denied in ("read docs/y.md", "secret B", "secret C", "http https://x/"):
        assert reply(f"/narrow {denied}").startswith("denied plugin.grant-denied"), denied
    view.settings = {"grants": None}  # unset: as installed
    assert reply("/narrow read docs/y.md") == "other"


def test_http_to_a_granted_host_with_a_secret_reference(
    cache_home: Path, guest: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import http.server
    import threading

    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("authorization", ""))
            body = b"pong"
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("TOKEN", "s3cret-value")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    try:
        grants = Grants(hosts=("127.0.0.1",), secrets=("TOKEN",))
        pkg = package(guest, "web", grants=grants, options=settings(mode="secret"))
        w = World(tmp_path)
        url = f"http://127.0.0.1:{server.server_port}/x"
        w.converse(
            Fake(),
            plugins=[wasm_plugin(pkg, cache_home=str(cache_home))],
            prompts=[f"/web http {url}"],
        )
    finally:
        server.shutdown()
        server.server_close()
    assert replies(w) == ["status 200: pong"]
    assert seen == ["Bearer s3cret-value"]  # the reference replaced on the way out only
    intents = [e.content for e in w.reopened().entries("effect_intent")]
    (sent,) = [i for i in intents if i["name"] == "web.http"]
    assert sent["input"]["url"] == url and "s3cret" not in str(intents)


def test_the_instances_memory_is_attributed_to_the_plugin(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    from smith.wasm import usage

    plugin = wasm_plugin(package(guest, "mem"), cache_home=str(cache_home))
    view = _View(tmp_path, {})
    handler = plugin.handlers["input"]
    handler({"type": "input", "text": "/mem", "mode": "prompt"}, view)
    small = usage_of("mem")["memory"]
    if small is None:
        pytest.skip("the system does not say what is resident (/proc/self/smaps)")
    handler({"type": "input", "text": "/mem hold 4", "mode": "prompt"}, view)  # 4 MiB kept
    large = usage_of("mem")["memory"]
    assert 0 < small < large and large - small >= 3 * 1024 * 1024
    (mine,) = [u for u in usage() if u["plugin"] == "mem"]
    assert mine["memory"] == large and mine["memory_limit"] == 256 * 1024 * 1024


def test_a_plugin_whose_start_fails_is_off(cache_home: Path, guest: Path, tmp_path: Path) -> None:
    w = World(tmp_path)
    pkg = package(guest, "nostart", options=settings(mode="start-fails"))
    fake = Fake(say("ok"))
    w.converse(
        fake,
        plugins=[wasm_plugin(pkg, cache_home=str(cache_home))],
        prompts=["/nostart", "/nostart"],
    )
    said = [n for n in notices(w) if "nostart" in n]
    assert "is off for the rest of this session: its start failed: cannot start" in said[0]
    assert "off for the rest of this session" in said[1]
    assert not fake.requests  # its commands stay its own


def test_a_tools_presentation_is_plugin_kdls(cache_home: Path, guest: Path) -> None:
    from smith.effects import Presentation
    from smith.packages import ToolDecl

    shown = ToolDecl("wc", "Count", {"type": "object", "properties": {"text": {}}}, "reads",
                     shown_by="text", result="command")  # fmt: skip
    plain = ToolDecl("wc2", "Count", {"type": "object", "properties": {}}, "reads")
    plugin = wasm_plugin(package(guest, "shown", tools=(shown, plain)), cache_home=str(cache_home))
    by_name = {t.name: t.presentation for t in plugin.tools}
    assert by_name == {"wc": Presentation("text", "command"), "wc2": Presentation(None, "plain")}
