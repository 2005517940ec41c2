"""The todo tool and plan mode."""

from smith.sdk import Plugin

PLUGIN = Plugin("plan")
