"""A plugin's own configuration (smith.sdk Plugin.options): declared with types, defaults
and docs, set as plugins.NAME.KEY in config.kdl, checked when the plugin list is
resolved (an unknown key warns, a bad value is an error naming where it was set) and
read by the plugin's handlers as `view.settings`, through the same assembly every mode
uses (here smith.Agent's)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from smith.config import Choice, Integer, Option, resolve
from smith.diagnostics import ConfigError, Diagnostic
from smith.sdk import Plugin, resolve_plugins
from tests.conftest import SmithEnv

OPTIONS = (
    Option("level", Choice(("warn", "strict")), "warn", doc="How strict the guard is."),
    Option("limit", Integer(1, 10), 3, doc="Most calls it lets through."),
)


def _guard(seen: list[dict[str, object]]) -> Plugin:
    def on_call(event: dict[str, Any], view: Any) -> None:
        seen.append(dict(view.settings))

    return Plugin("guard", handlers={"tool_call": on_call}, options=OPTIONS)


def _config(senv: SmithEnv, text: str) -> Any:
    senv.write_user_config(text)
    project = senv.make_project()
    return resolve(env=senv.env, cwd=str(project))


def test_a_handler_reads_its_plugins_settings_as_configured(
    senv: SmithEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import smith

    senv.write_user_config('plugins {\n    guard {\n        level "strict"\n    }\n}\n')
    project = senv.make_project()
    for key, value in senv.env.items():
        monkeypatch.setenv(key, value)
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"responses": [
        {"tool_calls": [{"name": "ls", "arguments": {"path": "."}}]}, {"text": "done"},
    ]}))  # fmt: skip
    seen: list[dict[str, object]] = []

    async def main() -> None:
        plugins = [_guard(seen)]
        async with smith.Agent(f"scripted:{script}", cwd=str(project), plugins=plugins) as a:
            await a.send("go")

    asyncio.run(main())
    assert seen == [{"level": "strict", "limit": 3}]  # configured, and the default


def test_the_plugin_list_shows_each_setting_with_its_source(senv: SmithEnv) -> None:
    config = _config(senv, "plugins {\n    guard {\n        limit 7\n    }\n}\n")
    plugins = resolve_plugins(config, extra=[_guard([])])
    assert plugins.warnings == ()
    (guard,) = [p for p in plugins.to_dict()["plugins"] if p["name"] == "guard"]  # type: ignore[attr-defined]
    assert guard["source"] == "caller"
    assert guard["settings"] == {
        "level": {"value": "warn", "source": "defaults of guard"},
        "limit": {"value": 7, "source": f"{senv.user_config}:3:15"},
    }
    assert guard["contributions"]["settings"] == ["plugins.guard.level", "plugins.guard.limit"]


def test_a_bad_value_is_an_error_naming_the_setting_its_source_and_what_it_takes(
    senv: SmithEnv,
) -> None:
    config = _config(
        senv, 'plugins {\n    guard {\n        level "lenient"\n        limit 70\n    }\n}\n'
    )
    with pytest.raises(ConfigError) as caught:
        resolve_plugins(config, extra=[_guard([])])
    problems: list[Diagnostic] = caught.value.diagnostics
    assert [d.code for d in problems] == ["config.plugin-setting"] * 2
    first = problems[0].render()
    assert "plugins.guard.level is 'lenient'" in first and "strict" in first
    assert f"{senv.user_config}:3:15" in first
    assert "How strict the guard is" in first and "default ('warn')" in first


def test_an_unknown_key_or_plugin_is_a_warning_with_a_suggestion(senv: SmithEnv) -> None:
    config = _config(
        senv,
        'plugins {\n    guard {\n        levle "strict"\n    }\n'
        "    gaurd {\n        x 1\n    }\n}\n",
    )
    plugins = resolve_plugins(config, extra=[_guard([])])
    codes = [w.code for w in plugins.warnings]
    assert codes == ["config.plugin-unknown", "config.plugin-setting-unknown"]  # key order
    name, key = (w.render() for w in plugins.warnings)
    assert "plugins.guard.levle" in key and "did you mean 'level'" in key
    assert "'gaurd', which is not a plugin" in name and "did you mean 'guard'" in name
    # Unknown settings are left out; the plugin runs on its defaults.
    (guard,) = [p for p in plugins if p.name == "guard"]
    assert guard.settings == {"level": "warn", "limit": 3}


def test_a_caller_plugin_cannot_take_a_built_in_name(senv: SmithEnv) -> None:
    config = _config(senv, "")
    with pytest.raises(Exception, match="a plugin named 'queue' is already loaded"):
        resolve_plugins(config, extra=[Plugin("queue")])


def test_built_in_plugins_declare_options_only_for_the_agent_library() -> None:
    """The built-ins' settings are smith's own keys (queue.steer, tui.keys.*), save the
    agent library's, whose options are their own (plugins.skills.other-agents,
    plugins.agents.max-depth, plugins.mcp.first-wait: docs/skills.md, docs/agents.md,
    docs/mcp.md): a block under plugins.NAME for any other built-in is an unknown key."""
    with_options = {item.name: item.settings for item in resolve_plugins() if item.settings}
    assert with_options == {
        "skills": {"other-agents": True, "index-max-bytes": 8192, "max-bytes": 65536},
        "agents": with_options.get("agents"),
        "mcp": {"first-wait": 20},
    }
    assert set(with_options["agents"] or {}) >= {"max-depth", "max-turns"}


def test_a_secret_option_never_shows_its_value(senv: SmithEnv) -> None:
    from smith.config import String

    token = Option("token", String(), None, doc="The service's API key.", secret=True)
    keyed = Plugin("keyed", options=(token,))
    config = _config(
        senv, 'plugins {\n    keyed {\n        token "sk-live-0123456789abcdef"\n    }\n}\n'
    )
    listed = resolve_plugins(config, extra=[keyed])
    (item,) = [p for p in listed.to_dict()["plugins"] if p["name"] == "keyed"]  # type: ignore[attr-defined]
    assert item["settings"]["token"]["value"] == "[secret]"
    bad = _config(senv, "plugins {\n    keyed {\n        token 123456789012345\n    }\n}\n")
    with pytest.raises(ConfigError) as caught:
        resolve_plugins(bad, extra=[keyed])
    shown = caught.value.diagnostics[0].render()
    assert "123456789012345" not in shown and "a secret value" in shown


def test_a_secret_option_is_redacted_from_what_the_session_records(
    senv: SmithEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import smith
    from smith.config import String

    value = "sk-live-0123456789abcdef"
    senv.write_user_config(f'plugins {{\n    keyed {{\n        token "{value}"\n    }}\n}}\n')
    for key, env_value in senv.env.items():
        monkeypatch.setenv(key, env_value)
    token = Option("token", String(), None, doc="The service's API key.", secret=True)
    keyed = Plugin("keyed", options=(token,))

    async def main() -> None:
        async with smith.Agent("demo", cwd=str(senv.make_project()), plugins=[keyed]) as a:
            await a.send(f"my key is {value}")

    asyncio.run(main())
    records = b"".join(p.read_bytes() for p in senv.data_home.rglob("*.smith"))
    assert value.encode() not in records and b"{{secret:KEYED_TOKEN}}" in records


def test_names_with_dots_a_value_instead_of_a_block_and_copies_of_defaults(
    senv: SmithEnv,
) -> None:
    from smith.config import Path as PathType
    from smith.config import Strings

    dotted = Plugin("acme.lint", options=(Option("level", Choice(("a", "b")), "a", doc="x"),))
    tagged = Plugin("tagged", options=(
        Option("tags", Strings(), ["one"], doc="Tags."),
        Option("dir", PathType(), None, doc="A directory."),
    ))  # fmt: skip
    text = (
        'plugins {\n    acme.lint {\n        level "b"\n    }\n    guard 5\n'
        '    tagged {\n        dir "~/notes"\n    }\n}\n'
    )
    config = _config(senv, text)
    plugins = resolve_plugins(config, extra=[dotted, tagged, _guard([])])
    by_name = {p.name: p for p in plugins}
    assert by_name["acme.lint"].settings == {"level": "b"}
    (shape,) = plugins.warnings
    assert shape.code == "config.plugin-setting-shape" and "plugins.guard" in shape.render()
    settings = by_name["tagged"].settings
    assert settings["dir"] == os.path.join(os.path.expanduser("~"), "notes")
    settings["tags"].append("two")  # type: ignore[attr-defined]
    assert by_name["tagged"].settings["tags"] == ["one"]  # the declaration is untouched
