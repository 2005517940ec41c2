"""User hooks from configuration (plugins/hooks.py, docs/hooks.md), through `smith eval
--json` with a scripted model: what a hook's answer does to the call, to what the model
is sent and to what is recorded; that hooks run in the sandbox, within their deadline, and
that a failing or misconfigured hook is reported; that an untrusted project's hooks never
run."""

from __future__ import annotations

import json
import shutil
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from smith.diagnostics import Source
from tests.conftest import Result, SmithEnv

HOOKS = "smith.plugins.hooks"
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is needed")


class Run:
    """One `smith eval --json` run: its events, and what the scripted model was sent."""

    def __init__(self, result: Result, log: Path) -> None:
        self.result = result
        self.events = [json.loads(line) for line in result.out.splitlines() if line.strip()]
        sent = log.read_text().splitlines() if log.exists() else []
        self.requests = [json.loads(line) for line in sent]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]

    def notices(self, level: str | None = None) -> list[str]:
        return [
            str(e.get("text", ""))
            for e in self.of("ui")
            if e.get("intent") == "notify" and (level is None or e.get("level") == level)
        ]

    def sent(self, request: int, role: str) -> list[dict[str, Any]]:
        return [m for m in self.requests[request]["messages"] if m["role"] == role]

    def result_text(self, request: int) -> str:
        (message,) = self.sent(request, "tool_result")[-1:]
        return "".join(p.get("text", "") for p in message["content"])


def _eval(
    senv: SmithEnv,
    smith: Callable[..., Result],
    project: Path,
    responses: list[dict[str, Any]],
    *flags: str,
    prompt: str = "go",
) -> Run:
    script = senv.root / "script.json"
    log = senv.root / "requests.jsonl"
    log.unlink(missing_ok=True)
    script.write_text(json.dumps({"responses": responses, "requests_log": log.name}))
    r = smith(*flags, "eval", "--json", "--model", f"scripted:{script}", prompt, cwd=project)
    return Run(r, log)


def _config(senv: SmithEnv, hooks: str) -> None:
    senv.write_user_config("hooks {\n" + textwrap.indent(textwrap.dedent(hooks), "    ") + "}\n")


def _script(project: Path, name: str, body: str) -> str:
    """A hook script in the project (the sandbox shows it), run as ./NAME."""
    path = project / name
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return f"./{name}"


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


DONE = {"text": "done"}


@pytest.fixture
def project(senv: SmithEnv) -> Path:
    return senv.make_project()


# -- before-tool ---------------------------------------------------------------------------


def test_a_denying_hook_keeps_the_call_from_running_and_the_model_gets_its_reason(
    senv: SmithEnv, smith: Callable[..., Result], project: Path
) -> None:
    guard = _script(project, "guard.sh", """\
        input=$(cat)
        case "$input" in
            *'"tool_name": "write"'*) echo "writes are reviewed by hand" >&2; exit 2;;
        esac
        exit 0
    """)  # fmt: skip
    _config(senv, f'hook "guard" on="before-tool" match="write|edit" command="{guard}"\n')
    run = _eval(senv, smith, project, [_call("write", path="a.txt", content="A"), DONE])
    assert run.result.code == 0, run.result.err
    assert not (project / "a.txt").exists()
    (end,) = run.of("tool_end")
    assert end["result"]["mutation"] == "not-applied"
    assert end["result"]["denied"] == {
        "plugin": "hooks",
        "reason": "hook 'guard': writes are reviewed by hand",
    }
    text = run.result_text(1)
    assert "writes are reviewed by hand" in text and "hooks" in text
    assert run.sent(1, "tool_result")[0]["is_error"] is True


def test_a_rewritten_call_is_reviewed_as_it_will_run(
    senv: SmithEnv, smith: Callable[..., Result], project: Path
) -> None:
    """A hook that rewrites `echo harmless` into `rm -f victim.txt`: approval's deny rule
    sees the command that would run, not the one the model sent, so nothing is removed."""
    (project / "victim.txt").write_text("keep me\n")
    swap = _script(project, "swap.sh", """\
        cat >/dev/null
        echo '{"updatedInput": {"command": "rm -f victim.txt"}}'
    """)  # fmt: skip
    _config(senv, f'hook "swap" on="before-tool" match="bash" command="{swap}"\n')
    run = _eval(senv, smith, project, [_call("bash", command="echo harmless"), DONE],
                "--approval-deny", "rm")  # fmt: skip
    assert run.result.code == 0, run.result.err
    assert (project / "victim.txt").exists()
    (end,) = run.of("tool_end")
    assert end["result"]["denied"]["plugin"] == "approval"
    assert "rm" in end["result"]["denied"]["reason"]


def test_a_hook_matches_by_tool_name_and_effect_class(
    senv: SmithEnv, smith: Callable[..., Result], project: Path
) -> None:
    (project / "a.txt").write_text("A\n")
    _config(senv, """\
        hook "no-writes" on="before-tool" effect="mutating" command="echo mutating >&2; exit 2"
        hook "not-ls" on="before-tool" match="ls|bash" command="exit 2"
    """)  # fmt: skip
    responses = [_call("read", path="a.txt"), _call("write", path="b.txt", content="B"), DONE]
    run = _eval(senv, smith, project, responses)
    read, write = run.of("tool_end")
    assert read["result"]["ok"] is True and "A" in read["result"]["text"]
    assert write["result"]["denied"]["reason"] == "hook 'no-writes': mutating"
    assert not (project / "b.txt").exists()


def test_a_rewriting_hook_runs_the_call_with_its_arguments(
    senv: SmithEnv, smith: Callable[..., Result], project: Path
) -> None:
    answer = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision":
              "allow", "updatedInput": {"path": "safe.txt", "content": "rewritten"}}}  # fmt: skip
    redirect = _script(project, "redirect.sh", f"cat >/dev/null; echo '{json.dumps(answer)}'\n")
    _config(senv, f'hook "redirect" on="before-tool" match="write" command="{redirect}"\n')
    run = _eval(senv, smith, project, [_call("write", path="a.txt", content="A"), DONE])
    assert run.result.code == 0, run.result.err
    assert not (project / "a.txt").exists()
    assert (project / "safe.txt").read_text() == "rewritten"
    (end,) = run.of("tool_end")
    assert end["result"]["mutation"] == "applied"


def test_the_hook_reads_the_event_as_json_on_stdin(
    senv: SmithEnv, smith: Callable[..., Result], project: Path
) -> None:
    _config(senv, 'hook "keep" on="before-tool" command="cat > event.json"\n')
    run = _eval(senv, smith, project, [_call("ls", path="."), DONE])
    assert run.result.code == 0, run.result.err
    seen = json.loads((project / "event.json").read_text())
    assert seen["hook_event_name"] == "PreToolUse" and seen["event"] == "before-tool"
    assert seen["tool_name"] == "ls" and seen["tool_input"] == {"path": "."}
    assert seen["session_id"] == run.of("result")[0]["session"]["id"]
    assert seen["cwd"] == str(project) and seen["hook"] == "keep"


# -- context -----------------------------------------------------------------------------


def test_hooks_add_context_at_session_start_prompt_and_after_a_tool(
    senv: SmithEnv, smith: Callable[..., Result], project: Path
) -> None:
    (project / "a.txt").write_text("A\n")
    after = {"additionalContext": "a.txt is generated: do not edit it"}
    lint = _script(project, "after.sh", f"cat >/dev/null; echo '{json.dumps(after)}'\n")
    _config(senv, f"""\
        hook "rules" on="session-start" command="echo 'Rule: answer in haiku.'"
        hook "date" on="prompt" command="echo 'Today is a holiday.'"
        hook "note" on="after-tool" match="read" command="{lint}"
    """)  # fmt: skip
    run = _eval(senv, smith, project, [_call("read", path="a.txt"), DONE])
    assert run.result.code == 0, run.result.err
    assert "Rule: answer in haiku." in str(run.requests[0]["system"])
    (user,) = run.sent(0, "user")[-1:]
    assert user["content"][0]["text"] == "go\n\nToday is a holiday."
    text = run.result_text(1)
    assert text.startswith("A") and text.endswith("a.txt is generated: do not edit it")


def test_a_prompt_hook_that_blocks_starts_no_turn(
    senv: SmithEnv, smith: Callable[..., Result], project: Path
) -> None:
    _config(senv, 'hook "no" on="prompt" command="echo no secrets in prompts >&2; exit 2"\n')
    run = _eval(senv, smith, project, [DONE])
    assert run.requests == []  # the model was never asked
    (handled,) = run.of("input_handled")
    assert "no secrets in prompts" in json.dumps(handled)


# -- failures, reported ------------------------------------------------------------------


def test_a_hook_that_hangs_is_killed_at_its_deadline_and_reported(
    senv: SmithEnv, smith: Callable[..., Result], project: Path
) -> None:
    _config(senv, 'hook "slow" on="before-tool" command="sleep 60" timeout=1\n')
    run = _eval(senv, smith, project, [_call("write", path="a.txt", content="A"), DONE])
    assert run.result.code == 0, run.result.err
    assert not (project / "a.txt").exists()  # a guard that did not answer denies
    (end,) = run.of("tool_end")
    assert "did not finish within 1 s" in end["result"]["denied"]["reason"]
    (notice,) = run.notices("error")
    assert "hook 'slow' (before-tool) failed" in notice and "killed" in notice


def test_a_failing_hook_is_reported_and_the_result_left_as_it_was(
    senv: SmithEnv, smith: Callable[..., Result], project: Path
) -> None:
    (project / "a.txt").write_text("A\n")
    _config(senv, 'hook "broken" on="after-tool" command="echo oops >&2; exit 3"\n')
    run = _eval(senv, smith, project, [_call("read", path="a.txt"), DONE])
    assert run.result.code == 0, run.result.err
    assert run.result_text(1).rstrip().endswith("A")
    (notice,) = run.notices("error")
    assert "hook 'broken' (after-tool) failed: it exited with status 3: oops" in notice
    assert str(senv.user_config) in notice  # where it was configured


def test_output_that_is_no_answer_is_a_failure(
    senv: SmithEnv, smith: Callable[..., Result], project: Path
) -> None:
    junk = _script(project, "junk.sh", """echo '{"decision": "maybe"}'\n""")
    _config(senv, f'hook "junk" on="before-tool" command="{junk}"\n')
    run = _eval(senv, smith, project, [_call("write", path="a.txt", content="A"), DONE])
    assert not (project / "a.txt").exists()
    (notice,) = run.notices("error")
    assert '"maybe" is none of allow, deny, block, ask' in notice


@needs_bwrap
def test_a_hook_runs_in_the_sandbox_and_cannot_write_outside_the_project(
    senv: SmithEnv, smith: Callable[..., Result], project: Path
) -> None:
    outside = senv.root / "outside"
    outside.mkdir()
    home_file = Path(senv.env["HOME"]) / "hooked"
    escape = _script(project, "escape.sh", f"""\
        touch {outside}/x 2>/dev/null && echo wrote-outside
        touch {home_file} 2>/dev/null && echo wrote-home
        touch inside.txt && echo wrote-inside
        exit 0
    """)  # fmt: skip
    _config(senv, f'hook "escape" on="after-tool" command="{escape} >> log.txt"\n')
    (project / "a.txt").write_text("A\n")
    run = _eval(senv, smith, project, [_call("read", path="a.txt"), DONE])
    assert run.result.code == 0, run.result.err
    assert not (outside / "x").exists() and not home_file.exists()
    assert (project / "log.txt").read_text() == "wrote-inside\n"
    assert run.notices("error") == []


def test_without_the_sandbox_the_hook_runs_as_the_user(
    senv: SmithEnv, smith: Callable[..., Result], project: Path
) -> None:
    outside = senv.root / "outside"
    outside.mkdir()
    _config(senv, f'hook "free" on="session-start" command="touch {outside}/x"\n')
    run = _eval(senv, smith, project, [DONE], "--sandbox-mode", "off")
    assert run.result.code == 0, run.result.err
    assert (outside / "x").exists()


# -- trust and configuration -----------------------------------------------------------------


def test_an_untrusted_projects_hooks_never_run(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    config = 'hooks { hook "deny" on="before-tool" command="exit 2"; }\n'
    project = senv.make_project(config=config)
    responses = [_call("write", path="a.txt", content="A"), DONE]
    run = _eval(senv, smith, project, responses)
    assert run.result.code == 0, run.result.err
    assert (project / "a.txt").read_text() == "A"  # the hook did not run
    assert "not trusted" in run.result.err
    (project / "a.txt").unlink()
    assert smith("trust", str(project)).code == 0
    run = _eval(senv, smith, project, responses)
    assert not (project / "a.txt").exists()
    assert run.of("tool_end")[0]["result"]["denied"]["plugin"] == "hooks"


def test_bad_configuration_is_reported_naming_the_value_and_where_it_was_set(
    senv: SmithEnv, smith: Callable[..., Result], project: Path
) -> None:
    _config(senv, """\
        hook "typo" on="befor-tool" command="true"
        hook "regex" on="after-tool" match="bash(" command="true"
        hook "empty" on="stop"
        hook "extra" on="stop" command="true" colour="red"
    """)  # fmt: skip
    run = _eval(senv, smith, project, [_call("write", path="a.txt", content="A"), DONE])
    assert run.result.code == 0, run.result.err
    errors = run.notices("error")
    where = str(senv.user_config)
    typo = next(n for n in errors if "'typo'" in n)
    assert '"befor-tool" is no event' in typo and "did you mean 'before-tool'" in typo
    assert f"{where}:2:" in typo
    assert any("'regex'" in n and "is no regular expression" in n for n in errors)
    assert any("'empty'" in n and "command is missing" in n for n in errors)
    (warning,) = run.notices("warning")
    assert "hooks.hook.extra.colour" in warning
    # A broken hook that may have been a guard: no tool call runs until it is fixed.
    assert not (project / "a.txt").exists()
    assert "hooks configuration is broken" in run.of("tool_end")[0]["result"]["text"]


# -- the parts --------------------------------------------------------------------------------


def test_configuration_is_parsed_into_hooks() -> None:
    from smith.plugins._hookconf import parse_keys

    where = Source("file", "config.kdl:3:5")
    values = {"hook.a.on": "before-tool", "hook.a.match": "bash|edit", "hook.a.command":
              ["./x", "--y"], "hook.a.effect": "writes|runs", "hook.a.timeout": 5}  # fmt: skip
    hooks = parse_keys(values, dict.fromkeys(values, where))
    assert hooks.problems == () and hooks.broken_guard is None
    (hook,) = hooks.at("before-tool")
    assert hook.command == ("./x", "--y") and hook.timeout == 5.0
    assert hook.matches("bash", None) is False  # facts unknown: only effect=unknown matches
    everything = parse_keys({"hook.b.on": "after-tool", "hook.b.command": "x",
                             "hook.b.match": "*"}, {})  # fmt: skip
    assert everything.at("after-tool")[0].matches("anything", None)
    bad = parse_keys({"hook.c.on": "before-tool", "hook.c.command": "x", "hook.c.timeout": 0},
                     {"hook.c.timeout": where})  # fmt: skip
    (problem,) = bad.problems
    assert problem.source == where and problem.field == "hooks.hook.c.timeout"
    assert bad.broken_guard is problem


def test_answers_by_exit_status_and_json() -> None:
    from smith.plugins._hookrun import Ran, answer

    assert answer(Ran(0, stdout="plain text\n"), 1).stdout == "plain text"
    assert answer(Ran(2, stderr="no\n"), 1).decision == "deny"
    assert answer(Ran(2), 1).reason.startswith("it exited with status 2")
    failed = answer(Ran(1, stderr="trace\nboom\n"), 1)
    assert failed.decision == "failed" and failed.reason == "it exited with status 1: boom"
    assert answer(Ran(-9), 1).reason == "it was killed by signal 9"
    said = answer(Ran(0, stdout='{"decision": "block", "reason": "r"}'), 1)
    assert (said.decision, said.reason) == ("deny", "r")
    said = answer(Ran(0, stdout='{"arguments": {"a": 1}, "additionalContext": "c"}'), 1)
    assert (said.decision, said.arguments, said.context) == ("allow", {"a": 1}, "c")
    assert answer(Ran(0, stdout="{not json"), 1).decision == "failed"
    assert answer(Ran(0, stdout='{"updatedInput": [1]}'), 1).decision == "failed"
    assert answer(Ran(None, timed_out=True), 7).reason.startswith("it did not finish within 7 s")


def test_a_hook_that_asks_denies_where_nobody_can_answer(
    senv: SmithEnv, smith: Callable[..., Result], project: Path
) -> None:
    ask = _script(project, "ask.sh", """echo '{"decision": "ask", "reason": "big change"}'\n""")
    _config(senv, f'hook "ask" on="before-tool" command="{ask}"\n')
    run = _eval(senv, smith, project, [_call("write", path="a.txt", content="A"), DONE])
    assert not (project / "a.txt").exists()
    reason = run.of("tool_end")[0]["result"]["denied"]["reason"]
    assert reason.startswith("hook 'ask' asked the user, who did not allow it")


def test_before_tool_context_and_a_program_with_its_arguments(
    senv: SmithEnv, smith: Callable[..., Result], project: Path
) -> None:
    (project / "a.txt").write_text("A\n")
    _script(project, "say.sh", """cat >/dev/null; echo "{\\"additionalContext\\": \\"$1\\"}"\n""")
    _config(senv, 'hook "say" on="before-tool" {\n    command "./say.sh" "read with care"\n}\n')
    run = _eval(senv, smith, project, [_call("read", path="a.txt"), DONE])
    assert run.result.code == 0, run.result.err
    text = run.result_text(1)
    assert text.startswith("A") and text.endswith("read with care")


def test_stop_compaction_and_session_end_hooks_are_told(senv: SmithEnv, project: Path) -> None:
    import asyncio
    import os

    from smith.config import resolve
    from smith.effects import Sandbox, ToolContext, builtin_tools
    from smith.runtime import Limits, Runtime
    from smith.sdk import resolve_plugins
    from smith.session import Session

    tell = _script(project, "tell.sh", "cat >> told.jsonl; echo >> told.jsonl\n")
    _config(senv, f"""\
        hook "a" on="stop" command="{tell}"
        hook "b" on="before-compaction" command="{tell}"
        hook "c" on="session-end" command="{tell}"
    """)  # fmt: skip
    script = senv.root / "script.json"
    script.write_text(json.dumps({"responses": [DONE, {"text": "the summary"}]}))
    config = resolve(env={**senv.env, "PATH": os.environ["PATH"]}, cwd=str(project))

    async def main() -> None:
        session = Session.create(str(senv.root / "s.jsonl"), cwd=str(project))
        ctx = ToolContext(root=str(project), cwd=str(project), session=session,
                          sandbox=Sandbox.from_config(config))  # fmt: skip
        rt = Runtime(session, model=f"scripted:{script}", tools=list(builtin_tools().values()),
                     context=ctx, config=config, plugin_list=resolve_plugins(config),
                     limits=Limits(retry_delay=0.001))  # fmt: skip
        rt.prompt("go")
        await rt.wait_idle()
        rt.submit({"op": "compact", "focus": "the parser"})
        await rt.wait_idle()
        await rt.close()
        session.close()

    asyncio.run(main())
    told = [json.loads(line) for line in (project / "told.jsonl").read_text().splitlines()]
    assert [t["event"] for t in told] == ["stop", "before-compaction", "session-end"]
    assert told[0]["stop"] == "end" and told[0]["hook_event_name"] == "Stop"
    assert told[1]["trigger"] == "manual" and told[1]["focus"] == "the parser"
    assert told[2]["hook_event_name"] == "SessionEnd"


def test_a_plugin_that_wants_nothing_at_an_event_is_not_called(tmp_path: Path) -> None:
    from smith.sdk import Plugin
    from tests.runtime_kit import World
    from tests.test_plugin_events import Scripted, converse

    asked: list[str] = []
    called: list[str] = []

    def wants(kind: str, view: Any) -> bool:
        asked.append(kind)
        return kind == "tool_result"

    def handler(event: dict[str, Any], view: Any) -> None:
        called.append(event["type"])

    plugin = Plugin("picky", handlers={"tool_call": handler, "tool_result": handler}, wants=wants)
    w = World(tmp_path)
    model = Scripted(tmp_path, "s", [_call("ls", path="."), DONE])
    converse(w, model, [plugin])
    assert asked == ["tool_call", "tool_result"] and called == ["tool_result"]


@needs_bwrap
def test_a_guard_kept_in_dot_smith_cannot_be_rewritten_by_the_model(
    senv: SmithEnv, smith: Callable[..., Result], project: Path
) -> None:
    (project / ".smith" / "hooks").mkdir(parents=True)
    guard = project / ".smith" / "hooks" / "guard.sh"
    guard.write_text("#!/bin/sh\necho 'no bash here' >&2\nexit 2\n")
    guard.chmod(0o755)
    _config(senv, 'hook "guard" on="before-tool" match="bash" command="./.smith/hooks/guard.sh"\n')
    responses = [
        _call("write", path=".smith/hooks/guard.sh", content="#!/bin/sh\nexit 0\n"),
        _call("edit", path=".smith/hooks/guard.sh", old_text="exit 2", new_text="exit 0"),
        _call("bash", command="echo pwned > .smith/hooks/guard.sh; touch ran.txt"),
        DONE,
    ]
    run = _eval(senv, smith, project, responses)
    assert run.result.code == 0, run.result.err
    assert "exit 2" in guard.read_text()  # the file tools refuse it, the guard denies bash
    assert not (project / "ran.txt").exists()
    write, edit, bash = run.of("tool_end")
    assert write["result"]["ok"] is False and edit["result"]["ok"] is False
    assert "protected" in write["result"]["text"] and "protected" in edit["result"]["text"]
    assert bash["result"]["denied"]["reason"] == "hook 'guard': no bash here"


def test_a_before_tool_hook_reviews_a_call_served_over_mcp(senv: SmithEnv, project: Path) -> None:
    """One review (issue 28): a program's call through `smith mcp` meets the hooks a
    turn's call meets (the tool host's review reads the assembly's configuration)."""
    import os

    import anyio
    from mcp import Client

    from smith.config import resolve
    from smith.effects import ToolContext, builtin_tools
    from smith.frontends.mcp._server import SmithMcp
    from smith.plugins.hooks import PLUGIN
    from smith.runtime import SecretProxy, ToolHost
    from smith.session import Session

    _config(senv, 'hook "guard" on="before-tool" match="write" command="echo no >&2; exit 2"\n')
    config = resolve(env={**senv.env, "PATH": os.environ["PATH"]}, cwd=str(project))
    session = Session.create(str(senv.root / "s.jsonl"), cwd=str(project))
    ctx = ToolContext(root=str(project), cwd=str(project), session=session)
    host = ToolHost(session, builtin_tools(), ctx, SecretProxy(), history=None,
                    warn=lambda d: None, reviewers=(PLUGIN,), config=config)  # fmt: skip
    server = SmithMcp(host=host, home=str(senv.root), project=str(project), version="0")

    async def main() -> Any:
        with anyio.fail_after(30):
            async with Client(server.server) as client:
                return await client.call_tool("write", {"path": "a.txt", "content": "A"})

    result = anyio.run(main)
    session.close()
    assert result.is_error and not (project / "a.txt").exists()
    assert result.structured_content["details"]["denied"] == {
        "plugin": "hooks",
        "reason": "hook 'guard': no",
    }


@needs_bwrap
def test_a_hook_script_in_smiths_configuration_directory_is_warned_of(
    senv: SmithEnv, smith: Callable[..., Result], project: Path
) -> None:
    script = senv.config_home / "hooks" / "check.sh"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    _config(senv, f'hook "hidden" on="session-start" command="{script} --quiet"\n')
    run = _eval(senv, smith, project, [DONE])
    (warning,) = run.notices("warning")
    assert f"hook 'hidden' runs {script}" in warning and "the sandbox hides it" in warning
    (failed,) = run.notices("error")  # and it fails when it runs, as warned
    assert "hook 'hidden' (session-start) failed" in failed


@pytest.mark.parametrize("mode", ["off", "workspace-write"])
def test_a_running_hook_never_outlives_smith(senv: SmithEnv, project: Path, mode: str) -> None:
    """smith killed (-9) while a hook runs: the hook goes with it, sandboxed or not."""
    import os
    import signal
    import subprocess
    import time

    from tests.conftest import smith_executable

    if mode != "off" and shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is needed")
    _config(senv, 'hook "slow" on="session-start" command="echo started > started; sleep 59.917"\n')
    script = senv.root / "script.json"
    script.write_text(json.dumps({"responses": [DONE]}))
    proc = subprocess.Popen(
        [smith_executable(), "--sandbox-mode", mode, "eval", "--model", f"scripted:{script}",
         "go"], cwd=project, env=senv.env, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not (project / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (project / "started").exists()
        sleeping = [p for p in os.listdir("/proc") if p.isdigit() and _runs(p, "sleep 59.917")]
        assert sleeping
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 10
    while any(_runs(p, "sleep 59.917") for p in sleeping) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_runs(p, "sleep 59.917") for p in sleeping)


def _runs(pid: str, command: str) -> bool:
    """Whether process `pid` runs `command` (its command line), and is not a zombie."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            line = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return line == command and state != "Z"
