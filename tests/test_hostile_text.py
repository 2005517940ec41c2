"""Hostile text at every boundary (issue 15): lone surrogates are replaced where they
enter, with a note, never a failed turn; JSON of any depth gets an answer, never a
RecursionError; escape sequences in untrusted text are shown, never obeyed."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from smith.providers import End, TextDelta, ToolCall
from smith.text import JsonInputError, inert, loads, replace_surrogates
from tests.conftest import Result, SmithEnv, smith_executable
from tests.rpc_kit import Rpc, script, texts_of
from tests.runtime_kit import Fake, World, messages

DEEP_ARRAYS = "[" * 5000 + "]" * 5000
DEEP_OBJECTS = '{"a":' * 3000 + "1" + "}" * 3000
TITLE = "title \x1b]0;PWNED\x07 then \x1b[2J cleared"
CLIPBOARD = "clip \x1b]52;c;ZXZpbA==\x07 end"


# -- the helpers ------------------------------------------------------------------------


@pytest.mark.parametrize("text", [DEEP_ARRAYS, DEEP_OBJECTS, "[" * 129 + "]" * 129])
def test_loads_refuses_deep_json_with_a_value_error_whatever_the_depth(text: str) -> None:
    with pytest.raises(JsonInputError, match="nested more than 128 deep"):
        loads(text)
    with pytest.raises(ValueError):  # what every boundary already catches
        loads(text.encode())


def test_loads_takes_json_up_to_the_limit_and_refuses_what_is_not_json() -> None:
    assert loads("[" * 128 + "]" * 128) is not None
    assert loads('{"a": "\\udcff"}') == {"a": "\udcff"}  # kept: replace_surrogates decides
    for bad in ("NaN", "[1e400]", "{", b"\xff"):
        with pytest.raises(JsonInputError):
            loads(bad)


def test_replace_surrogates_counts_keys_and_values_and_leaves_clean_values_alone() -> None:
    value = {"a\udcff": [1, ("x\udcff", {"k": "\ud800"})], "b": "ok \u00e9"}
    fixed, count = replace_surrogates(value)
    assert count == 3
    assert fixed == {"a\ufffd": [1, ["x\ufffd", {"k": "\ufffd"}]], "b": "ok \u00e9"}
    assert value["b"] == "ok \u00e9" and "a\udcff" in value  # the input is not changed
    clean = {"a": ["b", {"c": 1}]}
    assert replace_surrogates(clean) == (clean, 0) and replace_surrogates(clean)[0] is clean
    deep: Any = "\udcff"
    for _ in range(5000):
        deep = [deep]
    assert replace_surrogates(deep)[1] == 1  # iterative: any depth


def test_inert_shows_every_control_character_but_tab_and_newline() -> None:
    shown = inert(TITLE + "\t\n\x9b2J\x7f")
    assert "\x1b" not in shown and "\x07" not in shown and "\x9b" not in shown
    assert shown == "title ␛]0;PWNED^G then ␛[2J cleared\t\n\\x9b2J^?"


def test_inert_shows_bidirectional_overrides_and_isolates() -> None:
    """U+202A-U+202E and U+2066-U+2069 reorder what follows them on the screen
    ("Trojan Source"): a file named "invoice\u202etxt.exe" shows as "invoiceexe.txt".
    Shown inert, they are visible and reorder nothing; right-to-left text itself stays."""
    controls = "".join(map(chr, [*range(0x202A, 0x202F), *range(0x2066, 0x206A),
                                 0x200E, 0x200F, 0x061C]))  # fmt: skip
    shown = inert("invoice\u202etxt.exe " + controls + " שלום")
    assert not set(controls) & set(shown)
    assert shown.startswith("invoice<U+202E>txt.exe <U+202A><U+202B>") and shown.endswith(" שלום")


def test_diagnostics_for_a_terminal_show_quoted_values_inert() -> None:
    from smith.diagnostics import INTERNAL

    diagnostic = INTERNAL(value="a\x1b]0;x\x07b", error="bad \x1b[2J name")
    assert "\x1b" not in diagnostic.render() and "␛[2J" in diagnostic.render()
    assert "\x1b[2J" in str(diagnostic.to_dict()["what"])  # the data form stays exact


# -- the runtime: where model text and prompts enter --------------------------------------


def test_a_lone_surrogate_from_the_provider_is_replaced_recorded_and_noted(
    tmp_path: Path,
) -> None:
    w = World(tmp_path)
    args = {"path": "s.txt", "content": "x\udcffy\n"}
    fake = Fake(
        [TextDelta("alpha \udcff"), TextDelta(" omega"), ToolCall("c1", "write", args),
         End("tool_use")],
        [TextDelta("done"), End("success")],
    )  # fmt: skip
    w.converse(fake, prompts=["go \udcff"])
    recorded = messages(w.reopened())
    assert recorded[0]["content"][0]["text"] == "go \ufffd" and recorded[0]["replaced"] == 1
    assert texts_of(recorded[1]) == "alpha \ufffd omega" and recorded[1]["replaced"] == 2
    assert (w.project / "s.txt").read_text() == "x\ufffdy\n"
    shown = "".join(e["delta"] for e in w.of("message_delta") if e["message_id"].startswith("m-"))
    assert shown.startswith("alpha \ufffd omega")  # what was shown is what was recorded
    notes = [e["diagnostic"] for e in w.of("error")]
    assert [(n["code"], n["severity"]) for n in notes] == [("text.replaced", "warning")] * 2
    assert "1 character(s) of the prompt" in notes[0]["what"]
    assert w.of("agent_end")[-1]["stop"] == "end"


@pytest.mark.parametrize("surface", ["eval", "tui", "rpc"])
def test_runtime_diagnostics_name_the_surface_that_asked(tmp_path: Path, surface: str) -> None:
    from smith.diagnostics import SmithError

    w = World(tmp_path / surface)
    rt = w.runtime(Fake(), surface=surface)
    with pytest.raises(SmithError) as raised:
        rt.undo()
    assert raised.value.diagnostic.source is not None
    assert raised.value.diagnostic.source.surface == surface
    library = World(tmp_path / "library").runtime(Fake())
    with pytest.raises(SmithError) as raised:
        library.submit({"op": "nope"})
    assert raised.value.diagnostic.source is not None
    assert raised.value.diagnostic.source.surface == "library"


# -- eval ---------------------------------------------------------------------------------


def _eval(smith_process: Any, senv: SmithEnv, project: Path, *args: str) -> Result:
    result: Result = smith_process("eval", *args, cwd=project)
    assert "Traceback" not in result.err, result.err
    return result


def test_eval_survives_lone_surrogates_in_model_text_and_tool_arguments(
    senv: SmithEnv, smith_process: Any
) -> None:
    project = senv.make_project()
    text = script(senv, [{"text": "alpha \udcff omega"}])
    first = _eval(smith_process, senv, project, "--session", "sur", "--model", text, "hi")
    assert first.code == 0, first.err
    assert "alpha \ufffd omega" in first.out
    assert "replaced with U+FFFD" in first.err and "internal" not in first.err.lower()
    tool = script(
        senv,
        [{"tool_calls": [{"name": "write", "arguments": {"path": "s.txt", "content": "x\udcffy"}}],
          "stop": "tool_use"}, {"text": "wrote it"}],
    )  # fmt: skip
    second = _eval(smith_process, senv, project, "--session", "sur", "--model", tool, "write")
    assert second.code == 0, second.err
    assert (project / "s.txt").read_text() == "x\ufffdy"
    again = _eval(smith_process, senv, project, "--session", "sur", "--model", script(
        senv, [{"text": "still here"}]), "again")  # fmt: skip
    assert again.code == 0 and "still here" in again.out
    listed = json.loads(smith_process("sessions", "list", "--json", cwd=project).out)
    sid = next(s["id"] for s in listed["sessions"] if s["name"] == "sur")
    dump = smith_process("sessions", "dump", sid, cwd=project).out
    assert "alpha \ufffd omega" in dump


def test_a_prompt_on_stdin_that_is_not_utf8_is_replaced_and_noted(senv: SmithEnv) -> None:
    project = senv.make_project()
    proc = subprocess.run(
        [smith_executable(), "eval", "--model", "demo", "-"],
        input=b"hello \xff there",
        cwd=project,
        env=senv.env,
        capture_output=True,
        timeout=60,
    )
    err = proc.stderr.decode()
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert "1 character(s) of the prompt" in err


def test_an_internal_error_prints_one_line_that_points_at_debug_not_a_traceback(
    senv: SmithEnv, smith: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from smith.runtime import _loop

    async def broken(rt: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(_loop, "respond", broken)
    project = senv.make_project()
    quiet = smith("eval", "--model", "demo", "hi", cwd=project)
    assert quiet.code == 1 and "boom" in quiet.err
    assert "Traceback" not in quiet.err and "re-run with --debug" in quiet.err
    loud = smith("eval", "--debug", "--model", "demo", "hi", cwd=project)
    assert "Traceback" in loud.err


def test_the_traceback_under_debug_shows_no_secret(
    senv: SmithEnv, smith: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--debug prints the traceback of an error no command caught; a secret it quotes (a
    registered one, anything shaped like a credential) is masked there as in every other
    output."""
    from smith import runtime
    from smith.diagnostics import register_secret

    secret = "s3cr3t-value-of-the-deploy-token"
    register_secret(secret)

    def broken(*args: Any, **kw: Any) -> None:
        raise RuntimeError(f"the service refused {secret} and Bearer sk-abcdefghijklmnop1234")

    monkeypatch.setattr(runtime, "build", broken)
    loud = smith("tools", "list", "--debug", cwd=senv.make_project())
    assert "Traceback" in loud.err and "the service refused" in loud.err
    assert secret not in loud.err and "sk-abcdefghijklmnop1234" not in loud.err


def test_escapes_from_model_text_and_bash_output_are_inert_in_eval(
    senv: SmithEnv, smith_process: Any
) -> None:
    project = senv.make_project()
    bash = {"command": "printf 'out \\033]0;PWNED2\\007 x \\033[2J y\\n'"}
    model = script(
        senv,
        [{"text": TITLE, "tool_calls": [{"name": "bash", "arguments": bash}], "stop": "tool_use"},
         {"text": CLIPBOARD}],
    )  # fmt: skip
    human = _eval(smith_process, senv, project, "--model", model, "hi")
    assert human.code == 0, human.err
    assert "title ␛]0;PWNED^G then ␛[2J cleared" in human.out and "clip ␛]52" in human.out
    assert "\x1b" not in human.out and "\x07" not in human.out
    assert "\x1b" not in human.err and "\x07" not in human.err
    assert "out ␛]0;PWNED2^G" in human.err  # the tool's output line, shown inert
    machine = _eval(smith_process, senv, project, "--json", "--model", model, "hi")
    ends = [json.loads(line) for line in machine.out.splitlines()]
    texts = [texts_of(e["message"]) for e in ends if e.get("type") == "message_end"]
    assert TITLE in texts and CLIPBOARD in texts  # --json keeps the text exact


def test_a_session_name_that_is_not_utf8_is_replaced_where_it_enters(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    """A name from the command line is decoded with surrogateescape, so a byte that is
    not UTF-8 (`--session "$(printf 'n\\xffx')"`) arrives as a lone surrogate: it is
    replaced with a warning, and the same spelling finds the session again."""
    project = senv.make_project()
    for _ in range(2):
        made = smith("eval", "--session", "n\udcffx", "--model", "demo", "hi", cwd=project)
        assert made.code == 0, made.err
        assert "internal error" not in made.err and "replaced with U+FFFD" in made.err
    listed = smith("sessions", "list", "--json", cwd=project)
    assert [s["name"] for s in json.loads(listed.out)["sessions"]] == ["n\ufffdx"]
    assert smith("sessions", "show", "n\udcffx", cwd=project).code == 0


def test_a_session_name_with_escapes_is_inert_in_eval_and_sessions_list(
    senv: SmithEnv, smith_process: Any
) -> None:
    project = senv.make_project()
    name = "ev\x1b]0;PWNED\x07name"
    made = _eval(smith_process, senv, project, "--session", name, "--model", "demo", "hi")
    assert made.code == 0 and "\x1b" not in made.err and "ev␛]0;PWNED^Gname" in made.err
    listed = smith_process("sessions", "list", cwd=project)
    assert listed.code == 0 and "\x1b" not in listed.out and "ev␛]0;PWNED^Gname" in listed.out
    data = json.loads(smith_process("sessions", "list", "--json", cwd=project).out)
    assert [s["name"] for s in data["sessions"]] == [name]
    rpc = Rpc(senv, project, "--model", "demo", "--session", name)
    code, err = rpc.close()
    assert code == 0 and "\x1b" not in err and "ev␛]0;PWNED^Gname" in err


# -- RPC and MCP ---------------------------------------------------------------------------


def test_rpc_answers_lines_of_any_depth_and_goes_on(senv: SmithEnv) -> None:
    rpc = Rpc(senv, senv.make_project(), "--model", "demo")
    try:
        for line in (DEEP_ARRAYS, DEEP_OBJECTS):
            rpc.send_raw(line + "\n")
            answer = rpc.pump(lambda r: isinstance(r, dict) and "error" in r)
            assert answer["id"] is None and answer["error"]["code"] == -32700
            assert "nested more than 128 deep" in answer["error"]["data"]["what"]
        assert "model" in rpc.call("get_state")
    finally:
        code, err = rpc.close()
    assert code == 0 and "Traceback" not in err and "RecursionError" not in err


def test_rpc_replaces_lone_surrogates_in_a_request_and_says_so(senv: SmithEnv) -> None:
    rpc = Rpc(senv, senv.make_project(), "--model", script(senv, [{"text": "rpc ok"}]))
    try:
        line = '{"jsonrpc": "2.0", "id": "p", "method": "prompt", "params": {"text": "hi \\udcff"}}'
        rpc.send_raw(line + "\n")
        assert "result" in rpc.answer("p")
        note = rpc.event("error")["diagnostic"]
        assert note["code"] == "text.replaced" and note["source"]["surface"] == "rpc"
        rpc.call("wait_idle")
        user = rpc.event("message_end")["message"]
        assert user["content"][0]["text"] == "hi \ufffd"
        assert not [e for e in rpc.events if e["type"] == "error" and e is not rpc.events[0]
                    and e["diagnostic"]["code"] != "text.replaced"]  # fmt: skip
    finally:
        code, err = rpc.close()
    assert code == 0 and "Traceback" not in err


def test_mcp_answers_deep_lines_and_takes_lone_surrogates(senv: SmithEnv) -> None:
    project = senv.make_project()
    hello = {"protocolVersion": "2025-06-18", "capabilities": {},
             "clientInfo": {"name": "t", "version": "1"}}  # fmt: skip
    call = json.dumps({"name": "write", "arguments": {"path": "m.txt", "content": "x\udcffy"}})
    with subprocess.Popen(
        [smith_executable(), "mcp"], cwd=project, env=senv.env,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    ) as proc:  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

        def ask(line: str) -> Any:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(line.encode() + b"\n")
            proc.stdin.flush()
            return json.loads(proc.stdout.readline()) if '"id"' in line or "[" in line else None

        assert "result" in ask(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                           "params": hello}))  # fmt: skip
        ask(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        deep = ask(DEEP_ARRAYS)
        assert deep["id"] is None and deep["error"]["code"] == -32700
        assert deep["error"]["data"]["code"] == "mcp.not-json"
        assert "\\udcff" in call  # sent as the JSON escape of a lone surrogate
        written = ask('{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": ' + call + "}")
        assert written["id"] == 2 and written["result"]["isError"] is False, written
        proc.stdin.close()
        err = proc.stderr.read().decode()
        assert proc.wait(30) == 0
    assert (project / "m.txt").read_text() == "x\ufffdy"
    assert "Traceback" not in err and "replaced with U+FFFD" in err


# -- other JSON from outside ---------------------------------------------------------------


def test_deep_json_in_a_script_or_a_jsonl_import_is_a_diagnostic(
    senv: SmithEnv, smith: Any, tmp_path: Path
) -> None:
    project = senv.make_project()
    deep_script = tmp_path / "deep.json"
    deep_script.write_text('{"responses": ' + DEEP_ARRAYS + "}")
    ran = smith("eval", "--model", f"scripted:{deep_script}", "hi", cwd=project)
    assert ran.code == 2 and "nested more than 128 deep" in ran.err, ran.err
    dump = tmp_path / "deep.jsonl"
    dump.write_text(DEEP_OBJECTS + "\n")
    imported = smith("sessions", "import", str(dump), cwd=project)
    assert imported.code == 1 and "nested more than 128 deep" in imported.err, imported.err
    tools = smith("tools", "run", "read", DEEP_ARRAYS, cwd=project)
    assert tools.code == 2 and "nested more than 128 deep" in tools.err, tools.err


def test_deeply_nested_configuration_is_a_diagnostic(senv: SmithEnv, smith: Any) -> None:
    senv.write_user_config("a {" * 3000 + "}" * 3000)
    shown = smith("config", "show", cwd=senv.make_project())
    assert shown.code == 2 and "nested too deeply" in shown.err, shown.err
    assert "internal error" not in shown.err


def test_deep_provider_events_and_tool_arguments_end_the_stream_not_the_process() -> None:
    from smith.plugins.providers import _wirekit

    arguments, why = _wirekit.parse_arguments(DEEP_ARRAYS)
    assert arguments is None and why is not None and "nested more than 128 deep" in why
