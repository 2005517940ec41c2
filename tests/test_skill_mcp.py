"""A skill that names MCP servers (front matter `mcp`, docs/skills.md): activating it
connects them (smith.plugins.mcp.connect, in the sandbox) and offers their tools as
`<skill>__<tool>`; deactivating it stops them and rebuilds the tool set. The server is
the official SDK's MCPServer (tests/mcp_client_kit.py), kept in the skill's folder in
smith's configuration directory (which the sandbox hides, but for that folder)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests import mcp_client_kit as kit
from tests.conftest import Result, SmithEnv

PY = sys.executable


def _skill(folder: Path, marks: Path, extra: str = "") -> Path:
    """The skill `kitty`, its server in its folder, named with $SKILL_DIR."""
    kit.write_server(folder)
    path = folder / "SKILL.md"
    path.write_text(
        "---\nname: kitty\ndescription: Echoes through an MCP server\nmcp:\n  k:\n"
        f'    command: {PY}\n    args: ["$SKILL_DIR/kit_server.py"]\n'
        f'    env: {{MARKS: "{marks}"}}\n    deny: [crash]\n{extra}---\n\nUse kitty__echo.\n'
    )
    return path


Ran = tuple[list[Any], list[Any], Result]


def _eval(senv: SmithEnv, smith_process: Callable[..., Result], project: Path,
          responses: list[dict[str, Any]], prompt: str = "go") -> Ran:  # fmt: skip
    model, log = kit.script(senv.root, responses)
    r = smith_process("eval", "--json", "--model", model, prompt, cwd=project)
    return kit.requests(log), kit.events(r.out), r


def _skill_tools(request: dict[str, Any]) -> list[str]:
    return sorted(t for t in kit.tool_names(request) if t.startswith("kitty__"))


def test_activating_a_skill_connects_its_servers_and_deactivating_stops_them(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = senv.make_project()
    marks = project / "marks"
    marks.mkdir()
    _skill(senv.config_home / "skills" / "kitty", marks)
    calls = [
        {"id": "c1", "name": "skill", "arguments": {"name": "kitty"}},
        {"id": "c2", "name": "kitty__echo", "arguments": {"text": "hi"}},
        {"id": "c3", "name": "skill", "arguments": {"name": "kitty", "deactivate": True}},
    ]
    responses = [{"tool_calls": [c]} for c in calls] + [{"text": "ok", "stop": "end"}]
    sent, evs, r = _eval(senv, smith_process, project, responses)
    assert r.code == 0, r.err
    assert not (marks / "starts").exists() or sent  # nothing started before the load
    offered = [_skill_tools(q) for q in sent]
    mine = ["kitty__echo", "kitty__fail", "kitty__remove_everything", "kitty__slow"]
    assert offered == [[], mine, mine, []]  # crash denied by the server's `deny`
    loaded = kit.tool_end(evs, "c1")["result"]["text"]
    assert "Tools it adds while active: kitty__echo" in loaded
    echo = kit.tool_end(evs, "c2")
    assert echo["result"]["text"] == "echo:hi" and not echo["is_error"]
    assert "kitty__echo" in kit.tool_end(evs, "c3")["result"]["text"]  # no longer offered
    assert (marks / "starts").read_text() == "start\n"  # one server, started once
    # Its effect class comes from the tool's annotations, as a configured server's does.
    facts = next(t for t in sent[1]["tools"] if t["name"] == "kitty__remove_everything")
    assert "MCP server 'k'" in facts["description"]


def test_slash_skill_connects_them_too_and_a_bad_server_is_said_not_fatal(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = senv.make_project()
    marks = project / "marks"
    marks.mkdir()
    bad = "  broken:\n    command: x\n    url: http://127.0.0.1:1/mcp\n"
    _skill(senv.config_home / "skills" / "kitty", marks, bad)
    sent, _, r = _eval(senv, smith_process, project, [{"text": "ok", "stop": "end"}],
                       prompt="/skill kitty say hi")  # fmt: skip
    assert r.code == 0, r.err
    assert "kitty__echo" in _skill_tools(sent[0])
    user = [m for m in sent[0]["messages"] if m["role"] == "user"][-1]
    text = json.dumps(user)
    assert "Not available: MCP server 'broken': url is given beside command" in text


def test_a_project_skill_changed_since_trust_starts_no_server(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = senv.make_project()
    marks = project / "marks"
    marks.mkdir()
    folder = project / ".smith" / "skills" / "kitty"
    path = _skill(folder, marks)
    path.write_text(path.read_text().replace("mcp:", "other:"))  # approved without a server
    assert smith_process("trust", cwd=project).code == 0
    _skill(folder, marks)  # then a server added (a git pull)
    call = {"id": "c1", "name": "skill", "arguments": {"name": "kitty"}}
    sent, evs, r = _eval(senv, smith_process, project,
                         [{"tool_calls": [call]}, {"text": "ok", "stop": "end"}])  # fmt: skip
    assert r.code == 0, r.err
    assert kit.tool_end(evs, "c1")["is_error"]  # no such skill: it was left out
    assert not (marks / "starts").exists()
    assert all(not _skill_tools(q) for q in sent)


def test_front_matter_mcp_of_the_wrong_shape_is_refused() -> None:
    import pytest

    from smith.effects import Reach
    from smith.plugins._skills import Skill, SkillRefused
    from smith.plugins._skilltools import mcp_servers

    skill = Skill("s", "d", "/x/s/SKILL.md", "user", Reach.anywhere(private=()))
    with pytest.raises(SkillRefused, match="not a mapping of server names"):
        mcp_servers(["k"], skill)
    got = mcp_servers({"k": {"command": "$SKILL_DIR/run", "args": ["${SKILL_DIR}/a"],
                             "url": "$SKILL_DIR"}}, skill)  # fmt: skip
    assert got == {"k": {"command": "/x/s/run", "args": ["/x/s/a"], "url": "$SKILL_DIR"}}


def test_a_resumed_session_connects_its_active_skills_servers_again(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = senv.make_project()
    marks = project / "marks"
    marks.mkdir()
    _skill(senv.config_home / "skills" / "kitty", marks)
    call = {"id": "c1", "name": "skill", "arguments": {"name": "kitty"}}
    _, evs, r = _eval(senv, smith_process, project,
                      [{"tool_calls": [call]}, {"text": "ok", "stop": "end"}])  # fmt: skip
    assert r.code == 0, r.err
    session = next(e for e in evs if e.get("type") == "result")["session"]["id"]
    (senv.root / "requests.jsonl").unlink()  # the script's log: the second run's alone
    model, log = kit.script(senv.root, [
        {"tool_calls": [{"id": "c2", "name": "kitty__echo", "arguments": {"text": "again"}}]},
        {"text": "ok", "stop": "end"},
    ])  # fmt: skip
    r = smith_process("eval", "--json", "--session", session, "--model", model, "more",
                      cwd=project)  # fmt: skip
    assert r.code == 0, r.err
    assert "kitty__echo" in _skill_tools(kit.requests(log)[0])
    assert kit.tool_end(kit.events(r.out), "c2")["result"]["text"] == "echo:again"
    assert (marks / "starts").read_text() == "start\nstart\n"  # once in each process
