"""read, write, edit and ls, through the API and `smith tools`."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from smith.effects import EffectJournal, builtin_tools, run_tool
from smith.session import Session
from tests.conftest import Result, SmithEnv, tool_world

TOOLS = builtin_tools()


@pytest.fixture
def call(tmp_path: Path) -> Callable[..., object]:
    session, ctx, project = tool_world(
        tmp_path, limits={"read.max-lines": 3, "read.max-bytes": 1000}
    )
    journal = EffectJournal(session)

    def run(name: str, **args: object) -> object:
        return run_tool(journal, TOOLS[name], args, ctx).result

    run.project = project  # type: ignore[attr-defined]
    return run


def test_read_windows_and_continuation(call: Callable[..., object]) -> None:
    project: Path = call.project  # type: ignore[attr-defined]
    (project / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 8)))
    first = call("read", path="f.txt")
    assert first.text.startswith("line 1\nline 2\nline 3\n")  # type: ignore[attr-defined]
    assert "continue with offset=4" in first.text  # type: ignore[attr-defined]
    tail = call("read", path="f.txt", offset=7)
    assert tail.text == "line 7\n"  # type: ignore[attr-defined]


def test_read_refuses_binary_missing_and_directories(call: Callable[..., object]) -> None:
    project: Path = call.project  # type: ignore[attr-defined]
    (project / "b.bin").write_bytes(b"\x00\x01\x02")
    assert "binary file" in call("read", path="b.bin").text  # type: ignore[attr-defined]
    assert "does not exist" in call("read", path="nope.txt").text  # type: ignore[attr-defined]
    assert "is a directory" in call("read", path=".").text  # type: ignore[attr-defined]


def test_write_creates_parents_and_keeps_mode(call: Callable[..., object]) -> None:
    project: Path = call.project  # type: ignore[attr-defined]
    result = call("write", path="a/b/c.sh", content="echo hi\n")
    assert result.mutation == "applied"  # type: ignore[attr-defined]
    os.chmod(project / "a/b/c.sh", 0o755)
    call("write", path="a/b/c.sh", content="echo bye\n")
    assert os.stat(project / "a/b/c.sh").st_mode & 0o777 == 0o755
    assert (project / "a/b/c.sh").read_text() == "echo bye\n"


def test_edit_applies_reports_a_diff_and_refuses_what_it_should(
    call: Callable[..., object],
) -> None:
    project: Path = call.project  # type: ignore[attr-defined]
    (project / "m.py").write_text("a = 1\nb = 2\nb = 2\n")
    call("read", path="m.py")
    done = call("edit", path="m.py", old_text="a = 1", new_text="a = 10")
    assert "-a = 1\n+a = 10" in done.text  # type: ignore[attr-defined]
    amb = call("edit", path="m.py", old_text="b = 2", new_text="b = 3")
    assert "matches 2 places" in amb.text and "lines 2, 3" in amb.text  # type: ignore[attr-defined]
    missing = call("edit", path="m.py", old_text="zzz", new_text="y")
    assert "was not found" in missing.text  # type: ignore[attr-defined]
    both = call(
        "edit",
        path="m.py",
        edits=[
            {"old_text": "a = 10", "new_text": "a = 0"},
            {"old_text": "b = 2\nb", "new_text": "c = 2\nb"},
        ],
    )
    assert both.ok  # type: ignore[attr-defined]
    assert (project / "m.py").read_text() == "a = 0\nc = 2\nb = 2\n"


def test_edit_detects_a_file_changed_since_it_was_read(call: Callable[..., object]) -> None:
    project: Path = call.project  # type: ignore[attr-defined]
    (project / "s.txt").write_text("one\n")
    call("read", path="s.txt")
    (project / "s.txt").write_text("one\ntwo\n")  # someone else changed it
    stale = call("edit", path="s.txt", old_text="one", new_text="uno")
    assert "changed since it was last read" in stale.text  # type: ignore[attr-defined]
    assert (project / "s.txt").read_text() == "one\ntwo\n"
    call("read", path="s.txt")
    assert call("edit", path="s.txt", old_text="one", new_text="uno").ok  # type: ignore[attr-defined]


def test_paths_cannot_escape_the_project(call: Callable[..., object], tmp_path: Path) -> None:
    project: Path = call.project  # type: ignore[attr-defined]
    outside = tmp_path / "secret.txt"
    outside.write_text("secret\n")
    (project / "link").symlink_to(tmp_path)
    for path in ("../secret.txt", str(outside), "link/secret.txt"):
        result = call("read", path=path)
        assert "outside the project" in result.text, path  # type: ignore[attr-defined]
    escaped = call("write", path="link/new.txt", content="x")
    assert "outside the project" in escaped.text  # type: ignore[attr-defined]
    assert not (tmp_path / "new.txt").exists()


def test_permission_denied_is_reported(
    call: Callable[..., object], monkeypatch: pytest.MonkeyPatch
) -> None:
    # CI runs as root, which permissions do not stop, so the refusal is simulated.
    from smith.effects.tools import _files

    project: Path = call.project  # type: ignore[attr-defined]
    (project / "p.txt").write_text("x")

    def denied(*_: object, **__: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(_files, "read_file", denied)
    result = call("read", path="p.txt")
    assert "permission denied" in result.text and not result.ok  # type: ignore[attr-defined]


def test_ls_is_sorted_and_respects_gitignore(call: Callable[..., object]) -> None:
    project: Path = call.project  # type: ignore[attr-defined]
    (project / ".gitignore").write_text("build/\n*.log\n")
    for name in ("b.txt", "a.txt", "x.log"):
        (project / name).write_text("")
    (project / "build").mkdir()
    (project / "src").mkdir()
    (project / "src" / ".gitignore").write_text("gen.py\n")
    (project / "src" / "gen.py").write_text("")
    (project / "src" / "main.py").write_text("")
    listing = call("ls").text  # type: ignore[attr-defined]
    assert listing.splitlines() == [
        ".gitignore",
        "a.txt",
        "b.txt",
        "src/",
        "[2 ignored entries hidden]",
    ]
    assert call("ls", path="src").text.splitlines()[:2] == [".gitignore", "main.py"]  # type: ignore[attr-defined]


def test_tools_list_and_run_through_the_cli(senv: SmithEnv, smith: Callable[..., Result]) -> None:
    project = senv.make_project()
    listed = json.loads(smith("tools", "list", "--json", cwd=project).out)
    assert [t["name"] for t in listed["tools"]] == [
        "read",
        "write",
        "edit",
        "bash",
        "find",
        "grep",
        "ls",
        "todo",  # then what the built-in plugins offer without starting
        "task",
    ]
    r = smith(
        "tools", "run", "write", '{"path": "n/d/h.txt", "content": "hi\\n"}', "--json", cwd=project
    )
    assert r.code == 0, r.err
    record = json.loads(r.out)
    assert record["effect"]["mutation"] == "applied" and (project / "n/d/h.txt").exists()
    again = smith("tools", "run", "read", '{"path": "n/d/h.txt"}', cwd=project)
    assert again.out == "hi\n\n"
    bad = smith("tools", "run", "read", "not json", cwd=project)
    assert bad.code == 2 and "not a JSON object" in bad.err
    typo = smith("tools", "run", "raed", "{}", cwd=project)
    assert typo.code == 2 and "did you mean 'read'?" in typo.err
    from smith.session import SessionStore

    [path] = SessionStore(str(senv.data_home)).paths()
    # Each run: its intent and completion; the write also two snapshots around it (so
    # `smith undo` can take it back).
    assert Session.load(path).name == "manual" and len(Session.load(path)) == 6


def test_configured_ignores_and_extra_roots(
    senv: SmithEnv, smith: Callable[..., Result], tmp_path: Path
) -> None:
    project = senv.make_project()
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "notes.txt").write_text("shared notes\n")
    for rel in ("keep.py", "dist/out.py", "x.min.js"):
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text("token\n")
    senv.write_user_config(f'tools.ignore "dist/" "*.min.js"\ntools.extra-roots "{shared}"\n')
    found = smith("tools", "run", "find", '{"pattern": "*"}', cwd=project)
    assert found.out.split() == ["keep.py"]
    hits = smith("tools", "run", "grep", '{"pattern": "token"}', cwd=project)
    assert hits.out.split() == ["keep.py:1:token"]
    assert (
        smith("tools", "run", "ls", "{}", cwd=project).out.split()[:2] == [".git/", "keep.py"]
        or "keep.py" in smith("tools", "run", "ls", "{}", cwd=project).out
    )
    read = smith(
        "tools", "run", "read", json.dumps({"path": str(shared / "notes.txt")}), cwd=project
    )
    assert read.code == 0 and read.out == "shared notes\n\n"


def _parameters(schema: dict[str, Any], where: str) -> list[tuple[str, dict[str, Any]]]:
    """Every parameter of a JSON schema, nested items and objects included."""
    found = []
    for name, prop in schema.get("properties", {}).items():
        found.append((f"{where}.{name}", prop))
        items = prop.get("items")
        if isinstance(items, dict) and items.get("type") == "object":
            found += _parameters(items, f"{where}.{name}[]")
    return found


def test_every_builtin_tool_parameter_has_a_description() -> None:
    """What the model is told about each parameter: no parameter goes undescribed, and
    the bounded ones state their default and limits."""
    from smith.effects import builtin_tools

    for name, spec in builtin_tools().items():
        for where, prop in _parameters(spec.parameters, name):
            text = prop.get("description")
            assert isinstance(text, str) and len(text) >= 20, f"{where} has no description"
            if prop.get("type") in ("integer", "number") or "default" in where:
                assert "default" in text, f"{where} does not state its default"
            if "maximum" in prop:
                assert f"{prop['maximum']:,}" in text, f"{where} does not state its maximum"


def test_every_builtin_tool_description_states_its_bounds() -> None:
    from smith.effects import builtin_tools

    bounds = {
        "read": ("2,000", "50 KB", "binary"),
        "write": ("protected",),
        "edit": ("exactly one", "protected"),
        "bash": ("120", "50 KB", "64 MB", "128 KB"),
        "find": ("1,000",),
        "grep": ("500 lines", "200 matches", "500 characters"),
        "ls": ("1,000",),
    }
    refuses = {  # what each refuses, after the word "Refuses"
        "read": ("binary files", "directories", "outside the project"),
        "write": ("directories", "outside the project", "protected paths"),
        "edit": (
            "missing",
            "more than once",
            "changed since it was last read",
            "outside the project",
            "protected paths",
        ),
        "bash": ("128 KB or more", "cwd outside the project"),
        "find": ("outside the project", "not a directory"),
        "grep": ("outside the project", "does not exist", "not a valid regular expression"),
        "ls": ("outside the project", "a file (use read)"),
    }
    tools = builtin_tools()
    assert set(tools) == set(bounds) == set(refuses)
    for name, needed in bounds.items():
        for text in needed:
            assert text in tools[name].description, f"{name}'s description omits {text!r}"
    for name, needed in refuses.items():
        description = tools[name].description
        assert "Refuses " in description, f"{name}'s description states no refusal"
        refusal = description[description.index("Refuses ") :]
        for text in needed:
            assert text in refusal, f"{name}'s description does not say it refuses {text!r}"
    for name, tool in tools.items():  # every path parameter says where it must be
        for key in ("path", "cwd"):
            spec = tool.parameters["properties"].get(key)
            if spec is not None:
                assert "inside the project" in spec["description"], f"{name}.{key}"
    parameters = {n: t.parameters["properties"] for n, t in tools.items()}
    assert "(default: every file" in parameters["grep"]["glob"]["description"]
    assert "no size limit of its own" in parameters["write"]["content"]["description"]
    assert "under 128 KB (131,071 bytes)" in parameters["bash"]["command"]["description"]


def test_bash_refuses_a_command_over_the_systems_argument_bound(
    call: Callable[..., object],
) -> None:
    """Linux refuses one argument of 128 KiB or more (E2BIG): the tool says so, and how to
    go on, where it used to say only that the shell could not be started."""
    from smith.effects.tools.bash import COMMAND_MAX_BYTES

    assert COMMAND_MAX_BYTES == 131071
    fits = call("bash", command="echo ok #" + "x" * (COMMAND_MAX_BYTES - 9))
    assert fits.text == "ok\n", fits.text  # type: ignore[attr-defined]
    over = call("bash", command="echo ok #" + "x" * (COMMAND_MAX_BYTES - 8))
    text = over.text  # type: ignore[attr-defined]
    assert "131,072 bytes" in text and "write a script" in text, text
    assert "could not be started" not in text


def test_tool_definitions_state_the_configured_bounds(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    """With tools.read.* and tools.bash.timeout set, the model is told those bounds, not
    the defaults."""
    log = senv.root / "requests.jsonl"
    script = senv.root / "s.json"
    script.write_text(json.dumps({"responses": [{"text": "ok"}], "requests_log": str(log)}))
    r = smith("eval", "--model", f"scripted:{script}", "--tools-read-max-lines", "10",
              "--tools-read-max-bytes", "2048", "--tools-bash-timeout", "5", "hi",
              cwd=senv.make_project())  # fmt: skip
    assert r.code == 0, r.err
    (request,) = [json.loads(line) for line in log.read_text().splitlines()]
    tools = {t["name"]: t for t in request["tools"]}
    read, bash = tools["read"], tools["bash"]
    assert "default 10," in read["description"] and "at most 2 KB" in read["description"]
    assert read["parameters"]["properties"]["limit"]["description"].startswith(
        "most lines to return (default 10)"
    )
    assert "default 5," in bash["description"] and "120" not in bash["description"]
    assert "(default 5, at most" in bash["parameters"]["properties"]["timeout"]["description"]


def test_tools_list_shows_what_tools_run_takes(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    """`tools list` lists what `tools run` and MCP serve: the built-ins as configured
    limits bind them (their definitions state those bounds) and the tools plugins
    contribute, named with their plugin."""
    from tests import secrets_plugin

    project = senv.make_project()
    env = {**secrets_plugin.with_plugin(senv.env), "SMITH_TOOLS_BASH_TIMEOUT": "7"}
    listed = json.loads(smith_process("tools", "list", "--json", cwd=project, env=env).out)
    by_name = {t["name"]: t for t in listed["tools"]}
    assert "report_status" in by_name and "default 7," in by_name["bash"]["description"]
    shown = smith_process("tools", "list", cwd=project, env=env).out
    assert "(plugin reporter)" in shown
