"""Hooks: commands configuration runs at the runtime's events (docs/hooks.md)."""

from smith.sdk import Plugin

PLUGIN = Plugin("hooks")
