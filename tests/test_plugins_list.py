"""One plugin list: every built-in is a Plugin, resolved once from configuration
(`plugins.disabled`), shown by `smith plugins list` and RPC `plugins.list`, and the one
the registry, the runtime and the app take their providers, policies and commands from."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from smith import __version__ as VERSION
from smith.diagnostics import SmithError
from smith.sdk import LoadedPlugin, Plugin, PluginList, ProviderSpec, resolve_plugins
from tests.conftest import Result, SmithEnv
from tests.rpc_kit import Rpc

PROVIDERS = ["anthropic", "openai", "google", "openai-compatible", "scripted", "demo"]
REVIEWERS = ["plan", "hooks", "approval"]  # in review order: a deny ends the review
AGENT_LIBRARY = ["mcp", "skills", "agents"]
BUILT_INS = ["queue", "product", *REVIEWERS, *AGENT_LIBRARY, *PROVIDERS]


def _listed(smith: Callable[..., Result], *args: str) -> dict[str, Any]:
    r = smith("plugins", "list", "--json", *args)
    assert r.code == 0, r.err
    data: dict[str, Any] = json.loads(r.out)
    return data


def _by_name(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in data["plugins"]}


def test_a_fresh_home_lists_every_built_in_with_its_contributions(
    smith: Callable[..., Result],
) -> None:
    data = _listed(smith)
    assert [p["name"] for p in data["plugins"]] == BUILT_INS
    for p in data["plugins"]:
        assert (p["version"], p["source"], p["state"]) == (VERSION, "built-in", "enabled")
        assert p["contributions"], p
    plugins = _by_name(data)
    for name in PROVIDERS:
        assert plugins[name]["contributions"] == {"providers": [name]}
    product = plugins["product"]["contributions"]
    assert {"help", "model", "undo", "quit"} <= set(product["commands"])
    assert product["keybindings"] and product["themes"] == ["textual-dark"]
    queue = plugins["queue"]["contributions"]
    assert queue["queue_policies"] == ["one-at-a-time", "all"]
    assert queue["settings"] == ["queue.steer", "queue.follow-up"]
    approval = plugins["approval"]["contributions"]
    assert approval == {"settings": ["approval", "approval.allow", "approval.deny"],
                        "handlers": ["tool_call"]}  # fmt: skip


def test_the_human_list_is_a_table(smith: Callable[..., Result], senv: SmithEnv) -> None:
    config = senv.write_user_config('plugins { disabled "google"; }\n')
    r = smith("plugins", "list")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0].split() == ["PLUGIN", "VERSION", "SOURCE", "STATE", "STATUS", "CONTRIBUTES"]
    rows = {line.split()[0]: line.split() for line in lines[1 : 1 + len(BUILT_INS)]}
    assert list(rows) == BUILT_INS
    assert rows["demo"][1:6] == [VERSION, "built-in", "enabled", "ready", "providers:"]
    assert rows["google"][3:5] == ["disabled", "disabled"]
    assert f"google is disabled by plugins.disabled at {config}:1" in r.out
    assert "queue policies: one-at-a-time, all" in r.out


def test_rpc_plugins_list_returns_the_same_object(
    smith: Callable[..., Result], senv: SmithEnv
) -> None:
    project = senv.make_project()
    expected = _listed(smith)
    with Rpc(senv, project, "--model", "demo") as rpc:
        got = rpc.call("plugins.list")
        rpc.call("shutdown")
    # The same object, but for the lifecycle of a plugin that starts (mcp): `plugins
    # list` outside a runtime says "not started", RPC's runtime has started it.
    starting = {p["name"] for p in expected["plugins"] if p.get("status") == "not started"}
    assert starting == {"mcp"}
    for listed in (expected, got):
        for p in listed["plugins"]:
            if p["name"] in starting:
                p.pop("status")
                p.pop("diagnostic", None)
    assert got == expected


def test_plugins_disabled_turns_a_provider_off(
    smith: Callable[..., Result], senv: SmithEnv
) -> None:
    config = senv.write_user_config('plugins { disabled "demo"; }\n')
    plugins = _by_name(_listed(smith))
    assert plugins["demo"]["state"] == "disabled"
    assert plugins["demo"]["disabled_by"].startswith(f"plugins.disabled at {config}:1")
    assert {plugins[n]["state"] for n in BUILT_INS if n != "demo"} == {"enabled"}
    r = smith("eval", "--model", "demo", "--no-session", "hello")
    assert r.code == 2 and r.out == ""
    assert "error: --model: the provider 'demo' (from the model setting 'demo') is turned off" in (
        r.err
    )
    assert f"plugins.disabled (set at {config}:1" in r.err
    assert "Traceback" not in r.err
    # The others still run.
    script = senv.root / "script.json"
    script.write_text(json.dumps({"responses": [{"text": "fine"}]}))
    r = smith("eval", "--model", f"scripted:{script}", "--no-session", "hello")
    assert r.code == 0 and "fine" in r.out, r.err


def test_an_account_over_a_disabled_plugin_is_refused_naming_the_setting(
    smith: Callable[..., Result], senv: SmithEnv
) -> None:
    senv.write_user_config(
        'plugins { disabled "openai-compatible"; }\n'
        'providers { local { base-url "http://127.0.0.1:9/v1"; }; }\n'
    )
    r = smith("eval", "--model", "local/qwen", "--no-session", "hello")
    assert r.code == 2
    assert "the provider 'local' (from the model setting 'local/qwen') is turned off" in r.err
    assert "turns off the openai-compatible plugin" in r.err


def test_an_unknown_name_in_plugins_disabled_is_a_warning(
    smith: Callable[..., Result], senv: SmithEnv
) -> None:
    config = senv.write_user_config('plugins { disabled "antropic"; }\n')
    r = smith("plugins", "list", "--json")
    assert r.code == 0
    assert f"warning: {config}:1" in r.err
    assert "plugins.disabled names 'antropic', which is not a plugin" in r.err
    assert "did you mean 'anthropic'?" in r.err
    assert {p["state"] for p in json.loads(r.out)["plugins"]} == {"enabled"}


@pytest.mark.parametrize(
    ("disabled", "says"),
    [
        (["queue"], "the queue plugin cannot be disabled"),
        (["approval"], "the approval plugin cannot be disabled"),
        (PROVIDERS, "plugins.disabled turns off every provider plugin"),
    ],
)
def test_disabling_what_smith_cannot_run_without_is_refused(
    smith: Callable[..., Result], senv: SmithEnv, disabled: list[str], says: str
) -> None:
    names = " ".join(f'"{name}"' for name in disabled)
    config = senv.write_user_config(f"plugins {{ disabled {names}; }}\n")
    for args in (("plugins", "list"), ("eval", "--model", "demo", "--no-session", "hi")):
        r = smith(*args)
        assert r.code == 2 and r.out == "", args
        assert f"error: {config}:1" in r.err and says in r.err
        assert "fix:" in r.err and "Traceback" not in r.err


def test_every_provider_module_exports_its_plugin() -> None:
    """...as its manifest (smith.plugins.MANIFESTS) says: one provider of its own name and
    nothing else, which lets the list route to it before its module is imported."""
    import importlib

    from smith.sdk import builtin_manifests

    deferred = [m for m in builtin_manifests() if m.deferred]
    assert [m.name for m in deferred] == PROVIDERS
    for manifest in deferred:
        plugin = importlib.import_module(manifest.entry).PLUGIN
        assert isinstance(plugin, Plugin) and plugin.name == manifest.name
        assert plugin.contributions() == {"providers": [manifest.name]}
        spec = plugin.providers[manifest.name]
        assert spec.offline == (manifest.name in ("scripted", "demo"))
        if manifest.name in ("anthropic", "openai", "google"):
            assert spec.default_model and spec.default_base_url
            assert spec.first_party and spec.credential_env and spec.list_models


def test_each_built_in_is_its_manifest() -> None:
    """A built-in's manifest is data (smith.plugins.MANIFESTS), read without importing
    it; its module's PLUGIN is what the manifest says: the same name, version, SDK and
    contributions (where the data states them), and each provider's facts are the
    manifest's (the provider modules build their specs from them: one copy). Each built-in
    provider's wire format names the api its manifest gives."""
    import importlib

    from smith.sdk import SDK_VERSION, builtin_manifests, manifest_of, provider_facts, provider_spec

    offered: dict[str, ProviderSpec] = {}
    for manifest in builtin_manifests():
        plugin = importlib.import_module(manifest.entry).PLUGIN
        derived = manifest_of(plugin, "built-in", manifest.entry)
        assert (derived.name, derived.version, derived.sdk) == (
            manifest.name, manifest.version, SDK_VERSION)  # fmt: skip
        if manifest.contributions is not None:
            assert derived == manifest, manifest.name
        offered.update(plugin.providers)
    assert sorted(provider_facts()) == sorted(offered)
    for name, spec in offered.items():
        assert provider_facts()[name] == spec.facts(name), name
        assert provider_spec(name) is spec
    assert provider_spec("no-such-provider") is None
    assert provider_facts()["anthropic"].credential_env == ("ANTHROPIC_API_KEY",)
    assert provider_facts()["google"].credential_env == ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    assert not provider_facts()["openai-compatible"].first_party  # a server you run
    wires = {"anthropic": "Messages", "openai": "Responses", "google": "Gemini",
             "openai-compatible": "ChatCompletions"}  # fmt: skip
    for name, wire in wires.items():
        module = importlib.import_module(provider_spec(name).create.__module__)  # type: ignore[union-attr]
        assert getattr(module, wire).api == provider_facts()[name].api, name


def test_the_facts_of_the_providers_are_read_without_importing_them() -> None:
    """Secret redaction needs every provider's key variables at each start: they come
    from the index, and no provider module (about 50 ms each) is imported for them."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from smith.providers import credential_variables\n"
        "from smith.sdk import provider_facts\n"
        "names = credential_variables(None)\n"
        "assert {'ANTHROPIC_API_KEY', 'OPENAI_API_KEY', 'GEMINI_API_KEY'} <= names, names\n"
        "assert provider_facts()['openai'].api == 'openai-responses'\n"
        "print(sorted(m for m in sys.modules if m.startswith('smith.plugins')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['smith.plugins']"


def test_a_disabled_provider_keeps_its_key_withheld_and_listed(
    smith: Callable[..., Result], senv: SmithEnv
) -> None:
    """Turning a provider's plugin off does not make its key an ordinary variable: it is
    still withheld from commands and redacted, and `smith auth` still knows it."""
    from smith.config import resolve
    from smith.providers import credential_variables

    senv.write_user_config('plugins { disabled "anthropic"; }\n')
    config = resolve(env=senv.env, cwd=str(senv.root))
    assert "ANTHROPIC_API_KEY" in credential_variables(config)
    r = smith("auth", "status", "--json", env={"ANTHROPIC_API_KEY": "sk-ant-" + "k" * 40})
    assert r.code == 0, r.err
    rows = {row["provider"]: row for row in json.loads(r.out)["providers"]}
    assert rows["anthropic"]["env"] == ["ANTHROPIC_API_KEY"] and rows["anthropic"]["available"]


def test_the_registry_routes_through_the_providers_of_the_list() -> None:
    """A provider no built-in offers becomes usable by being contributed, and a built-in
    left out of the list is not offered: the registry keeps no table of its own."""
    from smith.providers import End
    from smith.providers._registry import Registry

    made: list[str] = []

    class Echo:
        name = "echo"

        async def stream(self, request: Any) -> Any:
            yield End("success")

    def create(model: str) -> Echo:
        made.append(model)
        return Echo()

    only = PluginList(
        (LoadedPlugin(Plugin("echo", providers={"echo": ProviderSpec(create, offline=True)})),)
    )
    registry = Registry(plugins=only)
    assert registry.providers == ["echo"]
    provider, model = registry.resolve("echo:any")
    assert (provider.name, model, made) == ("echo", "any", ["any"])
    with pytest.raises(SmithError, match="no provider is called 'demo'"):
        registry.resolve("demo/x")


def test_the_runtime_and_the_app_take_their_plugins_from_the_list(tmp_path: Path) -> None:
    from smith.config import resolve
    from smith.effects import ToolContext
    from smith.runtime import Runtime
    from smith.session import SessionStore

    env = {"SMITH_HOME": str(tmp_path / "data"), "SMITH_CONFIG_HOME": str(tmp_path / "cfg"),
           "SMITH_PLUGINS_DISABLED": "product"}  # fmt: skip
    config = resolve(env=env, flags={}, cwd=str(tmp_path))
    plugins = resolve_plugins(config)
    assert [p.name for p in plugins.enabled] == [n for n in BUILT_INS if n != "product"]
    assert [p.name for p in plugins.active] == ["queue", *REVIEWERS, *AGENT_LIBRARY]
    session = SessionStore(str(tmp_path / "data")).create(name="t", cwd=str(tmp_path))
    context = ToolContext(root=str(tmp_path), cwd=str(tmp_path), session=session)
    listed = Runtime(session, model="demo", tools=[], context=context, plugin_list=plugins)
    assert [p.name for p in listed.plugins] == ["queue", *REVIEWERS, *AGENT_LIBRARY]
    default = Runtime(session, model="demo", tools=[], context=context)
    assert [p.name for p in default.plugins] == ["queue", "product", *REVIEWERS, *AGENT_LIBRARY]
    from smith.frontends.tui._app import SmithApp

    app = SmithApp(lambda s: listed, session, plugins=plugins.active)
    product = {c.name for c in SmithApp(lambda s: default, session).commands()} - {
        c.name for p in plugins.active for c in p.commands
    }
    assert product >= {"help"}  # the product plugin, and so its commands, is off:
    assert not product & {c.name for c in app.commands()}  # the others' stay
    assert {c.name for c in SmithApp(lambda s: default, session).commands()} >= {"help"}
    session.close()


def test_resolution_without_configuration_is_every_built_in() -> None:
    plugins = resolve_plugins()
    assert [p.name for p in plugins] == BUILT_INS and plugins.warnings == ()
    assert list(plugins.providers) == PROVIDERS


def test_a_provider_module_is_imported_only_when_its_provider_is_used() -> None:
    """As before the plugin list: running the demo model imports no HTTP provider."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from smith.sdk import resolve_plugins\n"
        "from smith.providers._registry import Registry\n"
        "plugins = resolve_plugins()\n"
        "assert 'anthropic' in plugins.providers\n"
        "Registry(plugins=plugins).resolve('demo')\n"
        "print(sorted(m for m in sys.modules if m.startswith('smith.plugins.providers.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['smith.plugins.providers.demo']"


def test_the_smith_settings_a_built_in_owns_are_declared_with_the_schemas_defaults() -> None:
    """Plugin.settings names the smith settings a plugin decides by, with the defaults it
    expects: each is one of smith's settings, and its default is the schema's, so the
    declaration cannot drift from what configuration gives the handlers; where smith has
    no default (None: tui.keys.*), the plugin's is what the handlers are given."""
    from smith.config import SCHEMA
    from smith.sdk import resolve_plugins

    owned = {(p.name, k): v for p in resolve_plugins().active for k, v in p.settings.items()}
    assert owned, "no built-in owns a smith setting"
    for (plugin, key), default in owned.items():
        option = SCHEMA.get(key)
        assert option is not None, f"{plugin} owns {key}, which is no smith setting"
        assert option.default in (default, None), (plugin, key, default, option.default)
    from smith.config import resolve

    config = resolve(env={"SMITH_HOME": "/nonexistent/d", "SMITH_CONFIG_HOME": "/nonexistent/c"},
                     flags={}, cwd="/")  # fmt: skip
    listed = resolve_plugins(config)
    (product,) = [p for p in listed.loaded if p.name == "product"]
    assert product.owned["tui.keys.abort"] == "escape"  # the plugin's default
