"""The declarative parts of installed packages (smith.packages._declarative, docs/plugins.md
"Declarative parts" and "Claude Code plugins"), each seen working through the built-in
plugin that owns its kind: a skill in the skills index, an agent definition in the task
tool, an MCP server's tools offered, a hook run in the sandbox, a theme registered by the
app, a prompt template and a Claude Code plugin's command, agent, hook and MCP server.

Packages are put where `smith plugins install` copies them ($SMITH_HOME/plugins/NAME)."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests import mcp_client_kit as kit
from tests.conftest import Result, SmithEnv

PY = sys.executable


def _installed(senv: SmithEnv, name: str, files: dict[str, str]) -> Path:
    """A package NAME installed (its files written under $SMITH_HOME/plugins/NAME)."""
    root = senv.data_home / "plugins" / name
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


def _eval(senv: SmithEnv, smith_process: Callable[..., Result], project: Path,
          prompt: str, responses: list[dict[str, Any]] | None = None,
          ) -> tuple[list[dict[str, Any]], Result]:  # fmt: skip
    model, log = kit.script(senv.root, responses or [{"text": "ok", "stop": "end"}])
    r = smith_process("eval", "--json", "--model", model, prompt, cwd=project)
    return kit.requests(log), r


def _claude(senv: SmithEnv, extra: dict[str, str] | None = None) -> Path:
    plugin = {"name": "cc-tools", "version": "1.0.0", "description": "tools"}
    return _installed(senv, "cc-tools", {
        ".claude-plugin/plugin.json": json.dumps(plugin),
        "commands/ccexplain.md": "---\ndescription: Explain a file\nallowed-tools: Read\n---\n"
                                 "Explain $ARGUMENTS simply. CCTOKEN-1618\n",
        **(extra or {}),
    })  # fmt: skip


# -- reading: what a Claude Code plugin brings, and what it cannot ------------------------


def test_read_claude_says_what_it_took_and_what_it_could_not(tmp_path: Path) -> None:
    from smith.packages import read_claude

    root = tmp_path / "cc"
    files = {
        ".claude-plugin/plugin.json": json.dumps({
            "name": "cc-tools", "version": "2.1.0", "description": "Tools",
            "outputStyles": "./styles", "lspServers": {"py": {}}, "strange": 1,
            "agents": ["./agents/", "./more/x.md"],
        }),
        "commands/ccexplain.md": "---\ndescription: d\nallowed-tools: Bash(git:*)\n"
                                 "model: opus\n---\nExplain $ARGUMENTS\n",
        "commands/status.md": "Status: !`git status`\n",
        "agents/reviewer.md": "---\nname: reviewer\ndescription: Reviews\n---\nReview.\n",
        "skills/csv-clean/SKILL.md": "---\nname: csv-clean\ndescription: d\n---\n",
        "hooks/hooks.json": json.dumps({"hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}],
            "Notification": [{"hooks": [{"type": "command", "command": "y"}]}],
            "Stop": [{"hooks": [{"type": "prompt", "prompt": "Done?"}]}],
        }}),
        ".mcp.json": json.dumps({"mcpServers": {"k": {"command": "python3"}}}),
    }  # fmt: skip
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    package = read_claude(str(root))
    assert (package.name, package.version, package.kind) == ("cc-tools", "2.1.0", "claude")
    assert not package.has_code
    notes = "\n".join(package.notes)
    assert "taken: commands as prompt templates: /ccexplain, /status" in notes
    assert "taken: 1 agent definition" in notes and "taken: 1 skill" in notes
    assert "taken: hooks (1 PreToolUse), run in smith's sandbox" in notes
    assert "taken: MCP servers: k" in notes
    assert "not taken: allowed-tools of /ccexplain" in notes
    assert "not taken: model of /ccexplain" in notes
    assert "not taken: !`command` lines" in notes and "/status" in notes
    assert "not taken: hooks of Notification (smith has no such event)" in notes
    assert "not taken: a prompt hook of Stop (only commands)" in notes
    assert "not taken: output styles" in notes and "not taken: LSP servers" in notes
    assert "not taken: plugin.json's 'strange'" in notes
    assert "not taken: plugin.json's agents path ./more/x.md (smith reads agents/)" in notes
    assert "./agents/" not in notes


def test_read_claude_refuses_a_plugin_json_without_a_name(tmp_path: Path) -> None:
    from smith.diagnostics import SmithError
    from smith.packages import read_claude

    (tmp_path / ".claude-plugin").mkdir()
    (tmp_path / ".claude-plugin" / "plugin.json").write_text('{"version": "1"}')
    with pytest.raises(SmithError, match=r"plugin\.json cannot be read: its name None"):
        read_claude(str(tmp_path))
    (tmp_path / ".claude-plugin" / "plugin.json").write_text("[1]")
    with pytest.raises(SmithError, match="no JSON object"):
        read_claude(str(tmp_path))


def test_package_templates_are_prompts_and_claude_commands(tmp_path: Path) -> None:
    from smith.packages import PackageManifest, package_templates

    (tmp_path / "p" / "prompts").mkdir(parents=True)
    (tmp_path / "p" / "prompts" / "pkgreview.md").write_text("Review $1. PKGTOKEN\n")
    (tmp_path / "p" / "prompts" / "notes.txt").write_text("not a template")
    (tmp_path / "outside.md").write_text("secret")
    (tmp_path / "p" / "prompts" / "leak.md").symlink_to(tmp_path / "outside.md")
    smith_package = PackageManifest("p", "1", str(tmp_path / "p"))
    assert package_templates(smith_package) == {"pkgreview": "Review $1. PKGTOKEN\n"}
    (tmp_path / "c" / ".claude-plugin").mkdir(parents=True)
    (tmp_path / "c" / ".claude-plugin" / "plugin.json").write_text('{"name": "c"}')
    (tmp_path / "c" / "commands" / "git").mkdir(parents=True)
    (tmp_path / "c" / "commands" / "git" / "ccommit.md").write_text("Commit $ARGUMENTS")
    claude = PackageManifest("c", "1", str(tmp_path / "c"), kind="claude")
    assert package_templates(claude) == {"ccommit": "Commit $ARGUMENTS"}


# -- each part through the plugin that owns its kind --------------------------------------


def test_a_packages_skill_is_in_the_skills_index_and_loads(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    _installed(senv, "pkg-review", {
        "plugin.kdl": 'name "pkg-review"\nversion "0.1.0"\n',
        "skills/csv-clean/SKILL.md": "---\nname: csv-clean\ndescription: Clean CSV files "
                                     "PKGSKILL-2718\n---\n\nSteps SKILLBODY-77.\n",
    })  # fmt: skip
    project = senv.make_project()
    call = {"id": "c1", "name": "skill", "arguments": {"name": "csv-clean"}}
    sent, r = _eval(senv, smith_process, project, "clean it",
                    [{"tool_calls": [call]}, {"text": "ok", "stop": "end"}])  # fmt: skip
    assert r.code == 0, r.err
    assert "- csv-clean: Clean CSV files PKGSKILL-2718" in json.dumps(sent[0])
    loaded = kit.tool_end(kit.events(r.out), "c1")
    assert not loaded["is_error"] and "SKILLBODY-77" in loaded["result"]["text"]


def test_a_disabled_package_brings_nothing(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    _installed(senv, "pkg-review", {
        "plugin.kdl": 'name "pkg-review"\nversion "0.1.0"\n',
        "skills/csv-clean/SKILL.md": "---\nname: csv-clean\ndescription: PKGSKILL-2718\n---\n",
    })  # fmt: skip
    senv.write_user_config('plugins { disabled "pkg-review"; }\n')
    from smith.config import resolve
    from smith.packages import installed

    project = senv.make_project()
    assert installed(resolve(env=senv.env, cwd=str(project))) == []


def test_a_packages_agent_definition_is_offered_by_the_task_tool(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    _installed(senv, "pkg-agents", {
        "plugin.kdl": 'name "pkg-agents"\nversion "0.1.0"\n',
        "agents/auditor.md": "---\nname: auditor\ndescription: Audits code AGENTDESC-55\n"
                             "tools: read, grep\n---\nYou audit. AGENTPROMPT-66\n",
    })  # fmt: skip
    _claude(
        senv,
        {
            "agents/cc-reviewer.md": "---\nname: cc-reviewer\ndescription: Reviews "
            "CCAGENT-44\ntools: Read, Grep\n---\nReview.\n"
        },
    )
    project = senv.make_project()
    call = {
        "id": "c1",
        "name": "task",
        "arguments": {"agent": "auditor", "description": "audit", "prompt": "look"},
    }
    sent, r = _eval(senv, smith_process, project, "audit it", [
        {"tool_calls": [call]}, {"text": "child done", "stop": "end"},
        {"text": "ok", "stop": "end"},
    ])  # fmt: skip
    assert r.code == 0, r.err
    task = next(t for t in sent[0]["tools"] if t["name"] == "task")
    assert "- auditor: Audits code AGENTDESC-55" in task["description"]
    assert "- cc-reviewer: Reviews CCAGENT-44" in task["description"]
    assert "AGENTPROMPT-66" in json.dumps(sent[1])  # the child's system prompt
    assert sorted(kit.tool_names(sent[1])) == ["grep", "read"]


def _kit_package(senv: SmithEnv, marks: Path) -> None:
    root = _installed(senv, "pkg-mcp", {
        "plugin.kdl": 'name "pkg-mcp"\nversion "0.1.0"\nmcp {\n'
                      f'    server "k" command="{PY}" {{\n'
                      '        args "${SMITH_PLUGIN_ROOT}/kit_server.py"\n'
                      f'        env {{ MARKS "{marks}"; }}\n        deny "crash"\n    }}\n}}\n',
    })  # fmt: skip
    kit.write_server(root)


def test_a_packages_mcp_server_is_connected_in_the_sandbox_and_its_tools_offered(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = senv.make_project()
    marks = project / "marks"
    marks.mkdir()
    _kit_package(senv, marks)  # its script in smith's data directory, hidden but for it
    cc = _claude(senv)
    kit.write_server(cc / "srv")
    (cc / ".mcp.json").write_text(json.dumps({"mcpServers": {"cc": {
        "command": PY, "args": ["${CLAUDE_PLUGIN_ROOT}/srv/kit_server.py"],
        "env": {"MARKS": str(marks)}}}}))  # fmt: skip
    call = {"id": "c1", "name": "mcp_k__echo", "arguments": {"text": "hi"}}
    sent, r = _eval(senv, smith_process, project, "go",
                    [{"tool_calls": [call]}, {"text": "ok", "stop": "end"}])  # fmt: skip
    assert r.code == 0, r.err
    names = kit.tool_names(sent[0])
    assert "mcp_k__echo" in names and "mcp_cc__echo" in names
    assert "mcp_k__crash" not in names  # its `deny`
    assert kit.tool_end(kit.events(r.out), "c1")["result"]["text"] == "echo:hi"
    assert (marks / "starts").read_text() == "start\nstart\n"
    r = smith_process("mcp", "list", "--json", cwd=project)  # connects them too, sandboxed
    assert r.code == 0, r.err
    listed = {s["name"]: s for s in json.loads(r.out)}
    assert listed["k"]["origin"] == "plugin pkg-mcp" and listed["k"]["state"] == "ready"
    assert listed["k"]["sandbox"] is True and listed["cc"]["origin"] == "plugin cc-tools"


def test_a_packages_server_runs_in_the_sandbox_whatever_it_asks(
    tmp_path: Path, senv: SmithEnv
) -> None:
    from smith.config import resolve
    from smith.plugins.mcp._config import servers

    root = _installed(senv, "loose", {
        "plugin.kdl": 'name "loose"\nversion "1"\n'
                      'mcp {\n    server "free" command="${SMITH_PLUGIN_ROOT}/run" '
                      'sandbox=false\n}\n',
    })  # fmt: skip
    project = senv.make_project()
    found, problems = servers(resolve(env=senv.env, cwd=str(project)))
    assert [(s.name, s.command, s.sandbox, s.readable, s.origin) for s in found] == [
        ("free", f"{root}/run", True, (str(root),), "plugin loose")
    ]
    assert found[0].env["CLAUDE_PLUGIN_ROOT"] == str(root)
    assert [p.code for p in problems] == ["mcp.package"]
    assert "the plugin loose cannot bring" in problems[0].what
    assert "sandbox=false" in problems[0].what


def test_configuration_wins_a_server_name_over_a_package(tmp_path: Path, senv: SmithEnv) -> None:
    from smith.config import resolve
    from smith.plugins.mcp._config import servers

    _kit_package(senv, tmp_path)
    senv.write_user_config('mcp {\n    server "k" command="mine"\n}\n')
    project = senv.make_project()
    found, problems = servers(resolve(env=senv.env, cwd=str(project)))
    assert [(s.name, s.command) for s in found] == [("k", "mine")]
    assert not problems


def test_a_packages_hooks_run_in_the_sandbox_smiths_and_claudes(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    outside = senv.root / "home" / "escaped"
    _installed(senv, "pkg-hooks", {
        "plugin.kdl": 'name "pkg-hooks"\nversion "0.1.0"\nhooks {\n'
                      '    hook "hello" on="prompt" '
                      'command="cat ${SMITH_PLUGIN_ROOT}/said.txt"\n}\n',
        "said.txt": "SMITHHOOK-31\n",
    })  # fmt: skip
    # the folder from the environment, as Claude Code gives it to a hook
    guard = f"touch {outside} 2>/dev/null; cat $CLAUDE_PLUGIN_ROOT/hooks/said.txt"
    _claude(senv, {
        "hooks/hooks.json": json.dumps({"hooks": {"UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": guard, "timeout": 10}]}]}}),
        "hooks/said.txt": "CCHOOK-27\n",
    })  # fmt: skip
    project = senv.make_project()
    sent, r = _eval(senv, smith_process, project, "hello")
    assert r.code == 0, r.err
    told = json.dumps(sent[0]["messages"])
    assert "SMITHHOOK-31" in told and "CCHOOK-27" in told  # each read its package's file
    assert not outside.exists()  # in the sandbox: nothing written outside the project


def test_hooks_json_maps_claudes_events_and_leaves_the_others(tmp_path: Path) -> None:
    from smith.config import resolve
    from smith.plugins._hookconf import package_hooks

    env_root = tmp_path / "w"
    data = env_root / "data"
    root = data / "plugins" / "cc"
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text('{"name": "cc"}')
    (root / "hooks").mkdir()
    (root / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {
        "PreToolUse": [{"matcher": "Write|Edit", "hooks": [
            {"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/check.sh"}]}],
        "SessionStart": [{"matcher": "startup", "hooks": [{"command": "echo hi"}]}],
        "Notification": [{"hooks": [{"command": "notify"}]}],
    }}))  # fmt: skip
    from tests.conftest import clean_environ

    env = {**clean_environ(), "SMITH_HOME": str(data), "HOME": str(tmp_path),
           "SMITH_CONFIG_HOME": str(env_root / "config")}  # fmt: skip
    (tmp_path / "proj" / ".git").mkdir(parents=True)
    hooks = package_hooks(resolve(env=env, cwd=str(tmp_path / "proj")))
    assert not hooks.problems
    got = {(h.name, h.on, h.command, bool(h.match)) for h in hooks.hooks}
    assert got == {
        ("cc-PreToolUse-1", "before-tool", f"{root}/check.sh", True),
        ("cc-SessionStart-1", "session-start", "echo hi", False),
    }
    assert all(h.readable == (str(root),) for h in hooks.hooks)
    before = next(h for h in hooks.hooks if h.on == "before-tool")
    assert before.matches("write", None) and not before.matches("bash", None)


def test_a_prompt_template_and_a_claude_command_answer(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    """Part 0 of the acceptance check: the package's template and the Claude Code plugin's
    command are sent to the model, expanded (the package loader puts them in the package's
    Plugin through package_templates)."""
    _installed(senv, "pkg-review", {
        "plugin.kdl": 'name "pkg-review"\nversion "0.1.0"\n',
        "prompts/pkgreview.md": "Review $1 carefully. PKGTOKEN-3141\n",
    })  # fmt: skip
    _claude(senv)
    project = senv.make_project()
    sent, r = _eval(senv, smith_process, project, "/pkgreview src/app.py")
    assert r.code == 0, r.err
    assert "Review src/app.py carefully. PKGTOKEN-3141" in json.dumps(sent[0]["messages"])
    (senv.root / "requests.jsonl").unlink()  # the script's log: the second run's alone
    sent, r = _eval(senv, smith_process, project, "/ccexplain src/app.py")
    assert r.code == 0, r.err
    assert "Explain src/app.py simply. CCTOKEN-1618" in json.dumps(sent[0]["messages"])


def test_a_project_package_is_taken_only_as_trust_approved_it(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    from smith.config import resolve
    from smith.packages import installed, package_hooks

    project = senv.make_project()
    root = project / ".smith" / "plugins" / "local"
    (root / "hooks").mkdir(parents=True)
    (root / "plugin.kdl").write_text('name "local"\nversion "1"\n')
    (root / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {"Stop": [
        {"hooks": [{"command": "echo done"}]}]}}))  # fmt: skip

    def found() -> list[tuple[str, str]]:
        config = resolve(env=senv.env, cwd=str(project))
        return [(p.name, p.where) for p in installed(config)]

    assert found() == []  # not trusted
    assert smith("trust", cwd=project).code == 0
    assert found() == [("local", "project")]
    config = resolve(env=senv.env, cwd=str(project))
    assert [sorted(h.values) for h in package_hooks(config)] == [
        ["hook.local-Stop-1.command", "hook.local-Stop-1.on"]
    ]
    (root / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {"Stop": [
        {"hooks": [{"command": "curl evil"}]}]}}))  # fmt: skip
    assert found() == []  # changed since it was trusted: the whole package is left out
    assert smith("trust", cwd=project).code == 0
    assert found() == [("local", "project")]


# -- themes -------------------------------------------------------------------------------


def test_a_packages_theme_is_registered_by_the_app_and_selectable(senv: SmithEnv) -> None:
    import asyncio

    from smith.config import resolve
    from smith.packages import package_themes

    _installed(senv, "paper", {
        "plugin.kdl": 'name "paper"\nversion "0.1.0"\n'
                      'theme "paper" {\n    primary "#1e90ff"\n    background "#fdf6e3"\n'
                      '    dark false\n}\n'
                      'theme "broken" {\n    primary "not-a-colour"\n}\n',
    })  # fmt: skip
    project = senv.make_project()
    themes = package_themes(resolve(env=senv.env, cwd=str(project)))
    assert themes["paper"] == {"primary": "#1e90ff", "background": "#fdf6e3", "dark": "false"}
    from smith.frontends.tui._themes import textual_themes

    made, warnings = textual_themes(themes)
    assert [t.name for t in made] == ["paper"] and made[0].dark is False
    assert warnings == ["the theme broken was not registered: primary 'not-a-colour'"]
    from smith.frontends.tui._app import SmithApp
    from smith.runtime import build

    config = resolve(env=senv.env, flags={"model": "demo"}, cwd=str(project))
    assembly = build(config, cwd=str(project), surface="tui", env=senv.env)
    session = assembly.new_session("smith")

    async def run() -> tuple[str, bool]:
        app = SmithApp(assembly.runtime, session, themes=themes, theme="paper")
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            return str(app.theme), app.current_theme.dark

    async def unknown() -> tuple[str, list[str]]:
        app = SmithApp(assembly.runtime, session, themes={}, theme="paper")  # package gone
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            return str(app.theme), [str(n.message) for n in app._notifications]

    try:
        assert asyncio.run(run()) == ("paper", False)
        theme, told = asyncio.run(unknown())
        assert theme != "paper" and any("there is no theme paper" in m for m in told)
    finally:
        session.close()


def test_the_paper_theme_example_installs_and_registers(senv: SmithEnv) -> None:
    from smith.config import resolve
    from smith.frontends.tui._themes import textual_themes
    from smith.packages import package_themes, read_package

    example = Path(__file__).resolve().parent.parent / "examples" / "plugins" / "paper-theme"
    package = read_package(str(example))
    assert package.themes["paper"]["primary"] == "#3b5bdb"
    shutil.copytree(example, senv.data_home / "plugins" / package.name)
    project = senv.make_project()
    made, warnings = textual_themes(package_themes(resolve(env=senv.env, cwd=str(project))))
    assert [(t.name, t.dark) for t in made] == [("paper", False)] and not warnings


def test_a_plugins_key_for_its_command_is_bound_by_the_app(senv: SmithEnv) -> None:
    """A package's `key "ctrl+k" command="hello1"` is Plugin.keybindings {"hello1":
    "ctrl+k"}: the app binds it to run the command, and lists it among its keys."""
    import asyncio

    from smith.config import resolve
    from smith.frontends.tui._app import SmithApp
    from smith.runtime import build
    from smith.sdk import Command, Plugin

    ran: list[str] = []
    mine = Plugin("hello1", commands=[Command("hello1", "Say hello", lambda h, a: ran.append(a))],
                  keybindings={"hello1": "ctrl+k"})  # fmt: skip
    project = senv.make_project()
    config = resolve(env=senv.env, flags={"model": "demo"}, cwd=str(project))
    assembly = build(config, cwd=str(project), surface="tui", env=senv.env)
    session = assembly.new_session("smith")

    async def run() -> list[tuple[str, str]]:
        app = SmithApp(assembly.runtime, session, plugins=[*assembly.plugin_list.active, mine])
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            await pilot.press("ctrl+k")
            await pilot.pause()
            return list(app.key_help())

    try:
        keys = asyncio.run(run())
    finally:
        session.close()
    assert ran == [""]
    assert any(what == "/hello1" for _, what in keys)


# -- the evidence: every part of a package installed by `smith plugins install` ----


def _git_repo(root: Path) -> None:
    import subprocess

    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.email=p@example.com", "-c", "user.name=p", "commit", "-qm", "p"],
    ):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)  # fmt: skip


def _every_part(root: Path, marks: Path, claude: bool) -> None:
    """A package with a prompt template (or command), a skill, an agent definition, an
    MCP server and a hook: smith's format, or a Claude Code plugin's."""
    var = "CLAUDE_PLUGIN_ROOT" if claude else "SMITH_PLUGIN_ROOT"
    files = {
        "skills/csv-clean/SKILL.md": "---\nname: csv-clean\ndescription: Clean CSV "
                                     "PARTSKILL\n---\nSteps.\n",
        "agents/auditor.md": "---\nname: auditor\ndescription: Audits PARTAGENT\n---\nAudit.\n",
        "said.txt": "PARTHOOK\n",
        ".mcp.json": json.dumps({"mcpServers": {"k": {
            "command": PY, "args": [f"${{{var}}}/kit_server.py"], "env": {"MARKS": str(marks)}}}}),
    }  # fmt: skip
    if claude:
        files[".claude-plugin/plugin.json"] = json.dumps({"name": "cc-all", "version": "1.0.0"})
        files["commands/partcmd.md"] = "---\ndescription: d\n---\nDo $ARGUMENTS. PARTTEMPLATE\n"
        files["hooks/hooks.json"] = json.dumps(
            {
                "hooks": {
                    "UserPromptSubmit": [
                        {"hooks": [{"type": "command", "command": f"cat ${{{var}}}/said.txt"}]}
                    ]
                }
            }
        )
    else:
        files["plugin.kdl"] = (
            'name "pkg-all"\nversion "0.1.0"\n'
            f'hooks {{\n    hook "said" on="prompt" command="cat ${{{var}}}/said.txt"\n}}\n'
        )
        files["prompts/partcmd.md"] = "Do $ARGUMENTS. PARTTEMPLATE\n"
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    kit.write_server(root)


@pytest.mark.parametrize("claude", [False, True], ids=["git-package", "claude-plugin"])
def test_every_part_of_an_installed_package_works(
    senv: SmithEnv, smith: Callable[..., Result], smith_process: Callable[..., Result],
    claude: bool,
) -> None:  # fmt: skip
    project = senv.make_project()
    marks = project / "marks"
    marks.mkdir()
    source = senv.root / "source"
    _every_part(source, marks, claude)
    if not claude:
        _git_repo(source)
    r = smith("plugins", "install", str(source) if claude else f"file://{source}", "--yes",
              cwd=project)  # fmt: skip
    assert r.code == 0, r.err
    shutil.rmtree(source)  # installed means copied
    sent, r = _eval(senv, smith_process, project, "/partcmd the csv")
    assert r.code == 0, r.err
    first = json.dumps(sent[0])
    assert "Do the csv. PARTTEMPLATE" in first  # the template, expanded
    assert "PARTHOOK" in first  # the hook's context, read from the package in the sandbox
    assert "- csv-clean: Clean CSV PARTSKILL" in first  # the skills index
    task = next(t for t in sent[0]["tools"] if t["name"] == "task")
    assert "- auditor: Audits PARTAGENT" in task["description"]
    assert "mcp_k__echo" in kit.tool_names(sent[0])  # the MCP server's tools


def test_a_packages_smith_hooks_are_checked_as_configurations_are(senv: SmithEnv) -> None:
    from smith.config import resolve
    from smith.plugins._hookconf import package_hooks

    root = _installed(senv, "pkg-h", {
        "plugin.kdl": 'name "pkg-h"\nversion "1"\nhooks {\n'
                      '    hook "argv" on="before-tool" match="bash" timeout=5 {\n'
                      '        command "${SMITH_PLUGIN_ROOT}/check" "--strict"\n    }\n'
                      '    hook "typo" on="befor-tool" command="true"\n}\n',
    })  # fmt: skip
    project = senv.make_project()
    hooks = package_hooks(resolve(env=senv.env, cwd=str(project)))
    [hook] = hooks.hooks
    assert (hook.name, hook.command, hook.timeout) == (
        "pkg-h-argv",
        (f"{root}/check", "--strict"),
        5,
    )
    [problem] = hooks.problems
    assert 'on "befor-tool" is no event' in problem.what
    assert problem.source is not None and problem.source.location == f"{root}/plugin.kdl:7:5"
    assert hooks.broken_guard is not None  # an unknown event may have been a guard
