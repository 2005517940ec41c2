"""What a Claude Code plugin's hook reads and writes, in Claude Code's terms: the tool's
name and its input keys as Claude Code gives them on a PreToolUse/PostToolUse hook's stdin
(`Write` with `file_path`, `Edit` with `old_string`/`new_string`), and the `updatedInput`
such a hook answers with taken back into smith's (docs/plugins.md, "Claude Code plugins").

    claude_fields({"tool_name": "write", "tool_input": {"path": "a", "content": "x"}})
      -> {"tool_name": "Write", "tool_input": {"file_path": "a", "content": "x"}}
"""

from __future__ import annotations

from typing import Any

# smith's tool -> Claude Code's, and the input keys that differ (smith's -> Claude's).
_NAMES = {"bash": "Bash", "read": "Read", "write": "Write", "edit": "Edit", "grep": "Grep",
          "find": "Glob", "ls": "LS", "task": "Task", "todo": "TodoWrite"}  # fmt: skip
_KEYS = {
    "read": {"path": "file_path"},
    "write": {"path": "file_path"},
    "edit": {"path": "file_path", "old_text": "old_string", "new_text": "new_string"},
}


def claude_tool(tool: str) -> str:
    """The name Claude Code gives smith's `tool` (an MCP tool mcp_S__T is mcp__S__T)."""
    if tool in _NAMES:
        return _NAMES[tool]
    if tool.startswith("mcp_") and not tool.startswith("mcp__"):
        return "mcp__" + tool[4:]
    return tool


def _renamed(value: dict[str, Any], keys: dict[str, str]) -> dict[str, Any]:
    out = {keys.get(k, k): v for k, v in value.items()}
    if isinstance(out.get("edits"), list):  # MultiEdit's edits: each pair renamed too
        out["edits"] = [_renamed(e, keys) if isinstance(e, dict) else e for e in out["edits"]]
    return out


def claude_fields(fields: dict[str, object]) -> dict[str, object]:
    """A tool event's hook input with Claude Code's tool name and input keys."""
    tool = str(fields.get("tool_name", ""))
    arguments = fields.get("tool_input")
    out = {**fields, "tool_name": claude_tool(tool)}
    if isinstance(arguments, dict):
        out["tool_input"] = _renamed(arguments, _KEYS.get(tool, {}))
        if tool == "edit" and "edits" in arguments:
            out["tool_name"] = "MultiEdit"
    return out


def smith_arguments(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A Claude Code hook's `updatedInput` for smith's `tool`, in smith's input keys."""
    back = {claude: smith for smith, claude in _KEYS.get(tool, {}).items()}
    return _renamed(arguments, back)
