"""Skills as the peers share them: where they are found, what their SKILL.md says, and
the index the model is told (docs/skills.md).

    folders = skill_folders(config, other_agents=True)   # in precedence order
    catalog = discover(folders, max_bytes=64 * 1024)       # skills, what was wrong, shadowed
    text = index(catalog, max_bytes=8 * 1024)              # the system prompt's section

A skill is a directory holding SKILL.md: YAML front matter (`name`, `description`, and
optionally `tools`, smith's own) between `---` lines, then the instructions. The front
matter is read by smith.frontmatter (PyYAML's safe loader, no aliases). A skill
that cannot be used (no front matter, YAML that does not parse, a name or description
missing or malformed, a SKILL.md over its byte cap, a file smith will not read) is left
out with a warning naming its file and why; of two skills of one name, the one in the
folder that comes first wins and the other is reported as shadowed.
"""

from __future__ import annotations

import functools
import os
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from smith.config import Config
    from smith.effects import Reach

NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
NAME_MAX = 64  # the Agent Skills format's bounds
DESCRIPTION_MAX = 1024
TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]+")
RESERVED = ("off",)  # `/skill off NAME` turns a skill off: no skill may be named so
# Bidirectional embeddings, overrides, isolates and marks: they reorder text on screen.
BIDI = frozenset(
    chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)
)


def one_line(text: str) -> str:
    """`text` as one line of the index: whitespace runs (newlines too) one space, and
    control characters (ESC, NUL, ...) and bidirectional overrides left out."""
    return "".join(
        c for c in " ".join(text.split()) if c not in BIDI and unicodedata.category(c) != "Cc"
    )


def shown_path(path: str) -> str:
    """`path` on one line, its control characters and overrides made visible
    (smith.text.inert, and ^J for a newline, ^I for a tab)."""
    from smith.text import inert

    return inert(path).replace("\n", "^J").replace("\t", "^I")


def _unsafe(name: str) -> bool:
    """Whether a folder name would break a line it is shown in: control characters (a
    newline), bidirectional overrides, line or paragraph separators."""
    return any(c in BIDI or unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in name)


@dataclass(frozen=True, slots=True)
class Folder:
    """A directory of skills, one per subdirectory: `origin` says whose (shown in the
    index and in warnings); `reach` is where its files may lead (smith.effects.Reach)."""

    path: str
    origin: str  # "project", "user", "plugin NAME", "project .claude", "user .agents", ...
    reach: Reach
    # A project's: whether a SKILL.md's content is what the user approved when trusting
    # the project (smith.trust.approved_file); None: the user's own, always used.
    approve: Callable[[str, bytes], bool] | None = None


@dataclass(frozen=True, slots=True)
class SkillTool:
    """A tool a skill brings (front matter `tools`): offered as `<skill>__<name>` while
    the skill is active; a call runs `command` (bash, in the sandbox) with the arguments
    as JSON in $SKILL_ARGS and the skill's directory in $SKILL_DIR."""

    name: str
    description: str
    command: str
    parameters: Mapping[str, object]


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    path: str  # its SKILL.md
    origin: str
    reach: Reach = field(repr=False)
    tools: tuple[SkillTool, ...] = ()
    approve: Callable[[str, bytes], bool] | None = field(default=None, repr=False)

    @property
    def directory(self) -> str:
        return os.path.dirname(self.path)


@dataclass(frozen=True, slots=True)
class Catalog:
    """What discovery found: the usable skills by name (in precedence order), a warning
    for each skill left out, and (shadowed SKILL.md, the one that wins) per collision."""

    skills: Mapping[str, Skill]
    warnings: tuple[str, ...] = ()
    shadowed: tuple[tuple[str, str], ...] = ()


def skill_folders(config: Config, *, other_agents: bool) -> list[Folder]:
    """Where skills are looked for, in precedence order (the first of a name wins):
    the project's .smith/skills, the user's $SMITH_CONFIG_HOME/skills, the installed
    packages' skills/ folders (package_skill_folders), then the other
    agents' folders (with `other_agents`): the project's .claude/skills and
    .agents/skills, the user's ~/.claude/skills and ~/.agents/skills. A project's
    folders only when the project is trusted. A folder reached twice (the project is
    the home directory) is looked at once."""
    from smith import trust
    from smith.effects import Reach

    home = os.path.expanduser("~")
    config_home = str(config["config-home"])
    data = config.home
    user = Reach.anywhere(private=(data,))
    project = Reach.project(config.project_root, private=(data, config_home))
    root = config.project_root
    trusted = trust.looked_into(config.home, root, applied=config.project_trusted)
    approve = functools.partial(trust.approved_file, config.home, root)
    found: list[Folder] = []
    if trusted:
        found.append(Folder(os.path.join(root, ".smith", "skills"), "project", project, approve))
    found.append(Folder(os.path.join(config_home, "skills"), "user", user))
    found += package_skill_folders(config)
    if other_agents:
        if trusted:
            found.append(
                Folder(os.path.join(root, ".claude", "skills"), "project .claude", project, approve)
            )
            found.append(
                Folder(os.path.join(root, ".agents", "skills"), "project .agents", project, approve)
            )
        found.append(Folder(os.path.join(home, ".claude", "skills"), "user .claude", user))
        found.append(Folder(os.path.join(home, ".agents", "skills"), "user .agents", user))
    from smith.paths import distinct_places

    return distinct_places(found, lambda folder: folder.path)


def package_skill_folders(config: Config) -> list[Folder]:
    """The skills/ folders of the enabled installed packages (smith.packages), each named
    "plugin NAME": read within the package (smith's data directory holds it; a project's
    package is approved whole by `smith trust`, smith.packages.installed)."""
    from smith.effects import Reach
    from smith.packages import package_folders

    private = (config.home, str(config["config-home"]))
    return [
        Folder(
            path,
            package.origin,
            Reach.project(package.root, private=private),
        )
        for path, package in package_folders(config, "skills")
    ]


def discover(folders: Sequence[Folder], *, max_bytes: int) -> Catalog:
    """Every skill in `folders` (see the module doc): each subdirectory with a SKILL.md,
    in name order within a folder."""
    skills: dict[str, Skill] = {}
    warnings: list[str] = []
    shadowed: list[tuple[str, str]] = []
    for folder in folders:
        try:
            entries = sorted(os.scandir(folder.path), key=lambda e: e.name)
        except FileNotFoundError:
            continue
        except OSError as exc:
            warnings.append(f"the skills folder {folder.path} cannot be read: {exc.strerror}")
            continue
        for entry in entries:
            path = os.path.join(entry.path, "SKILL.md")
            if entry.name.startswith(".") or not os.path.lexists(path):
                continue  # not a skill: its folder may hold other things
            if _unsafe(entry.name):
                warnings.append(
                    f"the skill folder {shown_path(entry.path)} was not loaded: its name "
                    "has control characters (a newline, an escape) or bidirectional overrides"
                )
                continue
            try:
                skill = load(path, folder.origin, folder.reach, max_bytes=max_bytes,
                             approve=folder.approve)  # fmt: skip
            except SkillRefused as exc:
                warnings.append(str(exc))
                continue
            first = skills.get(skill.name)
            if first is not None:
                shadowed.append((skill.path, first.path))
                continue
            skills[skill.name] = skill
    return Catalog(skills, tuple(warnings), tuple(shadowed))


class SkillRefused(Exception):
    """A skill smith will not use; the message names its file and why."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"the skill {path} was not loaded: {why}")
        self.path = path
        self.why = why


def read_text(
    path: str, reach: Reach, *, max_bytes: int, approve: Callable[[str, bytes], bool] | None = None
) -> str:
    """SKILL.md's text (or a file of the skill's), as smith reads any file on someone's
    behalf: refused whole past `max_bytes`, never cut; a project's SKILL.md only as the
    user approved it (`approve`, see Folder). Raises SkillRefused."""
    from smith.effects import FileRefused, FileTooBig, read_file

    try:
        data = read_file(path, limit=max_bytes, reach=reach)
    except FileTooBig as exc:
        raise SkillRefused(
            path,
            f"it is {exc.size:,} bytes, over the skills' cap of {max_bytes:,} "
            "(plugins.skills.max-bytes); a skill is never cut, so shorten it or raise the cap",
        ) from None
    except FileRefused as exc:
        raise SkillRefused(path, exc.reason) from None
    except OSError as exc:
        raise SkillRefused(path, exc.strerror or str(exc)) from None
    if approve is not None and not approve(path, data):
        from smith.trust import UNAPPROVED_FILE

        raise SkillRefused(path, UNAPPROVED_FILE)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SkillRefused(path, "it is not UTF-8 text") from None


def split(text: str, path: str) -> tuple[dict[str, object], str]:
    """(front matter, body) of SKILL.md's text (smith.frontmatter); raises SkillRefused."""
    from smith.frontmatter import FrontMatterError
    from smith.frontmatter import split as front_matter

    text = text.lstrip("\ufeff")
    if text.split("\n", 1)[0].strip() != "---":
        raise SkillRefused(path, "it has no front matter (a first line '---', YAML, then '---')")
    try:
        meta, body = front_matter(text)
    except FrontMatterError as exc:
        raise SkillRefused(path, str(exc)) from None
    return meta, body.lstrip("\n")


def load(
    path: str,
    origin: str,
    reach: Reach,
    *,
    max_bytes: int,
    approve: Callable[[str, bytes], bool] | None = None,
) -> Skill:
    """The skill whose SKILL.md is `path`; raises SkillRefused saying why not."""
    meta, _ = split(read_text(path, reach, max_bytes=max_bytes, approve=approve), path)
    name, description = meta.get("name"), meta.get("description")
    if name is not None and not isinstance(name, str):
        raise SkillRefused(
            path,
            f"its `name` is {name!r}, not text (YAML reads off, no, yes as booleans: quote it)",
        )
    if not isinstance(name, str) or not name:
        raise SkillRefused(path, "its front matter has no `name`")
    if not NAME.fullmatch(name) or len(name) > NAME_MAX:
        raise SkillRefused(
            path,
            f"its name {name!r} is not lowercase letters, digits and single hyphens "
            f"(at most {NAME_MAX} characters)",
        )
    if name in RESERVED:
        raise SkillRefused(path, f"its name {name} is reserved (`/skill off NAME` turns one off)")
    if not isinstance(description, str) or not description.strip():
        raise SkillRefused(path, "its front matter has no `description`")
    if len(description) > DESCRIPTION_MAX:
        raise SkillRefused(
            path, f"its description is {len(description):,} characters, over {DESCRIPTION_MAX:,}"
        )
    tools = _tools(meta.get("tools"), path)
    for tool in tools:
        if len(f"{name}__{tool.name}") > NAME_MAX:
            raise SkillRefused(
                path, f"its tool {name}__{tool.name} would be named past {NAME_MAX} characters"
            )
    return Skill(name, one_line(description), path, origin, reach, tools, approve)


def _tools(value: object, path: str) -> tuple[SkillTool, ...]:
    """Front matter `tools`: a list of {name, description, command, parameters}."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise SkillRefused(path, "its `tools` is not a list")
    tools: list[SkillTool] = []
    for n, item in enumerate(value, 1):
        if not isinstance(item, dict):
            raise SkillRefused(path, f"tool {n} of its `tools` is not a mapping")
        name, command = item.get("name"), item.get("command")
        if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
            raise SkillRefused(path, f"tool {n} of its `tools` has no name of [a-zA-Z0-9_-]")
        if any(t.name == name for t in tools):
            raise SkillRefused(path, f"its `tools` name {name} twice")
        if not isinstance(command, str) or not command.strip():
            raise SkillRefused(path, f"its tool {name} has no `command`")
        params = item.get("parameters") or {"type": "object", "properties": {}}
        if not isinstance(params, dict) or params.get("type") != "object":
            raise SkillRefused(path, f"its tool {name}'s `parameters` is no object schema")
        description = str(item.get("description") or f"{name}, from a skill")
        tools.append(SkillTool(name, description, command, params))
    return tuple(tools)


INTRO = (
    "Skills: folders of instructions (and sometimes scripts and references) for kinds of "
    "task. Each line is a skill's name, what it is for, and its SKILL.md. When a task "
    "matches a skill's description, load it first with the `skill` tool (its name) and "
    "follow what it says; do not load skills a task does not need."
)


def index(catalog: Catalog, *, max_bytes: int) -> str:
    """The section the model is told: a line per skill (name, description, SKILL.md), in
    precedence order, at most `max_bytes` in all; the skills past it are left out, and
    a last line says how many and why. Empty when there are no skills."""
    if not catalog.skills:
        return ""
    text = INTRO
    size = len(text.encode())
    left = list(catalog.skills.values())
    for n, skill in enumerate(left):
        line = f"\n- {skill.name}: {skill.description} ({shown_path(skill.path)})"
        rest = len(left) - n
        note = (
            f"\n({rest} more skill{'s are' if rest > 1 else ' is'} not listed: the index is "
            f"capped at {max_bytes:,} bytes, plugins.skills.index-max-bytes)"
        )
        # room for this line, and for the note should the next one not fit
        if size + len(line.encode()) + (len(note.encode()) if rest > 1 else 0) > max_bytes:
            return text + note
        text += line
        size += len(line.encode())
    return text
