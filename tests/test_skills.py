"""Skills (smith.plugins.skills, docs/skills.md): found in smith's folders and the other
agents', only a trusted project's; the model told each one's name, description and
SKILL.md (bounded), never a body, in its first request; a body loaded on demand by the
`skill` tool or `/skill NAME`; bad skills, collisions and the byte cap reported. Each is
seen as a model sees it: `smith eval --json` with the scripted provider's requests log."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Result, SmithEnv

Eval = tuple[list[dict[str, Any]], list[dict[str, Any]], Result]


def _skill(folder: Path, name: str, description: str, body: str = "", extra: str = "") -> Path:
    path = folder / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: {description}\n{extra}---\n\n{body}\n")
    return path


def _eval(
    senv: SmithEnv,
    smith_process: Callable[..., Result],
    cwd: Path,
    responses: list[dict[str, Any]],
    prompt: str = "hi",
    name: str = "run",
) -> Eval:
    """The requests the model got, the events printed, and the result."""
    log = senv.root / f"{name}.jsonl"
    script = senv.root / f"{name}.json"
    script.write_text(json.dumps({"responses": responses, "requests_log": str(log)}))
    r = smith_process("eval", "--json", "--model", f"scripted:{script}", prompt, cwd=cwd)
    sent = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    events = [json.loads(x) for x in r.out.splitlines() if x.startswith("{")]
    return sent, events, r


def _warnings(events: list[dict[str, Any]]) -> list[str]:
    return [e["text"] for e in events if e.get("type") == "ui" and e.get("level") == "warning"]


def _section(system: str) -> str:
    """The Skills section of a system prompt."""
    start = system.index("Skills: ")
    return system[start:]


def _tools(request: dict[str, Any]) -> list[str]:
    return [t["name"] for t in request["tools"]]


@pytest.fixture
def project(senv: SmithEnv) -> Path:
    return senv.make_project()


def _trust(smith_process: Callable[..., Result], project: Path) -> None:
    assert smith_process("trust", cwd=project).code == 0


FOLDERS = {
    "proj-smith": ".smith/skills",
    "user-smith": "$CONFIG/skills",
    "proj-claude": ".claude/skills",
    "proj-agents": ".agents/skills",
    "user-claude": "~/.claude/skills",
    "user-agents": "~/.agents/skills",
}


def _everywhere(senv: SmithEnv, project: Path, name: str = "") -> dict[str, Path]:
    """A skill in each folder (named after it, or all `name`)."""
    home = Path(senv.env["HOME"])
    made = {}
    for label, where in FOLDERS.items():
        folder = Path(
            where.replace("$CONFIG", str(senv.config_home)).replace("~", str(home))
            if not where.startswith(".")
            else project / where
        )
        made[label] = _skill(
            folder, name or label, f"the {label} skill DESC-{label}", f"BODY-{label}"
        )
    return made


def test_skills_in_every_folder_are_told_in_the_first_request_and_never_a_body(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    made = _everywhere(senv, project)
    _trust(smith_process, project)
    sent, events, r = _eval(senv, smith_process, project, [{"text": "ok"}])
    assert r.code == 0, r.err
    section = _section(sent[0]["system"])
    for label, path in made.items():
        assert f"- {label}: the {label} skill DESC-{label} ({path})" in section
    assert "BODY-" not in json.dumps(sent[0])
    assert "skill" in _tools(sent[0])
    order = [section.index(f"- {label}:") for label in FOLDERS]
    assert order == sorted(order)  # in precedence order
    assert _warnings(events) == []


def test_an_untrusted_projects_folders_are_ignored_and_other_agents_can_be_turned_off(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    _everywhere(senv, project)
    sent, _, r = _eval(senv, smith_process, project, [{"text": "ok"}])
    assert r.code == 0, r.err
    section = _section(sent[0]["system"])
    assert [label for label in FOLDERS if f"- {label}:" in section] == [
        "user-smith", "user-claude", "user-agents",
    ]  # fmt: skip
    senv.write_user_config("plugins {\n    skills {\n        other-agents false\n    }\n}\n")
    _trust(smith_process, project)
    sent, _, r = _eval(senv, smith_process, project, [{"text": "ok"}], name="off")
    assert r.code == 0, r.err
    section = _section(sent[0]["system"])
    assert [label for label in FOLDERS if f"- {label}:" in section] == ["proj-smith", "user-smith"]


def test_no_skills_no_section_and_no_skill_tool(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    sent, _, r = _eval(senv, smith_process, project, [{"text": "ok"}])
    assert r.code == 0, r.err
    assert "Skills: " not in sent[0]["system"]
    assert "skill" not in _tools(sent[0])


def test_a_name_in_two_folders_the_first_wins_and_the_other_is_reported_shadowed(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    made = _everywhere(senv, project, name="same")
    _trust(smith_process, project)
    call = {"id": "c1", "name": "skill", "arguments": {"name": "same"}}
    sent, events, r = _eval(senv, smith_process, project, [{"tool_calls": [call]}, {"text": "ok"}])
    assert r.code == 0, r.err
    section = _section(sent[0]["system"])
    assert section.count("- same:") == 1 and str(made["proj-smith"]) in section
    shadowed = [w for w in _warnings(events) if "shadowed" in w]
    assert len(shadowed) == 5
    for label in list(FOLDERS)[1:]:
        assert any(f"the skill {made[label]} is shadowed by {made['proj-smith']}" in w
                   for w in shadowed)  # fmt: skip
    loaded = next(e for e in events if e.get("type") == "tool_end")
    assert "BODY-proj-smith" in loaded["result"]["text"]


BAD = {
    "plain": ("no front matter at all\n", "it has no front matter"),
    "open": (
        "---\nname: open\ndescription: x\n",
        "the front matter opened by `---` on line 1 is never closed",
    ),
    "yaml": (
        "---\nname: [unclosed\ndescription: x\n---\nbody\n",
        "line 3: the front matter is not YAML: ",
    ),
    "list": ("---\n- a\n- b\n---\nbody\n", "the front matter is a list, not a mapping"),
    "noname": ("---\ndescription: x\n---\nbody\n", "has no `name`"),
    "upper": (
        "---\nname: Upper_Case\ndescription: x\n---\nbody\n",
        "'Upper_Case' is not lowercase",
    ),
    "nodesc": ("---\nname: nodesc\n---\nbody\n", "has no `description`"),
    "longtool": (
        "---\nname: longtool\ndescription: x\ntools:\n  - {name: "
        + "t" * 60
        + ", command: x}\n---\n",
        "would be named past 64 characters",
    ),
    "alias": ("---\nname: &a alias\ndescription: *a\n---\nbody\n", "uses an alias (*name)"),
    "tools": (
        "---\nname: tools\ndescription: x\ntools: 3\n---\nbody\n",
        "its `tools` is not a list",
    ),
}


def test_bad_skills_are_left_out_with_a_warning_naming_the_file_and_why(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    folder = senv.config_home / "skills"
    for name, (text, _) in BAD.items():
        (folder / name).mkdir(parents=True)
        (folder / name / "SKILL.md").write_text(text)
    _skill(folder, "good", "the good one")
    (folder / "notes").mkdir()  # a folder without SKILL.md is no skill, and no warning
    sent, events, r = _eval(senv, smith_process, project, [{"text": "ok"}])
    assert r.code == 0, r.err
    warned = _warnings(events)
    assert len(warned) == len(BAD)
    for name, (_, why) in BAD.items():
        path = folder / name / "SKILL.md"
        assert any(w.startswith(f"the skill {path} was not loaded: ") and why in w
                   for w in warned), (name, warned)  # fmt: skip
    section = _section(sent[0]["system"])
    assert "- good: the good one" in section and section.count("\n- ") == 1


def test_the_index_is_capped_and_says_how_many_skills_it_left_out(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    folder = senv.config_home / "skills"
    for n in range(200):
        _skill(folder, f"skill-{n:03}", f"does task number {n} " + "with many words " * 10)
    sent, _, r = _eval(senv, smith_process, project, [{"text": "ok"}])
    assert r.code == 0, r.err
    section = _section(sent[0]["system"])
    assert len(section.encode()) <= 8 * 1024
    listed = section.count("\n- skill-")
    assert 20 < listed < 200
    assert (
        f"({200 - listed} more skills are not listed: the index is capped at 8,192 bytes" in section
    )
    senv.write_user_config("plugins {\n    skills {\n        index-max-bytes 2048\n    }\n}\n")
    sent, _, r = _eval(senv, smith_process, project, [{"text": "ok"}], name="small")
    section = _section(sent[0]["system"])
    assert len(section.encode()) <= 2048 and section.count("\n- skill-") < listed


def test_a_skill_over_its_byte_cap_is_refused_whole_never_cut(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    folder = senv.config_home / "skills"
    big = _skill(folder, "big", "too big", "x" * (64 * 1024))
    _skill(folder, "small", "fits", "BODY-small " * 200)
    sent, events, r = _eval(senv, smith_process, project, [{"text": "ok"}])
    assert r.code == 0, r.err
    (warned,) = _warnings(events)
    assert warned.startswith(f"the skill {big} was not loaded: it is 65,")
    assert "over the skills' cap of 65,536 (plugins.skills.max-bytes)" in warned
    assert "- big:" not in sent[0]["system"] and "- small:" in sent[0]["system"]
    # a lower cap, configured: the small one is refused too
    senv.write_user_config("plugins {\n    skills {\n        max-bytes 1024\n    }\n}\n")
    sent, events, r = _eval(senv, smith_process, project, [{"text": "ok"}], name="low")
    assert len(_warnings(events)) == 2 and "Skills: " not in sent[0]["system"]


def test_a_skill_that_grew_past_its_cap_since_it_was_found_is_refused_when_loaded(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    path = _skill(project / ".claude" / "skills", "grows", "grows", "BODY-grows")
    _trust(smith_process, project)
    grow = f"head -c 70000 /dev/zero | tr '\\0' x >> {path}"
    responses = [
        {"tool_calls": [{"id": "c1", "name": "bash", "arguments": {"command": grow}}]},
        {"tool_calls": [{"id": "c2", "name": "skill", "arguments": {"name": "grows"}}]},
        {"text": "ok"},
    ]
    sent, events, r = _eval(senv, smith_process, project, responses)
    assert r.code == 0, r.err
    assert path.stat().st_size > 64 * 1024
    end = next(e for e in events if e.get("type") == "tool_end" and e["tool_call_id"] == "c2")
    assert end["is_error"] and "over the skills' cap of 65,536" in json.dumps(end["result"])
    assert "BODY-grows" not in json.dumps(sent)


def test_the_model_loads_a_skill_and_its_references_on_demand(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    path = _skill(senv.config_home / "skills", "pdf-tools", "PDF work", "# PDF\nBODY-8086")
    (path.parent / "references").mkdir()
    (path.parent / "references" / "forms.md").write_text("REFERENCE-TEXT-77\n")
    calls = [
        {"id": "c1", "name": "skill", "arguments": {"name": "pdf-tools"}},
        {
            "id": "c2",
            "name": "skill",
            "arguments": {"name": "pdf-tools", "file": "references/forms.md"},
        },
        {
            "id": "c3",
            "name": "skill",
            "arguments": {"name": "pdf-tools", "file": "../../config.kdl"},
        },
        {"id": "c4", "name": "skill", "arguments": {"name": "nope"}},
    ]
    responses = [{"tool_calls": [c]} for c in calls] + [{"text": "ok"}]
    sent, events, r = _eval(senv, smith_process, project, responses)
    assert r.code == 0, r.err
    assert "BODY-8086" not in json.dumps(sent[0])
    ends = {e["tool_call_id"]: e for e in events if e.get("type") == "tool_end"}
    assert not ends["c1"]["is_error"]
    assert ends["c1"]["result"]["text"].startswith(
        f'<skill name="pdf-tools" path="{path}">\n# PDF\nBODY-8086\n</skill>'
    )
    assert "BODY-8086" in json.dumps(sent[1]["messages"])
    assert ends["c2"]["result"]["text"] == "REFERENCE-TEXT-77\n"
    assert ends["c3"]["is_error"] and "outside" in json.dumps(ends["c3"]["result"])
    assert ends["c4"]["is_error"] and "there is no skill 'nope' (skills: pdf-tools)" in json.dumps(
        ends["c4"]
    )
    assert [e["kind"] for e in events if e.get("type") == "entry"].count(
        "effect_intent"
    ) == 4  # journalled


def test_slash_skill_loads_one_by_hand_into_the_next_user_message(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    _skill(senv.config_home / "skills", "pdf-tools", "PDF work", "# PDF\nBODY-8086")
    sent, _, r = _eval(
        senv, smith_process, project, [{"text": "ok"}], "/skill pdf-tools split a.pdf"
    )
    assert r.code == 0, r.err
    user = sent[0]["messages"][-1]["content"][0]["text"]
    assert user.startswith('Use the skill pdf-tools, loaded here:\n\n<skill name="pdf-tools"')
    assert "BODY-8086" in user and user.endswith("\n\nsplit a.pdf")
    _, events, r = _eval(senv, smith_process, project, [{"text": "ok"}], "/skill nope", name="nope")
    handled = [e for e in events if e.get("type") == "input_handled"]
    assert handled and "there is no skill 'nope' (skills: pdf-tools)" in json.dumps(handled[0])


TOOLISH = (
    "tools:\n"
    "  - name: hello\n"
    "    description: Say hello\n"
    '    command: echo "hello $SKILL_ARGS from $SKILL_DIR"\n'
    "    parameters: {type: object, properties: {who: {type: string}}}\n"
)


def test_activating_a_skill_adds_its_tools_and_deactivating_takes_them_away(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    path = _skill(senv.config_home / "skills", "greet", "Greets", "Use greet__hello.", TOOLISH)
    _skill(senv.config_home / "skills", "other", "Other", "x", TOOLISH)
    responses = [
        {"tool_calls": [{"id": "c1", "name": "skill", "arguments": {"name": "greet"}}]},
        {"tool_calls": [{"id": "c2", "name": "skill", "arguments": {"name": "other"}}]},
        {"tool_calls": [{"id": "c3", "name": "greet__hello", "arguments": {"who": "ada"}}]},
        {
            "tool_calls": [
                {"id": "c4", "name": "skill", "arguments": {"name": "greet", "deactivate": True}}
            ]
        },
        {"text": "ok"},
    ]
    sent, events, r = _eval(senv, smith_process, project, responses)
    assert r.code == 0, r.err
    offered = [[t for t in _tools(q) if "__" in t] for q in sent]
    assert offered == [[], ["greet__hello"], ["greet__hello", "other__hello"],
                       ["greet__hello", "other__hello"], ["other__hello"]]  # fmt: skip
    ends = {e["tool_call_id"]: e for e in events if e.get("type") == "tool_end"}
    assert "Tools it adds while active: greet__hello." in ends["c1"]["result"]["text"]
    said = ends["c3"]["result"]["text"]
    assert said == f'hello {{"who": "ada"}} from {path.parent}\n'
    assert "no longer offered" in ends["c4"]["result"]["text"]


def test_a_resumed_session_offers_the_tools_of_its_active_skills_again(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    _skill(senv.config_home / "skills", "greet", "Greets", "Use greet__hello.", TOOLISH)
    call = {"id": "c1", "name": "skill", "arguments": {"name": "greet"}}
    _, events, r = _eval(senv, smith_process, project, [{"tool_calls": [call]}, {"text": "ok"}])
    assert r.code == 0, r.err
    session = next(e for e in events if e.get("type") == "result")["session"]["id"]
    log = senv.root / "again.jsonl"
    script = senv.root / "again.json"
    script.write_text(json.dumps({"responses": [{"text": "ok"}], "requests_log": str(log)}))
    model = f"scripted:{script}"
    r = smith_process("eval", "--session", session, "--model", model, "more", cwd=project)
    assert r.code == 0, r.err
    first = json.loads(log.read_text().splitlines()[0])
    assert "greet__hello" in _tools(first)
    # off by hand: recorded too, so the next resume offers it no more
    r = smith_process(
        "eval", "--session", session, "--model", model, "/skill off greet", cwd=project
    )
    assert r.code == 0 and "the skill greet is off" in r.out + r.err, r.err
    log.unlink()
    r = smith_process("eval", "--session", session, "--model", model, "more", cwd=project)
    assert "greet__hello" not in _tools(json.loads(log.read_text().splitlines()[0]))


def test_the_apps_skill_command_submits_what_the_input_hook_expands() -> None:
    from smith.plugins.skills import PLUGIN
    from smith.protocol import ops

    submitted: list[object] = []

    class Runtime:
        def submit(self, op: object) -> object:
            submitted.append(op)
            return "p-1"

    class Host:
        runtime = Runtime()

    (command,) = PLUGIN.commands
    assert command.name == "skill"
    command.run(Host(), "pdf-tools split a.pdf")  # type: ignore[arg-type]
    command.run(Host(), "")  # type: ignore[arg-type]
    assert submitted == [ops.Prompt("/skill pdf-tools split a.pdf"), ops.Prompt("/skill")]


def test_a_projects_skill_that_leads_out_of_the_project_is_refused(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    outside = _skill(senv.root / "elsewhere", "outside", "OUTSIDE-DESC", "OUTSIDE-BODY")
    (project / ".agents" / "skills").mkdir(parents=True)
    (project / ".agents" / "skills" / "outside").symlink_to(outside.parent)
    _trust(smith_process, project)
    sent, events, r = _eval(senv, smith_process, project, [{"text": "ok"}])
    assert r.code == 0, r.err
    (warned,) = _warnings(events)
    link = project / ".agents" / "skills" / "outside" / "SKILL.md"
    assert warned.startswith(f"the skill {link} was not loaded: it leads to {outside}")
    assert f"outside the project {project}" in warned
    assert "OUTSIDE" not in json.dumps(sent)


def test_a_project_skill_changed_or_added_since_trust_is_left_out_until_trusted_again(
    senv: SmithEnv, smith_process: Callable[..., Result], project: Path
) -> None:
    """Trust approves a project's skills as they are (smith.trust.approved_file): a
    `git pull` that rewrites one, or adds another, does not reach the model unapproved."""
    folder = project / ".smith" / "skills"
    kept = _skill(folder, "kept", "approved DESC-KEPT")
    changed = _skill(folder, "changed", "approved DESC-OLD")
    _trust(smith_process, project)
    changed.write_text("---\nname: changed\ndescription: rewritten DESC-NEW\n---\n")
    added = _skill(folder, "added", "new DESC-ADDED")
    sent, events, r = _eval(senv, smith_process, project, [{"text": "ok"}])
    assert r.code == 0, r.err
    system = json.dumps(sent[0]["system"])
    assert "DESC-KEPT" in system
    assert "DESC-NEW" not in system and "DESC-OLD" not in system and "DESC-ADDED" not in system
    warned = "\n".join(_warnings(events))
    for path in (changed, added):
        assert f"the skill {path} was not loaded: it was added or changed since you trusted" in (
            warned
        )
    assert str(kept) not in warned
    _trust(smith_process, project)
    sent, _, r = _eval(senv, smith_process, project, [{"text": "ok"}], name="again")
    assert "DESC-NEW" in json.dumps(sent[0]["system"]) and "DESC-ADDED" in json.dumps(sent[0])
