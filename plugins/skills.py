"""Skills: SKILL.md folders, their index in the system prompt, loaded on demand."""

from smith.sdk import Plugin

PLUGIN = Plugin("skills")
