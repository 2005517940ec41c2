"""What the model is told besides the conversation (docs/context.md), read from what the
scripted provider was sent (its requests log): the composed system prompt, the
environment block, instruction files, prompt.system / prompt.append, and the notes
recorded in the session, replayed, and listed by `smith context`."""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Result, SmithEnv

TOOLS = ["read", "write", "edit", "bash", "grep", "find", "ls"]


def _plugin_tools() -> list[str]:
    """The tools the built-in plugins declare (the agent library's task and todo)."""
    from smith.sdk import resolve_plugins

    return [t.name for p in resolve_plugins().active for t in p.tools]


def _git_project(senv: SmithEnv, name: str = "project", branch: str = "feature-x") -> Path:
    project = senv.root / name
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text("def main():\n    return 'hello'\n")
    git = ["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", "-b", branch, str(project)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    return project


def _eval(
    smith: Callable[..., Result],
    senv: SmithEnv,
    cwd: Path,
    responses: list[dict[str, Any]],
    *args: str,
    prompt: str = "hi",
    name: str = "run",
    env: dict[str, str] | None = None,
) -> tuple[list[dict[str, Any]], Result]:
    """One `smith eval` with a scripted model; the requests it sent, and its result."""
    log = senv.root / f"{name}.jsonl"
    log.unlink(missing_ok=True)
    script = senv.root / f"{name}.json"
    script.write_text(json.dumps({"responses": responses, "requests_log": str(log)}))
    r = smith("eval", *args, "--model", f"scripted:{script}", prompt, cwd=cwd, env=env)
    assert r.code == 0, r.err
    return [json.loads(line) for line in log.read_text().splitlines()], r


def _text(message: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in message.get("content", []))


def _notes(request: dict[str, Any], kind: str) -> list[str]:
    return [_text(m) for m in request["messages"] if m.get("context") == kind]


# -- the system prompt and the environment block ----------------------------------------


def test_the_environment_block_names_directory_date_os_shell_branch_and_status(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = _git_project(senv)
    (project / "src" / "app.py").write_text("changed\n")
    (project / "notes.txt").write_text("new\n")
    (requests, _) = _eval(smith, senv, project, [{"text": "ok"}])
    (env,) = _notes(requests[0], "environment")
    assert f"Working directory: {project}\n" in env
    assert f"Project root: {project} (the working directory)" in env
    assert datetime.date.today().isoformat() in env
    assert platform.system() in env and "the bash tool runs " in env
    assert "Git: branch feature-x; 1 changed, 1 untracked: src/app.py, notes.txt" in env
    assert "smith 0.1.0; model: scripted:" in env
    # Sent as a user-role message just before the prompt (what the model reads last is
    # what the user asked), marked as smith's, not the user's; the system prompt holds
    # nothing that changes from day to day.
    first, prompt = requests[0]["messages"]
    assert (first["role"], first["context"], prompt["role"], _text(prompt)) == (
        "user", "environment", "user", "hi"
    )  # fmt: skip
    assert "context" not in prompt
    system = requests[0]["system"]
    assert datetime.date.today().isoformat() not in system and str(project) not in system


def test_the_system_prompt_guides_each_active_tool_and_keeps_the_users_work_safe(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = _git_project(senv)
    (requests, _) = _eval(smith, senv, project, [{"text": "ok"}])
    system = requests[0]["system"]
    for tool in TOOLS:
        assert re.search(rf"^- {tool}: ", system, re.M), f"no guidance for {tool}"
    assert "rather than grep or rg in bash" in system  # grep/find/ls over bash
    assert "always a file you are about to edit" in system  # read before editing
    assert "must match exactly one place" in system  # edit's exact unique match
    assert "new files and whole rewrites only" in system
    assert "not cat, head or sed" in system and "Do not cat or echo" in system
    assert "run the project's tests" in system
    assert "Never revert" in system and "no commits" in system and "ask rather than guess" in system
    assert "path:line" in system and "what you did not or could not verify" in system


def test_the_default_prompt_with_seven_tools_and_no_instruction_files_is_at_most_1500_tokens(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    from smith.runtime import Part

    project = _git_project(senv)
    (requests, _) = _eval(smith, senv, project, [{"text": "ok"}], prompt="x")
    request = requests[0]
    assert sorted(t["name"] for t in request["tools"]) == sorted(TOOLS + _plugin_tools())
    (env,) = _notes(request, "environment")
    # smith's estimator (UTF-8 bytes / 4, as the context is counted), and chars / 4.
    tokens = Part("system", "", request["system"]).tokens
    tokens += Part("environment", "", env, "message").tokens
    chars = len(request["system"]) + len(env)
    print(f"default prompt: {tokens} tokens by smith's estimator, {chars} chars")
    assert tokens <= 1500 and chars / 4 <= 1500


def test_only_the_active_tools_get_guidance_and_a_plugin_may_guide_its_own() -> None:
    from smith.runtime._prompt import compose, default_parts
    from smith.sdk import Plugin, resolve_plugins

    plugins = resolve_plugins().active
    parts = default_parts(plugins, ["read"])
    assert [p.name for p in parts] == ["identity", "tools", "rules", "reporting"]
    assert {p.source for p in parts} == {"plugin product"}
    system = compose(parts)
    assert "- read: " in system and "- bash: " not in system and "- edit: " not in system
    assert "tools" not in [p.name for p in default_parts(plugins, [])]  # no tools, no heading
    mine = Plugin("mine", prompts={"tool.lint": "- lint: run it before you finish.",
                                   "system.house": "House rules: be brief."})  # fmt: skip
    parts = default_parts([*plugins, mine], ["read", "lint"])
    assert "- lint: run it before you finish." in parts[1].text
    assert (parts[-1].name, parts[-1].source) == ("house", "plugin mine")


def test_the_environment_is_recorded_when_it_changes_and_not_when_it_does_not(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    from smith.session import Session, SessionStore

    project = _git_project(senv)
    args = ("--session", "work")
    (first, _) = _eval(smith, senv, project, [{"text": "one"}], *args, prompt="p1")
    (second, _) = _eval(smith, senv, project, [{"text": "two"}], *args, prompt="p2")
    # Unchanged: the one recorded by the first run, at its place in the history.
    assert [m.get("context") or _text(m) for m in second[0]["messages"]] == [
        "environment", "p1", "one", "p2"
    ]  # fmt: skip
    (project / "src" / "app.py").write_text("changed\n")  # the git state changes
    (third, _) = _eval(smith, senv, project, [{"text": "three"}], *args, prompt="p3")
    blocks = _notes(third[0], "environment")
    assert len(blocks) == 2 and "clean" in blocks[0] and "1 changed" in blocks[1]
    assert [m.get("context") or _text(m) for m in third[0]["messages"]][-3:] == [
        "two", "environment", "p3"
    ]  # fmt: skip
    store = SessionStore(str(senv.data_home))
    with Session.open(store.lookup("work", str(project))) as session:
        kinds = [e.kind for e in session.branch() if e.kind in ("message", "environment")]
    assert kinds == ["environment", "message", "message", "message", "message",
                     "environment", "message", "message"]  # fmt: skip
    assert first[0]["system"] == third[0]["system"]  # the prefix stayed the same


# -- instruction files ---------------------------------------------------------------------


def _instructions_world(senv: SmithEnv) -> tuple[Path, dict[str, str]]:
    project = _git_project(senv)
    marks = {k: f"MARK-{k.upper()}" for k in ("global", "root", "rootclaude", "mid", "sub", "lib")}
    senv.config_home.mkdir(parents=True, exist_ok=True)
    (senv.config_home / "AGENTS.md").write_text(f"Always mention {marks['global']}.\n")
    (project / "AGENTS.md").write_text(f"Use {marks['root']}.\n")
    (project / "CLAUDE.md").write_text(f"{marks['rootclaude']}: AGENTS.md wins here\n")
    (project / "mid" / "sub").mkdir(parents=True)
    (project / "mid" / "CLAUDE.md").write_text(f"Prefer {marks['mid']}.\n")
    (project / "mid" / "sub" / "AGENTS.md").write_text(f"Nearest: {marks['sub']}.\n")
    (project / "lib" / "deep").mkdir(parents=True)
    (project / "lib" / "AGENTS.md").write_text(f"In lib: {marks['lib']}.\n")
    (project / "lib" / "deep" / "notes.txt").write_text("some notes\n")
    return project, marks


READ_TWICE = [
    {"tool_calls": [{"name": "read", "arguments": {"path": "../../lib/deep/notes.txt"}}]},
    {"tool_calls": [{"name": "ls", "arguments": {"path": "../../lib"}}]},
    {"text": "done"},
]


def test_instruction_files_load_global_root_claude_fallback_and_nearest_last(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project, marks = _instructions_world(senv)
    (requests, _) = _eval(smith, senv, project / "mid" / "sub", READ_TWICE)
    system = requests[0]["system"]
    order = [system.index(marks[k]) for k in ("global", "root", "mid", "sub")]
    assert order == sorted(order)
    assert system.index("Reporting:") < order[0]  # after the default parts
    assert marks["rootclaude"] not in json.dumps(requests[0])  # AGENTS.md wins in the root
    assert marks["lib"] not in json.dumps(requests[0])  # not reached yet
    assert f"Instructions for {project}/mid/ and below ({project}/mid/CLAUDE.md):" in system
    assert f"The user's own instructions, for every project ({senv.config_home}" in system


def test_a_nested_instruction_file_is_added_once_when_its_directory_is_first_reached(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    from smith.session import Session, SessionStore

    project, marks = _instructions_world(senv)
    args = ("--json", "--session", "work")
    (requests, r) = _eval(smith, senv, project / "mid" / "sub", READ_TWICE, *args)
    # After the read in lib/deep: lib/AGENTS.md, as a context message after the result.
    kinds = [m.get("context") or m["role"] for m in requests[1]["messages"]]
    assert kinds == ["environment", "user", "assistant", "tool_result", "instructions"]
    (added,) = _notes(requests[1], "instructions")
    assert added.startswith(f"Instructions for {project}/lib/ and below") and marks["lib"] in added
    assert _notes(requests[2], "instructions") == [added]  # the ls in lib: not again
    assert marks["lib"] not in requests[2]["system"]  # the prefix stays the same
    events = [json.loads(line) for line in r.out.splitlines()]
    (ev,) = [e for e in events if e["type"] == "instructions"]
    assert (ev["path"], ev["directory"]) == (f"{project}/lib/AGENTS.md", f"{project}/lib")
    # A later run of the session knows it was recorded: reading there adds nothing.
    again = [READ_TWICE[0], {"text": "done"}]
    (later, _) = _eval(smith, senv, project / "mid" / "sub", again, *args, name="later")
    assert _notes(later[-1], "instructions") == [added]
    store = SessionStore(str(senv.data_home))
    with Session.open(store.lookup("work", str(project))) as session:
        assert [e.content["path"] for e in session.entries("instructions")] == [ev["path"]]


def test_bash_cwd_reaches_a_directory_too(senv: SmithEnv, smith: Callable[..., Result]) -> None:
    project, marks = _instructions_world(senv)
    call = {"name": "bash", "arguments": {"command": "true", "cwd": "lib"}}
    (requests, _) = _eval(smith, senv, project, [{"tool_calls": [call]}, {"text": "ok"}])
    assert [marks["lib"] in n for n in _notes(requests[1], "instructions")] == [True]


def test_an_instruction_file_over_max_bytes_is_refused_whole_with_a_warning(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = _git_project(senv)
    (project / "AGENTS.md").write_text("SMALL-RULES\n")
    (project / "big").mkdir()
    big = project / "big" / "AGENTS.md"
    big.write_text("BIG-HEAD\n" + "keep functions short.\n" * 30 + "BIG-TAIL\n")
    size = big.stat().st_size
    limit = {"SMITH_CONTEXT_MAX_BYTES": "300"}
    got = smith("config", "get", "context.max-bytes", cwd=project, env=limit)
    assert (got.code, got.out.strip()) == (0, "300")
    (requests, r) = _eval(smith, senv, project / "big", [{"text": "ok"}], env=limit)
    sent = json.dumps(requests[0])
    assert "SMALL-RULES" in sent and "BIG-HEAD" not in sent and "BIG-TAIL" not in sent
    assert f"the instruction file {big} is {size} bytes, over context.max-bytes (300)" in r.err
    assert "SMITH_CONTEXT_MAX_BYTES" in r.err  # where the bound was set
    # Reached later, the same: refused with a warning (an error event), never cut.
    (requests, r) = _eval(
        smith, senv, project, [{"tool_calls": [{"name": "ls", "arguments": {"path": "big"}}]},
                               {"text": "ok"}], env=limit, name="later")  # fmt: skip
    assert "BIG-HEAD" not in json.dumps(requests[1]) and f"{big} is {size} bytes" in r.err


# -- prompt.system and prompt.append --------------------------------------------------------


def test_prompt_system_replaces_the_default_parts_and_instructions_still_follow(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = _git_project(senv)
    (project / "AGENTS.md").write_text("ROOT-RULES\n")
    system_file = senv.root / "system.md"
    system_file.write_text("You are a test harness. REPLACED\n")
    env = {"SMITH_PROMPT_SYSTEM": str(system_file)}
    (requests, _) = _eval(smith, senv, project, [{"text": "ok"}], env=env)
    system = requests[0]["system"]
    assert system.startswith("You are a test harness. REPLACED\n\nInstructions for ")
    assert "ROOT-RULES" in system and "You are smith" not in system and "- read:" not in system
    assert len(_notes(requests[0], "environment")) == 1


def test_prompt_append_adds_files_and_text_after_the_default(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = _git_project(senv)
    (project / "AGENTS.md").write_text("ROOT-RULES\n")
    senv.write_user_config('prompt { append "house.md" "Answer in British English."; }\n')
    (senv.config_home / "house.md").write_text("HOUSE-RULES from a file\n")
    (requests, _) = _eval(smith, senv, project, [{"text": "ok"}])
    system = requests[0]["system"]
    at = [system.index(s) for s in ("You are smith", "Reporting:", "HOUSE-RULES",
                                    "Answer in British English.", "ROOT-RULES")]  # fmt: skip
    assert at == sorted(at)
    file = senv.root / "extra.md"
    file.write_text("EXTRA from the environment\n")
    (requests, _) = _eval(smith, senv, project, [{"text": "ok"}], env={
        "SMITH_PROMPT_APPEND": str(file)}, name="env")  # fmt: skip
    assert "EXTRA from the environment" in requests[0]["system"]
    assert "HOUSE-RULES" not in requests[0]["system"]  # the environment's value wins
    shown = smith("config", "show", "--json", cwd=project).out
    assert "prompt.append" in shown and str(senv.user_config) in shown


@pytest.mark.parametrize("where", ["env", "file"])
def test_a_prompt_file_that_cannot_be_read_is_a_diagnostic_naming_it_and_where_it_was_set(
    senv: SmithEnv, smith: Callable[..., Result], where: str
) -> None:
    project = _git_project(senv)
    missing = senv.root / "nope.md"
    env = {}
    if where == "env":
        env = {"SMITH_PROMPT_SYSTEM": str(missing)}
        named = "SMITH_PROMPT_SYSTEM"
    else:
        senv.write_user_config('prompt { append "./nope.md"; }\n')
        missing = senv.config_home / "nope.md"
        named = f"{senv.user_config}:1"
    script = senv.root / "s.json"
    script.write_text('{"responses": []}')
    r = smith("eval", "--model", f"scripted:{script}", "hi", cwd=project, env=env)
    assert r.code == 2
    assert str(missing) in r.err and named in r.err and "No such file" in r.err
    assert "Traceback" not in r.err


# -- replay and `smith context` --------------------------------------------------------------


def test_replay_shows_the_recorded_environment_and_instructions_as_they_happened(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project, _ = _instructions_world(senv)
    (_, live) = _eval(smith, senv, project / "mid" / "sub", READ_TWICE, "--json", "--session", "w")
    told = [e for e in map(json.loads, live.out.splitlines())
            if e["type"] in ("environment", "instructions")]  # fmt: skip
    assert [e["type"] for e in told] == ["environment", "instructions"]
    r = smith("replay", "w", "--json", "--instant", cwd=project)
    assert r.code == 0, r.err
    replayed = [e for e in map(json.loads, r.out.splitlines())
                if e["type"] in ("environment", "instructions")]  # fmt: skip
    # Each names its run (replay's prompt ids are its own, as its agent_start's are).
    assert all(e.pop("submission") for e in [*told, *replayed])
    assert replayed == told
    shown = smith("replay", "w", "--instant", cwd=project).out
    assert f"[the model was told its environment]\n  Working directory: {project}/mid/sub" in shown
    assert f"[told the model the instructions of {project}/lib/AGENTS.md]" in shown


def test_smith_context_lists_every_part_with_its_source_and_tokens(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project, _ = _instructions_world(senv)
    script = senv.root / "s.json"
    script.write_text('{"responses": []}')
    model = f"scripted:{script}"
    r = smith("context", "--json", "--model", model, cwd=project / "mid" / "sub")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    parts = data["parts"]
    assert [(p["name"], p["sent"]) for p in parts] == [
        ("identity", "system"), ("tools", "system"), ("rules", "system"),
        ("reporting", "system"), *[("instructions", "system")] * 4,
        ("tool definitions", "tools"), ("environment", "message"),
    ]  # fmt: skip
    sources = [p["source"] for p in parts]
    assert sources[:4] == ["plugin product"] * 4
    files = ["AGENTS.md", "mid/CLAUDE.md", "mid/sub/AGENTS.md"]
    assert sources[4:8] == [str(senv.config_home / "AGENTS.md"), *(str(project / f) for f in files)]
    assert sources[-1] == "environment" and sources[-2].startswith("tools: read, write,")
    assert all(isinstance(p["tokens"], int) and p["tokens"] > 0 for p in parts)
    assert data["tokens"] == sum(p["tokens"] for p in parts)
    # What eval sends is what context shows: the same composition.
    (requests, _) = _eval(smith, senv, project / "mid" / "sub", [{"text": "ok"}])
    system = "\n\n".join(p["text"] for p in parts if p["sent"] == "system")
    assert requests[0]["system"] == system
    assert requests[0]["tools"] == json.loads(parts[-2]["text"])
    human = smith("context", "--model", model, cwd=project / "mid" / "sub").out.splitlines()
    assert human[0].split() == ["PART", "SENT", "AS", "TOKENS", "SOURCE"]
    assert human[-1].split() == ["total", f"{data['tokens']:,}"]
    assert any(line.startswith("instructions ") and "mid/CLAUDE.md" in line for line in human)


def test_smith_context_of_a_session_shows_its_recorded_notes(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project, _ = _instructions_world(senv)
    cwd = project / "mid" / "sub"
    _eval(smith, senv, cwd, READ_TWICE, "--session", "w")
    script = senv.root / "run.json"
    r = smith("context", "--json", "--session", "w", "--model", f"scripted:{script}", cwd=cwd)
    assert r.code == 0, r.err
    notes = [p for p in json.loads(r.out)["parts"] if p["sent"] == "message"]
    assert [p["name"] for p in notes] == ["environment", "instructions"]  # nothing new yet
    assert notes[1]["source"].startswith(f"{project}/lib/AGENTS.md (entry ")


# -- the pieces -------------------------------------------------------------------------------


def test_the_context_sends_notes_at_their_place_and_compaction_drops_them(tmp_path: Path) -> None:
    from smith.runtime._context import ContextCache
    from smith.session import Session

    session = Session.create(str(tmp_path / "s.smith"))
    user = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    session.append("message", user)
    env = session.append("environment", {"text": "<environment>x</environment>", "cwd": "/"})
    answer = session.append("message", {"role": "assistant", "content": []})
    cache = ContextCache()
    sent = [m for _, m in cache.get(session)]
    text = [{"type": "text", "text": "<environment>x</environment>"}]
    assert sent[1] == {"role": "user", "context": "environment", "content": text}
    assert cache.notes(session) == [session.entry(env.id).index]
    assert cache.tokens(session) > 3
    session.append("compaction", {"summary": "s", "first_kept": answer.id})
    assert cache.notes(session) == []  # before the boundary: the next prompt records again


def test_git_state_is_bounded_and_read_without_git_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from smith.vcs import git_state

    project = tmp_path / "p"
    project.mkdir()
    assert git_state(str(project)) is None
    subprocess.run(["git", "init", "-q", "-b", "main", str(project)], check=True)
    for i in range(8):
        (project / f"f{i}.txt").write_text("x")
    state = git_state(str(project))
    assert state is not None and state.branch == "main (no commits yet)"
    assert state.summary() == (
        "branch main (no commits yet); 0 changed, 8 untracked: "
        "f0.txt, f1.txt, f2.txt, f3.txt, f4.txt and 3 more"
    )

    # git itself is never run (its configuration could run programs): nor needed.
    assert git_state(str(project), env={"PATH": ""}).untracked == 8  # type: ignore[union-attr]
    monkeypatch.setattr("smith.vcs._status.READER", "import time; time.sleep(600)")
    assert git_state(str(project), timeout=0.5).summary() == (  # type: ignore[union-attr]
        "branch main (no commits yet); status not known (reading it took over 0.5 s)"
    )


def test_a_runtime_lists_what_plugin_handlers_added_to_the_prompt(tmp_path: Path) -> None:
    import asyncio

    from smith.effects import ToolContext
    from smith.runtime import Runtime
    from smith.sdk import AppendSystemPrompt, Plugin
    from smith.session import Session

    script = tmp_path / "s.json"
    script.write_text('{"responses": [{"text": "ok"}]}')
    style = Plugin("style", handlers={"session_start": lambda ev, view: [
        AppendSystemPrompt("Answer in British English.")]})  # fmt: skip

    async def run() -> list[Any]:
        session = Session.create(str(tmp_path / "s.smith"))
        ctx = ToolContext(root=str(tmp_path), cwd=str(tmp_path), session=session)
        rt = Runtime(session, model=f"scripted:{script}", tools=[], context=ctx, plugins=[style])
        rt.prompt("hi")
        await rt.wait_idle()
        parts = rt.context_parts()
        assert rt.system_prompt.endswith("\n\nAnswer in British English.")
        await rt.close()
        return parts

    parts = [p for p in asyncio.run(run()) if p.name != "tool definitions"]  # the plugins'
    assert [p.name for p in parts][-1] == "appended"
    assert parts[-1].source == "plugin handlers (AppendSystemPrompt)"
    assert parts[-1].text == "Answer in British English."
    assert os.sep not in parts[0].source  # a bare runtime: the plugins' defaults


def test_an_abort_while_the_environment_is_read_still_records_the_prompt(tmp_path: Path) -> None:
    import asyncio
    import threading

    from smith.diagnostics import Source
    from smith.effects import ToolContext
    from smith.runtime import ProjectContext, Runtime
    from smith.runtime._instructions import InstructionSettings
    from smith.session import Session

    script = tmp_path / "s.json"
    script.write_text('{"responses": [{"text": "never asked"}]}')
    settings = InstructionSettings(("AGENTS.md",), 1000, Source("default", "defaults"))
    project = ProjectContext(root=str(tmp_path), cwd=str(tmp_path), config_home=str(tmp_path),
                             data_home=str(tmp_path / "data"), instructions=settings)  # fmt: skip
    reading, release = threading.Event(), threading.Event()
    real = project.environment

    def slow(model: str) -> Any:
        reading.set()
        release.wait(10)
        return real(model)

    project.environment = slow  # type: ignore[method-assign]

    async def run() -> tuple[list[str], list[Any]]:
        session = Session.create(str(tmp_path / "s.smith"))
        ctx = ToolContext(root=str(tmp_path), cwd=str(tmp_path), session=session)
        rt = Runtime(session, model=f"scripted:{script}", tools=[], context=ctx, project=project)
        seen: list[Any] = []
        rt.on_event(seen.append)
        rt.prompt("keep me")
        assert await asyncio.to_thread(reading.wait, 10)  # the block is being read
        assert rt.abort()
        await rt.wait_idle()
        release.set()
        kinds = [e.kind for e in session.branch()]
        await rt.close()
        return kinds, seen

    kinds, seen = asyncio.run(run())
    assert kinds == ["message"]  # the prompt, and no environment block
    (end,) = [e for e in seen if e["type"] == "agent_end"]
    assert end["stop"] == "abort"
    assert [e["delta"] for e in seen if e["type"] == "message_delta"] == ["keep me"]


def test_rpc_get_context_returns_the_parts_of_the_running_session(senv: SmithEnv) -> None:
    from tests.rpc_kit import Rpc, script

    project = senv.make_project()
    (project / "AGENTS.md").write_text("Use tabs.\n")
    with Rpc(senv, project, "--model", script(senv, [{"text": "hi"}])) as rpc:
        answer = rpc.call("get_context")
        code, err = rpc.close()
    assert code == 0, err
    names = [p["name"] for p in answer["parts"]]
    assert names[:4] == ["identity", "tools", "rules", "reporting"]
    assert "instructions" in names and names[-1] == "environment"
    assert answer["tokens"] == sum(p["tokens"] for p in answer["parts"])


def test_a_nested_instruction_file_a_compaction_took_out_is_told_again_when_next_reached(
    senv: SmithEnv,
) -> None:
    """docs/context.md: compaction leaves instruction notes out of its summary, and one
    before the boundary is told again when its directory is next reached (it was never
    told again: the directory stayed looked at)."""
    from tests.rpc_kit import Rpc

    project, marks = _instructions_world(senv)
    log = senv.root / "requests.jsonl"
    read = {"tool_calls": [{"name": "read", "arguments": {"path": "lib/deep/notes.txt"}}]}
    responses = [read, {"text": "read it"}, {"text": "A summary."}, read, {"text": "again"}]
    script = senv.root / "c.json"
    script.write_text(json.dumps({"responses": responses, "requests_log": str(log)}))
    rpc = Rpc(senv, project, "--model", f"scripted:{script}")
    try:
        rpc.call("prompt", {"text": "read the notes"})
        rpc.call("wait_idle")
        rpc.call("compact", {})
        assert rpc.event("compaction_end")["ok"] is True
        rpc.call("prompt", {"text": "read them again"})
        rpc.call("wait_idle")
    finally:
        code, err = rpc.close()
    assert code == 0, err
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    assert [marks["lib"] in n for n in _notes(requests[1], "instructions")] == [True]
    assert not _notes(requests[3], "instructions")  # the summary left it out
    assert [marks["lib"] in n for n in _notes(requests[4], "instructions")] == [True]
