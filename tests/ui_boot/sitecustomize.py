"""Run at interpreter start when tests/ui_boot is on PYTHONPATH (tests/ui_plugin.py's
and tests/secrets_plugin.py's `with_plugin`): the test plugin `tests.ui_plugin` (or
`tests.secrets_plugin`) joins smith's built-in plugins, so a smith process started by a
test (rpc, mcp, eval, tools run, the app under smith web or tmux) loads it through the
one plugin list like any other."""

import os

if os.environ.get("UI_PLUGIN_FOR_TESTS"):
    import smith.plugins

    smith.plugins.BUILTIN = (*smith.plugins.BUILTIN, "tests.ui_plugin")
if os.environ.get("SECRETS_PLUGIN_FOR_TESTS"):
    import smith.plugins

    smith.plugins.BUILTIN = (*smith.plugins.BUILTIN, "tests.secrets_plugin")
