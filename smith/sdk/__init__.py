"""The plugin SDK: the one contract built-in and user plugins are written against."""

from smith.sdk._contract import (
    ACTION_TYPES,
    SAFE_POINTS,
    Action,
    AddTool,
    AppendSystemPrompt,
    Enqueue,
    Handler,
    Plugin,
    QueuedItem,
    QueuePolicy,
    RemoveTool,
    RuntimeView,
    SetModel,
    SetSetting,
    SetSystemPrompt,
    SetThinking,
)

__all__ = [
    "ACTION_TYPES",
    "SAFE_POINTS",
    "Action",
    "AddTool",
    "AppendSystemPrompt",
    "Enqueue",
    "Handler",
    "Plugin",
    "QueuePolicy",
    "QueuedItem",
    "RemoveTool",
    "RuntimeView",
    "SetModel",
    "SetSetting",
    "SetSystemPrompt",
    "SetThinking",
]
