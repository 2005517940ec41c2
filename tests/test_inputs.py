"""The user's input as every mode sends it: `@path` attachments (smith/runtime/_attach.py)
and the user's own shell commands, `!command` and `!!command` (ops.Shell)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from smith.runtime._attach import mentions
from tests.app_kit import assembled_app
from tests.conftest import Result, SmithEnv
from tests.rpc_kit import Rpc


def _project(senv: SmithEnv) -> Path:
    project = senv.make_project()
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("def app():\n    return 'hello'\n")
    return project


def _script(senv: SmithEnv, responses: list[dict[str, Any]] | None = None) -> tuple[str, Path]:
    log = senv.root / "requests.jsonl"
    log.unlink(missing_ok=True)
    script = senv.root / "script.json"
    script.write_text(
        json.dumps({"responses": responses or [{"text": "ok"}] * 3, "requests_log": str(log)})
    )
    return f"scripted:{script}", log


def _requests(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def _users(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "user" and not m.get("context")]


def _events(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def _warnings(events: list[dict[str, Any]], code: str) -> list[dict[str, Any]]:
    return [e["diagnostic"] for e in events if e.get("type") == "error"
            and e["diagnostic"]["code"] == code]  # fmt: skip


# -- @path ----------------------------------------------------------------------------


def test_mentions_are_words_starting_with_at_without_trailing_punctuation() -> None:
    assert mentions("explain @src/app.py, then @README.md.") == ["src/app.py", "README.md"]
    assert mentions("@a and @a again; mail me@example.com or @ alone") == ["a"]
    assert mentions("(see @docs/x.md)") == ["docs/x.md"]
    assert mentions("x@docs/x.md (@y)") == []  # not after whitespace: left alone
    assert mentions("no attachments here") == []


def test_eval_attaches_a_file_after_the_typed_text_and_records_it_as_a_read(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = _project(senv)
    model, log = _script(senv)
    r = smith("eval", "--json", "--model", model, "explain @src/app.py", cwd=project)
    assert r.code == 0, r.err
    (request,) = _requests(log)
    (user,) = _users(request)
    typed, attached = user["content"]
    assert typed["text"] == "explain @src/app.py"  # as typed
    assert attached["text"] == (
        '<attached path="src/app.py" lines="1-2 of 2">\n'
        "def app():\n    return 'hello'\n</attached>"
    )
    # Noted on the recorded message, and no tool call was needed.
    events = _events(r.out)
    (message,) = [e["message"] for e in events if e.get("type") == "message_end"
                  and e["message"]["role"] == "user"]  # fmt: skip
    assert message["attached"] == [{"path": "src/app.py", "lines": "1-2 of 2", "bytes": 30,
                                    "cut": False}]  # fmt: skip
    assert not [e for e in events if e.get("type") == "tool_start"]


def test_an_attached_file_counts_as_read_for_a_later_edits_staleness_check(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = _project(senv)
    change = {"name": "bash", "arguments": {"command": "echo '# more' >> src/app.py"}}
    edit = {"name": "edit", "arguments": {"path": "src/app.py", "old_text": "hello",
                                          "new_text": "bye"}}  # fmt: skip
    responses = [{"tool_calls": [change]}, {"tool_calls": [edit]}, {"text": "done"}]
    model, _ = _script(senv, responses)
    r = smith("eval", "--json", "--model", model, "fix @src/app.py", cwd=project)
    assert r.code == 0, r.err
    ends = [e for e in _events(r.out) if e.get("type") == "tool_end" and e["name"] == "edit"]
    assert "changed since it was last read" in ends[0]["result"]["text"]
    assert "hello" in (project / "src" / "app.py").read_text()


def test_a_long_file_is_cut_to_the_read_window_and_says_so(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = _project(senv)
    (project / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    model, log = _script(senv)
    r = smith("eval", "--json", "--model", model, "see @long.txt", cwd=project,
              env={"SMITH_TOOLS_READ_MAX_LINES": "4"})  # fmt: skip
    assert r.code == 0, r.err
    (user,) = _users(_requests(log)[0])
    text = user["content"][1]["text"]
    assert text.startswith('<attached path="long.txt" lines="1-4 of 10" cut="yes">\nline 1\n')
    assert "line 5" not in text and "continue with offset=5" in text


def test_paths_that_cannot_be_attached_are_left_as_typed_with_a_warning(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = _project(senv)
    (project / "blob.bin").write_bytes(b"\0\1\2")
    outside = senv.root / "secret.txt"
    outside.write_text("not yours\n")
    model, log = _script(senv)
    typed = f"look at @missing.py @blob.bin @{outside} @src"
    r = smith("eval", "--json", "--model", model, typed, cwd=project)
    assert r.code == 0, r.err
    (user,) = _users(_requests(log)[0])
    assert user["content"] == [{"type": "text", "text": typed}]
    warned = _warnings(_events(r.out), "input.attach-failed")
    values = [json.loads(w["value"]) for w in warned]
    assert values == ["missing.py", "blob.bin", str(outside), "src"]
    assert all(w["severity"] == "warning" for w in warned)
    assert "binary" in warned[1]["what"] and "outside the project" in warned[2]["what"]


def test_rpc_prompts_attach_files_too(senv: SmithEnv) -> None:
    project = _project(senv)
    model, log = _script(senv)
    with Rpc(senv, project, "--model", model) as rpc:
        rpc.call("prompt", {"text": "what does @src/app.py return?"})
        rpc.event("agent_end")
        code, err = rpc.close()
    assert code == 0, err
    (user,) = _users(_requests(log)[0])
    assert user["content"][1]["text"].startswith('<attached path="src/app.py"')


# -- !command and !!command -------------------------------------------------------------


def _contexts(request: dict[str, Any], kind: str) -> list[str]:
    return ["".join(p["text"] for p in m["content"]) for m in request["messages"]
            if m.get("context") == kind]  # fmt: skip


def test_a_bang_command_is_the_users_effect_told_to_the_model_and_undone_by_smith_undo(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = _project(senv)
    (project / "notes.txt").write_text("hello\n")
    model, log = _script(senv)
    command = "echo changed > notes.txt; echo ran-it"
    with Rpc(senv, project, "--model", model) as rpc:
        started = rpc.call("shell", {"command": command})
        call_id = started["tool_call_id"]
        start = rpc.event("tool_start", tool_call_id=call_id)
        end = rpc.event("tool_end", tool_call_id=call_id)
        rpc.call("wait_idle")
        parts = rpc.call("get_context")["parts"]  # what `smith context` lists
        rpc.call("prompt", {"text": "what happened?"})
        rpc.event("agent_end")
        code, err = rpc.close()
    assert code == 0, err
    assert started["status"] == "started"
    assert (start["name"], start["arguments"], start["shell"]) == (
        "bash", {"command": command}, {"context": True}
    )  # fmt: skip
    assert end["result"]["text"] == "ran-it\n" and end["shell"] == {"context": True}
    assert (project / "notes.txt").read_text() == "changed\n"
    # The model is told, just before the next message, as smith's note (not the user's).
    (request,) = _requests(log)
    (told,) = _contexts(request, "shell")
    assert told == f"The user ran this command in the project's shell:\n$ {command}\nran-it\n"
    assert [m.get("context") for m in request["messages"]] == ["shell", "environment", None]
    (listed,) = [p for p in parts if p["name"] == "shell"]
    assert listed["source"].startswith(f"!{command} (entry ") and listed["text"] == told
    # Its file change is a unit of undo of its own.
    r = smith("undo", cwd=project)
    assert r.code == 0, r.err
    assert f"the command !{command}" in r.out + r.err
    assert (project / "notes.txt").read_text() == "hello\n"


def test_a_double_bang_command_runs_but_the_model_never_sees_it(senv: SmithEnv) -> None:
    project = _project(senv)
    model, log = _script(senv)
    with Rpc(senv, project, "--model", model) as rpc:
        sid = rpc.call("get_state")["session"]["id"]
        call_id = rpc.call("shell", {"command": "echo quiet-marker", "context": False})[
            "tool_call_id"
        ]
        end = rpc.event("tool_end", tool_call_id=call_id)
        rpc.call("wait_idle")
        rpc.call("prompt", {"text": "hi"})
        rpc.event("agent_end")
        blank = rpc.error("shell", {"command": "  "})
        code, err = rpc.close()
    assert code == 0, err
    assert end["result"]["text"] == "quiet-marker\n" and end["shell"] == {"context": False}
    (request,) = _requests(log)
    assert "quiet-marker" not in json.dumps(request)
    assert (blank["code"], blank["data"]["code"]) == (-32602, "runtime.empty-command")
    # Its output is kept to be shown again (shell_private), and a resumed session's
    # context still never holds it.
    with Rpc(senv, project, "--model", model, "--session", sid) as rpc:
        rpc.call("prompt", {"text": "again"})
        rpc.event("agent_end")
        code, err = rpc.close()
    assert code == 0, err
    assert len(_requests(log)) == 2 and "quiet-marker" not in json.dumps(_requests(log)[-1])


def test_a_shell_command_is_refused_while_the_agent_works(tmp_path: Path) -> None:
    import pytest

    from smith.diagnostics import SmithError
    from smith.runtime.ops import Shell
    from tests.runtime_kit import Fake, Gate, World, run, say

    w = World(tmp_path)
    gate = Gate()

    async def main() -> None:
        rt = w.runtime(Fake([gate, *say("ok")]))
        rt.prompt("go")
        await gate.reached.wait()
        with pytest.raises(SmithError) as refused:
            rt.submit(Shell("ls"))
        assert refused.value.diagnostic.code == "runtime.busy"
        assert json.loads(refused.value.diagnostic.to_dict()["value"]) == "shell"
        gate.opened.set()
        await rt.wait_idle()
        await rt.close()

    run(main)


def test_compaction_summarises_a_shell_note_as_the_users_command() -> None:
    from smith.runtime._compaction import render
    from smith.runtime._context import note_message

    messages = [("e", note_message("environment", "<environment>")),
                ("s", note_message("shell", "$ make\nok"))]  # fmt: skip
    assert render(messages) == "[user's command] $ make\nok"


def test_the_app_runs_bang_input_as_the_users_command(senv: SmithEnv) -> None:
    import asyncio

    from tests.test_tui import visible

    project = _project(senv)
    model, log = _script(senv)
    make_app, session = assembled_app(senv, project, model)

    async def main() -> None:
        app = make_app()
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            app._send("!!echo quiet > made.txt")
            for _ in range(200):
                await pilot.pause(0.05)
                if (project / "made.txt").exists() and app.runtime and not app.runtime.busy:
                    break
            app._send("!   ")
            await pilot.pause(0.1)
            assert "the shell command is empty" in visible(app)
        session.close()

    asyncio.run(asyncio.wait_for(main(), 60))
    assert (project / "made.txt").read_text() == "quiet\n"
    assert not log.exists()  # the model was asked nothing


def test_a_shell_command_gets_secrets_restored_and_its_output_and_note_masked(
    tmp_path: Path,
) -> None:
    from smith.runtime._secrets import SecretProxy
    from tests.runtime_kit import Fake, World, run

    w = World(tmp_path)
    secrets = SecretProxy()
    secrets.register("TOKEN", "tok-abcdef-123456", source="test")

    async def main() -> None:
        rt = w.runtime(Fake(), secrets=secrets)
        rt.shell('echo "$TOKEN"; echo {{secret:TOKEN}} | tr a-z A-Z')
        await rt.wait_idle()
        await rt.close()

    run(main)
    (end,) = w.of("tool_end")
    # The command saw the value (in its environment, and in its arguments restored); what
    # comes back and what is recorded holds the placeholder only.
    assert end["result"]["text"] == "{{secret:TOKEN}}\nTOK-ABCDEF-123456\n"
    (note,) = [e.content for e in w.reopened().branch() if e.kind == "shell"]
    assert "{{secret:TOKEN}}" in note["text"]  # type: ignore[index]
    assert "tok-abcdef-123456" not in Path(w.path).read_bytes().decode("utf-8", "replace")


def test_an_aborted_shell_command_ends_and_says_so(tmp_path: Path) -> None:
    import asyncio
    import time

    from tests.runtime_kit import Fake, World, run

    w = World(tmp_path)

    async def main() -> None:
        rt = w.runtime(Fake())
        rt.shell("sleep 30")
        await w.until("tool_start")
        await asyncio.sleep(0.2)
        assert rt.abort()
        await rt.wait_idle()
        await rt.close()

    began = time.monotonic()
    run(main)
    assert time.monotonic() - began < 10
    (end,) = w.of("tool_end")
    assert end["outcome"] == "cancelled" and end["shell"] == {"context": True}


def test_replay_shows_a_shell_command_and_an_attachment_as_the_live_run_did(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = _project(senv)
    model, _ = _script(senv)
    with Rpc(senv, project, "--model", model) as rpc:
        sid = rpc.call("get_state")["session"]["id"]
        call_id = rpc.call("shell", {"command": "echo out", "context": False})["tool_call_id"]
        rpc.event("tool_end", tool_call_id=call_id)
        rpc.call("wait_idle")
        rpc.call("prompt", {"text": "see @src/app.py"})
        rpc.event("agent_end")
        assert rpc.close()[0] == 0
    live = [e for e in rpc.events if e["type"] in ("tool_start", "tool_end", "message_delta")
            and e.get("channel", "text") == "text"]  # fmt: skip
    r = smith("replay", sid, "--json", "--instant", cwd=project)
    assert r.code == 0, r.err
    replayed = [e for e in _events(r.out) if e["type"] in ("tool_start", "tool_end",
                "message_delta") and e.get("channel", "text") == "text"]  # fmt: skip

    def same(events: list[dict[str, Any]]) -> list[Any]:
        return [(e["type"], e.get("tool_call_id"), e.get("shell"), e.get("delta"),
                 (e.get("result") or {}).get("text")) for e in events]  # fmt: skip

    assert same(replayed) == same(live)
    assert same(live)[0] == ("tool_start", call_id, {"context": False}, None, None)
    assert ("message_delta", None, None, "see @src/app.py", None) in same(live)
