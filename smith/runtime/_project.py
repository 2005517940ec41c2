"""What the model is told about the project besides the conversation (docs/context.md).

    project = ProjectContext.from_config(config, cwd)   # raises for a bad prompt file
    parts = project.system_parts(plugins, tool_names)   # the system prompt, part by part
    env = project.environment(model)                    # the environment block, now
    found, problems = project.reached(paths)            # instruction files reached later

The assembly makes one per runtime (instruction files are read when it is made, and the
warnings about refused ones are said then); the runtime composes its system prompt from
`system_parts` and the loop records the environment block and instruction files reached
later as notes in the session (smith.runtime._notes). `context_parts` lists all of it,
in the order a request sends it, for `smith context` and the app's `/context`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from smith.runtime._context import NOTE_KINDS, ContextCache
from smith.runtime._environment import Environment, environment
from smith.runtime._instructions import InstructionFile, Instructions, InstructionSettings
from smith.runtime._prompt import Part, PromptConfig, compose, default_parts

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from smith.config import Config
    from smith.diagnostics import Diagnostic
    from smith.effects import Sandbox, ToolSpec
    from smith.runtime._runtime import Runtime
    from smith.runtime._secrets import SecretProxy
    from smith.sdk import Plugin
    from smith.session import Session


class ProjectContext:
    """The sources of what the model is told for one runtime: configuration's prompt
    files and text, the instruction files (read when this is made: `problems` holds
    what was refused), and the working directory and project root of the environment
    block."""

    def __init__(
        self,
        *,
        root: str,
        cwd: str,
        config_home: str,
        data_home: str,
        prompt: PromptConfig | None = None,
        instructions: InstructionSettings,
        safety: str = "",
        sandbox: Sandbox | None = None,
    ) -> None:
        self.root = root
        self.cwd = cwd
        self.safety = safety  # the environment block's sandbox and approval line
        self.sandbox = sandbox  # where the block's `git status` runs (read-only)
        self.prompt = prompt or PromptConfig()
        # No instruction file leads into smith's own directories (data, configuration).
        self.instructions = Instructions(instructions, root, cwd, private=(data_home, config_home))
        self.files: list[InstructionFile]
        self.problems: list[Diagnostic]
        self.files, self.problems = self.instructions.initial(config_home)

    @staticmethod
    def from_config(config: Config, cwd: str, prompt: PromptConfig | None = None) -> ProjectContext:
        """From configuration: `prompt.*` (read here unless given: raises for a file
        that cannot be read) and `context.files`, `context.max-bytes`."""
        names = config["context.files"]
        settings = InstructionSettings(
            tuple(str(n) for n in names) if isinstance(names, list) else (),
            config.integer("context.max-bytes"),
            config.origin("context.max-bytes").source,
        )
        settings.check(config.origin("context.files").source)
        return ProjectContext(
            root=config.project_root,
            cwd=cwd,
            config_home=str(config["config-home"]),
            data_home=config.home,
            prompt=prompt if prompt is not None else PromptConfig.from_config(config, cwd),
            instructions=settings,
            safety=safety_line(config),
            sandbox=_git_sandbox(config),
        )

    def system_parts(
        self, plugins: Sequence[Plugin], tool_names: Sequence[str], replace: str | None = None
    ) -> list[Part]:
        """The system prompt's parts: the default ones (the plugins' for these tools), or
        what replaces them (`replace`, a caller's own prompt, else `prompt.system`), then
        `prompt.append`, then the instruction files, most general first."""
        if replace is not None:
            parts = [Part("system prompt", "caller", replace)]
        elif self.prompt.system is not None:
            parts = [self.prompt.system]
        else:
            parts = default_parts(plugins, tool_names)
        parts += self.prompt.append
        parts += [instruction_part(f) for f in self.files]
        return parts

    def environment(self, model: str) -> Environment:
        """The environment block now (reads git: call it off the event loop)."""
        confine = None
        sandbox = self.sandbox
        if sandbox is not None and sandbox.effective == "read-only":

            def confine(argv: list[str], cwd: str) -> list[str]:
                return sandbox.wrap(argv, roots=[self.root, cwd], cwd=cwd, protected=())

        return environment(cwd=self.cwd, root=self.root, model=model, safety=self.safety,
                           confine=confine)  # fmt: skip

    def reached(self, paths: Iterable[str]) -> tuple[list[InstructionFile], list[Diagnostic]]:
        """Instruction files of directories below the root that these real paths are in
        and that were not looked at yet (see Instructions.reached)."""
        return self.instructions.reached(paths)

    def forget_reached(self) -> None:
        """After a compaction: directories reached since the start are looked at again,
        so an instruction file whose note it left out is told again when next reached."""
        self.instructions.forget_reached()


def prompt_parts(
    project: ProjectContext | None,
    plugins: Sequence[Plugin],
    tool_names: Sequence[str],
    replace: str | None = None,
) -> list[Part]:
    """A runtime's system prompt parts: its project's (see `system_parts`), or without
    one the plugins' default parts, or the caller's own prompt (`replace`)."""
    if project is not None:
        return project.system_parts(plugins, tool_names, replace)
    if replace is not None:
        return [Part("system prompt", "caller", replace)]
    return default_parts(plugins, tool_names)


def instruction_part(found: InstructionFile, sent: str = "system") -> Part:
    return Part("instructions", found.path, found.rendered(), sent)


def tools_part(tools: Sequence[ToolSpec]) -> Part:
    """The tool definitions as one part (the request's `tools`)."""
    text = json.dumps([t.definition() for t in tools], ensure_ascii=False)
    return Part("tool definitions", "tools: " + ", ".join(t.name for t in tools), text, "tools")


def recorded_notes(session: Session, cache: ContextCache | None = None) -> list[Part]:
    """The notes recorded in the context of `session`'s selected branch (since its
    compaction boundary), in order, as message parts."""
    cache = cache or ContextCache()
    parts = []
    for index in cache.notes(session):
        entry = session.at(index)
        content = entry.content
        if entry.kind not in NOTE_KINDS or not isinstance(content, dict):
            continue
        text = str(content.get("text", ""))
        source = (
            "environment"
            if entry.kind == "environment"
            else f"!{content.get('command')}"
            if entry.kind == "shell"
            else str(content.get("path"))
        )
        parts.append(Part(entry.kind, f"{source} (entry {entry.id})", text, "message"))
    return parts


def generation_parts(parts: Sequence[Part], system_prompt: str) -> list[Part]:
    """`parts` as a generation's system prompt has them: plugin handlers may have added
    to the composed prompt (AppendSystemPrompt) or replaced it (SetSystemPrompt)."""
    composed = compose(parts)
    if system_prompt == composed:
        return list(parts)
    if system_prompt.startswith(composed):
        added = system_prompt[len(composed) :].strip("\n")
        return [*parts, Part("appended", "plugin handlers (AppendSystemPrompt)", added)]
    return [Part("system prompt", "plugin handlers (SetSystemPrompt)", system_prompt)]


def live_parts(rt: Runtime, *, upcoming: bool = True) -> list[Part]:
    """A live runtime's parts: the system prompt's as its generation has them (plugin
    handlers may have changed it), its tools, the notes in its context, and with
    `upcoming` the environment block its next prompt would record if it differs."""
    gen = rt.current
    system = generation_parts(rt.prompt_parts, gen.system_prompt)
    notes = recorded_notes(rt.session, rt.context_cache)
    env = rt.project.environment(gen.model) if upcoming and rt.project else None
    return context_parts(system, gen.tools, notes, env, secrets=rt.secrets)


def context_parts(
    system: Sequence[Part],
    tools: Sequence[ToolSpec],
    notes: Sequence[Part],
    upcoming: Environment | None,
    *,
    secrets: SecretProxy,
) -> list[Part]:
    """Everything a request would send besides the conversation, in the order it is
    sent: the system prompt's parts, the tool definitions, the recorded notes, and the
    environment block the next prompt would record (`upcoming`, when it differs from
    the last one recorded); masked as `shown` masks them, since they are for showing."""
    parts = [*system]
    if tools:
        parts.append(tools_part(tools))
    parts += notes
    last = next((p.text for p in reversed(notes) if p.name == "environment"), None)
    if upcoming is not None and upcoming.text != last:
        source = "environment (recorded when the next prompt starts)" if notes else "environment"
        parts.append(Part("environment", source, upcoming.text, "message"))
    return shown(parts, secrets)


def shown(parts: Sequence[Part], secrets: SecretProxy) -> list[Part]:
    """`parts` as smith shows them (`smith context`, RPC `get_context`, the app's
    `/context`), whatever path a secret came by (an instruction file holding a key): a
    registered secret or provider credential as the model is sent it, `{{secret:NAME}}`
    (`secrets`, the proxy that redacts requests), then every credential smith has read
    (the environment's provider keys, the auth file's) and what looks like one masked
    (smith.diagnostics.masked)."""
    from smith.diagnostics import masked

    def mask(text: str) -> str:
        return masked(str(secrets.redact(text)))

    return [Part(p.name, mask(p.source), mask(p.text), p.sent) for p in parts]


def safety_line(config: Config) -> str:
    """What the model is told of the sandbox and approvals (docs/safety.md)."""
    from smith.effects import Sandbox

    sandbox = Sandbox.from_config(config)
    mode = sandbox.effective
    said = {
        "workspace-write": "commands run in a sandbox: only the project"
        + (", tools.extra-roots" if config["tools.extra-roots"] else "")
        + " and /tmp are writable, .git is read-only, "
        + ("the network is open" if sandbox.network else "there is no network"),
        "read-only": "commands run in a read-only sandbox (only /tmp is writable, "
        + ("the network is open)" if sandbox.network else "no network)"),
        "off": "commands run without a sandbox",
        "refused": "commands cannot run (the sandbox is unavailable here)",
    }[mode]
    asks = {
        "never": "nothing asks the user",
        "on-failure": "a command the sandbox stopped can be run outside it if the user approves",
        "on-request": "bash takes unsandboxed and reason to ask the user to run a command "
        "outside the sandbox",
        "untrusted": "the user approves each bash, write and edit call first",
    }[str(config["approval"])]
    return f"Sandbox: {mode}; {said}. Approval: {config['approval']}; {asks}."


def _git_sandbox(config: Config) -> Sandbox:
    """A read-only sandbox for smith's own `git status` of the project."""
    from dataclasses import replace

    from smith.effects import Sandbox

    return replace(Sandbox.from_config(config), mode="read-only", network=False)
