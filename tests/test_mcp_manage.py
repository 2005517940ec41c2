"""`smith mcp add | remove | list | tools` as a user meets them (review 44): the
configuration file edited by its parsed structure, existing servers found in any layout,
secrets masked, names that would split refused."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from smith.diagnostics import SmithError
from tests.conftest import Result, SmithEnv

LAYOUT = """// my settings
model "scripted:/dev/null"   // keep
mcp {
    // first server
    server "a" command="echo" args="1"; server "b" command="echo" args="2"
    server "c" command="echo" {
        env { X "}"; }
    }
    server "d" command="echo" /* trailing } comment */
}
/* old:
server "z" command="x"
*/
"""


def _settings(path: Path) -> list[tuple[str, object]]:
    from smith.config._kdl import read_settings

    settings, problems = read_settings(str(path), path.read_text())
    assert not problems, [p.render() for p in problems]
    return [(s.key, s.value) for s in settings]


@pytest.mark.parametrize("name", ["a", "b", "c", "d"])
def test_remove_takes_out_one_server_whatever_its_layout(tmp_path: Path, name: str) -> None:
    from smith.plugins.mcp import remove_server

    path = tmp_path / "config.kdl"
    path.write_text(LAYOUT)
    before = _settings(path)
    removed = remove_server(str(path), name)
    assert removed.startswith(f'server "{name}"')
    ours = f"mcp.server.{name}."
    assert _settings(path) == [(k, v) for k, v in before if not k.startswith(ours)]
    assert "// my settings" in path.read_text() and 'server "z"' in path.read_text()


def test_remove_takes_every_layout_of_a_server_and_the_blocks_it_empties(tmp_path: Path) -> None:
    from smith.plugins.mcp import remove_server

    path = tmp_path / "config.kdl"
    path.write_text(
        'mcp.server.z.command "p"\n'
        'mcp { server { z { args "a"; }; w { command "r"; }; }; }\n'
        'mcp { server "z" url="http://h/"; }\n'
        'theme "dark"\n'
    )
    remove_server(str(path), "z")
    assert path.read_text() == 'mcp { server { w { command "r"; }; }; }\ntheme "dark"\n'
    remove_server(str(path), "w")
    assert path.read_text() == 'theme "dark"\n'


def test_an_edit_that_would_not_read_back_as_intended_is_never_written(tmp_path: Path) -> None:
    from smith.config import rewrite

    path = tmp_path / "config.kdl"
    path.write_text('theme "dark"\n')
    with pytest.raises(ValueError, match="would not read"):
        rewrite(str(path), lambda text, s, b: text + "mcp {\n", lambda old, new: None)
    with pytest.raises(ValueError, match="refused"):
        rewrite(str(path), lambda text, s, b: text + "x 1\n", lambda old, new: "refused")
    assert path.read_text() == 'theme "dark"\n'


def test_add_finds_a_server_of_that_name_in_any_layout(tmp_path: Path) -> None:
    from smith.plugins.mcp import add_server

    path = tmp_path / "config.kdl"
    for text in (
        'mcp { server "x" command="p" sandbox=false; }\n',
        'mcp.server.x.command "p"\n',
        'mcp {\n  server {\n    x { command "p"; }\n  }\n}\n',
    ):
        path.write_text(text)
        with pytest.raises(SmithError, match="configured already") as info:
            add_server(str(path), "x", {"command": "q", "args": []})
        assert "smith mcp remove x" in info.value.diagnostic.render()
        assert path.read_text() == text
    add_server(str(path), "y", {"command": "q", "args": ["1"]})
    assert ("mcp.server.y.command", "q") in _settings(path)


def test_a_server_name_with_a_dot_is_refused_not_split(tmp_path: Path) -> None:
    from smith.config._kdl import read_settings
    from smith.plugins.mcp import add_server

    path = tmp_path / "config.kdl"
    with pytest.raises(SmithError, match=r"no '\.'"):
        add_server(str(path), "my.server", {"command": "q"})
    settings, problems = read_settings("c.kdl", 'mcp { server "my.server" command="p"; }\n')
    assert not settings and len(problems) == 1
    assert "'my.server'" in problems[0].render() and "no '.'" in problems[0].render()


def test_the_cli_never_prints_a_servers_secrets(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = senv.make_project()
    token, key, bearer = "ghp_a1b2c3d4e5f6a7b8c9d0", "sk-0f9e8d7c6b5a4938", "sk-1a2b3c4d5e6f7a8b"
    r = smith("mcp", "add", "tok", "--env", f"GITHUB_TOKEN={token}", "--env", "DEBUG=1",
              "--", "python3", "x.py", f"--api-key={key}", cwd=project)  # fmt: skip
    assert r.code == 0, r.err
    assert token not in r.out and key not in r.out and '"DEBUG" "1"' in r.out
    url = "http://u:pw-9z8y7x@127.0.0.1:9/mcp?api_key=zq-5t6y7u8i"
    r = smith("mcp", "add", "web", "--url", url, "--header", f"Authorization=Bearer {bearer}",
              cwd=project)  # fmt: skip
    assert r.code == 0, r.err
    assert bearer not in r.out and "pw-9z8y7x" not in r.out and "zq-5t6y7u8i" not in r.out
    assert token in senv.user_config.read_text()  # masked when shown, kept as given
    for args in (("list", "--timeout", "1"), ("list", "--json", "--timeout", "1")):
        r = smith("mcp", *args, cwd=project)
        shown = r.out + r.err
        assert "127.0.0.1:9" in shown
        assert not any(s in shown for s in (token, key, bearer, "pw-9z8y7x", "zq-5t6y7u8i"))
    for name in ("tok", "web"):
        r = smith("mcp", "remove", name, cwd=project)
        assert r.code == 0, r.err
        assert not any(s in r.out for s in (token, key, bearer, "pw-9z8y7x", "zq-5t6y7u8i"))
        assert f'server "{name}"' in r.out


def test_add_refuses_what_its_kind_of_server_would_drop(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = senv.make_project()
    r = smith("mcp", "add", "w", "--url", "http://127.0.0.1:9/", "--env", "A=1", cwd=project)
    assert r.code != 0 and "--env does not apply to an HTTP server" in r.err
    r = smith("mcp", "add", "w", "--header", "A=1", "--", "python3", cwd=project)
    assert r.code != 0 and "--header does not apply to a stdio server" in r.err
    assert not senv.user_config.exists() or "server" not in senv.user_config.read_text()
    r = smith("mcp", "tools", cwd=project)
    assert r.code != 0 and "the following arguments are required: alias" in r.err
    assert "error: smith mcp tools: 2" not in r.err


def test_tools_names_a_prompts_command_as_it_is_typed(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    from tests import mcp_client_kit as kit

    project = senv.make_project()
    script = kit.write_server(senv.root / "srv")
    senv.write_user_config(
        f'mcp {{\n    server "k" command="{sys.executable}" args="{script}"\n}}\n'
    )
    r = smith("mcp", "tools", "k", cwd=project)
    assert r.code == 0, r.err
    assert "prompt greet  (/mcp__k__greet)" in r.out


class _Trusted:
    """What project_servers reads of a Config: a project trusted as it is now."""

    def __init__(self, root: Path) -> None:
        from smith import trust

        self.project_root, self.project_trusted = str(root), True
        self.home = str(root / "smith-home")
        trust.trust(self.home, str(root))

    def subtree(self, prefix: str) -> dict[str, object]:
        return {}

    def __getitem__(self, key: str) -> object:  # plugins.disabled, for installed packages
        return None


def test_mcp_json_expands_variables_as_claude_code_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from smith.plugins.mcp._config import servers

    monkeypatch.setenv("H44_TOKEN", "t-123")
    monkeypatch.setenv("H44_EMPTY", "")
    monkeypatch.delenv("H44_UNSET", raising=False)
    table = {
        "files": {
            "command": "${H44_BIN:-python3}",
            "args": ["srv.py", "--root=${H44_EMPTY:-.}", "x${H44_EMPTY}y"],
            "env": {"TOKEN": "${H44_TOKEN}"},
        },
        "web": {
            "type": "http",
            "url": "http://127.0.0.1:9/${H44_TOKEN}/mcp",
            "headers": {"Authorization": "Bearer ${H44_TOKEN}"},
        },
        "gone": {"command": "python3", "env": {"K": "${H44_UNSET}"}},
        "my.server": {"command": "python3"},
    }
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": table}))
    found, problems = servers(_Trusted(tmp_path))  # type: ignore[arg-type]
    by = {s.name: s for s in found}
    assert sorted(by) == ["files", "web"]
    assert by["files"].command == "python3" and by["files"].args == ["srv.py", "--root=.", "xy"]
    assert by["files"].env == {"TOKEN": "t-123"}
    assert by["web"].url == "http://127.0.0.1:9/t-123/mcp"
    assert by["web"].headers == {"Authorization": "Bearer t-123"}
    shown = [p.render() for p in problems]
    assert len(shown) == 2, shown
    assert "${H44_UNSET}" in shown[0] and "gone" in shown[0]
    assert "'my.server'" in shown[1] and "'.'" in shown[1]


PROMPTS = r"""
import asyncio
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("pr")


@mcp.prompt()
def greet(name: str, mood: str = "happy") -> str:
    return f"hello {name}, {mood}"


@mcp.prompt()
async def stuck() -> str:
    await asyncio.sleep(60)
    return "late"


mcp.run()
"""


class _Host:
    def __init__(self) -> None:
        self.submitted: list[object] = []
        self.told: list[str] = []
        self.posted: list[object] = []
        outer = self

        class _Runtime:
            def submit(self, op: object) -> None:
                outer.submitted.append(op)

        self.runtime = _Runtime()

    def show(self, title: str, lines: list[str]) -> None:
        pass

    def tell(self, text: str, *, error: bool = False) -> None:
        self.told.append(text)

    def post(self, value: object) -> None:
        self.posted.append(value)


def test_a_prompt_command_checks_its_arguments_and_times_out(senv: SmithEnv) -> None:
    import asyncio
    import time

    from smith.config import resolve
    from smith.effects import ToolContext
    from smith.plugins.mcp._commands import Commands
    from smith.plugins.mcp._manager import Manager

    project = senv.make_project()
    script = senv.root / "prompts.py"
    script.write_text(PROMPTS)
    senv.write_user_config(
        f'mcp {{\n    server "pr" command="{sys.executable}" args="{script}" timeout=1\n}}\n'
    )
    config = resolve(env=senv.env, cwd=str(project))
    manager = Manager(config, ToolContext(root=str(project), cwd=str(project)), lambda t: None)
    manager.begin()
    try:
        deadline = time.monotonic() + 30
        while manager.connections["pr"].state != "ready" and time.monotonic() < deadline:
            time.sleep(0.05)
        commands = {c.name: c for c in Commands([manager])}
        host = _Host()
        asyncio.run(commands["mcp__pr__greet"].run(host, "mood=sad"))  # type: ignore[arg-type]
        assert host.submitted == [] and "needs name" in host.told[0], host.told
        asyncio.run(commands["mcp__pr__greet"].run(host, "Ada"))  # type: ignore[arg-type]
        assert [getattr(op, "text", None) for op in host.submitted] == ["hello Ada, happy"]
        started = time.monotonic()
        asyncio.run(commands["mcp__pr__stuck"].run(host, ""))  # type: ignore[arg-type]
        assert time.monotonic() - started < 20
        assert "did not answer the prompt stuck within 1 s" in host.told[-1], host.told
    finally:
        manager.close()


def test_eval_waits_for_a_server_still_connecting_at_its_first_prompt(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    """One-shot eval offers a slow server's tools from its first request (the app's
    start never waits: tests/test_mcp_client.py, with first-wait 0 as the app has it)."""
    from tests import mcp_client_kit as kit

    project = senv.make_project()
    script = kit.write_server(senv.root / "srv")
    marks = project / "marks"
    marks.mkdir()
    env = f'env {{ SLOW_START "2"; MARKS "{marks}"; }}'
    block = f'    server "files" command="{sys.executable}" args="{script}" {{ {env}; }}\n'
    senv.write_user_config("mcp {\n" + block + "}\n")
    call = {"name": "mcp_files__echo", "arguments": {"text": "hi"}, "id": "call_echo"}
    model, log = kit.script(senv.root, [{"tool_calls": [call]}, {"text": "done", "stop": "end"}])
    r = smith_process("eval", "--json", "--model", model, "go", cwd=project)
    assert r.code == 0, r.err
    assert "mcp_files__echo" in kit.tool_names(kit.requests(log)[0])
    assert kit.tool_end(kit.events(r.out), "call_echo")["result"]["text"] == "echo:hi"


def test_on_failure_asks_before_a_tool_that_acts_outside_the_sandbox() -> None:
    from smith.effects import ToolFacts
    from smith.plugins.approval import decide

    def facts(name: str) -> ToolFacts:
        effect = "reads" if name.endswith("look") else "unknown"
        return ToolFacts(name, effect, mutating=effect != "reads", outside="web" in name)

    on_failure = {"approval": "on-failure", "approval.allow": [], "approval.deny": []}
    asked = decide(on_failure, [], "mcp_web__destroy", {"id": 1}, facts=facts)
    assert asked is not None and "outside the sandbox" in getattr(asked, "text", str(asked))
    assert decide(on_failure, [], "mcp_web__look", {}, facts=facts) is None  # read-only
    assert decide(on_failure, [], "mcp_files__destroy", {}, facts=facts) is None  # sandboxed
    assert decide(on_failure, ["mcp_web__destroy"], "mcp_web__destroy", {}, facts=facts) is None
    never = {**on_failure, "approval": "never"}
    assert decide(never, [], "mcp_web__destroy", {}, facts=facts) is None
    # Where nobody can be asked (eval, the library) it runs as before; untrusted denies.
    assert decide(on_failure, [], "mcp_web__destroy", {}, facts=facts, interactive=False) is None
    untrusted = {**on_failure, "approval": "untrusted"}
    assert decide(untrusted, [], "mcp_web__destroy", {}, facts=facts, interactive=False)


def test_mcp_tools_of_an_unsandboxed_server_say_so(senv: SmithEnv, tmp_path: Path) -> None:
    import time

    from smith.config import resolve
    from smith.effects import ToolContext, ToolSpec
    from smith.plugins.mcp._manager import Manager
    from tests import mcp_client_kit as kit

    project = senv.make_project()
    script = kit.write_server(senv.root / "srv")
    senv.write_user_config(
        f'mcp {{\n    server "in" command="{sys.executable}" args="{script}"\n'
        f'    server "out" command="{sys.executable}" args="{script}" sandbox=false\n}}\n'
    )
    config = resolve(env=senv.env, cwd=str(project))
    published: list[list[ToolSpec]] = []
    manager = Manager(config, ToolContext(root=str(project), cwd=str(project)), published.append)
    manager.begin()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (
            published and {t.name for t in published[-1]} >= {"mcp_in__echo", "mcp_out__echo"}
        ):
            time.sleep(0.05)
        tools = {t.name: t.facts for t in published[-1]}
        assert tools["mcp_out__remove_everything"].outside
        assert not tools["mcp_in__remove_everything"].outside
    finally:
        manager.close()


FLAKY = r"""
import os, sys
if os.path.exists(os.environ["FLAG"]):
    sys.exit("not today")
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("flaky")


@mcp.tool()
def hi() -> str:
    return "hi"


mcp.run()
"""


def test_mcp_reconnect_connects_a_failed_server_again(senv: SmithEnv) -> None:
    import asyncio
    import time

    from smith.config import resolve
    from smith.effects import ToolContext, ToolSpec
    from smith.plugins.mcp._commands import Commands
    from smith.plugins.mcp._manager import Manager

    project = senv.make_project()
    flag = project / "flag"
    flag.write_text("down")
    script = senv.root / "flaky.py"
    script.write_text(FLAKY)
    senv.write_user_config(
        f'mcp {{\n    server "f" command="{sys.executable}" args="{script}" '
        f'{{ env {{ FLAG "{flag}"; }}; }}\n}}\n'
    )
    config = resolve(env=senv.env, cwd=str(project))
    published: list[list[ToolSpec]] = []
    manager = Manager(config, ToolContext(root=str(project), cwd=str(project)), published.append)
    manager.begin()
    try:
        deadline = time.monotonic() + 30
        while manager.connections["f"].state != "failed" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert manager.connections["f"].state == "failed"
        flag.unlink()
        main = Commands([manager])[0]
        host = _Host()
        asyncio.run(main.run(host, "reconnect f"))  # type: ignore[arg-type]
        assert host.told == ["MCP server f is ready: 1 tools"], host.told
        assert "mcp_f__hi" in {t.name for t in published[-1]}
        assert [getattr(p, "text", None) for p in host.posted][-1] == "mcp: f (1 tools)"
        asyncio.run(main.run(host, "reconnect nothing"))  # type: ignore[arg-type]
        assert "no MCP server 'nothing'" in host.told[-1]
    finally:
        manager.close()


def test_a_server_still_connecting_is_stopped_at_once_and_quietly(senv: SmithEnv) -> None:
    """A quit while a server starts (npx downloading) kills it rather than waiting out
    the shutdown's grace, and reports no failure for it."""
    import time

    from smith.config import resolve
    from smith.effects import ToolContext
    from smith.plugins.mcp._manager import Manager

    project = senv.make_project()
    script = senv.root / "sleeper.py"
    script.write_text("import time\ntime.sleep(3600)\n")
    senv.write_user_config(f'mcp {{ server "s" command="{sys.executable}" args="{script}"; }}\n')
    config = resolve(env=senv.env, cwd=str(project))
    manager = Manager(config, ToolContext(root=str(project), cwd=str(project)), lambda t: None)
    manager.begin()
    conn = manager.connections["s"]
    deadline = time.monotonic() + 20
    while (conn.spawn is None or conn.state != "connecting") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert conn.state == "connecting"
    hub = manager.hub
    assert hub is not None
    started = time.monotonic()
    hub.close([conn], timeout=60)  # a grace a start would have been waited out for
    assert time.monotonic() - started < 30
    assert conn.state == "closed" and not manager.notices


def test_the_servers_state_is_posted_as_it_changes_not_at_the_next_turn(senv: SmithEnv) -> None:
    """In the app (and RPC) a server's becoming ready, or failing, reaches the status
    line and the notices at once, with no prompt sent (RuntimeView.post)."""
    import asyncio

    from smith.config import resolve
    from smith.runtime import build
    from tests import mcp_client_kit as kit

    project = senv.make_project()
    script = senv.root / "flaky.py"
    script.write_text(FLAKY)
    senv.write_user_config(
        f'mcp {{\n    server "f" command="{sys.executable}" args="{script}" '
        f'{{ env {{ FLAG "{project / "absent"}"; }}; }}\n'
        f'    server "g" command="{sys.executable}" args="{script}" '
        f'{{ env {{ FLAG "{script}"; }}; }}\n}}\n'
    )
    model, _log = kit.script(senv.root, [{"text": "done", "stop": "end"}])
    config = resolve(env=senv.env, flags={"model": model}, cwd=str(project))
    assembly = build(config, cwd=str(project), surface="tui", env=senv.env)
    session = assembly.new_session("smith")
    events: list[dict[str, object]] = []

    async def run() -> None:
        rt = assembly.runtime(session)
        rt.on_event(lambda ev: events.append(dict(ev)) if ev.get("type") == "ui" else None)
        try:
            for _ in range(600):
                await asyncio.sleep(0.05)
                texts = [str(e.get("text")) for e in events]
                if "mcp: f (1 tools), g failed" in texts and any("'g'" in t for t in texts):
                    return
            raise AssertionError(f"no status or notice posted: {events}")
        finally:
            await rt.close()

    asyncio.run(run())


def test_add_replace_takes_the_old_server_out_first(tmp_path: Path) -> None:
    from smith.plugins.mcp import add_server

    path = tmp_path / "config.kdl"
    path.write_text('mcp { server "x" command="p" sandbox=false; server "y" command="q"; }\n')
    add_server(str(path), "x", {"command": "r", "args": ["1"]}, replace=True)
    settings = _settings(path)
    assert [k for k, _ in settings if k.startswith("mcp.server.x.")] == [
        "mcp.server.x.command",
        "mcp.server.x.args",
    ]  # sandbox=false is gone with the old block
    assert ("mcp.server.y.command", "q") in settings
