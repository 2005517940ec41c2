"""Sub-agents: the task tool, which runs a child agent from an agent definition."""

from smith.sdk import Plugin

PLUGIN = Plugin("agents")
