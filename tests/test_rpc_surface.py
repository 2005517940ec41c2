"""`smith rpc` beyond the conversation: stdout carries protocol records only, file
history over RPC, and the client example of docs/rpc.md runs as written."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import SmithEnv
from tests.rpc_kit import Rpc, script

ROOT = Path(__file__).resolve().parents[1]


def test_nothing_but_protocol_records_reaches_stdout() -> None:
    # Whatever else the process does with fd 1 (print, a C library, a child process)
    # lands on stderr once the protocol has taken stdout.
    code = (
        "import os, sys, warnings\n"
        "from smith.frontends.rpc._io import protocol_output\n"
        "write = protocol_output(sys.stdout)\n"
        "print('a stray print')\n"
        "os.write(1, b'a stray write to fd 1\\n')\n"
        "os.system('echo a child process')\n"
        "warnings.warn('a warning')\n"
        'write(b\'{"jsonrpc": "2.0"}\\n\')\n'
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout == '{"jsonrpc": "2.0"}\n'
    for stray in ("a stray print", "a stray write", "a child process", "a warning"):
        assert stray in r.stderr


def test_the_demo_banner_and_session_name_go_to_stderr(senv: SmithEnv) -> None:
    project = senv.make_project()
    with Rpc(senv, project) as rpc:  # no model configured: the offline demo, with a banner
        state = rpc.call("get_state")
        code, err = rpc.close()
    assert code == 0
    assert state["model"] == "demo"
    assert "no model is configured" in err and state["session"]["id"] in err
    assert all(isinstance(r, dict) and r.get("jsonrpc") == "2.0" for r in rpc.records)


def test_file_history_methods_undo_redo_and_report_turns(senv: SmithEnv) -> None:
    project = senv.make_project()
    (project / "notes.txt").write_text("hello\n")
    write = {"name": "write", "arguments": {"path": "notes.txt", "content": "changed\n"}}
    model = script(senv, [{"text": "Writing.", "tool_calls": [write]}, {"text": "Done."}])
    with Rpc(senv, project, "--model", model) as rpc:
        rpc.call("prompt", {"text": "change the notes"})
        rpc.call("wait_idle")
        assert (project / "notes.txt").read_text() == "changed\n"
        turns = rpc.call("vcs.history")["turns"]
        assert [(t["text"], t["files"]) for t in turns] == [("change the notes", 1)]
        diff = rpc.call("vcs.diff")
        assert "-hello\n+changed\n" in diff["patch"]
        undone = rpc.call("vcs.undo")
        assert undone["changed"] == [{"path": "notes.txt", "change": "modified"}]
        assert (project / "notes.txt").read_text() == "hello\n"
        rpc.call("vcs.redo")
        assert (project / "notes.txt").read_text() == "changed\n"
        restored = rpc.call("vcs.restore", {"entry": turns[0]["prompt"]})
        assert restored["op"] == "restore" and (project / "notes.txt").read_text() == "hello\n"
        error = rpc.error("vcs.restore", {})
        assert (error["code"], error["data"]["code"]) == (-32602, "rpc.missing-param")
        assert rpc.close()[0] == 0
    env = {"SMITH_VCS_ENABLED": "false"}
    with Rpc(senv, project, "--model", "demo", env=env) as rpc:
        for method in ("vcs.undo", "vcs.diff", "vcs.history"):
            error = rpc.error(method)
            assert (error["code"], error["data"]["code"]) == (-32000, "history.off"), method
        assert rpc.close()[0] == 0


def test_the_client_example_in_docs_rpc_md_runs_as_written(tmp_path: Path) -> None:
    doc = (ROOT / "docs" / "rpc.md").read_text()
    code = re.search(r"```python\n(.*?)```", doc, re.S)
    printed = re.findall(r"It prints:\n\n```\n(.*?)```", doc, re.S)
    assert code and printed
    (tmp_path / "client.py").write_text(code.group(1))
    (tmp_path / ".git").mkdir()  # the project
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("SMITH_")},
        "SMITH_HOME": str(tmp_path / "home"),
        "SMITH_CONFIG_HOME": str(tmp_path / "config"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    r = subprocess.run([sys.executable, "client.py"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout == printed[0]
    assert json.loads((tmp_path / "script.json").read_text())["responses"]


_text = st.text(st.characters(exclude_categories=()))  # any code point: \n, lone surrogates
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_json)
def test_every_record_is_exactly_one_utf8_line_that_reads_back(value: object) -> None:
    from smith.frontends.rpc._protocol import encode

    line = encode(value)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line.decode("utf-8")) == value  # lone surrogates come back as escapes


@given(st.binary(max_size=64))
def test_any_input_line_gets_an_answer_not_an_exception(raw: bytes) -> None:
    from smith.frontends.rpc._protocol import parse_line

    parsed = parse_line(raw.replace(b"\n", b""), 1)
    if isinstance(parsed, dict):
        assert parsed["error"]["code"] in (-32700, -32600) and parsed["id"] is None
    else:
        items, _, _ = parsed
        assert items


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc": "2.0", "id": 1e400, "method": "get_state"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "prompt", "params": {"text": -1e999}}',
    ],
)
def test_a_number_json_cannot_carry_back_is_a_parse_error(line: bytes) -> None:
    """1e400 is JSON, but as a float it is infinite, and echoed back (as the id, or in a
    diagnostic's value) it would be `Infinity`, which is not: strict clients could not
    read the answer."""
    from smith.frontends.rpc._protocol import encode, parse_line

    parsed = parse_line(line, 3)
    assert isinstance(parsed, dict), parsed
    assert parsed["id"] is None and parsed["error"]["code"] == -32700
    assert "out of range" in parsed["error"]["data"]["what"]

    def strict(name: str) -> object:
        raise ValueError(name)

    json.loads(encode(parsed), parse_constant=strict)
