"""A registered secret in every mode (issue 16: one runtime assembly): eval, rpc, `tools
run`, mcp, the app and the library each restore it for bash, keep it out of the session
records and out of their log output, and say which names of secrets.env they cannot
protect (`secrets.missing`, `secrets.rejected`).

The log line is a real one: the tool of tests/secrets_plugin.py fails with the secret's
value in its error (as a client library quoting a refused token would), and smith logs
the crash with its traceback (SMITH_DEBUG=1 shows tracebacks). Each mode's log is where a
user reads it: stderr for eval, rpc, `tools run` and mcp, $SMITH_HOME/logs/smith.log for
the app, and the program's own logging handlers for the library."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests import secrets_plugin
from tests.conftest import Result, SmithEnv, smith_executable
from tests.rpc_kit import Rpc
from tests.test_tui_terminal import Tmux

SECRET = "s3cr3t-value-for-the-per-mode-test"
CONFIG = 'secrets {\n    env "MODE_SECRET" "UNSET_SECRET" "SHORT_SECRET"\n}\n'
PLACEHOLDER = "{{secret:MODE_SECRET}}"
# bash writes the secret through its placeholder and its variable: both are the value.
ECHO = "echo {{secret:MODE_SECRET}} > seen.txt; echo $MODE_SECRET >> seen.txt"
CALLS = [("bash", {"command": ECHO}), ("report_status", {})]
MISSING = "the secret variable UNSET_SECRET (from secrets.env) is not set"
REJECTED = "the secret variable SHORT_SECRET (from secrets.env) cannot be protected"
CRASHED = "smith: ERROR: tool report_status crashed"  # as the modes' handler writes it


def _project(senv: SmithEnv) -> Path:
    senv.write_user_config(CONFIG)
    return senv.make_project()


def _env(senv: SmithEnv) -> dict[str, str]:
    return {**secrets_plugin.with_plugin(senv.env), "MODE_SECRET": SECRET,
            "SHORT_SECRET": "abc", "SMITH_DEBUG": "1"}  # fmt: skip


def _script(tmp: Path) -> str:
    script = tmp / "calls.json"
    responses: list[dict[str, Any]] = [
        {"tool_calls": [{"name": name, "arguments": args}], "stop": "tool_use"}
        for name, args in CALLS
    ]
    script.write_text(json.dumps({"responses": [*responses, {"text": "done", "stop": "end"}]}))
    return f"scripted:{script}"


def _dumped(senv: SmithEnv) -> str:
    from smith.session import Session, SessionStore, dump

    store = SessionStore(str(senv.data_home))
    return "".join(line + "\n" for p in store.paths() for line in dump(Session.load(p)))


def _assert_kept(senv: SmithEnv, project: Path, log: str, line: str = CRASHED) -> None:
    """Restored for bash, redacted in the records and in `log`, where smith logged the
    tool's crash (as `line`: through the mode's own handler) with the traceback that
    quotes the secret."""
    assert (project / "seen.txt").read_text() == f"{SECRET}\n{SECRET}\n"  # bash had it
    records = _dumped(senv)
    assert PLACEHOLDER in records and secrets_plugin.REFUSED in records  # bash, the crash
    assert SECRET not in records
    assert line in log, log  # the log line is there ...
    assert secrets_plugin.REFUSED + PLACEHOLDER in log, log  # with its traceback ...
    assert SECRET not in log  # ... redacted


def _assert_warned(text: str) -> None:
    flat = " ".join(text.split())
    assert MISSING in flat and REJECTED in flat, text


def test_eval(senv: SmithEnv, smith_process: Callable[..., Result], tmp_path: Path) -> None:
    project = _project(senv)
    r = smith_process("eval", "--model", _script(tmp_path), "go", cwd=project, env=_env(senv))
    assert r.code == 0, r.err
    _assert_kept(senv, project, r.err)
    _assert_warned(r.err)
    assert SECRET not in r.out


def test_rpc(senv: SmithEnv, tmp_path: Path) -> None:
    project = _project(senv)
    with Rpc(senv, project, "--model", _script(tmp_path), env=_env(senv)) as rpc:
        rpc.call("prompt", {"text": "go"})
        rpc.event("agent_end")
        code, err = rpc.close()
        assert code == 0, err
        assert SECRET not in json.dumps(rpc.records)
    _assert_kept(senv, project, err)
    _assert_warned(err)


def test_tools_run(senv: SmithEnv, smith_process: Callable[..., Result]) -> None:
    """`smith tools run` runs the tools the host serves (a plugin's too, as MCP does)."""
    project = _project(senv)
    results = [smith_process("tools", "run", name, json.dumps(args), cwd=project, env=_env(senv))
               for name, args in CALLS]  # fmt: skip
    bash, crashed = results
    assert bash.code == 0, bash.err
    assert crashed.code == 1 and "the report_status tool failed: RuntimeError" in crashed.out
    _assert_kept(senv, project, crashed.err)
    for r in results:
        _assert_warned(r.err)
        assert SECRET not in r.out + r.err


def test_mcp(senv: SmithEnv, tmp_path: Path) -> None:
    project = _project(senv)
    params = StdioServerParameters(command=smith_executable(), args=["mcp"], cwd=str(project),
                                   env=_env(senv))  # fmt: skip
    errors = tmp_path / "mcp.err"
    results: list[Any] = []

    async def main() -> None:
        with anyio.fail_after(60), errors.open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                for name, args in CALLS:
                    results.append(await client.call_tool(name, args))

    anyio.run(main)
    bash, crashed = results
    assert not bash.is_error and crashed.is_error
    shown = json.dumps([r.model_dump(mode="json") for r in results])
    assert PLACEHOLDER in shown and SECRET not in shown
    err = errors.read_text()
    _assert_kept(senv, project, err, "smith: ERROR: smith.runtime: tool report_status crashed")
    _assert_warned(err)


def test_the_app(senv: SmithEnv, tmp_path: Path) -> None:
    """The real `smith` in a terminal (tmux): its start-up warnings are in the banner and
    its log is $SMITH_HOME/logs/smith.log."""
    project = _project(senv)
    env = _env(senv)
    # A script exports the environment, so the secret is never typed on the screen.
    launch = tmp_path / "launch.sh"
    exports = "".join(f"export {k}={json.dumps(v)}\n" for k, v in env.items() if k != "PATH")
    launch.write_text(f"{exports}exec {smith_executable()} --model {_script(tmp_path)} go\n")
    log = senv.data_home / "logs" / "smith.log"
    tmux = Tmux(project, {**senv.env, "TERM": "xterm-256color"})
    tmux("new-session", "-d", "-s", "s", "-x", "200", "-y", "50", "-c", str(project),
         f"bash --norc --noprofile {launch}")  # fmt: skip
    try:
        opened = tmux.wait(lambda: "UNSET_SECRET" in tmux.screen())
        assert opened, tmux.screen()
        _assert_warned(tmux.screen())
        assert tmux.wait(lambda: log.exists() and "crashed" in log.read_text()), tmux.screen()
        assert tmux.wait(lambda: "done" in tmux.screen()), tmux.screen()
        assert SECRET not in tmux.screen()
        tmux("send-keys", "-t", "s", "C-d")
        assert tmux.wait(lambda: not tmux.smith_pids(), 15), "smith did not exit"
    finally:
        tmux("kill-server")
    crashed = "smith: ERROR: smith.runtime: tool report_status crashed"
    _assert_kept(senv, project, log.read_text(), crashed)


@pytest.fixture
def program_logging() -> Iterator[io.StringIO]:
    """What a program using smith as a library has: its own handler on the root logger
    (as logging.basicConfig makes), and smith's loggers as smith leaves them (another
    test in this process may have run a mode that gave them a handler of its own)."""
    smith_log = logging.getLogger("smith")
    saved = smith_log.handlers[:], smith_log.propagate, smith_log.level
    smith_log.handlers, smith_log.propagate = [], True
    smith_log.setLevel(logging.NOTSET)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logging.getLogger().addHandler(handler)
    try:
        yield stream
    finally:
        logging.getLogger().removeHandler(handler)
        smith_log.handlers, smith_log.propagate = saved[0], saved[1]
        smith_log.setLevel(saved[2])


def test_the_library(
    senv: SmithEnv, tmp_path: Path, monkeypatch: Any, program_logging: io.StringIO
) -> None:
    """smith.Agent writes no log of its own: its records reach the program's handlers,
    redacted where they are made; its warnings are log records too."""
    import smith as library

    project = _project(senv)
    for key, value in _env(senv).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("UNSET_SECRET", raising=False)

    async def main() -> None:
        async with library.Agent(_script(tmp_path), cwd=str(project),
                                 plugins=[secrets_plugin.PLUGIN]) as agent:  # fmt: skip
            await agent.send("go")

    asyncio.run(main())
    _assert_kept(senv, project, program_logging.getvalue(), "tool report_status crashed")
    _assert_warned(program_logging.getvalue())
