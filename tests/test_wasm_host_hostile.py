"""smith's WebAssembly host against a plugin that tries to get out: a grant root swapped
for a link, a file swapped during a read, a FIFO, secrets through a command's environment
and output or an echoing server, a command with the sandbox off, several memories, a
cancelled or concurrent call, an error from on-event, unhashable queue ids, and a
compiled cache someone else wrote. Each must be refused or contained, not a fault of
the plugin where it did nothing wrong."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from smith.effects import Sandbox, ToolCancelled, ToolContext, ToolError
from smith.packages import Grants, ToolDecl
from smith.sdk import QueuedItem
from smith.session import Session
from smith.wasm import Limits, wasm_plugin
from smith.wasm._plugin import host_of
from tests.runtime_kit import Fake, World, say
from tests.wasm_fixtures import guest, notices, package, settings

__all__ = ["guest"]  # the session fixture, used by name

SANDBOX = Sandbox(mode="workspace-write", network=True)  # bubblewrap only (no seccomp)


class _View:
    """What the input handler reads of a RuntimeView."""

    def __init__(self, root: Path, *, sandbox: Sandbox | None = None, session: bool = False):
        self.settings: dict[str, object] = {}
        self.journal = root.parent / f"{root.name}-{len(list(root.parent.iterdir()))}.smith"
        journal = Session.create(str(self.journal), name="t", cwd=str(root)) if session else None
        self.context = ToolContext(root=str(root), cwd=str(root), session=journal, sandbox=sandbox)
        self.generation = 1

    def post(self, shown: object) -> None:
        pass


def _reply(plugin: Any, view: _View, text: str) -> str:
    (handled, *_) = plugin.handlers["input"](
        {"type": "input", "text": text, "mode": "prompt"}, view
    )
    return str(handled.reply)


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "a.md").write_text("granted")
    (tmp_path / "outside.txt").write_text("outside text")
    return project


def test_a_grant_root_swapped_for_a_link_grants_nothing(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    project = _project(tmp_path)
    pkg = package(guest, "swap", grants=Grants(paths=("docs", "../up")))
    plugin = wasm_plugin(pkg, cache_home=str(cache_home))
    view = _View(project)
    assert _reply(plugin, view, "/swap read docs/a.md") == "granted"
    (project / "docs" / "a.md").unlink()
    (project / "docs").rmdir()
    (project / "docs").symlink_to(tmp_path)  # as `ln -s / docs` by a granted command
    denied = _reply(plugin, view, "/swap read docs/outside.txt")
    assert denied.startswith("denied plugin.grant-denied"), denied
    assert str(tmp_path) not in denied  # what lies outside is not named
    (tmp_path / "up").mkdir()
    (tmp_path / "up" / "f").write_text("above the project")
    assert _reply(plugin, view, "/swap read ../up/f").startswith("denied plugin.grant-denied")


def test_smiths_own_directories_and_hidden_paths_are_never_read(
    cache_home: Path, guest: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path)
    home = project / "docs" / "smith-home"
    home.mkdir()
    (home / "auth.json").write_text('{"key": "sk-live"}')
    (project / "docs" / "creds").write_text("hidden by sandbox.hide")
    monkeypatch.setenv("SMITH_HOME", str(home))
    plugin = wasm_plugin(
        package(guest, "own", grants=Grants(paths=("docs",))), cache_home=str(cache_home)
    )
    view = _View(project, sandbox=Sandbox(credentials=(str(project / "docs" / "creds"),)))
    for path in ("docs/smith-home/auth.json", "docs/creds"):
        assert _reply(plugin, view, f"/own read {path}").startswith("denied plugin.grant-denied")
    assert _reply(plugin, view, "/own read docs/a.md") == "granted"


def test_a_file_swapped_for_a_link_while_read_is_refused(
    cache_home: Path, guest: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from smith.wasm import _hostfns

    project = _project(tmp_path)
    plugin = wasm_plugin(
        package(guest, "race", grants=Grants(paths=("docs",))), cache_home=str(cache_home)
    )
    real_open = os.open

    def swapped(path: Any, *args: Any, **kw: Any) -> int:  # the swap lands after the check
        if str(path).endswith("a.md"):
            os.unlink(path)
            os.symlink(tmp_path / "outside.txt", path)
        return real_open(path, *args, **kw)

    monkeypatch.setattr(_hostfns.os, "open", swapped)
    reply = _reply(plugin, _View(project), "/race read docs/a.md")
    monkeypatch.setattr(_hostfns.os, "open", real_open)
    assert reply.startswith("denied plugin.grant-denied"), reply


def test_a_fifo_is_refused_at_once_not_waited_on(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    project = _project(tmp_path)
    os.mkfifo(project / "docs" / "pipe")
    plugin = wasm_plugin(
        package(guest, "fifo", grants=Grants(paths=("docs",))), cache_home=str(cache_home)
    )
    got: list[str] = []
    view = _View(project)
    worker = threading.Thread(
        target=lambda: got.append(_reply(plugin, view, "/fifo read docs/pipe"))
    )
    worker.daemon = True  # before the fix it never returns
    worker.start()
    worker.join(10)
    assert got and got[0].startswith("denied plugin.host-failed") and "not a regular file" in got[0]
    assert _reply(plugin, view, "/fifo read docs/a.md") == "granted"


def test_a_command_runs_only_inside_the_sandbox(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    project = _project(tmp_path)
    plugin = wasm_plugin(
        package(guest, "off", grants=Grants(commands=("echo",))), cache_home=str(cache_home)
    )
    denied = _reply(plugin, _View(project, session=True), "/off run echo hi")  # sandbox off
    assert denied.startswith("denied plugin.grant-denied") and "sandbox" in denied
    if SANDBOX.problem() is not None:
        pytest.skip(f"the sandbox cannot run here: {SANDBOX.problem()}")
    assert (
        _reply(plugin, _View(project, sandbox=SANDBOX, session=True), "/off run echo hi")
        == "exit 0: hi"
    )


def test_a_secret_never_reaches_a_command_in_clear(
    cache_home: Path, guest: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if SANDBOX.problem() is not None:
        pytest.skip(f"the sandbox cannot run here: {SANDBOX.problem()}")
    monkeypatch.setenv("TOKEN", "s3cret-env-77")
    project = _project(tmp_path)
    grants = Grants(commands=("printenv", "cat", "echo"), secrets=("TOKEN",))
    plugin = wasm_plugin(package(guest, "env", grants=grants), cache_home=str(cache_home))
    view = _View(project, sandbox=SANDBOX, session=True)
    unset = _reply(plugin, view, "/env run printenv TOKEN")  # not in its environment
    assert unset.startswith("exit 1") and "s3cret" not in unset
    environ = _reply(plugin, view, "/env run cat /proc/self/environ")
    assert environ.startswith("exit 0") and "s3cret" not in environ
    # Passed as a word, it is the value to the command; what comes back is the reference.
    assert _reply(plugin, view, "/env run echo x{{secret:TOKEN}}x") == "exit 0: x{{secret:TOKEN}}x"
    assert "s3cret" not in view.journal.read_text(errors="replace")


def test_one_memory_per_instance_so_the_limit_is_the_instances(
    cache_home: Path, tmp_path: Path
) -> None:
    import wasmtime

    module = tmp_path / "two.wasm"
    module.write_bytes(
        wasmtime.wat2wasm(
            "(component (core module $m (memory 1) (memory 1)) (core instance $i (instantiate $m)))"
        )
    )
    from smith.packages import CommandDecl, PackageManifest

    pkg = PackageManifest("mems", "0.1.0", str(tmp_path), module="two.wasm", sdk="1",
                          commands=(CommandDecl("mems", "d", ""),))  # fmt: skip
    w = World(tmp_path)
    w.converse(Fake(), plugins=[wasm_plugin(pkg, cache_home=str(cache_home))], prompts=["/mems"])
    said = notices(w)
    assert any("'mems' could not be instantiated" in n for n in said), said


def _tools(plugin: Any) -> dict[str, Any]:
    return {t.name: t for t in plugin.tools}


def _later(seconds: float, event: threading.Event) -> None:
    threading.Timer(seconds, event.set).start()


SPIN = ToolDecl("spin", "Spin", {"type": "object", "properties": {}}, "reads")
POLL = ToolDecl("poll", "Poll", {"type": "object", "properties": {}}, "reads")
FAIL = ToolDecl("fail", "Fail", {"type": "object", "properties": {}}, "reads")


def test_a_cancelled_call_stops_soon_and_is_not_a_fault(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    limits = Limits(tool_seconds=30, tool_fuel=10**15)  # neither would stop it for long
    plugin = wasm_plugin(
        package(guest, "cx", tools=(SPIN, POLL)), cache_home=str(cache_home), limits=limits
    )
    ctx = ToolContext(root=str(tmp_path), cwd=str(tmp_path))
    _later(0.5, ctx.cancelled)
    began = time.monotonic()
    with pytest.raises(ToolCancelled):
        _tools(plugin)["spin"].run(ctx, {})
    assert time.monotonic() - began < 5
    ctx = ToolContext(root=str(tmp_path), cwd=str(tmp_path))
    _later(0.3, ctx.cancelled)
    assert _tools(plugin)["poll"].run(ctx, {}).text == "saw the cancel"  # within the grace
    host = host_of("cx")
    assert host is not None and host.faults == 0 and host.disabled is None


def test_calls_waiting_for_the_instance_are_not_faults(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    limits = Limits(seconds=0.5, tool_seconds=10, tool_fuel=10**15)
    plugin = wasm_plugin(
        package(guest, "busy", tools=(POLL,)), cache_home=str(cache_home), limits=limits
    )
    view = _View(tmp_path)
    assert _reply(plugin, view, "/busy") == "hello from busy"  # loaded
    ctx = ToolContext(root=str(tmp_path), cwd=str(tmp_path))
    tool = threading.Thread(target=_tools(plugin)["poll"].run, args=(ctx, {}))
    tool.start()
    time.sleep(0.2)
    got: list[str] = []
    waiting = [
        threading.Thread(target=lambda: got.append(_reply(plugin, view, "/busy"))) for _ in range(3)
    ]
    for t in waiting:
        t.start()
    _later(2.5, ctx.cancelled)  # past seconds + 1 of waiting
    for t in (tool, *waiting):
        t.join(30)
    assert got == ["hello from busy"] * 3
    host = host_of("busy")
    assert host is not None and host.faults == 0


def test_an_error_from_on_event_is_a_fault_said_plainly(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    w = World(tmp_path)
    pkg = package(guest, "evx", events=("turn_start",), options=settings(mode="err-event"))
    w.converse(
        Fake(say("ok")), plugins=[wasm_plugin(pkg, cache_home=str(cache_home))], prompts=["go"]
    )
    (what,) = [e["diagnostic"]["what"] for e in w.of("error") if "'evx'" in e["diagnostic"]["what"]]
    assert "bad" in what and "thing" in what and "\x1b" not in what and "\x07" not in what
    host = host_of("evx")
    assert host is not None and host.faults == 1


def test_a_tool_error_is_said_plainly(cache_home: Path, guest: Path, tmp_path: Path) -> None:
    plugin = wasm_plugin(package(guest, "tx", tools=(FAIL,)), cache_home=str(cache_home))
    with pytest.raises(ToolError) as raised:
        _tools(plugin)["fail"].run(ToolContext(root=str(tmp_path), cwd=str(tmp_path)), {})
    assert "failed" in str(raised.value) and "\x1b" not in str(raised.value)


def test_unhashable_queue_ids_fault_and_keep_every_item(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    pkg = package(guest, "qx", queue_policies=("unhashable",))
    plugin = wasm_plugin(pkg, cache_home=str(cache_home))
    items = [QueuedItem(str(i), "steer", f"t{i}") for i in range(3)]
    assert list(plugin.queue_policies["unhashable"](items)) == items
    host = host_of("qx")
    assert host is not None and host.faults == 1


def test_http_masks_what_comes_back_and_sends_no_plugin_host(
    cache_home: Path, guest: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import http.server

    seen: list[str] = []

    class Echo(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("host", ""))
            body = ("you sent " + self.headers.get("authorization", "")).encode()
            self.send_response(200)
            self.send_header("x-echo", " echo " + self.headers.get("authorization", ""))
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("TOKEN", "s3cret-echo-9")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    grants = Grants(hosts=("127.0.0.1", "example.invalid"), secrets=("TOKEN",))
    pkg = package(
        guest, "echo", grants=grants, options=settings(mode="secret", host="evil.example")
    )
    plugin = wasm_plugin(pkg, cache_home=str(cache_home))
    view = _View(tmp_path, session=True)
    view.settings = {"mode": "secret", "host": "evil.example"}  # as the options default
    try:
        url = f"http://127.0.0.1:{server.server_port}/"
        reply = _reply(plugin, view, f"/echo http {url}")
    finally:
        server.shutdown()
        server.server_close()
    assert reply == "status 200: you sent Bearer {{secret:TOKEN}}echo Bearer {{secret:TOKEN}}"
    assert seen == [f"127.0.0.1:{server.server_port}"]  # the plugin's Host was dropped
    assert "s3cret" not in view.journal.read_text(errors="replace")
    plain_http = _reply(plugin, view, "/echo http http://example.invalid/")
    assert plain_http.startswith("denied plugin.grant-denied") and "https" in plain_http


def test_a_granted_program_runs_alone_not_with_shell_operators(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    plugin = wasm_plugin(
        package(guest, "ops", grants=Grants(commands=("git",))), cache_home=str(cache_home)
    )
    view = _View(_project(tmp_path), sandbox=SANDBOX, session=True)
    for command in ("git status; rm -rf /", "git log | sh", "git $(id)", "git `id`"):
        denied = _reply(plugin, view, f"/ops run {command}")
        assert denied.startswith("denied plugin.grant-denied") and "shell operators" in denied


def test_a_read_larger_than_a_call_can_carry_is_refused(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    project = _project(tmp_path)
    (project / "docs" / "big").write_bytes(b"x" * (2 << 20))  # 2 s of copying into the guest
    plugin = wasm_plugin(
        package(guest, "big", grants=Grants(paths=("docs",))), cache_home=str(cache_home)
    )
    refused = _reply(plugin, _View(project), "/big read docs/big")
    assert refused.startswith("denied plugin.host-failed") and "limit" in refused, refused[:200]
    host = host_of("big")
    assert host is not None and host.faults == 0


def test_a_call_cannot_flood_the_log_or_the_journal(
    cache_home: Path, guest: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from smith.wasm._hostfns import MAX_EFFECTS, MAX_LOGS

    monkeypatch.setenv("TOKEN", "s3cret-flood")
    plugin = wasm_plugin(
        package(guest, "flood", grants=Grants(secrets=("TOKEN",))), cache_home=str(cache_home)
    )
    view = _View(tmp_path, session=True)
    import logging

    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("smith.plugins")  # (smith's own setup may stop propagation)
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        assert _reply(plugin, view, f"/flood logs {MAX_LOGS + 300}") == "logged"
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    lines = [r for r in records if "flood" in r.getMessage()]
    assert len(lines) == MAX_LOGS + 1 and "dropped" in lines[-1].getMessage()
    assert (
        _reply(plugin, view, f"/flood secrets {MAX_EFFECTS + 50}") == f"ok {MAX_EFFECTS} refused 50"
    )
    session = view.context.session
    assert session is not None
    intents = list(session.entries("effect_intent"))
    assert len([e for e in intents if e.content["name"] == "flood.secret"]) == MAX_EFFECTS
    assert _reply(plugin, view, "/flood secrets 1") == "ok 1 refused 0"  # per call


def test_a_git_grant_runs_git_not_any_program(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    plugin = wasm_plugin(
        package(guest, "gitp", grants=Grants(commands=("git",))), cache_home=str(cache_home)
    )
    view = _View(_project(tmp_path), sandbox=SANDBOX, session=True)
    for command in (
        "git -c alias.x=!id x",
        "git --config-env=core.pager=X log",
        "git clone --upload-pack=id x y",
        "git clone -u id x y",
        "git ls-remote ext::id",
    ):
        denied = _reply(plugin, view, f"/gitp run {command}")
        assert denied.startswith("denied plugin.grant-denied") and "another program" in denied
    for command in ("/usr/bin/../bin/git status", "./git status"):  # the granted name only
        assert _reply(plugin, view, f"/gitp run {command}").startswith("denied plugin.grant-denied")
