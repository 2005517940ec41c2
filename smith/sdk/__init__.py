"""The plugin SDK: the one contract built-in and user plugins are written against."""

from smith._lazy import lazy_exports
from smith.sdk._contract import (
    HOOKS,
    SAFE_POINTS,
    Command,
    CommandHost,
    Handler,
    ListedModel,
    ModelList,
    Plugin,
    ProviderFacts,
    ProviderSpec,
    QueuedItem,
    QueuePolicy,
    RuntimeHandle,
    RuntimeView,
    SecretRoute,
)
from smith.sdk._loaders import (
    PLUGIN_DIR_UNREADABLE,
    PLUGIN_NOT_PACKAGES,
    Builtins,
    CallerPlugins,
    PluginDirectory,
    PluginLoader,
)
from smith.sdk._manifest import SDK_VERSION, PluginManifest, builtin_manifests, manifest_of
from smith.sdk._resolve import (
    LoadedPlugin,
    PluginList,
    builtin_plugins,
    loaders_of,
    provider_facts,
    provider_spec,
    resolve_plugins,
)

# What plugins speak to the user with (smith.ui, docs/ui.md).
from smith.ui import Confirm, Hatch, Notify, Progress, Question, Reply, Status

TYPE_CHECKING = False
# The actions load with msgspec (smith.protocol.actions): exported on first use (PEP 562).
if TYPE_CHECKING:
    from smith.protocol.actions import ACTION_TYPES as ACTION_TYPES
    from smith.protocol.actions import HOOK_ACTIONS as HOOK_ACTIONS
    from smith.protocol.actions import Action as Action
    from smith.protocol.actions import AddTool as AddTool
    from smith.protocol.actions import Allow as Allow
    from smith.protocol.actions import AppendSystemPrompt as AppendSystemPrompt
    from smith.protocol.actions import DenyCall as DenyCall
    from smith.protocol.actions import Enqueue as Enqueue
    from smith.protocol.actions import HandleInput as HandleInput
    from smith.protocol.actions import HookAction as HookAction
    from smith.protocol.actions import RemoveTool as RemoveTool
    from smith.protocol.actions import ReplaceResult as ReplaceResult
    from smith.protocol.actions import RewriteArguments as RewriteArguments
    from smith.protocol.actions import SetModel as SetModel
    from smith.protocol.actions import SetSetting as SetSetting
    from smith.protocol.actions import SetSystemPrompt as SetSystemPrompt
    from smith.protocol.actions import SetThinking as SetThinking
    from smith.protocol.actions import TransformInput as TransformInput

__getattr__ = lazy_exports(
    __name__,
    {
        name: "smith.protocol.actions"
        for name in (
            "ACTION_TYPES",
            "HOOK_ACTIONS",
            "Action",
            "AddTool",
            "Allow",
            "AppendSystemPrompt",
            "DenyCall",
            "Enqueue",
            "HandleInput",
            "HookAction",
            "RemoveTool",
            "ReplaceResult",
            "RewriteArguments",
            "SetModel",
            "SetSetting",
            "SetSystemPrompt",
            "SetThinking",
            "TransformInput",
        )
    },
)

__all__ = [
    "ACTION_TYPES",
    "HOOKS",
    "HOOK_ACTIONS",
    "PLUGIN_DIR_UNREADABLE",
    "PLUGIN_NOT_PACKAGES",
    "SAFE_POINTS",
    "SDK_VERSION",
    "Action",
    "AddTool",
    "Allow",
    "AppendSystemPrompt",
    "Builtins",
    "CallerPlugins",
    "Command",
    "CommandHost",
    "Confirm",
    "DenyCall",
    "Enqueue",
    "HandleInput",
    "Handler",
    "Hatch",
    "HookAction",
    "ListedModel",
    "LoadedPlugin",
    "ModelList",
    "Notify",
    "Plugin",
    "PluginDirectory",
    "PluginList",
    "PluginLoader",
    "PluginManifest",
    "Progress",
    "ProviderFacts",
    "ProviderSpec",
    "Question",
    "QueuePolicy",
    "QueuedItem",
    "RemoveTool",
    "ReplaceResult",
    "Reply",
    "RewriteArguments",
    "RuntimeHandle",
    "RuntimeView",
    "SecretRoute",
    "SetModel",
    "SetSetting",
    "SetSystemPrompt",
    "SetThinking",
    "Status",
    "TransformInput",
    "builtin_manifests",
    "builtin_plugins",
    "loaders_of",
    "manifest_of",
    "provider_facts",
    "provider_spec",
    "resolve_plugins",
]
