"""One owner per command name: the first plugin in the list that declares `/NAME` keeps
it (the built-ins come first, so the app's own /help is never a package's), and a later
plugin's command of that name is left out, with a warning naming both plugins. It is
left out everywhere alike: from the app's commands, and from what the later plugin's
input hook is asked (input `/NAME args` never reaches it, so `smith eval` and RPC run
the same command as the app)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from smith.diagnostics import Diagnostic, DiagnosticKind, Source

if TYPE_CHECKING:
    from smith.sdk._contract import Plugin

COMMAND_SHADOWED = DiagnosticKind(
    "plugin.command-shadowed",
    severity="warning",
    what="the plugin {plugin}'s command /{name} is not run: {owner} has a /{name} command",
    why="a command is known by its name, and the first plugin to declare a name keeps it "
    "(smith's built-ins first, then packages in the order they load), in the app, "
    "`smith eval` and RPC alike",
    fix="rename the command in {plugin}'s plugin.kdl (or its Plugin), or turn one of the "
    "plugins off (plugins.disabled)",
)


def command_of(text: str) -> str:
    """The NAME of input `/NAME args` (input that is not a command: "")."""
    if not text.startswith("/"):
        return ""
    words = text[1:].split(maxsplit=1)
    return words[0] if words else ""


def _answering_none(handler: Callable[..., Any], names: frozenset[str]) -> Callable[..., Any]:
    """`handler` of the input hook, not asked about input `/NAME` for a NAME of `names`."""

    def on_input(event: dict[str, Any], view: Any) -> Any:
        if command_of(str(event.get("text", ""))) in names:
            return None
        return handler(event, view)

    return on_input


def owned_commands(
    plugins: Sequence[Plugin], where: Callable[[Plugin], Source]
) -> tuple[list[Plugin], list[Diagnostic]]:
    """`plugins` with each command name kept by the first that declares it (a later
    plugin's left out, its input hook not asked about it), and a warning for each left
    out; the same objects when no name is declared twice."""
    owner: dict[str, str] = {}
    out: list[Plugin] = []
    warnings: list[Diagnostic] = []
    for given in plugins:
        taken = {c.name for c in given.commands if c.name in owner}
        plugin = given
        if taken:
            for name in sorted(taken):
                warnings.append(COMMAND_SHADOWED(value=f"/{name}", source=where(given),
                                                 plugin=given.name, name=name,
                                                 owner=owner[name]))  # fmt: skip
            handlers = dict(given.handlers)
            if "input" in handlers:
                handlers["input"] = _answering_none(handlers["input"], frozenset(taken))
            kept = [c for c in given.commands if c.name not in taken]
            plugin = replace(given, handlers=handlers, commands=kept)
        for command in plugin.commands:
            owner.setdefault(command.name, plugin.name)
        out.append(plugin)
    return out, warnings
