"""smith as an MCP client (the mcp plugin, smith.plugins.mcp): servers built on the
official SDK's MCPServer (tests/mcp_client_kit.py) over stdio and Streamable HTTP, through
`smith eval` with a scripted model and through the plugin's manager directly."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from smith.effects import ToolCancelled, ToolContext, ToolError, ToolSpec
from tests import mcp_client_kit as kit
from tests.conftest import Result, SmithEnv

PY = sys.executable


def _server_block(name: str, script: Path, extra: str = "") -> str:
    return f'    server "{name}" command="{PY}" args="{script}" {extra}\n'


class _Running:
    """The plugin's manager over a resolved configuration, outside a runtime."""

    def __init__(self, senv: SmithEnv, project: Path, kdl: str) -> None:
        from smith.config import resolve
        from smith.plugins.mcp._manager import Manager

        senv.write_user_config(kdl)
        config = resolve(env=senv.env, cwd=str(project))
        self.published: list[list[ToolSpec]] = []
        self.ctx = ToolContext(root=str(project), cwd=str(project))
        self.manager = Manager(config, self.ctx, lambda tools: self.published.append(list(tools)))
        self.manager.begin()

    def tools(self, count: int = 1, timeout: float = 30) -> dict[str, ToolSpec]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready = [c for c in self.manager.connections.values() if c.state == "ready"]
            if self.published and len(ready) >= count:
                return {t.name: t for t in self.published[-1]}
            time.sleep(0.05)
        raise AssertionError(f"no tools within {timeout} s: {list(self.manager.notices)}")

    def call(self, spec: ToolSpec, args: dict[str, object]) -> Any:
        return spec.run(self.ctx.for_call(), args)


@pytest.fixture
def running() -> Iterator[Callable[[SmithEnv, Path, str], _Running]]:
    made: list[_Running] = []

    def make(senv: SmithEnv, project: Path, kdl: str) -> _Running:
        made.append(_Running(senv, project, kdl))
        return made[-1]

    yield make
    for r in made:
        r.manager.close()


def _wait_for(path: Path, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return True
        time.sleep(0.05)
    return False


# -- names, effects, filters --------------------------------------------------------------


def test_tool_names_are_valid_for_every_provider_and_long_ones_stay_apart() -> None:
    from smith.plugins.mcp._adapt import chosen, tool_name

    assert tool_name("files", "echo") == "mcp_files__echo"
    assert tool_name("my.server", "get data!") == "mcp_my_server__get_data_"
    a, b = tool_name("s", "x" * 80 + "a"), tool_name("s", "x" * 80 + "b")
    assert len(a) == len(b) == 64 and a != b
    assert all(c.isalnum() or c in "_-" for c in a)
    assert chosen("echo", [], []) and not chosen("echo", [], ["ec*"])
    assert not chosen("echo", ["echo"], ["echo"])  # deny wins
    assert chosen("echo", ["e*"], []) and not chosen("slow", ["e*"], [])


def test_allow_deny_effects_resources_and_collisions(
    senv: SmithEnv, running: Callable[[SmithEnv, Path, str], _Running]
) -> None:
    project = senv.make_project()
    script = kit.write_server(senv.root / "srv")
    kdl = (
        "mcp {\n"
        + _server_block("a-b", script, '{ allow "echo" "remove*" "slow" "read_*"; deny "slow"; }')
        + _server_block("a_b", script, 'deny="remove*"')
        + "}\n"
    )
    r = running(senv, project, kdl)
    tools = r.tools(count=2)
    assert "mcp_a-b__echo" in tools and "mcp_a-b__remove_everything" in tools
    assert "mcp_a-b__slow" not in tools and "mcp_a-b__crash" not in tools
    assert "mcp_a_b__slow" in tools and "mcp_a_b__remove_everything" not in tools
    assert tools["mcp_a-b__echo"].effect == "reads" and not tools["mcp_a-b__echo"].mutating
    assert tools["mcp_a-b__remove_everything"].effect == "writes"
    assert tools["mcp_a_b__slow"].effect == "unknown" and tools["mcp_a_b__slow"].mutating
    assert tools["mcp_a-b__read_resource"].parameters["required"] == ["uri"]
    assert "notes://readme" in tools["mcp_a-b__read_resource"].description
    schema = tools["mcp_a-b__echo"].parameters
    assert schema["properties"]["text"]["type"] == "string"  # type: ignore[index]
    assert r.call(tools["mcp_a-b__echo"], {"text": "hi"}).text == "echo:hi"
    read = r.call(tools["mcp_a-b__read_resource"], {"uri": "notes://readme"})
    assert read.text == "RESOURCE-CONTENT-4242"


def test_a_name_two_servers_make_is_refused_with_a_diagnostic(
    senv: SmithEnv, running: Callable[[SmithEnv, Path, str], _Running]
) -> None:
    project = senv.make_project()
    script = kit.write_server(senv.root / "srv")
    kdl = "mcp {\n" + _server_block("x+y", script) + _server_block("x_y", script) + "}\n"
    r = running(senv, project, kdl)
    tools = r.tools(count=2)
    names = [t for t in tools if t.startswith("mcp_x_y__")]
    assert len(names) == len(set(names)) and "mcp_x_y__echo" in names
    notes = [d for d in r.manager.notices if d.code == "mcp.name-collision"]
    assert notes and "mcp_x_y__echo" in notes[0].what


# -- calls: errors, cancellation, a crash, a timeout ------------------------------------


def test_errors_cancellation_crash_and_restart(
    senv: SmithEnv, running: Callable[[SmithEnv, Path, str], _Running]
) -> None:
    project = senv.make_project()
    marks = senv.root / "srv"
    script = kit.write_server(marks)
    r = running(senv, project, "mcp {\n" + _server_block("k", script) + "}\n")
    tools = r.tools()
    with pytest.raises(ToolError) as failed:
        r.call(tools["mcp_k__fail"], {})
    assert "Error executing tool fail" in failed.value.message  # the server says no more
    # A cancelled call: the SDK sends notifications/cancelled, the server's handler stops.
    ctx = r.ctx.for_call()
    caught: list[BaseException] = []

    def slow() -> None:
        try:
            tools["mcp_k__slow"].run(ctx, {"seconds": 60})
        except BaseException as exc:
            caught.append(exc)

    worker = threading.Thread(target=slow)
    worker.start()
    assert _wait_for(marks / "slow-started")
    ctx.cancelled.set()
    worker.join(10)
    assert caught and isinstance(caught[0], ToolCancelled)
    assert caught[0].mutation == "unknown"  # slow declares nothing: it may have changed things
    assert _wait_for(marks / "slow-cancelled", 10)
    # Concurrent calls are answered each its own (the SDK correlates them by id).
    answers: dict[int, str] = {}

    def echo(n: int) -> None:
        answers[n] = r.call(tools["mcp_k__echo"], {"text": str(n)}).text

    threads = [threading.Thread(target=echo, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert answers == {n: f"echo:{n}" for n in range(8)}
    # A crash mid-call: reported as lost (it may have run), never sent again; the next
    # call restarts the server once.
    with pytest.raises(ToolError) as lost:
        r.call(tools["mcp_k__crash"], {})
    assert lost.value.details.get("diagnostic") == "mcp.lost" and lost.value.mutation == "unknown"
    assert r.call(tools["mcp_k__echo"], {"text": "again"}).text == "echo:again"
    assert (marks / "starts").read_text().count("start") == 2
    assert (marks / "crashes").read_text().count("crash") == 1
    assert r.manager.connections["k"].restarts == 1


def test_a_server_that_never_answers_times_out(
    senv: SmithEnv, running: Callable[[SmithEnv, Path, str], _Running]
) -> None:
    project = senv.make_project()
    marks = senv.root / "srv"
    script = kit.write_server(marks)
    r = running(senv, project, "mcp {\n" + _server_block("k", script, "timeout=1") + "}\n")
    tools = r.tools()
    with pytest.raises(ToolError) as late:
        r.call(tools["mcp_k__slow"], {"seconds": 30})
    assert late.value.details.get("diagnostic") == "mcp.timeout"
    assert "did not answer the call of slow within 1 s" in late.value.message
    assert _wait_for(marks / "slow-cancelled", 10)  # the SDK cancelled it on its side too


def test_a_server_slow_to_start_times_out_at_connecting(
    senv: SmithEnv, running: Callable[[SmithEnv, Path, str], _Running]
) -> None:
    project = senv.make_project()
    script = kit.write_server(senv.root / "srv")
    late = 'startup-timeout=1 { env { SLOW_START "30"; }; }'
    block = f'    server "late" command="{PY}" args="{script}" {late}\n'
    r = running(senv, project, "mcp {\n" + block + "}\n")
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not r.manager.notices:
        time.sleep(0.05)
    codes = [d.code for d in r.manager.notices]
    assert codes == ["mcp.timeout"], codes
    assert r.manager.connections["late"].state == "failed" and not r.published


# -- configuration --------------------------------------------------------------------------


def test_bad_values_get_a_diagnostic_naming_the_value_and_where_it_was_set(
    senv: SmithEnv,
) -> None:
    from smith.config import resolve
    from smith.plugins.mcp._config import servers

    project = senv.make_project()
    path = senv.write_user_config(
        "mcp {\n"
        '    server "num" command=5\n'
        '    server "ftp" url="ftp://example.com/mcp"\n'
        '    server "late" command="x" timeout="soon"\n'
        '    server "typo" comand="x"\n'
        '    server "both" command="x" url="http://127.0.0.1:1/mcp"\n'
        '    server "good" url="http://127.0.0.1:1/mcp" token-env="TOKEN_VAR"\n'
        "}\n"
    )
    found, problems = servers(resolve(env=senv.env, cwd=str(project)))
    assert [s.name for s in found] == ["good"]
    assert found[0].token_env == "TOKEN_VAR" and found[0].transport == "http"
    by_code = [(d.code, d.value, str(d.source)) for d in problems]
    assert ("mcp.config", "5", f"{path}:2:26") in by_code
    assert any(c == "mcp.config" and v == '"ftp://example.com/mcp"' for c, v, _ in by_code)
    assert any(c == "mcp.config" and v == '"soon"' for c, v, _ in by_code)
    typo = next(d for d in problems if d.code == "mcp.unknown-key")
    assert "comand" in typo.what and "did you mean 'command'" in typo.fix
    assert any(d.code == "mcp.config" and "beside command" in d.what for d in problems)


class _Fake:
    def __init__(self, root: Path, trusted: bool) -> None:
        self.project_root, self.project_trusted = str(root), trusted
        self.home = str(root / "smith-home")
        if trusted:
            from smith import trust

            trust.trust(self.home, str(root))

    def subtree(self, prefix: str) -> dict[str, Any]:
        return {}

    def __getitem__(self, key: str) -> Any:  # plugins.disabled, for installed packages
        return None


def test_a_trusted_projects_mcp_json_is_read(tmp_path: Path) -> None:
    from smith.plugins.mcp._config import servers

    (tmp_path / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "files": {"command": "python3", "args": ["srv.py"], "env": {"A": "1"}},
                    "web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X": "y"}},
                    "old": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
                }
            }
        )
    )
    assert servers(_Fake(tmp_path, False))[0] == []  # an untrusted project's is not read
    found, problems = servers(_Fake(tmp_path, True))  # type: ignore[arg-type]
    shown = {s.name: (s.transport, s.describe()) for s in found}
    assert shown == {
        "files": ("stdio", "python3 srv.py"),
        "web": ("http", "http://127.0.0.1:9/mcp"),
    }
    assert [d.code for d in problems] == ["mcp.config"] and "SSE" in problems[0].what
    # Trust follows content: a file changed since it was trusted is not used.
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {"evil": {"command": "sh"}}}')
    found, problems = servers(_Fake(tmp_path, False))  # type: ignore[arg-type]
    assert found == [] and [d.code for d in problems] == ["mcp.project-unapproved"]
    (tmp_path / ".mcp.json").write_text("{not json")
    assert [d.code for d in servers(_Fake(tmp_path, True))[1]] == ["mcp.project-file"]


# -- through smith eval ---------------------------------------------------------------------


def _eval(
    smith_process: Callable[..., Result],
    project: Path,
    model: str,
    env: dict[str, str] | None = None,
) -> tuple[Result, list[dict[str, Any]]]:
    r = smith_process("eval", "--json", "--model", model, "use the server", cwd=project, env=env)
    return r, kit.events(r.out)


def test_stdio_server_through_eval_never_delays_the_start(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = senv.make_project()
    script = kit.write_server(senv.root / "srv")
    marks = project / "marks"  # the server runs in the sandbox: the project is writable
    marks.mkdir()
    env = f'env {{ SLOW_START "3"; MARKS "{marks}"; }}'
    block = f'    server "files" command="{PY}" args="{script}" {{ {env}; }}\n'
    # As in the app: eval's first prompt waits for a connecting server unless first-wait 0.
    senv.write_user_config("plugins.mcp.first-wait 0\nmcp {\n" + block + "}\n")
    probe = f"test -e {marks / 'listed'} && echo was-ready || echo not-yet"
    model, log = kit.script(
        senv.root,
        [
            {"tool_calls": [{"name": "bash", "arguments": {"command": probe}, "id": "call_probe"}]},
            {"tool_calls": [kit.wait_call(marks)]},
            {
                "tool_calls": [
                    {"name": "mcp_files__echo", "arguments": {"text": "hi"}, "id": "call_echo"}
                ]
            },
            {
                "tool_calls": [
                    {
                        "name": "mcp_files__read_resource",
                        "arguments": {"uri": "notes://readme"},
                        "id": "call_res",
                    }
                ]
            },
            {"text": "done", "stop": "end"},
        ],
    )
    r, evs = _eval(smith_process, project, model)
    assert r.code == 0, r.err
    # The first request went out while the server was still starting (no tools of it yet).
    assert "not-yet" in kit.tool_end(evs, "call_probe")["result"]["text"]
    reqs = kit.requests(log)
    assert "mcp_files__echo" not in kit.tool_names(reqs[0])
    offered = next(t for t in reqs[2]["tools"] if t["name"] == "mcp_files__echo")
    assert offered["parameters"]["properties"]["text"]["type"] == "string"
    assert "mcp_files__read_resource" in kit.tool_names(reqs[2])
    echo = kit.tool_end(evs, "call_echo")
    assert echo["result"]["text"] == "echo:hi" and not echo["is_error"]
    assert kit.tool_end(evs, "call_res")["result"]["text"] == "RESOURCE-CONTENT-4242"
    # Each call is journaled as every tool call is: an intent, then its completion.
    start = next(i for i, e in enumerate(evs) if e.get("tool_call_id") == "call_echo")
    end = evs.index(echo)
    kinds = [e.get("kind") for e in evs[start:end] if e.get("type") == "entry"]
    assert kinds == ["effect_intent", "effect_completion"]
    status = [e["text"] for e in evs if e.get("type") == "ui" and e.get("key") == "mcp"]
    assert status and status[-1] == "mcp: files (5 tools)"


def test_streamable_http_server_with_a_bearer_token_never_recorded(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = senv.make_project()
    marks = senv.root / "web"
    script = kit.write_server(marks)
    proc, url = kit.start_http(script, {**senv.env, "MARKS": str(marks)})
    token = "tok-9f8e7d6c5b4a39281706"
    try:
        senv.write_user_config(f'mcp {{\n    server "web" url="{url}" token-env="WEB_TOKEN"\n}}\n')
        model, _log = kit.script(
            senv.root,
            [
                {"tool_calls": [kit.wait_call(marks)]},
                {
                    "tool_calls": [
                        {"name": "mcp_web__echo", "arguments": {"text": "hi"}, "id": "call_echo"}
                    ]
                },
                {"text": "done", "stop": "end"},
            ],
        )
        r, evs = _eval(smith_process, project, model, env={"WEB_TOKEN": token})
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    assert r.code == 0, r.err
    assert kit.tool_end(evs, "call_echo")["result"]["text"] == "echo:hi"
    assert token not in r.out and token not in r.err
    for path in senv.data_home.rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path


# -- smith mcp list | tools | add | remove ----------------------------------------------


def test_mcp_list_tools_add_and_remove(senv: SmithEnv, smith: Callable[..., Result]) -> None:
    project = senv.make_project()
    script = kit.write_server(senv.root / "srv")
    r = smith("mcp", "list", cwd=project)
    assert r.code == 0 and "no MCP server is configured" in r.out
    marks = f"MARKS={project}"  # writable in the sandbox the server runs in
    r = smith("mcp", "add", "files", "--env", marks, "--", PY, str(script), cwd=project)
    assert r.code == 0, r.err
    assert 'server "files"' in senv.user_config.read_text()
    r = smith(
        "mcp", "add", "web", "--url", "http://127.0.0.1:9/mcp", "--token-env", "T", cwd=project
    )
    assert r.code == 0, r.err
    r = smith("mcp", "list", "--timeout", "5", cwd=project)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == "files  stdio  ready, 5 tools"
    assert lines[2].startswith("web  http  failed")
    r = smith("mcp", "tools", "files", cwd=project)
    assert r.code == 0 and "echo  as mcp_files__echo" in r.out and "prompt greet" in r.out
    listed = json.loads(smith("mcp", "list", "--json", cwd=project).out)
    assert [s["name"] for s in listed] == ["files", "web"]
    assert smith("mcp", "add", "files", "--", "x", cwd=project).code != 0  # taken
    r = smith("mcp", "remove", "files", cwd=project)
    assert r.code == 0, r.err
    text = senv.user_config.read_text()
    assert "files" not in text and 'server "web"' in text
    r = smith("mcp", "remove", "files", cwd=project)
    assert r.code != 0 and "no server of that name" in r.err
    r = smith("mcp", "tools", "nothing", cwd=project)
    assert r.code != 0 and "there is no MCP server 'nothing'" in r.err


def test_an_oauth_server_connects_through_the_oauth_half(
    senv: SmithEnv,
    running: Callable[[SmithEnv, Path, str], _Running],
    smith: Callable[..., Result],
) -> None:
    """oauth=true gives the HTTP client the OAuth half's auth (smith.plugins._mcp_oauth);
    a server that asks for no authorization is reached without a login."""
    project = senv.make_project()
    marks = senv.root / "web"
    script = kit.write_server(marks)
    proc, url = kit.start_http(script, {**senv.env, "MARKS": str(marks)})
    try:
        r = running(senv, project, f'mcp {{\n    server "web" url="{url}" oauth=true\n}}\n')
        tools = r.tools()
        assert r.call(tools["mcp_web__echo"], {"text": "o"}).text == "echo:o"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    script2 = kit.write_server(senv.root / "srv")
    senv.write_user_config("mcp {\n" + _server_block("files", script2) + "}\n")
    login = smith("mcp", "login", "files", cwd=project)
    assert login.code != 0 and "it is a stdio server" in login.err


class _Host:
    """A command host that keeps what was submitted, shown and told."""

    def __init__(self) -> None:
        self.submitted: list[Any] = []
        self.shown: list[str] = []
        self.told: list[str] = []
        outer = self

        class _Runtime:
            def submit(self, op: Any) -> None:
                outer.submitted.append(op)

        self.runtime = _Runtime()

    def show(self, title: str, lines: list[str]) -> None:
        self.shown += lines

    def tell(self, text: str, *, error: bool = False) -> None:
        self.told.append(text)


def test_prompts_are_commands(
    senv: SmithEnv, running: Callable[[SmithEnv, Path, str], _Running]
) -> None:
    import asyncio

    from smith.plugins.mcp._commands import Commands

    project = senv.make_project()
    script = kit.write_server(senv.root / "srv")
    r = running(senv, project, "mcp {\n" + _server_block("k", script) + "}\n")
    r.tools()
    commands = Commands([r.manager])
    names = [c.name for c in commands]
    assert names == ["mcp", "mcp__k__greet"]
    greet = commands[1]
    assert greet in commands and greet.usage == "[name]"  # the same object each time
    host = _Host()
    asyncio.run(greet.run(host, "Ada"))  # type: ignore[arg-type]
    assert [op.text for op in host.submitted] == ["Say hello to Ada"], host.told
    asyncio.run(commands[0].run(host, ""))  # type: ignore[arg-type]
    assert host.shown[0] == "k  stdio  ready  5 tools" and "/mcp__k__greet [name]" in host.shown[1]


def test_a_servers_token_and_keyed_headers_never_reach_commands_or_records(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    """token-env names a credential variable as a provider's key variable is: withheld
    from the commands the model runs and redacted; a header or environment value that
    carries a key (authorization, *_TOKEN) is redacted wherever it would be recorded."""
    project = senv.make_project()
    token, header = "tok-1a2b3c4d5e6f7a8b9c0d", "hdr-0f9e8d7c6b5a49382716"
    senv.write_user_config(
        'mcp {\n    server "web" url="http://127.0.0.1:9/mcp" token-env="WEB_TOKEN" '
        f'headers.authorization="Bearer {header}"\n}}\n'
    )
    command = f'echo "[$WEB_TOKEN]"; echo {header}'
    model, _log = kit.script(
        senv.root,
        [
            {"tool_calls": [{"name": "bash", "arguments": {"command": command}, "id": "b"}]},
            {"text": "done", "stop": "end"},
        ],
    )
    r, evs = _eval(smith_process, project, model, env={"WEB_TOKEN": token})
    assert r.code == 0, r.err
    text = kit.tool_end(evs, "b")["result"]["text"]
    assert text.startswith("[]") and header not in text and "{{secret:" in text
    for path in senv.data_home.rglob("*"):
        if path.is_file() and path.parent.name != "cache":  # the parsed config.kdl is there
            data = path.read_bytes()
            assert token.encode() not in data and header.encode() not in data, path
