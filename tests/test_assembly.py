"""One assembly for every mode (smith.runtime.build) and one tool host for the tools run
outside a turn: edits made through MCP and `smith tools run` are undone by `smith undo`;
a registered secret is restored for bash and kept out of records and logs in every mode."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from tests.conftest import Result, SmithEnv, smith_executable
from tests.rpc_kit import Rpc

SECRET = "s3cr3t-value-for-the-assembly-test"
SECRETS_CONFIG = 'secrets {\n    env "ASSEMBLY_SECRET"\n}\n'
# The model writes the secret's placeholder into a file through bash: the command runs
# with the plaintext, the session only ever records the placeholder.
ECHO = "echo {{secret:ASSEMBLY_SECRET}} > seen.txt; echo $ASSEMBLY_SECRET >> seen.txt; cat seen.txt"
BASH_ARGS = {"command": ECHO}


def _script(tmp: Path) -> Path:
    script = tmp / "echo.json"
    script.write_text(json.dumps({"responses": [
        {"tool_calls": [{"name": "bash", "arguments": BASH_ARGS}], "stop": "tool_use"},
        {"text": "done", "stop": "end"},
    ]}))  # fmt: skip
    return script


def _project(senv: SmithEnv) -> Path:
    senv.write_user_config(SECRETS_CONFIG)
    project = senv.make_project()
    (project / "README.md").write_bytes(b"# demo\r\nno newline at the end")
    (project / "app.py").write_text("def app():\n    return 'hello'\n")
    return project


def _env(senv: SmithEnv) -> dict[str, str]:
    return {**senv.env, "ASSEMBLY_SECRET": SECRET}


def _dumped(senv: SmithEnv) -> str:
    """Every record of every session in the store, as JSON lines."""
    from smith.session import Session, SessionStore, dump

    store = SessionStore(str(senv.data_home))
    return "".join(line + "\n" for p in store.paths() for line in dump(Session.load(p)))


def _assert_restored_and_kept_out(senv: SmithEnv, project: Path, shown: str = "") -> None:
    assert (project / "seen.txt").read_text() == f"{SECRET}\n{SECRET}\n"  # bash had it
    records = _dumped(senv)
    assert "{{secret:ASSEMBLY_SECRET}}" in records  # the call and its output, as recorded
    assert SECRET not in records and SECRET not in shown


def test_eval_restores_the_secret_for_bash_and_keeps_it_out_of_records(
    senv: SmithEnv, smith: Callable[..., Result], tmp_path: Path
) -> None:
    project = _project(senv)
    r = smith("eval", "--model", f"scripted:{_script(tmp_path)}", "go", cwd=project, env=_env(senv))
    assert r.code == 0, r.err
    _assert_restored_and_kept_out(senv, project, r.out + r.err)
    # Its log handler masks the secret too (the assembly's, as in every mode).
    [handler] = [h for h in logging.getLogger("smith").handlers if h.get_name() == "smith-assembly"]
    stream = io.StringIO()
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(stream)
    logging.getLogger("smith.test").warning("the value is %s", SECRET)
    assert "{{secret:ASSEMBLY_SECRET}}" in stream.getvalue() and SECRET not in stream.getvalue()


def test_rpc_restores_the_secret_for_bash_and_keeps_it_out_of_records(
    senv: SmithEnv, tmp_path: Path
) -> None:
    project = _project(senv)
    with Rpc(senv, project, "--model", f"scripted:{_script(tmp_path)}", env=_env(senv)) as rpc:
        rpc.call("prompt", {"text": "go"})
        rpc.event("agent_end")
        code, err = rpc.close()
        assert code == 0, err
        shown = json.dumps(rpc.records) + err
    _assert_restored_and_kept_out(senv, project, shown)


def test_tools_run_restores_the_secret_for_bash_and_keeps_it_out_of_records(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = _project(senv)
    r = smith("tools", "run", "bash", json.dumps(BASH_ARGS), cwd=project, env=_env(senv))
    assert r.code == 0, r.err
    assert "{{secret:ASSEMBLY_SECRET}}" in r.out
    _assert_restored_and_kept_out(senv, project, r.out + r.err)


def _mcp(senv: SmithEnv, project: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    params = StdioServerParameters(
        command=smith_executable(), args=["mcp"], cwd=str(project), env=_env(senv)
    )
    results: list[Any] = []

    async def main() -> None:
        with anyio.fail_after(60):
            async with Client(params) as client:
                for name, args in calls:
                    results.append(await client.call_tool(name, args))

    anyio.run(main)
    return results


def _text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


def test_mcp_restores_the_secret_for_bash_and_keeps_it_out_of_records(senv: SmithEnv) -> None:
    project = _project(senv)
    [result] = _mcp(senv, project, [("bash", BASH_ARGS)])
    assert not result.is_error, _text(result)
    assert "{{secret:ASSEMBLY_SECRET}}" in _text(result)
    _assert_restored_and_kept_out(senv, project, _text(result))


def test_the_app_restores_the_secret_for_bash_and_keeps_it_out_of_records(
    senv: SmithEnv, tmp_path: Path
) -> None:
    """The app's runtimes come from the same assembly (as `smith` builds them)."""
    from smith.config import resolve
    from smith.frontends.tui._app import SmithApp
    from smith.runtime import build

    project = _project(senv)
    env = _env(senv)
    config = resolve(env=env, flags={"model": f"scripted:{_script(tmp_path)}"}, cwd=str(project))
    assembly = build(config, cwd=str(project), surface="tui", env=env)
    session = assembly.new_session("smith")

    async def main() -> None:
        app = SmithApp(assembly.runtime, session)
        async with app.run_test(size=(120, 30)) as pilot:
            await pilot.press(*"go", "enter")
            for _ in range(200):
                await pilot.pause(0.05)
                if app.runtime is not None and not app.runtime.busy and app.runtime.turn:
                    break
        session.close()

    asyncio.run(main())
    _assert_restored_and_kept_out(senv, project)


def test_an_edit_through_mcp_is_undone_by_smith_undo(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = _project(senv)
    readme, app = (project / "README.md").read_bytes(), (project / "app.py").read_bytes()
    results = _mcp(senv, project, [
        ("write", {"path": "README.md", "content": "overwritten\n"}),
        ("edit", {"path": "app.py", "old_text": "'hello'", "new_text": "'edited'"}),
    ])  # fmt: skip
    assert not any(r.is_error for r in results), [_text(r) for r in results]
    assert b"edited" in (project / "app.py").read_bytes()
    # Each call is one unit of undo: the edit first, then the write.
    assert smith("undo", cwd=project).code == 0
    assert (project / "app.py").read_bytes() == app
    assert (project / "README.md").read_bytes() == b"overwritten\n"
    assert smith("undo", cwd=project).code == 0
    assert (project / "README.md").read_bytes() == readme  # byte for byte: CRLF, no newline
    assert smith("redo", cwd=project).code == 0
    assert (project / "README.md").read_bytes() == b"overwritten\n"


def test_an_edit_by_tools_run_is_undone_by_smith_undo(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = _project(senv)
    before = (project / "app.py").read_bytes()
    args = {"path": "app.py", "old_text": "'hello'", "new_text": "'by hand'"}
    r = smith("tools", "run", "edit", json.dumps(args), cwd=project)
    assert r.code == 0, r.err
    assert b"by hand" in (project / "app.py").read_bytes()
    undo = smith("undo", cwd=project)
    assert undo.code == 0, undo.err
    assert (project / "app.py").read_bytes() == before


def test_a_read_through_the_host_takes_no_snapshot(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = _project(senv)
    assert smith("tools", "run", "read", '{"path": "app.py"}', cwd=project).code == 0
    assert '"vcs"' not in _dumped(senv)  # only calls that may change files are snapshotted


def test_build_checks_the_model_before_anything_is_created(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = _project(senv)
    r = smith("eval", "--model", "nosuchprovider/x", "go", cwd=project)
    assert r.code == 2 and "nosuchprovider" in r.err
    assert not list(senv.data_home.rglob("*.smith"))  # no session was made for nothing
    # MCP and `tools run` run no model: a bad model setting does not stop them.
    r = smith("--model", "nosuchprovider/x", "tools", "run", "read", '{"path": "app.py"}',
              cwd=project)  # fmt: skip
    assert r.code == 0, r.err


def test_the_library_agent_is_built_by_the_same_assembly(
    senv: SmithEnv, smith: Callable[..., Result], tmp_path: Path, monkeypatch: Any
) -> None:
    """smith.Agent resolves configuration as the command does: secrets.env of the user's
    configuration is restored for bash and kept out of the session, and its edits are in
    the project's file history, so `smith undo` takes them back."""
    import smith as library

    project = _project(senv)
    for key, value in _env(senv).items():
        monkeypatch.setenv(key, value)
    before = (project / "app.py").read_bytes()
    edit = {"path": "app.py", "old_text": "'hello'", "new_text": "'by the agent'"}
    script = tmp_path / "agent.json"
    script.write_text(json.dumps({"responses": [
        {"tool_calls": [{"name": "bash", "arguments": BASH_ARGS}], "stop": "tool_use"},
        {"tool_calls": [{"name": "edit", "arguments": edit}], "stop": "tool_use"},
        {"text": "done", "stop": "end"},
    ]}))  # fmt: skip

    async def main() -> None:
        async with library.Agent(f"scripted:{script}", cwd=str(project)) as agent:
            assert agent.runtime.surface == "library"
            await agent.send("go")

    asyncio.run(main())
    _assert_restored_and_kept_out(senv, project)
    assert b"by the agent" in (project / "app.py").read_bytes()
    undo = smith("undo", cwd=project)
    assert undo.code == 0, undo.err
    assert (project / "app.py").read_bytes() == before
