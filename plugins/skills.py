"""Skills: SKILL.md folders, their index in the system prompt, loaded on demand
(docs/skills.md).

At `session_start` (before the first request) the plugin looks for skills in the
project's .smith/skills (a trusted project's), $SMITH_CONFIG_HOME/skills and, unless
`plugins { skills { other-agents false; }; }`, the folders other agents use (a trusted
project's .claude/skills and .agents/skills, ~/.claude/skills and ~/.agents/skills), in
that order of precedence. It tells the model each skill's name, description and SKILL.md
in a Skills section of the system prompt (AppendSystemPrompt; at most `index-max-bytes`),
never a body, and offers the read-only `skill` tool that loads one. `/skill NAME
[REQUEST]` loads one by hand: the input is sent as the skill's instructions followed by
the request (an `input` hook, so every frontend has it; the app's command submits the
same text); `/skill` alone lists them, `/skill off NAME` deactivates one. What is wrong
with a skill, and which skill another of its name shadows, are warnings (`ui` notify).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smith.config import Boolean, Integer, Option
from smith.sdk import Command, Plugin

if TYPE_CHECKING:
    from smith.sdk import (
        AppendSystemPrompt,
        CommandHost,
        HandleInput,
        RuntimeView,
        TransformInput,
    )
    from smith.ui import Notify

    from ._skilltools import Skills

KIB = 1024
OPTIONS = (
    Option(
        "other-agents",
        Boolean(),
        True,
        doc="Also read the skills of other agents' folders: ~/.claude/skills and "
        "~/.agents/skills, and a trusted project's .claude/skills and .agents/skills.",
    ),
    Option(
        "max-bytes",
        Integer(KIB, 16 * 1024 * KIB, "bytes"),
        64 * KIB,
        doc="Most bytes a skill's SKILL.md (or a file of its folder the skill tool reads) "
        "may have; a larger one is refused, never cut.",
    ),
    Option(
        "index-max-bytes",
        Integer(KIB, 1024 * KIB, "bytes"),
        8 * KIB,
        doc="Most bytes of the skills index in the system prompt; the skills past it are "
        "left out, and the index says how many.",
    ),
)

# The skills of each live runtime, by session (a child runtime shares its parent's).
_LIVE: dict[str, Skills] = {}
ACTIVE = "active"  # the plugin state key: the names of the active skills, in order


def _session_start(
    event: dict[str, Any], view: RuntimeView
) -> list[Notify | AppendSystemPrompt] | None:
    from smith.sdk import AppendSystemPrompt
    from smith.ui import Notify

    from ._skills import discover, index, skill_folders
    from ._skilltools import Skills

    config = view.config
    if config is None:  # a runtime built without configuration: no skills
        return None
    settings = view.settings
    skills = _LIVE.get(view.session_id)
    shown: list[Notify | AppendSystemPrompt] = []
    if skills is None:
        other = bool(settings.get("other-agents", True))
        max_bytes = int(str(settings.get("max-bytes", 64 * KIB)))
        catalog = discover(skill_folders(config, other_agents=other), max_bytes=max_bytes)
        shown = [Notify(w, "warning") for w in catalog.warnings]
        shown += [
            Notify(f"the skill {lost} is shadowed by {kept}, which has its name and comes first",
                   "warning")
            for lost, kept in catalog.shadowed
        ]  # fmt: skip
        if not catalog.skills:  # ... and none left of those this session had active
            gone = view.state.get(ACTIVE)
            shown += [
                Notify(f"the skill {name}, active in this session, is no longer found", "warning")
                for name in (gone if isinstance(gone, list) else [])
            ]
            return shown
        skills = Skills(catalog, view, max_bytes=max_bytes)
        skills.install()
        _LIVE[view.session_id] = skills
        shown += [Notify(w, "warning") for w in skills.restore(view.state.get(ACTIVE))]
    text = index(skills.catalog, max_bytes=int(str(settings.get("index-max-bytes", 8 * KIB))))
    return [*shown, AppendSystemPrompt(text)]


def _turn_end(event: dict[str, Any], view: RuntimeView) -> None:
    _keep_active(view)


def _keep_active(view: RuntimeView) -> None:
    """Record which skills are active in the session's plugin state when that changed,
    so a resumed session offers their tools again."""
    skills = _LIVE.get(view.session_id)
    if skills is None:
        return
    names = list(skills.active)
    if view.state.get(ACTIVE, []) != names:
        view.set_state(ACTIVE, names or None)


def _session_end(event: dict[str, Any], view: RuntimeView) -> None:
    skills = _LIVE.pop(view.session_id, None)
    if skills is not None:
        skills.close()  # the active skills' MCP servers


def _input(event: dict[str, Any], view: RuntimeView) -> HandleInput | TransformInput | None:
    """`/skill NAME [REQUEST]`, `/skill off NAME`, `/skill`."""
    from smith.sdk import HandleInput, TransformInput

    from ._skills import SkillRefused

    text = str(event.get("text", ""))
    word, rest = _word(text)
    if word != "/skill":
        return None
    skills = _LIVE.get(view.session_id)
    if skills is None:
        return HandleInput("there are no skills (docs/skills.md says where they are found)")
    name, request = _word(rest)
    if not name:
        listed = [f"{s.name}: {s.description}" for s in skills.catalog.skills.values()]
        return HandleInput("skills:\n" + "\n".join(listed))
    try:
        if name == "off":
            gone = skills.deactivate(skills.find(request.strip()).name)
            _keep_active(view)
            return HandleInput(f"the skill {request.strip()} is off" + (
                f" (tools no longer offered: {', '.join(gone)})" if gone else ""))  # fmt: skip
        loaded = skills.loaded(skills.find(name))
    except (LookupError, SkillRefused, ValueError) as exc:
        return HandleInput(str(exc))
    ask = request.strip() or "Use this skill for what follows."
    return TransformInput(f"Use the skill {name}, loaded here:\n\n{loaded}\n\n{ask}")


def _word(text: str) -> tuple[str, str]:
    """The first word of `text` and what follows it (split at any whitespace: a tab
    after `/skill` too)."""
    parts = text.strip().split(None, 1)
    return (parts[0], parts[1] if len(parts) > 1 else "") if parts else ("", "")


def _command(host: CommandHost, arg: str) -> object:
    from smith.protocol import ops

    return host.runtime.submit(ops.Prompt(f"/skill {arg}".rstrip()))


def _wants(kind: str, view: RuntimeView) -> bool:
    """Nothing to do in a runtime built without configuration (no folders to read): its
    handlers start no thread there."""
    return view.config is not None


PLUGIN = Plugin(
    "skills",
    options=OPTIONS,
    wants=_wants,
    handlers={
        "session_start": _session_start,
        "turn_end": _turn_end,
        "session_end": _session_end,
        "input": _input,
    },
    # Finding the skills reads every SKILL.md before the first request: more than the
    # default 2 s where there are thousands, or the folders are on a slow file system;
    # and `/skill NAME` connects the skill's MCP servers (each within its startup-timeout).
    handler_deadline=40.0,
    commands=(
        Command(
            "skill",
            "Load a skill's instructions (with a request), or list the skills",
            _command,
            usage="[NAME [REQUEST] | off NAME]",
        ),
    ),
)
