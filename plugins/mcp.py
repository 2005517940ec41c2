"""The MCP client: servers from configuration, their tools, resources and prompts."""

from smith.sdk import Plugin

PLUGIN = Plugin("mcp")
