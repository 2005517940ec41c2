"""Agent definitions: what a sub-agent is told and may use (docs/agents.md).

    folders = definition_folders(config)      # in precedence order
    found = discover(folders)                 # definitions by name, what was wrong
    found.definitions["explore"].offered      # the tools it is offered (None: all)

A definition is a Markdown file, `NAME.md`, with YAML front matter (read by
smith.frontmatter) and a body: `name`, `description` (what the model is told when to use
it), `tools` (the tools it is offered: a list or a comma-separated string; absent: all
the parent's) and `model` (absent or `inherit`: the parent's), the format Claude Code's
sub-agents have; the body is its system prompt. They are looked for in a trusted
project's .smith/agents and .claude/agents, then $SMITH_CONFIG_HOME/agents, then the
installed packages' agents/ folders (origin "plugin NAME"), then the built-ins
(`general`, `explore`); the first of a name wins. A file that cannot be used (front
matter that is not YAML, a name or description missing or malformed, a tools value that
is no list of names, a file over MAX_BYTES) is left out with a warning naming it and why.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from smith.config import Config
    from smith.effects import Reach

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]+")
MAX_BYTES = 256 * 1024  # a definition is a prompt; one larger is a mistake
DESCRIPTION_MAX = 1024
READ_ONLY = ("read", "grep", "find", "ls")
# Claude Code's tool names, as its definitions list them, and smith's tool for each.
CLAUDE_TOOLS = {
    "Read": "read", "Grep": "grep", "Glob": "find", "LS": "ls", "Bash": "bash",
    "Edit": "edit", "MultiEdit": "edit", "Write": "write", "Task": "task",
    "TodoWrite": "todo", "NotebookRead": "read",
}  # fmt: skip
# Claude Code's model names: in a .claude definition they mean "the parent's model".
CLAUDE_MODELS = ("sonnet", "opus", "haiku")


@dataclass(frozen=True, slots=True)
class Definition:
    """A sub-agent: `offered`, the tools it is offered (None: every tool its parent has);
    `model` None: its parent's; `prompt` None: smith's own system prompt; `source`: the
    file it came from, or "built-in"."""

    name: str
    description: str
    offered: tuple[str, ...] | None = None
    model: str | None = None
    prompt: str | None = None
    source: str = "built-in"


EXPLORE_PROMPT = """\
You are a sub-agent exploring a codebase for another agent, which gave you the task \
below and reads only your final answer. You can read, search and list files; you cannot \
change anything or run commands. Look as widely as the task needs, then answer with what \
you found: the files and lines that matter, and what they say, concisely. Quote only what \
the other agent needs."""

BUILTINS: dict[str, Definition] = {
    "general": Definition(
        "general", "your tools, for a task of several steps (research, a wide search, a change)."
    ),
    "explore": Definition(
        "explore",
        "read-only (read, grep, find, ls), to answer a question about the code.",
        offered=READ_ONLY,
        prompt=EXPLORE_PROMPT,
    ),
}


@dataclass(frozen=True, slots=True)
class Folder:
    """A directory of definitions; `claude`: Claude Code's (its tool and model names)."""

    path: str
    origin: str  # "project", "project .claude", "user", "plugin NAME"
    reach: Reach
    claude: bool = False
    # A project's: whether a file is as the user approved it (plugins._projectfiles).
    approve: Callable[[str, bytes], bool] | None = None


@dataclass(frozen=True, slots=True)
class Found:
    """What discovery found: the definitions by name (built-ins included), and a
    warning for each file left out or shadowed."""

    definitions: Mapping[str, Definition]
    warnings: tuple[str, ...] = ()


class Refused(Exception):
    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"the agent definition {path} is not used: {why}")


def definition_folders(config: Config) -> list[Folder]:
    """Where definitions are looked for, in precedence order (see the module): a
    project's folders only when it is trusted; a folder reached twice is looked at once."""
    from smith.effects import Reach

    config_home = str(config["config-home"])
    root = config.project_root
    project = Reach.project(root, private=(config.home, config_home))
    found: list[Folder] = []
    from smith import trust

    if trust.looked_into(config.home, root, applied=config.project_trusted):
        approve = functools.partial(trust.approved_file, config.home, root)
        found.append(
            Folder(os.path.join(root, ".smith", "agents"), "project", project, False, approve)
        )
        found.append(
            Folder(
                os.path.join(root, ".claude", "agents"), "project .claude", project, True, approve
            )
        )
    user = Reach.anywhere(private=(config.home,))
    found.append(Folder(os.path.join(config_home, "agents"), "user", user))
    found += package_definition_folders(config)
    from smith.paths import distinct_places

    return distinct_places(found, lambda folder: folder.path)


def package_definition_folders(config: Config) -> list[Folder]:
    """The agents/ folders of the enabled installed packages (smith.packages), each named
    "plugin NAME", a Claude Code plugin's with Claude Code's tool and model names; read
    within the package (a project's is approved whole by `smith trust`)."""
    from smith.effects import Reach
    from smith.packages import package_folders

    private = (config.home, str(config["config-home"]))
    return [
        Folder(
            path,
            package.origin,
            Reach.project(package.root, private=private),
            package.kind == "claude",
        )
        for path, package in package_folders(config, "agents")
    ]


def discover(folders: Sequence[Folder]) -> Found:
    """Every definition in `folders` (each `*.md` file, in name order), then the
    built-ins: the first of a name wins, a later one is a warning."""
    found: dict[str, Definition] = {}
    warnings: list[str] = []
    for folder in folders:
        try:
            names = sorted(os.listdir(folder.path))
        except FileNotFoundError:
            continue
        except OSError as exc:
            warnings.append(f"the agents folder {folder.path} cannot be read: {exc.strerror}")
            continue
        for name in names:
            path = os.path.join(folder.path, name)
            if not name.endswith(".md") or not os.path.isfile(path):
                continue
            try:
                definition = load(path, folder)
            except Refused as exc:
                warnings.append(str(exc))
                continue
            kept = found.get(definition.name)
            if kept is not None:
                warnings.append(
                    f"the agent definition {path} is shadowed by {kept.source}, which has "
                    f"its name ({definition.name}) and comes first"
                )
                continue
            found[definition.name] = definition
            if folder.claude and (unknown := _unmapped(definition.offered)):
                warnings.append(
                    f"the agent definition {path} names Claude Code tools smith has no "
                    f"counterpart of: {', '.join(unknown)}; it is offered the others"
                )
    for name, builtin in BUILTINS.items():
        found.setdefault(name, builtin)
    return Found(found, tuple(warnings))


def load(path: str, folder: Folder) -> Definition:
    """The definition in the file at `path`; raises Refused saying why it is not used."""
    from smith.effects import FileRefused, FileTooBig, read_file
    from smith.frontmatter import FrontMatterError, split

    try:
        data = read_file(path, limit=MAX_BYTES, reach=folder.reach)
        if folder.approve is not None and not folder.approve(path, data):
            from smith.trust import UNAPPROVED_FILE

            raise Refused(path, UNAPPROVED_FILE)
        text = data.decode("utf-8")
    except FileTooBig as exc:
        raise Refused(path, f"it is {exc.size:,} bytes, over the cap of {MAX_BYTES:,}") from None
    except FileRefused as exc:
        raise Refused(path, exc.reason) from None
    except OSError as exc:
        raise Refused(path, exc.strerror or str(exc)) from None
    except UnicodeDecodeError:
        raise Refused(path, "it is not UTF-8 text") from None
    if not text.lstrip("\ufeff").startswith("---"):
        raise Refused(path, "it has no front matter (a first line `---`, then name and "
                            "description, then `---`)")  # fmt: skip
    try:
        meta, body = split(text.lstrip("\ufeff"))
    except FrontMatterError as exc:
        raise Refused(path, str(exc)) from None
    name = meta.get("name", os.path.basename(path)[: -len(".md")])
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise Refused(path, f"its name {name!r} is not a name (letters, digits, '-', '_', "
                            "'.', at most 64)")  # fmt: skip
    description = meta.get("description")
    if not isinstance(description, str) or not description.strip():
        raise Refused(path, "it has no description (what the model is told about when to "
                            "use it)")  # fmt: skip
    if len(description) > DESCRIPTION_MAX:
        raise Refused(path, f"its description is over {DESCRIPTION_MAX} characters")
    return Definition(
        name,
        " ".join(description.split()),
        offered=_tools(meta.get("tools"), path, folder.claude),
        model=_model(meta.get("model"), path, folder.claude),
        prompt=body.strip() or None,
        source=path,
    )


def _tools(value: object, path: str, claude: bool) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(t, str) for t in items):
        raise Refused(path, "its tools are not a list of tool names (a YAML list, or names "
                            "separated by commas)")  # fmt: skip
    names = [t.strip() for t in items if t.strip()]
    if bad := [t for t in names if not TOOL_NAME.fullmatch(t)]:
        raise Refused(path, f"{bad[0]!r} in its tools is not a tool name")
    if claude:
        names = [CLAUDE_TOOLS.get(t, t) for t in names]
    return tuple(dict.fromkeys(names))


def _unmapped(offered: tuple[str, ...] | None) -> list[str]:
    """The Claude Code tool names (capitalised: smith's are not) left in a .claude
    definition's tools once CLAUDE_TOOLS mapped the rest: no tool of smith's has them."""
    return [t for t in offered or () if t[:1].isupper()]


def _model(value: object, path: str, claude: bool) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise Refused(path, "its model is not a model name")
    if value.strip() == "inherit" or (claude and value.strip() in CLAUDE_MODELS):
        return None
    return value.strip()


__all__ = ["BUILTINS", "Definition", "Folder", "Found", "definition_folders", "discover"]
