"""smith: a coding agent with durable, replayable sessions and undoable file changes.

As a library:

    import smith

    @smith.tool
    def word_count(text: str) -> int:
        '''Count the words in a text.'''
        return len(text.split())

    async with smith.Agent(model="demo", tools=[*smith.builtin_tools(), word_count]) as agent:
        print(smith.text_of(await agent.send("list the files")))

Importing `smith` is deliberately cheap: `smith --help` must start almost as fast as a
bare interpreter, so the names below are imported on first use.
"""

from smith._version import __version__

__all__ = [
    "Agent",
    "AgentStopped",
    "ContextPolicy",
    "Image",
    "Limits",
    "SecretProxy",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "ToolSpec",
    "__version__",
    "builtin_tools",
    "text_of",
    "tool",
]

_WHERE = {
    "Agent": "smith._agent",
    "AgentStopped": "smith._agent",
    "builtin_tools": "smith._agent",
    "text_of": "smith._agent",
    "tool": "smith._tooldef",
    "ContextPolicy": "smith.runtime",
    "Image": "smith.runtime",
    "Limits": "smith.runtime",
    "SecretProxy": "smith.runtime",
    "ToolContext": "smith.effects",
    "ToolError": "smith.effects",
    "ToolResult": "smith.effects",
    "ToolSpec": "smith.effects",
}


def __getattr__(name: str) -> object:
    import importlib

    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'smith' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
