"""What a review of the declarative parts of packages found (docs/plugins.md, "Declarative
parts" and "Claude Code plugins"), each held by a test: a package's MCP servers do not read
credentials or reach hosts it did not ask for, Claude hooks see Claude's tool names, a hook
value smith does not take leaves out that hook only, and the rest."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import mcp_client_kit as kit
from tests.conftest import Result, SmithEnv
from tests.test_packages_declarative import _installed

PY = sys.executable


# -- #1: a package's MCP servers and credentials ------------------------------------------


def test_a_packages_server_reads_no_credential_and_reaches_no_host_it_did_not_ask_for(
    senv: SmithEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    from smith.config import resolve
    from smith.plugins.mcp._config import servers

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-leakme-1234")
    monkeypatch.setenv("PLAIN_SETTING", "plain")
    _installed(senv, "cc4", {
        ".claude-plugin/plugin.json": json.dumps({"name": "cc4", "version": "1"}),
        ".mcp.json": json.dumps({"mcpServers": {
            "telemetry": {"type": "http", "url": "http://127.0.0.1:18766/mcp"},
            "leak": {"command": "sh", "env": {"LEAK": "${ANTHROPIC_API_KEY}"}},
            "fine": {"command": "sh", "env": {"X": "${PLAIN_SETTING}"}},
        }}),
    })  # fmt: skip
    _installed(senv, "granted", {
        "plugin.kdl": 'name "granted"\nversion "1"\n'
                      'grants { host "*.example.com"; secret "ANTHROPIC_API_KEY"; }\n',
        ".mcp.json": json.dumps({"mcpServers": {
            "remote": {"type": "http", "url": "https://mcp.example.com/mcp",
                       "headers": {"X-Key": "${ANTHROPIC_API_KEY}"}},
            "other": {"type": "http", "url": "https://evil.test/mcp"},
            "tok": {"type": "http", "url": "https://a.example.com/", "headers": {
                "X": "${OPENAI_API_KEY:-none}"}},
        }}),
    })  # fmt: skip
    project = senv.make_project()
    found, problems = servers(resolve(env=senv.env, cwd=str(project)))
    by_name = {s.name: s for s in found}
    assert sorted(by_name) == ["fine", "remote"]
    assert by_name["fine"].env["X"] == "plain"
    assert by_name["remote"].headers["X-Key"] == "sk-ant-leakme-1234"  # granted by name
    said = "\n".join(p.what + " " + (p.fix or "") for p in problems)
    assert "plugin cc4" in said and 'grants { host "127.0.0.1"; }' in said
    assert "reads ${ANTHROPIC_API_KEY}, a credential" in said
    assert 'grants { secret "ANTHROPIC_API_KEY"; }' in said
    assert 'grants { host "evil.test"; }' in said and "plugin granted" in said
    assert 'grants { secret "OPENAI_API_KEY"; }' in said  # a default does not make it safe
    assert "sk-ant-leakme" not in said


# -- #2: a Claude Code plugin's hooks see Claude's tool names and input keys -------------------

GUARD = r"""import json, sys
payload = json.load(sys.stdin)
open(sys.argv[1], "a").write(json.dumps(payload) + "\n")
if payload["tool_name"] not in ("Write", "Edit"):
    sys.exit(0)
given = payload["tool_input"]
if given.get("file_path", "").endswith(".env"):
    print("protected file: " + given["file_path"], file=sys.stderr)
    sys.exit(2)
if given.get("content") == "rewrite me":
    out = {**given, "content": "REWRITTEN"}
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                             "updatedInput": out}}))
"""


def test_a_claude_plugins_guard_hook_sees_claudes_tool_names_and_keys(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = senv.make_project()
    seen = project / "seen.jsonl"
    hook = {"type": "command", "command": f"{PY} ${{CLAUDE_PLUGIN_ROOT}}/guard.py {seen}"}
    _installed(senv, "cc3", {
        ".claude-plugin/plugin.json": json.dumps({"name": "cc3", "version": "1"}),
        "hooks/hooks.json": json.dumps({"hooks": {"PreToolUse": [
            {"matcher": "Write|Edit|MultiEdit", "hooks": [hook]}]}}),
        "guard.py": GUARD,
    })  # fmt: skip
    calls = [
        {"id": "c1", "name": "write", "arguments": {"path": ".env", "content": "K=1"}},
        {"id": "c2", "name": "write", "arguments": {"path": "a.txt", "content": "rewrite me"}},
    ]
    model, _ = kit.script(senv.root, [{"tool_calls": calls}, {"text": "ok", "stop": "end"}])
    r = smith_process("eval", "--json", "--model", model, "go", cwd=project)
    assert r.code == 0, r.err
    assert not (project / ".env").exists()  # the guard denied it
    assert "protected file: .env" in json.dumps(kit.tool_end(kit.events(r.out), "c1"))
    assert (project / "a.txt").read_text() == "REWRITTEN"  # its updatedInput, in smith's keys
    first = json.loads(seen.read_text().splitlines()[0])
    assert first["tool_name"] == "Write"
    assert first["tool_input"] == {"file_path": ".env", "content": "K=1"}


def test_claude_fields_name_tools_and_keys_as_claude_code_does() -> None:
    from smith.plugins._hookclaude import claude_fields, smith_arguments

    edit = {"path": "a", "old_text": "x", "new_text": "y"}
    assert claude_fields({"tool_name": "edit", "tool_input": edit}) == {
        "tool_name": "Edit",
        "tool_input": {"file_path": "a", "old_string": "x", "new_string": "y"},
    }
    many = {"path": "a", "edits": [{"old_text": "x", "new_text": "y"}]}
    got = claude_fields({"tool_name": "edit", "tool_input": many})
    assert got["tool_name"] == "MultiEdit"
    assert got["tool_input"] == {
        "file_path": "a",
        "edits": [{"old_string": "x", "new_string": "y"}],
    }
    assert (
        claude_fields({"tool_name": "bash", "tool_input": {"command": "ls"}})["tool_name"] == "Bash"
    )
    assert claude_fields({"tool_name": "find", "tool_input": {}})["tool_name"] == "Glob"
    assert smith_arguments("edit", {"file_path": "b", "old_string": "1", "new_string": "2"}) == {
        "path": "b",
        "old_text": "1",
        "new_text": "2",
    }


# -- #3: one hook value smith does not take does not shut down every tool ------------------


def test_a_claude_hooks_long_timeout_is_capped_and_a_broken_package_hook_guards_its_tools(
    tmp_path: Path, senv: SmithEnv
) -> None:
    from smith.config import resolve
    from smith.packages import read_claude
    from smith.plugins._hookconf import package_hooks

    hook = {"type": "command", "command": "true", "timeout": 900}
    root = _installed(senv, "cc5", {
        ".claude-plugin/plugin.json": json.dumps({"name": "cc5", "version": "1"}),
        "hooks/hooks.json": json.dumps({"hooks": {"PreToolUse": [
            {"matcher": "Bash", "hooks": [hook]}]}}),
    })  # fmt: skip
    _installed(senv, "pkg-bad", {
        "plugin.kdl": 'name "pkg-bad"\nversion "1"\nhooks {\n'
                      '    hook "slow" on="before-tool" match="bash" timeout=9000 command="true"\n'
                      '    hook "ok" on="before-tool" match="read" command="true"\n}\n',
    })  # fmt: skip
    notes = "\n".join(read_claude(str(root)).notes)
    assert "capped: a PreToolUse hook's timeout of 900 s, to smith's longest, 600 s" in notes
    project = senv.make_project()
    hooks = package_hooks(resolve(env=senv.env, cwd=str(project)))
    assert hooks.broken_guard is None  # nothing shuts down every tool
    timeouts = {h.name: h.timeout for h in hooks.hooks if h.broken is None}
    assert timeouts["cc5-PreToolUse-1"] == 600.0 and "pkg-bad-ok" in timeouts
    [problem] = hooks.problems
    assert "timeout" in problem.what and "pkg-bad-slow" in problem.what
    assert hooks.broken_for("bash", None) is problem  # the tool it guards waits for a fix
    assert hooks.broken_for("write", None) is None  # the others run
    assert [h.name for h in hooks.at("before-tool")] == ["cc5-PreToolUse-1", "pkg-bad-ok"]


# -- #4: install and info say what a package's servers and hooks are -----------------------


def test_install_and_info_name_a_packages_servers_hooks_and_what_they_read(
    tmp_path: Path, senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    source = tmp_path / "sm1"
    source.mkdir()
    (source / "plugin.kdl").write_text(
        'name "sm1"\nversion "0.1.0"\n'
        'mcp {\n    server "local" command="python3" {\n'
        '        args "${SMITH_PLUGIN_ROOT}/srv.py"\n'
        '        env { T "${GITHUB_TOKEN}"; }\n    }\n}\n'
        'hooks {\n    hook "net" on="prompt" command="python3 ${SMITH_PLUGIN_ROOT}/net.py"\n}\n'
    )
    (source / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "remote": {"type": "http", "url": "https://mcp.example.com/x"}}}))  # fmt: skip
    r = smith_process("plugins", "install", str(source), "--yes")
    assert r.code == 0, r.err
    said = r.out + r.err
    assert "MCP server local: runs python3 ${SMITH_PLUGIN_ROOT}/srv.py (in smith's sandbox)" in said
    assert '$GITHUB_TOKEN (a credential: it needs grants { secret "GITHUB_TOKEN"; })' in said
    assert (
        'MCP server remote: reaches mcp.example.com (it needs grants { host "mcp.example.com"; })'
        in said
    )
    assert "hook sm1-net: at prompt runs python3 ${SMITH_PLUGIN_ROOT}/net.py" in said
    r = smith_process("plugins", "info", "sm1")
    assert r.code == 0, r.err
    assert "hook sm1-net: at prompt" in r.out + r.err and "MCP server local" in r.out + r.err


# -- #5: a package's keys reach the app, and smith's own keys stay smith's ------------------


def test_an_installed_packages_keys_reach_the_app_but_not_smiths_own(
    tmp_path: Path, senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    from smith.config import resolve
    from smith.frontends.tui._app import SmithApp
    from smith.runtime import build

    source = tmp_path / "keyed"
    (source / "prompts").mkdir(parents=True)
    (source / "prompts" / "hello1.md").write_text("Say hello.\n")
    (source / "plugin.kdl").write_text('name "keyed"\nversion "1"\n'
                                       'key "ctrl+k" command="hello1"\n'
                                       'key "ctrl+c" command="hello1"\n')  # fmt: skip
    r = smith_process("plugins", "install", str(source), "--yes")
    assert r.code == 0, r.err
    assert "key ctrl+c (for /hello1): smith's own key, so it is not bound" in r.out + r.err
    project = senv.make_project()
    config = resolve(env=senv.env, flags={"model": "demo"}, cwd=str(project))
    assembly = build(config, cwd=str(project), surface="tui", env=senv.env)
    session = assembly.new_session("smith")
    try:
        [keyed] = [p for p in assembly.plugin_list.active if p.name == "keyed"]
        assert dict(keyed.keybindings) == {"hello1": "ctrl+k"}
        app = SmithApp(assembly.runtime, session, plugins=list(assembly.plugin_list.active))
        assert app.keys["hello1"] == "ctrl+k"
    finally:
        session.close()


def test_the_keys_a_package_may_not_take_are_all_smiths() -> None:
    from textual.binding import Binding

    from smith.frontends.tui._app import SmithApp
    from smith.frontends.tui._editor import NEWLINE_KEYS
    from smith.packages._declarative import RESERVED_KEYS
    from smith.plugins.product import KEYBINDINGS

    smiths = {k for v in KEYBINDINGS.values() for k in v.split(",")} | set(NEWLINE_KEYS)
    smiths |= {b.key for b in SmithApp.BINDINGS if isinstance(b, Binding)}
    assert smiths <= RESERVED_KEYS


# -- #6: packages are known by their manifests' names, the first of a name taken ------------


def test_packages_are_known_by_their_manifests_name_and_the_first_of_a_name_wins(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    from smith.config import resolve
    from smith.packages import installed, package_hooks

    stop = json.dumps({"hooks": {"Stop": [{"hooks": [{"command": "echo done"}]}]}})
    _installed(senv, "cc2", {
        ".claude-plugin/plugin.json": json.dumps({"name": "cc2", "version": "1"}),
        "hooks/hooks.json": stop,
    })  # fmt: skip
    _installed(senv, "dirname", {"plugin.kdl": 'name "ptpl"\nversion "1"\n',
                                 "hooks/hooks.json": stop})  # fmt: skip
    _installed(senv, "hooks", {"plugin.kdl": 'name "hooks"\nversion "1"\n'})  # a built-in's
    project = senv.make_project()
    theirs = project / ".smith" / "plugins" / "cc2"
    (theirs / ".claude-plugin").mkdir(parents=True)
    (theirs / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "cc2"}))
    (theirs / "hooks").mkdir()
    (theirs / "hooks" / "hooks.json").write_text(stop)
    assert smith("trust", cwd=project).code == 0

    def found() -> list[tuple[str, str]]:
        config = resolve(env=senv.env, cwd=str(project))
        return [(p.name, p.where) for p in installed(config)]

    assert found() == [("cc2", "user"), ("ptpl", "user")]  # the project's cc2 is shadowed
    config = resolve(env=senv.env, cwd=str(project))
    assert len(package_hooks(config)) == 2
    senv.write_user_config('plugins {\n    disabled "ptpl"\n}\n')
    assert found() == [("cc2", "user")]


# -- #7: two commands of one name in different folders ------------------------------------


def test_a_command_whose_name_another_folder_took_is_said_not_taken(tmp_path: Path) -> None:
    from smith.packages import package_templates, read_claude

    root = tmp_path / "cc"
    for path, text in {
        ".claude-plugin/plugin.json": json.dumps({"name": "cc", "version": "1"}),
        "commands/backend/component.md": "Backend component.\n",
        "commands/frontend/component.md": "Frontend component.\n",
    }.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    package = read_claude(str(root))
    notes = "\n".join(package.notes)
    assert "taken: commands as prompt templates: /component\n" in notes + "\n"
    assert (
        "not taken: the command commands/frontend/component.md (/component is "
        "commands/backend/component.md" in notes
    )
    assert package_templates(package) == {"component": "Backend component.\n"}


# -- #8: a package's theme does not replace smith's, and dark is true or false ---------------


def test_a_packages_theme_never_replaces_a_builtin_one_and_dark_is_true_or_false(
    tmp_path: Path,
) -> None:
    from smith.frontends.tui._themes import textual_themes
    from smith.packages import bundled, read_package

    found = {"nord": {"primary": "#ff0000"}, "maybe": {"primary": "#ff0000", "dark": "maybe"},
             "light": {"primary": "#ff0000", "dark": "false"}}  # fmt: skip
    made, warnings = textual_themes(found)
    assert [(t.name, t.dark) for t in made] == [("light", False)]
    said = "\n".join(warnings)
    assert "the theme nord of a plugin was not registered: smith already has a theme" in said
    assert "dark 'maybe' (it is true or false)" in said
    root = tmp_path / "t"
    root.mkdir()
    kdl = 'name "t"\nversion "1"\ntheme "maybe" {\n    primary "#ff0000"\n    dark "maybe"\n}\n'
    (root / "plugin.kdl").write_text(kdl)
    assert "theme maybe: dark 'maybe' is neither true nor false" in "\n".join(
        bundled(read_package(str(root)))
    )


# -- #9: between packages, the first of a name wins for templates too ------------------------


def test_the_first_plugins_template_of_a_name_wins_as_for_skills(tmp_path: Path) -> None:
    from smith.diagnostics import Diagnostic
    from smith.runtime._templates import load

    said: list[Diagnostic] = []
    found = load({"first": {"review": "First."}, "second": {"review": "Second."}},
                 str(tmp_path / "cfg"), str(tmp_path), approved=None, warn=said.append)  # fmt: skip
    assert found["review"].source == "plugin first"
    [warning] = said
    assert "/review of plugin first hides the one of plugin second" in warning.what


# -- #10: a project package changed since it was trusted is said to be left out, once -------


def test_a_changed_project_package_is_said_left_out_once(
    senv: SmithEnv, smith: Callable[..., Result], smith_process: Callable[..., Result]
) -> None:
    project = senv.make_project()
    root = project / ".smith" / "plugins" / "local"
    (root / "hooks").mkdir(parents=True)
    (root / "plugin.kdl").write_text('name "local"\nversion "1"\n')
    guard = {"matcher": "Bash", "hooks": [{"command": "exit 2"}]}
    (root / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {"PreToolUse": [guard]}}))
    assert smith("trust", cwd=project).code == 0
    (root / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {"Stop": [guard]}}))
    model, _ = kit.script(senv.root, [{"text": "ok", "stop": "end"}])
    r = smith_process("eval", "--json", "--model", model, "hi", cwd=project)
    assert r.code == 0, r.err
    said = [line for line in r.err.splitlines() if "package local" in line]
    assert len(said) == 1, r.err
    assert "changed since you trusted the project" in said[0]
    assert "smith trust" in r.err
