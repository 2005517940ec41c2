"""One runtime's skills: the catalog it found, the skills active in it, and the tools
they offer (the `skill` tool, and each active skill's own as `<skill>__<tool>`).

Loading a skill (the `skill` tool, or `/skill NAME`) reads its SKILL.md again, under its
byte cap (refused whole past it, never cut), and activates it: its own tools join the
plugin's tool set, and so do the tools of the MCP servers its front matter's `mcp` names
(connected then, by smith.plugins.mcp.connect, as `<skill>__<tool>`). Deactivating it
stops its servers and rebuilds the set from the skills still active, so a tool it
replaced is offered again (view.set_tools: the next request offers the new set).
"""

from __future__ import annotations

import json
import shlex
import threading
from typing import TYPE_CHECKING

from ._skills import Catalog, Skill, SkillRefused, SkillTool, read_text, split

if TYPE_CHECKING:
    from smith.effects import ToolContext, ToolResult, ToolSpec
    from smith.sdk import RuntimeView

    from .mcp import Servers

SKILL_TOOL = "skill"
NAMED = 20  # skills an unknown name's error lists at most


class Skills:
    """The skills of one runtime (shared with its child runtimes)."""

    def __init__(self, catalog: Catalog, view: RuntimeView, *, max_bytes: int) -> None:
        self.catalog = catalog
        self.view = view
        self.max_bytes = max_bytes
        self.active: dict[str, Skill] = {}  # in the order they were activated
        self.servers: dict[str, Servers] = {}  # an active skill's MCP servers
        self.said: dict[str, list[str]] = {}  # what its servers could not give, at activation
        self._lock = threading.Lock()

    # -- loading --------------------------------------------------------------------

    def find(self, name: str) -> Skill:
        skill = self.catalog.skills.get(name.strip())
        if skill is None:
            names = list(self.catalog.skills)
            known = ", ".join(names[:NAMED]) or "none"
            more = f" and {len(names) - NAMED} more" if len(names) > NAMED else ""
            raise LookupError(f"there is no skill {name!r} (skills: {known}{more})")
        return skill

    def body(self, skill: Skill) -> str:
        """Its instructions (SKILL.md less the front matter), read now; SkillRefused."""
        text = read_text(skill.path, skill.reach, max_bytes=self.max_bytes, approve=skill.approve)
        return split(text, skill.path)[1]

    def activate(self, skill: Skill) -> list[str]:
        """Make `skill` active, its MCP servers connected: the names of the tools it adds
        (none if it was active). SkillRefused (its `mcp` malformed, SKILL.md no longer
        readable as approved), ValueError (a tool name another plugin's tool has)."""
        with self._lock:
            if skill.name in self.active:
                return []
            servers = self._connect(skill)
            self.active[skill.name] = skill
            if servers is not None:
                self.servers[skill.name] = servers
            try:
                self._publish()
            except ValueError:
                del self.active[skill.name]
                self._stop(skill.name)
                self._publish()
                raise
        return self.names(skill)

    def names(self, skill: Skill) -> list[str]:
        """The names of the tools `skill` offers while active."""
        own = [tool_name(skill, t) for t in skill.tools]
        servers = self.servers.get(skill.name)
        return own + [t.name for t in servers.tools()] if servers is not None else own

    def _connect(self, skill: Skill) -> Servers | None:
        """The MCP servers `skill`'s front matter names (`mcp`), connected; None for none.
        A project's skill only as the user approved it (read again here)."""
        from smith.diagnostics import Source

        from .mcp import connect

        text = read_text(skill.path, skill.reach, max_bytes=self.max_bytes, approve=skill.approve)
        wanted = mcp_servers(split(text, skill.path)[0].get("mcp"), skill)
        if not wanted:
            return None
        config = self.view.config
        servers = connect(
            skill.name,
            wanted,
            context=self.view.context,
            home=config.home if config is not None else None,
            source=Source("file", skill.path),
            readable=(skill.directory,),
        )
        own = {tool_name(skill, t) for t in skill.tools}
        clash = [t.name for t in servers.tools() if t.name in own]
        self.said[skill.name] = list(servers.problems) + [
            f"the MCP tool {name} is not offered: the skill's own tool has its name"
            for name in clash
        ]
        if clash:
            servers.drop(clash)
        return servers

    def _stop(self, name: str) -> None:
        servers = self.servers.pop(name, None)
        self.said.pop(name, None)
        if servers is not None:
            servers.close()

    def close(self) -> None:
        """Stop every active skill's MCP servers (the session ended)."""
        with self._lock:
            for name in list(self.servers):
                self._stop(name)

    def restore(self, names: object) -> list[str]:
        """Activate again the skills a resumed session had active (`names`, from its
        plugin state); a warning for each that cannot be."""
        warnings = []
        for name in names if isinstance(names, list) else []:
            skill = self.catalog.skills.get(str(name))
            if skill is None:
                warnings.append(f"the skill {name}, active in this session, is no longer found")
                continue
            try:
                self.activate(skill)
            except (ValueError, SkillRefused) as exc:
                warnings.append(f"the skill {name} cannot be active again: {exc}")
                continue
            warnings += [f"the skill {name}: {said}" for said in self.said.get(name, [])]
        return warnings

    def deactivate(self, name: str) -> list[str]:
        """Make skill `name` inactive: the names of the tools that went with it."""
        with self._lock:
            skill = self.active.get(name)
            if skill is None:
                raise LookupError(f"the skill {name!r} is not active")
            gone = self.names(skill)
            del self.active[name]
            self._stop(name)
            self._publish()
        return gone

    def loaded(self, skill: Skill) -> str:
        """What the model is given for a loaded skill: its instructions, where its folder
        is, and the tools it added. Raises SkillRefused (over its cap, unreadable)."""
        body = self.body(skill)
        added = self.activate(skill)
        lines = [
            f'<skill name="{skill.name}" path="{skill.path}">',
            body.rstrip("\n"),
            "</skill>",
            f"The skill's folder is {skill.directory}: the scripts and references it names "
            f"are there (read one with the `{SKILL_TOOL}` tool's `file`).",
        ]
        if added:
            lines.append(f"Tools it adds while active: {', '.join(added)}.")
        lines += [f"Not available: {said}." for said in self.said.get(skill.name, [])]
        return "\n".join(lines)

    # -- the tools ----------------------------------------------------------------------

    def _publish(self) -> None:
        tools = [self.skill_tool()]
        for skill in self.active.values():
            tools += [_command_tool(skill, t) for t in skill.tools]
            servers = self.servers.get(skill.name)
            tools += servers.tools() if servers is not None else []
        self.view.set_tools(tools)

    def install(self) -> None:
        """Offer the `skill` tool (and nothing else yet)."""
        with self._lock:
            self._publish()

    def skill_tool(self) -> ToolSpec:
        from smith.effects import ToolSpec

        return ToolSpec(
            SKILL_TOOL,
            "Load a skill (one the system prompt's Skills section lists) by its name: "
            "returns its instructions, and activates the tools it brings. With `file`, "
            "returns that file of the skill's folder instead (a reference it names). "
            "With `deactivate`, turns an active skill's tools off again.",
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The skill's name."},
                    "file": {
                        "type": "string",
                        "description": "A file in the skill's folder, relative to it.",
                    },
                    "deactivate": {"type": "boolean", "description": "Turn the skill off."},
                },
                "required": ["name"],
                "additionalProperties": False,
            },
            self._run,
            effect="reads",
            touches=lambda args: [],
        )

    def _run(self, ctx: ToolContext, args: dict[str, object]) -> ToolResult:
        from smith.effects import ToolError, ToolResult

        try:
            skill = self.find(str(args["name"]))
            if args.get("deactivate"):
                gone = self.deactivate(skill.name)
                said = f" (its tools {', '.join(gone)} are no longer offered)" if gone else ""
                return ToolResult(f"The skill {skill.name} is no longer active{said}.")
            if "file" in args:
                if not isinstance(args["file"], str):
                    raise ToolError("`file` is a path in the skill's folder, relative to it")
                return ToolResult(self._file(skill, args["file"]))
            return ToolResult(self.loaded(skill), details={"skill": skill.name, "path": skill.path})
        except (LookupError, SkillRefused, ValueError) as exc:
            raise ToolError(str(exc)) from None

    def _file(self, skill: Skill, relative: str) -> str:
        import os

        from smith.effects import Reach

        path = os.path.normpath(os.path.join(skill.directory, relative))
        reach = Reach((skill.directory,), skill.reach.private)
        folder = os.path.realpath(skill.directory)
        real = os.path.realpath(path)
        if real != folder and not real.startswith(folder.rstrip("/") + "/"):
            raise LookupError(
                f"the file {relative!r} of the skill {skill.name} was not read: it leads to "
                f"{real}, outside the skill's folder {folder}"
            )
        try:
            return read_text(path, reach, max_bytes=self.max_bytes)
        except SkillRefused as exc:
            raise LookupError(
                f"the file {relative!r} of the skill {skill.name} was not read: {exc.why}"
            ) from None


def tool_name(skill: Skill, tool: SkillTool) -> str:
    return f"{skill.name}__{tool.name}"


def _command_tool(skill: Skill, tool: SkillTool) -> ToolSpec:
    """A skill's tool: its command run as bash runs a command (in the sandbox, under
    bash's timeout), with $SKILL_DIR and the arguments as JSON in $SKILL_ARGS."""
    from smith.effects import ToolSpec

    def run(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
        import copy
        import dataclasses
        import os

        from smith.effects import FileRefused, ToolError, builtin_tools

        try:  # where its folder leads now (a project's turned into a link to smith's data)
            skill.reach.check(skill.directory, os.path.realpath(skill.directory))
        except FileRefused as exc:
            raise ToolError(
                f"the skill {skill.name}'s folder is not shown to its tool: {exc.reason}"
            ) from None

        command = (
            f"export SKILL_DIR={shlex.quote(skill.directory)} "
            f"SKILL_ARGS={shlex.quote(json.dumps(args))}\n{tool.command}"
        )
        # The skill's folder read-only in the sandbox, even where it hides it (smith's
        # configuration directory, a home in sandbox.hide): its scripts and references.
        call = copy.copy(ctx)
        call.sandbox = dataclasses.replace(
            ctx.sandbox, readable=(*ctx.sandbox.readable, skill.directory)
        )
        return builtin_tools()["bash"].run(call, {"command": command})

    return ToolSpec(
        tool_name(skill, tool),
        f"{tool.description} (from the skill {skill.name})",
        dict(tool.parameters),
        run,
        effect="runs",
        touches=lambda args: None,
    )


def mcp_servers(value: object, skill: Skill) -> dict[str, dict[str, object]]:
    """Front matter `mcp`: {NAME: {the keys a configured server takes}}, with $SKILL_DIR
    (or ${SKILL_DIR}) in its command, args, cwd and env values the skill's folder.
    Raises SkillRefused for another shape."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, dict) for k, v in value.items()
    ):
        raise SkillRefused(skill.path, "its `mcp` is not a mapping of server names to their keys")

    def put(text: object) -> object:
        if isinstance(text, str):
            return text.replace("${SKILL_DIR}", skill.directory).replace(
                "$SKILL_DIR", skill.directory
            )
        if isinstance(text, list):
            return [put(t) for t in text]
        if isinstance(text, dict):
            return {k: put(v) for k, v in text.items()}
        return text

    return {
        name: {k: (put(v) if k in ("command", "args", "cwd", "env") else v)
               for k, v in fields.items()}
        for name, fields in value.items()
    }  # fmt: skip
