"""Where plugins come from (issue 28): one loader interface (smith.sdk.PluginLoader) with
the Python built-ins and a program's plugins as its implementations, and the installed
packages' directory ($SMITH_HOME/plugins, issue 30) and a trusted project's: a folder
there without a plugin.kdl is a warning, and a directory that cannot be read is a
warning naming it, never a crash (installed packages: tests/test_cli_plugins.py)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from smith.diagnostics import Diagnostic
from smith.sdk import (
    Builtins,
    CallerPlugins,
    Plugin,
    PluginDirectory,
    PluginLoader,
    PluginManifest,
    loaders_of,
    resolve_plugins,
)
from tests.conftest import Result, SmithEnv

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.config import Config


def _config(senv: SmithEnv, project: Path) -> Config:
    from smith.config import resolve

    return resolve(env=senv.env, cwd=str(project))


def test_the_built_ins_are_discovered_as_data_and_loaded_by_their_loader() -> None:
    warnings: list[Diagnostic] = []
    builtins: PluginLoader = Builtins()
    found = builtins.discover(warnings.append)
    assert warnings == [] and [m.name for m in found][:3] == ["queue", "product", "plan"]
    queue = builtins.load(found[0])
    assert isinstance(queue, Plugin) and queue.name == "queue"


def test_a_programs_plugins_are_one_more_loader() -> None:
    mine = Plugin("mine", grants=("network",))
    caller: PluginLoader = CallerPlugins([mine])
    (manifest,) = caller.discover(lambda d: None)
    assert isinstance(manifest, PluginManifest)
    assert (manifest.name, manifest.source, manifest.grants) == ("mine", "caller", ("network",))
    assert caller.load(manifest) is mine
    listed = resolve_plugins(None, [mine])
    assert listed[-1].plugin is mine and listed[-1].to_dict()["grants"] == ["network"]


def test_a_loader_of_another_kind_joins_the_list_as_the_built_ins_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a WebAssembly loader will be: one more class, discovered and loaded by the
    list with no special case."""
    from smith.sdk import _resolve

    made = Plugin("wasm-echo")

    class Other:
        kind = "other"

        def discover(self, warn: Callable[[Diagnostic], None]) -> Sequence[PluginManifest]:
            return (PluginManifest("wasm-echo", "0.1", source="/plugins/echo", loader="other"),)

        def load(self, manifest: PluginManifest) -> Plugin:
            return made

    real = _resolve.loaders_of
    monkeypatch.setattr(_resolve, "loaders_of", lambda c, e=(): [*real(c, e), Other()])
    from smith.config import resolve

    listed = resolve_plugins(resolve(env={"HOME": "/nonexistent"}, cwd="/"))
    item = listed[-1]
    assert (item.name, item.source, item.plugin) == ("wasm-echo", "/plugins/echo", made)
    assert made in listed.active


def test_plugin_directories_are_the_users_and_a_trusted_projects(senv: SmithEnv) -> None:
    from smith import trust

    project = senv.make_project(config="")

    def places() -> list[str]:
        found = loaders_of(_config(senv, project))
        return [each.path for each in found if isinstance(each, PluginDirectory)]

    user = str(senv.data_home / "plugins")
    assert places() == [user]  # the project is not trusted: its directory is not read
    trust.trust(senv.env["SMITH_HOME"], str(project))
    assert places() == [user, os.path.join(project, ".smith", "plugins")]


def test_empty_or_missing_directories_say_nothing(senv: SmithEnv) -> None:
    (senv.data_home / "plugins").mkdir(parents=True)
    listed = resolve_plugins(_config(senv, senv.make_project()))
    assert listed.warnings == ()


def test_folders_in_a_plugin_directory_without_a_manifest_are_a_warning(
    smith: Callable[..., Result], senv: SmithEnv
) -> None:
    plugins = senv.data_home / "plugins"
    (plugins / "echo").mkdir(parents=True)
    (plugins / "echo" / "echo.wasm").write_bytes(b"\0asm")
    (plugins / "installed.json").write_text("{}")  # the store's own file: no warning
    r = smith("plugins", "list")
    assert r.code == 0 and "queue" in r.out
    assert f"warning: {plugins}: the user plugin directory holds echo, which smith" in r.err
    assert "installed.json" not in r.err and "fix:" in r.err


def test_a_file_where_the_plugin_directory_should_be_is_a_warning(
    smith: Callable[..., Result], senv: SmithEnv
) -> None:
    senv.data_home.mkdir(parents=True, exist_ok=True)
    (senv.data_home / "plugins").write_text("not a directory")
    r = smith("plugins", "list", "--json")
    assert r.code == 0 and '"queue"' in r.out
    path = senv.data_home / "plugins"
    assert f"warning: {path}: the user plugin directory cannot be read: Not a directory" in r.err
    assert "fix:" in r.err and "Traceback" not in r.err
    r = smith("eval", "--model", "demo", "--no-session", "hi")
    assert r.code == 0 and "cannot be read" in r.err


def test_an_unreadable_plugin_directory_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()

    def denied(path: str) -> list[str]:  # what a directory without read permission gives
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(os, "listdir", denied)
    warnings: list[Diagnostic] = []
    assert PluginDirectory(str(plugins), "user").discover(warnings.append) == ()
    assert [w.code for w in warnings] == ["plugin.directory-unreadable"]
    assert "Permission denied" in warnings[0].what and str(plugins) in warnings[0].render()


def test_a_trusted_projects_directory_is_read(senv: SmithEnv) -> None:
    from smith import trust

    project = senv.make_project(config="")
    (project / ".smith" / "plugins").write_text("a file")
    trust.trust(senv.env["SMITH_HOME"], str(project))
    listed = resolve_plugins(_config(senv, project))
    assert [w.code for w in listed.warnings] == ["plugin.directory-unreadable"]
    assert str(project / ".smith" / "plugins") in listed.warnings[0].render()
    assert "the project plugin directory" in listed.warnings[0].what
