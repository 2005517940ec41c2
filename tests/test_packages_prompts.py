"""A package's system-prompt parts (plugin.kdl `prompt`, docs/plugins.md): a `system.NAME`
part is in the system prompt after the built-in ones, and `smith context` names the package
as its source; a `tool.NAME` line is sent under the tools heading only while tool NAME is
active; a disabled package brings none of them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests import mcp_client_kit as kit
from tests.conftest import Result, SmithEnv

MARK = "PKGPART-2718"


def _package(senv: SmithEnv) -> Path:
    root = senv.data_home / "plugins" / "house-style"
    (root / "prompts").mkdir(parents=True)
    (root / "plugin.kdl").write_text(
        'name "house-style"\nversion "0.1.0"\n'
        f'prompt "system.house" "Answer in British English. {MARK}"\n'
        'prompt "tool.todo_count" file="prompts/todo.txt"\n'
    )
    # prompts/ holds templates too: a .txt file is no template (only *.md are).
    (root / "prompts" / "todo.txt").write_text("- todo_count: count TODO lines first.\n")
    return root


def test_a_packages_system_part_is_sent_and_named_by_smith_context(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    _package(senv)
    project = senv.make_project()
    r = smith_process("context", "--json", cwd=project)
    assert r.code == 0, r.err
    parts = json.loads(r.out)["parts"]
    house = [p for p in parts if p["name"] == "house"]
    assert house == [{"name": "house", "source": "plugin house-style", "sent": "system",
                      "tokens": house[0]["tokens"],
                      "text": f"Answer in British English. {MARK}"}]  # fmt: skip
    names = [p["name"] for p in parts if p["sent"] == "system"]
    assert names.index("house") > names.index("identity")  # after the product's parts
    # The tool line is for a tool this runtime does not have: not sent.
    assert "todo_count" not in json.dumps(parts)

    model, log = kit.script(senv.root, [{"text": "ok", "stop": "end"}])
    r = smith_process("eval", "--json", "--model", model, "hi", cwd=project)
    assert r.code == 0, r.err
    sent: list[dict[str, Any]] = kit.requests(log)
    assert f"Answer in British English. {MARK}" in sent[0]["system"]

    r = smith_process("plugins", "info", "house-style", cwd=project)
    assert "system-prompt parts: system.house, tool.todo_count" in r.out + r.err


def test_a_packages_tool_line_follows_its_tool_and_a_disabled_package_brings_none(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    from smith.runtime._prompt import default_parts
    from smith.sdk import PluginDirectory, builtin_plugins

    _package(senv)
    loader = PluginDirectory(str(senv.data_home / "plugins"), "user")
    (manifest,) = loader.discover(lambda d: None)
    plugin = loader.load(manifest)
    line = "- todo_count: count TODO lines first."
    assert plugin.prompts == {"system.house": f"Answer in British English. {MARK}",
                              "tool.todo_count": line}  # fmt: skip
    plugins = [*builtin_plugins(), plugin]
    tools = {p.name: p.text for p in default_parts(plugins, ["read", "todo_count"])}["tools"]
    assert tools.splitlines()[-1] == line
    tools = {p.name: p.text for p in default_parts(plugins, ["read"])}["tools"]
    assert "todo_count" not in tools

    project = senv.make_project()
    r = smith_process("plugins", "disable", "house-style", cwd=project)
    assert r.code == 0, r.err
    r = smith_process("context", "--json", cwd=project)
    assert MARK not in r.out
