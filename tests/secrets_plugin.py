"""A plugin whose tool fails with a registered secret's value in its error, for the
per-mode secret tests (tests/test_secrets_per_mode.py): as a client library quoting the
token a service refused would. smith logs the crash (with the traceback, under
SMITH_DEBUG=1), so the value reaches every mode's log through smith's own code.

Subprocesses get it as a built-in through tests/ui_boot (see `with_plugin`).
"""

from __future__ import annotations

import os
from pathlib import Path

from smith.effects import ToolContext, ToolResult, ToolSpec
from smith.sdk import Plugin

VARIABLE = "MODE_SECRET"  # the secret the tool reads, registered through secrets.env
REFUSED = "the status service refused the token "


def _report_status(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
    raise RuntimeError(REFUSED + os.environ.get(VARIABLE, "(unset)"))


REPORT_STATUS = ToolSpec(
    "report_status",
    "report the build status to the status service",
    {"type": "object", "properties": {}, "additionalProperties": False},
    _report_status,
    mutating=False,
)
PLUGIN = Plugin("reporter", tools=[REPORT_STATUS])

BOOT = Path(__file__).parent / "ui_boot"


def with_plugin(env: dict[str, str]) -> dict[str, str]:
    """`env` for a smith process that loads this plugin as a built-in."""
    root = str(Path(__file__).parent.parent)
    path = os.pathsep.join(p for p in (str(BOOT), root, env.get("PYTHONPATH")) if p)
    return {**env, "PYTHONPATH": path, "SECRETS_PLUGIN_FOR_TESTS": "1"}
