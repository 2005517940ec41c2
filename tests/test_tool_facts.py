"""What the core knows about a tool is what its spec declares (ToolSpec.effect, secrets,
timeout_argument, command_argument, preview), never its name: approval under `untrusted`
asks about every tool that is not read-only, a library caller's included; restored
secrets reach only the tools that declare they get them; no built-in tool's name decides
anything in smith/runtime or the approval plugin."""

from __future__ import annotations

import ast
import contextlib
import json
from pathlib import Path
from typing import Any

import pytest

import smith
from smith.effects import ToolSpec, builtin_tools
from tests.runtime_kit import run

ROOT = Path(__file__).resolve().parents[1]
NAMES = {"read", "write", "edit", "bash", "grep", "find", "ls"}


def _decided_by_name(path: Path) -> list[str]:
    """Comparisons with, and literal collections of, built-in tool names in `path` (as
    ../shared/acceptance/22-seams part d scans)."""
    hits = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            for c in [node.left, *node.comparators]:
                if isinstance(c, ast.Constant) and c.value in NAMES:
                    hits.append(f"{path.relative_to(ROOT)}:{node.lineno} compares with {c.value!r}")
        if isinstance(node, ast.Set | ast.Tuple | ast.List):
            names = [e.value for e in node.elts
                     if isinstance(e, ast.Constant) and isinstance(e.value, str)]  # fmt: skip
            if names and len(names) == len(node.elts) and set(names) <= NAMES:
                hits.append(f"{path.relative_to(ROOT)}:{node.lineno} lists {names}")
    return hits


def test_no_built_in_tool_name_decides_anything_in_the_core() -> None:
    files = [*sorted((ROOT / "smith/runtime").rglob("*.py")), ROOT / "plugins/approval.py"]
    assert [h for f in files for h in _decided_by_name(f)] == []


def test_the_scan_finds_a_decision_by_name(tmp_path: Path) -> None:
    probe = ROOT / "tests" / "_probe_names.py"
    probe.write_text('MUTATING = ("bash", "write")\nif name == "ls":\n    pass\n')
    try:
        assert len(_decided_by_name(probe)) == 2
    finally:
        probe.unlink()


def test_the_built_ins_declare_what_they_do() -> None:
    facts = {name: spec.facts for name, spec in builtin_tools().items()}
    assert {n: f.effect for n, f in facts.items()} == {
        "read": "reads", "find": "reads", "grep": "reads", "ls": "reads",
        "write": "writes", "edit": "writes", "bash": "runs",
    }  # fmt: skip
    assert [n for n, f in facts.items() if f.secrets] == ["bash"]
    assert facts["bash"].command == "command" and facts["bash"].timeout == "timeout"
    assert sorted(n for n, f in facts.items() if f.previews) == ["edit", "write"]
    assert all(f.mutating == (f.effect != "reads") for f in facts.values())


def test_a_spec_that_declares_nothing_is_unknown_and_mutating_stays_coherent() -> None:
    def run_(ctx: Any, args: Any) -> Any:
        raise AssertionError

    plain = ToolSpec("deploy", "Deploy.", {"type": "object"}, run_, mutating=False)
    assert plain.facts.effect == "unknown" and not plain.secrets
    assert ToolSpec("w", "W.", {"type": "object"}, run_, effect="writes").mutating
    assert not ToolSpec("r", "R.", {"type": "object"}, run_, effect="reads").mutating
    with pytest.raises(ValueError, match="mutating"):
        ToolSpec("r", "R.", {"type": "object"}, run_, effect="reads", mutating=True)
    with pytest.raises(ValueError, match="effect"):
        ToolSpec("x", "X.", {"type": "object"}, run_, effect="anything")  # type: ignore[arg-type]

    @smith.tool
    def deploy(target: str) -> str:
        """Deploy."""
        return target

    @smith.tool(effect="reads")
    def look(target: str) -> str:
        """Look."""
        return target

    # Declaring nothing, a tool may change files: its changes are unknown after a crash.
    assert (deploy.effect, deploy.mutating) == ("unknown", True)
    assert ToolSpec("any", "Any.", {"type": "object"}, run_).mutating
    assert not plain.mutating  # unless it says it changes nothing
    assert (look.effect, look.mutating) == ("reads", False)


def _untrusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, calls: list[dict[str, Any]],
               tools: list[ToolSpec]) -> dict[str, dict[str, Any]]:  # fmt: skip
    """The tool_end events of a scripted library agent under approval untrusted, with
    nobody to answer a question, by call id; and the approval events under "asked"."""
    monkeypatch.setenv("SMITH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SMITH_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("SMITH_APPROVAL", "untrusted")
    script = tmp_path / "script.json"
    responses = [{"tool_calls": [call]} for call in calls] + [{"text": "done"}]
    script.write_text(json.dumps({"responses": responses}))
    project = tmp_path / "project"
    project.mkdir()
    seen: list[dict[str, Any]] = []

    async def main() -> None:
        store = str(tmp_path / "store")
        tools_ = [*smith.builtin_tools(), *tools]
        async with smith.Agent(f"scripted:{script}", tools=tools_, cwd=str(project),
                               store=store) as agent:  # fmt: skip
            agent.on_event(seen.append)
            with contextlib.suppress(smith.AgentStopped):
                await agent.send("go")

    run(main)
    ends = {e["tool_call_id"]: e for e in seen if e["type"] == "tool_end"}
    ends["asked"] = {"events": [e for e in seen
                                if e["type"] in ("intent_refused", "intent_answered")]}  # fmt: skip
    return ends


def test_a_library_callers_tool_that_declares_nothing_is_asked_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[str] = []

    @smith.tool
    def deploy(target: str) -> str:
        """Deploy the project to a target."""
        ran.append(target)
        return "deployed to " + target

    ends = _untrusted(tmp_path, monkeypatch, [
        {"id": "c1", "name": "ls", "arguments": {"path": "."}},
        {"id": "c2", "name": "deploy", "arguments": {"target": "prod"}},
    ], [deploy])  # fmt: skip
    assert not ends["c1"]["is_error"]  # a read-only built-in runs unasked
    assert ran == [] and ends["c2"]["is_error"]
    assert "needs the user's approval" in ends["c2"]["result"]["text"]
    assert "deploy call" in ends["c2"]["result"]["text"]
    assert len(ends["asked"]["events"]) == 1


def test_a_tool_declaring_it_only_reads_runs_unasked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    @smith.tool(effect="reads")
    def status(target: str) -> str:
        """Say how a target is."""
        return target + " is up"

    ends = _untrusted(tmp_path, monkeypatch,
                      [{"id": "c1", "name": "status", "arguments": {"target": "prod"}}],
                      [status])  # fmt: skip
    assert not ends["c1"]["is_error"] and ends["c1"]["result"]["text"] == "prod is up"
    assert ends["asked"]["events"] == []


def test_the_question_names_a_tool_without_a_path_by_its_arguments() -> None:
    from plugins.approval import answered, decide
    from smith.effects import ToolFacts
    from smith.sdk import DenyCall
    from smith.ui import Question, refused

    def facts(name: str) -> ToolFacts | None:
        return ToolFacts(name, "network", mutating=False) if name == "fetch" else None

    asked = decide({"approval": "untrusted"}, (), "fetch", {"url": "https://x"}, facts=facts)
    assert isinstance(asked, Question)
    assert asked.text == 'smith wants to use the fetch tool with {"url": "https://x"}'
    told = answered(refused("nobody here"), None, "fetch", {"url": "https://x"}, facts=facts)
    assert isinstance(told, DenyCall) and 'fetch call ({"url": "https://x"})' in told.reason
    # A tool is judged by what it declares, not by its name: an `ls` that declares
    # nothing asks, and a `bash` that names no command argument is no command.
    assert isinstance(decide({"approval": "untrusted"}, (), "ls", {}, facts=facts), Question)
    assert decide({"approval.deny": ["rm"]}, (), "bash", {"command": "rm x"}, facts=facts) is None


def test_restored_secrets_reach_only_the_tools_that_declare_they_get_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from smith.effects import ToolContext, ToolResult

    monkeypatch.setenv("SMITH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SMITH_CONFIG_HOME", str(tmp_path / "config"))
    proxy = smith.SecretProxy()
    placeholder = proxy.register("DEPLOY_TOKEN", "tok-3141592653", source="test")
    seen: dict[str, tuple[str, str]] = {}

    def spy(name: str) -> ToolSpec:
        def run_(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
            seen[name] = (ctx.env.get("DEPLOY_TOKEN", ""), str(args.get("token", "")))
            return ToolResult("ok")

        schema = {"type": "object", "properties": {"token": {"type": "string"}}}
        return ToolSpec(name, "spy", schema, run_, effect="runs", secrets=name == "given")

    script = tmp_path / "script.json"
    calls = [{"id": n, "name": n, "arguments": {"token": placeholder}} for n in ("given", "other")]
    script.write_text(json.dumps({"responses": [{"tool_calls": calls}, {"text": "done"}]}))

    async def main() -> None:
        async with smith.Agent(f"scripted:{script}", tools=[spy("given"), spy("other")],
                               cwd=str(tmp_path), store=str(tmp_path / "store"),
                               secrets=proxy) as agent:  # fmt: skip
            await agent.send("go")

    run(main)
    assert seen["given"] == ("tok-3141592653", "tok-3141592653")
    assert seen["other"] == ("", placeholder)


def _crashing(name: str, effect: str) -> ToolSpec:
    from smith.effects import ToolContext, ToolResult

    def crash(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
        raise KeyError("surprise")

    return ToolSpec(name, "always crashes", {"type": "object"}, crash, effect=effect)  # type: ignore[arg-type]


@pytest.mark.parametrize(("effect", "mutation"), [("reads", "not-applied"), ("writes", "unknown")])
def test_a_crash_leaves_one_mutation_state_in_a_turn_and_outside_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, effect: str, mutation: str
) -> None:
    """One path runs every call: after a crash the result says what the journal recorded
    (unknown only for a mutating tool), in a turn as through the tool host."""
    from smith.effects import ToolContext
    from smith.runtime import SecretProxy, ToolHost
    from smith.session import Session

    monkeypatch.setenv("SMITH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SMITH_CONFIG_HOME", str(tmp_path / "config"))
    spec = _crashing("crash", effect)
    script = tmp_path / "script.json"
    calls = [{"id": "c1", "name": "crash", "arguments": {}}]
    script.write_text(json.dumps({"responses": [{"tool_calls": calls}, {"text": "done"}]}))
    seen: list[dict[str, Any]] = []

    async def main() -> None:
        async with smith.Agent(f"scripted:{script}", tools=[spec], cwd=str(tmp_path),
                               store=str(tmp_path / "store")) as agent:  # fmt: skip
            agent.on_event(seen.append)
            await agent.send("go")

    run(main)
    [end] = [e for e in seen if e["type"] == "tool_end"]
    assert end["is_error"] and end["result"]["mutation"] == mutation

    session = Session.create(str(tmp_path / "s.smith"), name="t", cwd=str(tmp_path))
    with session:
        context = ToolContext(root=str(tmp_path), cwd=str(tmp_path))
        host = ToolHost(session, {"crash": spec}, context, SecretProxy(), history=None,
                        warn=lambda d: None)  # fmt: skip
        outcome = host.run(spec, {}, review=None)
        recorded = [e.content["mutation"] for e in session.entries()
                    if e.kind == "effect_completion"]  # fmt: skip
    assert not outcome.result.ok and outcome.result.mutation == mutation
    assert recorded == [mutation]
