"""`smith plugins` with packages (issue 30): install from a directory, an archive or a git
repository (a pinned ref), copied into $SMITH_HOME/plugins and recorded; listed, enabled
and disabled through plugins.disabled; removed, updated, described; and every bad input
refused with a diagnostic naming it, nothing written."""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result, SmithEnv

Smith = Callable[..., Result]


def _package(where: Path, name: str = "pkg-review", token: str = "PKGTOKEN-3141",
             extra: str = "") -> Path:  # fmt: skip
    (where / "prompts").mkdir(parents=True, exist_ok=True)
    (where / "plugin.kdl").write_text(f'name "{name}"\nversion "0.1.0"\n{extra}')
    (where / "prompts" / "pkgreview.md").write_text(f"Review $1 carefully. {token}\n")
    return where


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.email=p@example.com", "-c", "user.name=p", *args],
        cwd=root, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout.strip()


def _repo(root: Path) -> str:
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "package")
    return _git(root, "rev-parse", "HEAD")


def _sent(smith: Smith, senv: SmithEnv, text: str) -> str:
    """What `smith eval TEXT` sent the model (a scripted one logging its requests)."""
    log = senv.root / "requests.jsonl"
    log.unlink(missing_ok=True)
    script = senv.root / "script.json"
    script.write_text(json.dumps({"responses": [{"text": "ok", "stop": "end"}],
                                  "requests_log": str(log)}))  # fmt: skip
    project = senv.make_project()
    r = smith("eval", "--no-session", "--model", f"scripted:{script}", text, cwd=project)
    assert r.code == 0, r.err
    return log.read_text() if log.exists() else ""


def _listed(smith: Smith) -> dict[str, dict[str, object]]:
    r = smith("plugins", "list", "--json")
    assert r.code == 0, r.err
    return {p["name"]: p for p in json.loads(r.out)["plugins"]}


def test_a_package_from_a_git_repository_is_copied_recorded_and_answers(
    smith: Smith, senv: SmithEnv, tmp_path: Path
) -> None:
    source = _package(tmp_path / "pkg")
    commit = _repo(source)
    r = smith("plugins", "install", f"file://{source}", "--yes")
    assert r.code == 0, r.err
    installed = senv.data_home / "plugins" / "pkg-review"
    assert r.out.strip() == f"installed pkg-review 0.1.0 in {installed}"
    assert "brings prompt templates: /pkgreview" in r.err and "asks for no grants" in r.err
    assert not (installed / ".git").exists() and (installed / "plugin.kdl").is_file()
    record = json.loads((senv.data_home / "plugins" / "installed.json").read_text())["pkg-review"]
    assert (record["source"], record["commit"], record["ref"]) == (f"file://{source}", commit, "")
    assert len(record["sha256"]) == 64 and record["installed_at"].endswith("Z")
    source.rename(tmp_path / "moved")  # installed means copied
    item = _listed(smith)["pkg-review"]
    assert (item["enabled"], item["source"]) == (True, str(installed))
    assert "PKGTOKEN-3141" in _sent(smith, senv, "/pkgreview src/app.py")


def test_a_pinned_ref_installs_that_commit(smith: Smith, senv: SmithEnv, tmp_path: Path) -> None:
    source = _package(tmp_path / "pkg", token="FIRST-1")
    first = _repo(source)
    _git(source, "tag", "v1")
    _package(source, token="SECOND-2")
    _git(source, "commit", "-qam", "second")
    r = smith("plugins", "install", f"file://{source}@v1", "--yes")
    assert r.code == 0, r.err
    record = json.loads((senv.data_home / "plugins" / "installed.json").read_text())["pkg-review"]
    assert (record["ref"], record["commit"], record["source"]) == ("v1", first, f"file://{source}")
    assert "FIRST-1" in _sent(smith, senv, "/pkgreview x")
    # --ref with a local repository's path; then update follows the recorded ref
    r = smith("plugins", "install", str(source), "--ref", "HEAD", "--yes")
    assert r.code == 0, r.err
    assert "SECOND-2" in _sent(smith, senv, "/pkgreview x")
    r = smith("plugins", "update", "pkg-review")
    assert r.code == 0 and r.out.strip() == "pkg-review is up to date (0.1.0)", r.err
    r = smith("plugins", "install", f"file://{source}@no-such-ref", "--yes")
    assert r.code == 1 and "error: git could not check out no-such-ref of" in r.err


def test_git_runs_no_hook_or_program_its_configuration_names(
    smith: Smith, senv: SmithEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "ran"
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for hook in ("post-checkout", "post-merge", "reference-transaction"):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch {marker}\n")
        (hooks / hook).chmod(0o755)
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text(f"[core]\n\thooksPath = {hooks}\n\tfsmonitor = touch {marker}\n")
    source = _package(tmp_path / "pkg")
    _repo(source)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    r = smith("plugins", "install", f"file://{source}", "--yes")
    assert r.code == 0, r.err
    assert not marker.exists()


def test_install_asks_and_refuses_without_yes_where_nobody_answers(
    smith: Smith, senv: SmithEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _package(tmp_path / "pkg", extra='grants { host "api.github.com"; }\n')
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))  # not a terminal: not asked
    r = smith("plugins", "install", str(source))
    assert r.code == 2 and r.out == ""
    assert "reach api.github.com over HTTP" in r.err  # what it asks for is shown first
    assert "error: not installing pkg-review: nobody confirmed it" in r.err
    assert f"smith plugins install {source} --yes" in r.err
    assert not (senv.data_home / "plugins" / "pkg-review").exists()


def test_a_manifest_with_a_bad_value_is_refused_naming_file_line_and_key(
    smith: Smith, senv: SmithEnv, tmp_path: Path
) -> None:
    source = tmp_path / "pkg"
    source.mkdir()
    (source / "plugin.kdl").write_text('name "ok"\nversion 3\nevents "turn_start" "nope"\n')
    r = smith("plugins", "install", str(source), "--yes")
    assert r.code == 2 and r.out == ""
    kdl = source / "plugin.kdl"
    assert f"error: {kdl}:2:9: version: plugin.kdl's version is the number 3, not a string" in r.err
    assert f"error: {kdl}:3:1: events: plugin.kdl's events names 'nope', which is no event" in r.err
    assert not (senv.data_home / "plugins").exists()
    (source / "plugin.kdl").write_text('version "1"\n')
    r = smith("plugins", "install", str(source), "--yes")
    assert r.code == 2 and f"error: {kdl}: name: plugin.kdl has no name" in r.err


@pytest.mark.parametrize("name", ["my plugin", "../escape", "1st", "a.b", ""])
def test_a_name_that_is_no_identifier_is_refused(
    smith: Smith, senv: SmithEnv, tmp_path: Path, name: str
) -> None:
    source = tmp_path / "pkg"
    source.mkdir()
    (source / "plugin.kdl").write_text(f'name "{name}"\nversion "1.0"\n')
    r = smith("plugins", "install", str(source), "--yes")
    assert r.code == 2, r.err
    kdl = source / "plugin.kdl"
    assert f"error: {kdl}:1:6: name: plugin.kdl's name is {name!r}, which is not a" in r.err
    assert not (senv.data_home / "plugins").exists()
    r = smith("plugins", "new", name or "-", "--dir", str(tmp_path))
    assert r.code == 2 and "cannot name a plugin" in r.err


def test_a_builtin_name_cannot_be_installed_or_removed(
    smith: Smith, senv: SmithEnv, tmp_path: Path
) -> None:
    source = _package(tmp_path / "pkg", name="queue")
    r = smith("plugins", "install", str(source), "--yes")
    assert r.code == 2 and "error: queue is a plugin built into smith" in r.err
    r = smith("plugins", "remove", "approval")
    assert r.code == 2 and "error: approval is a plugin built into smith" in r.err


def _tar(path: Path, members: list[tuple[str, bytes | None, str]]) -> Path:
    """A .tar.gz of (name, content or None for a directory, link target or "")."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data, link in members:
            info = tarfile.TarInfo(name)
            if link:
                info.type, info.linkname = tarfile.SYMTYPE, link
                tar.addfile(info)
            elif data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path


MANIFEST = b'name "arch"\nversion "1.0"\n'


def test_an_archive_installs_from_its_one_folder(
    smith: Smith, senv: SmithEnv, tmp_path: Path
) -> None:
    archive = _tar(tmp_path / "arch-1.0.tgz", [
        ("arch-1.0", None, ""), ("arch-1.0/plugin.kdl", MANIFEST, ""),
        ("arch-1.0/prompts/arch.md", b"ARCHTOKEN $1", ""),
        ("arch-1.0/prompts/same.md", None, "arch.md"),  # a link inside the package: kept
    ])  # fmt: skip
    r = smith("plugins", "install", str(archive), "--yes")
    assert r.code == 0, r.err
    assert (senv.data_home / "plugins" / "arch" / "prompts" / "same.md").is_symlink()
    assert "ARCHTOKEN" in _sent(smith, senv, "/arch x")
    zipped = tmp_path / "z.zip"
    with zipfile.ZipFile(zipped, "w") as z:
        z.writestr("plugin.kdl", MANIFEST.replace(b"arch", b"zipped"))
    r = smith("plugins", "install", str(zipped), "--yes")
    assert r.code == 0 and "installed zipped 1.0" in r.out, r.err


@pytest.mark.parametrize(
    ("member", "link", "says"),
    [
        ("../evil.txt", "", "../evil.txt, which climbs out of the package with '..'"),
        ("/tmp/evil.txt", "", "/tmp/evil.txt, which is an absolute path"),
        (
            "prompts/out.md",
            "../../../etc/passwd",
            "prompts/out.md, which is a link to '../../../etc/passwd', which climbs with '..'",
        ),
        (
            "prompts/abs.md",
            "/etc/passwd",
            "prompts/abs.md, which is a link to the absolute path '/etc/passwd'",
        ),
    ],
)
def test_an_archive_reaching_out_of_the_package_is_refused(
    smith: Smith, senv: SmithEnv, tmp_path: Path, member: str, link: str, says: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    scratch = tmp_path / "tmp" / "scratch"  # where smith unpacks: ../evil.txt lands beside it
    scratch.mkdir(parents=True)
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    archive = _tar(tmp_path / "bad.tar.gz",
                   [("plugin.kdl", MANIFEST, ""), (member, b"x", link)])  # fmt: skip
    r = smith("plugins", "install", str(archive), "--yes")
    assert r.code == 1 and r.out == ""
    assert f"error: {archive}: the archive bad.tar.gz holds {says}" in r.err
    landed = [p for p in scratch.rglob("evil.txt")] + list((tmp_path / "tmp").glob("evil.txt"))
    assert landed == [] and not (senv.data_home / "plugins").exists()


def test_a_zip_climbing_out_is_refused(
    smith: Smith, senv: SmithEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "tmp" / "scratch"  # smith unpacks in scratch/smith-package-X/unpacked
    scratch.mkdir(parents=True)
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    zipped = tmp_path / "bad.zip"
    with zipfile.ZipFile(zipped, "w") as z:
        z.writestr("plugin.kdl", MANIFEST)
        z.writestr("../../evil.txt", "x")
    r = smith("plugins", "install", str(zipped), "--yes")
    assert r.code == 1 and "holds ../../evil.txt, which climbs out of the package" in r.err
    assert not (scratch / "evil.txt").exists()  # ../../evil.txt from the unpacked folder


def test_a_directory_with_a_link_out_of_it_is_refused(
    smith: Smith, senv: SmithEnv, tmp_path: Path
) -> None:
    source = _package(tmp_path / "pkg")
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET")
    (source / "prompts" / "leak.md").symlink_to(secret)
    r = smith("plugins", "install", str(source), "--yes")
    assert r.code == 1 and r.out == ""
    assert f"error: {source}: cannot install from {source}: prompts/leak.md is a link to" in r.err
    assert not (senv.data_home / "plugins" / "pkg-review").exists()
    store = senv.data_home / "plugins"  # refused before the store is touched, or no staging left
    assert not store.exists() or [p.name for p in store.iterdir()] == []


def test_nothing_there_is_no_source(smith: Smith, tmp_path: Path) -> None:
    r = smith("plugins", "install", str(tmp_path / "nowhere"), "--yes")
    assert r.code == 1 and "is no package source smith can read: nothing is there" in r.err
    (tmp_path / "plain").mkdir()
    r = smith("plugins", "install", str(tmp_path / "plain"), "--yes")
    assert r.code == 1 and "is not a package: it has no plugin.kdl" in r.err


def test_a_module_named_but_not_built_is_refused(smith: Smith, tmp_path: Path) -> None:
    source = _package(tmp_path / "pkg", extra='module "plugin.wasm"\nbuild "python"\n')
    r = smith("plugins", "install", str(source), "--yes")
    assert r.code == 2 and "names the module plugin.wasm, which is not in the package" in r.err
    assert f"smith plugins build {source}" in r.err


def test_disable_enable_and_remove(smith: Smith, senv: SmithEnv, tmp_path: Path) -> None:
    r = smith("plugins", "install", str(_package(tmp_path / "pkg")), "--yes")
    assert r.code == 0, r.err
    senv.write_user_config('model "demo"\n')
    r = smith("plugins", "disable", "pkg-review")
    assert r.code == 0 and r.out.startswith("disabled pkg-review (plugins.disabled at "), r.err
    assert senv.user_config.read_text() == 'model "demo"\nplugins.disabled "pkg-review"\n'
    item = _listed(smith)["pkg-review"]
    assert (item["enabled"], item["state"]) == (False, "disabled")
    assert "PKGTOKEN" not in _sent(smith, senv, "/pkgreview x")
    assert smith("plugins", "disable", "demo").code == 0
    r = smith("plugins", "enable", "pkg-review")
    assert r.code == 0 and r.out.strip() == "enabled pkg-review"
    assert senv.user_config.read_text() == 'model "demo"\nplugins.disabled "demo"\n'
    assert smith("plugins", "enable", "demo").code == 0
    assert senv.user_config.read_text() == 'model "demo"\n'
    assert "PKGTOKEN" in _sent(smith, senv, "/pkgreview x")
    r = smith("plugins", "disable", "queue")  # refused, and the file is left as it was
    assert r.code == 2 and "the queue plugin cannot be disabled" in r.err
    assert senv.user_config.read_text() == 'model "demo"\n'
    r = smith("plugins", "remove", "pkg-review")
    assert r.code == 0 and r.out.strip() == "removed pkg-review 0.1.0"
    assert "pkg-review" not in _listed(smith)
    assert not (senv.data_home / "plugins" / "pkg-review").exists()
    assert json.loads((senv.data_home / "plugins" / "installed.json").read_text()) == {}


def test_a_block_of_disabled_plugins_is_edited_in_place(smith: Smith, senv: SmithEnv) -> None:
    senv.write_user_config('plugins {\n    disabled "demo"\n}\nmodel "demo"\n')
    assert smith("plugins", "enable", "demo").code == 0
    assert senv.user_config.read_text() == 'model "demo"\n'


@pytest.mark.parametrize("action", ["remove", "enable", "disable", "info", "update"])
def test_an_unknown_name_is_refused(smith: Smith, action: str) -> None:
    r = smith("plugins", action, "nosuch")
    assert r.code == 2 and r.out == ""
    assert "error: nosuch is no " in r.err and "fix:" in r.err


def test_info_says_where_a_package_came_from(smith: Smith, tmp_path: Path) -> None:
    source = _package(tmp_path / "pkg", extra='description "Reviews"\ngrants { command "git"; }\n')
    assert smith("plugins", "install", str(source), "--yes").code == 0
    r = smith("plugins", "info", "pkg-review")
    assert r.code == 0, r.err
    assert r.out.startswith("pkg-review 0.1.0 (enabled)\n  Reviews\n")
    assert f"installed from {source} on " in r.out and "content sha256 " in r.out
    assert "grants: run the command git (in smith's sandbox)" in r.out
    data = json.loads(smith("plugins", "info", "pkg-review", "--json").out)
    assert data["installed"]["source"] == str(source) and data["brings"] == [
        "prompt templates: /pkgreview"
    ]
    r = smith("plugins", "info", "queue")
    assert r.code == 0 and r.out.startswith("queue ")


def test_update_installs_what_changed(smith: Smith, senv: SmithEnv, tmp_path: Path) -> None:
    source = _package(tmp_path / "pkg", token="OLD-1")
    assert smith("plugins", "install", str(source), "--yes").code == 0
    r = smith("plugins", "update")
    assert r.code == 0 and r.out.strip() == "pkg-review is up to date (0.1.0)"
    _package(source, token="NEW-2")
    r = smith("plugins", "update", "--yes")
    assert r.code == 0 and r.out.startswith("installed pkg-review 0.1.0"), r.err
    assert "NEW-2" in _sent(smith, senv, "/pkgreview x")


def test_update_says_what_the_new_version_asks_for_that_the_installed_one_did_not(
    smith: Smith, tmp_path: Path
) -> None:
    source = _package(tmp_path / "pkg", extra='grants { command "git"; secret "TOKEN"; }\n')
    assert smith("plugins", "install", str(source), "--yes").code == 0
    _package(source, extra='grants { command "rg"; secret "TOKEN"; }\n'
             'secret-route "TOKEN" { plaintext true; }\n')  # fmt: skip
    r = smith("plugins", "update", "--yes")
    assert r.code == 0, r.err
    assert ("  asks for more than the installed version:\n"
            "    + run the command rg (in smith's sandbox)\n"
            "    + give plugins granted TOKEN its value\n"
            "  no longer asks to:\n"
            "    - run the command git (in smith's sandbox)\n") in r.err  # fmt: skip


def test_a_claude_code_plugin_installs_as_it_is(
    smith: Smith, senv: SmithEnv, tmp_path: Path
) -> None:
    cc = tmp_path / "cc-plugin"
    (cc / ".claude-plugin").mkdir(parents=True)
    (cc / "commands").mkdir()
    (cc / ".claude-plugin" / "plugin.json").write_text(
        json.dumps({"name": "cc-tools", "version": "1.0.0"})
    )
    (cc / "commands" / "ccexplain.md").write_text(
        "---\ndescription: Explain a file\n---\nExplain $ARGUMENTS simply. CCTOKEN-1618\n"
    )
    r = smith("plugins", "install", str(cc), "--yes")
    assert r.code == 0, r.err
    assert "brings prompt templates: /ccexplain" in r.err
    assert "CCTOKEN-1618" in _sent(smith, senv, "/ccexplain src/app.py")


def test_project_packages_load_only_in_a_trusted_project(
    smith: Smith, senv: SmithEnv, tmp_path: Path
) -> None:
    from smith import trust

    project = senv.make_project(config="")
    _package(project / ".smith" / "plugins" / "local", name="local")

    def names() -> list[str]:
        r = smith("plugins", "list", "--json", cwd=project)
        assert r.code == 0, r.err
        return [p["name"] for p in json.loads(r.out)["plugins"]]

    assert "local" not in names()
    trust.trust(senv.env["SMITH_HOME"], str(project))
    assert "local" in names()


def test_a_broken_installed_package_is_a_warning_not_a_crash(
    smith: Smith, senv: SmithEnv, tmp_path: Path
) -> None:
    assert smith("plugins", "install", str(_package(tmp_path / "pkg")), "--yes").code == 0
    kdl = senv.data_home / "plugins" / "pkg-review" / "plugin.kdl"
    kdl.write_text('name "pkg-review"\nversion 2\n')
    r = smith("plugins", "list")
    assert r.code == 0 and "queue" in r.out
    row = next(line for line in r.out.splitlines() if line.startswith("pkg-review "))
    assert "broken" in row and "not loaded" in row  # listed, as not loaded
    assert f"warning: {kdl}:2:9: the user package pkg-review is not loaded: version: " in r.err
    assert r.err.count(f"{kdl}:2:9") == 1  # where it is, said once


def test_the_store_is_private_and_leaves_nothing_behind(
    smith: Smith, senv: SmithEnv, tmp_path: Path
) -> None:
    assert smith("plugins", "install", str(_package(tmp_path / "pkg")), "--yes").code == 0
    assert smith("plugins", "install", str(_package(tmp_path / "pkg")), "--yes").code == 0
    store = senv.data_home / "plugins"
    assert sorted(os.listdir(store)) == ["installed.json", "pkg-review"]
    assert (os.stat(store / "installed.json").st_mode & 0o777) == 0o600


def test_a_project_package_of_an_installed_name_is_left_out_with_a_warning(
    smith: Smith, senv: SmithEnv, tmp_path: Path
) -> None:
    from smith import trust

    assert smith("plugins", "install", str(_package(tmp_path / "pkg")), "--yes").code == 0
    project = senv.make_project(config="")
    _package(project / ".smith" / "plugins" / "pkg-review", token="PROJECT-9")
    trust.trust(senv.env["SMITH_HOME"], str(project))
    r = smith("plugins", "list", "--json", cwd=project)
    assert r.code == 0, r.err
    sources = [p["source"] for p in json.loads(r.out)["plugins"] if p["name"] == "pkg-review"]
    assert sources == [str(senv.data_home / "plugins" / "pkg-review")]
    assert "warning: " in r.err and "the package pkg-review is not loaded: a plugin" in r.err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("answer", "code"), [("y\n", 0), ("n\n", 2), ("", 2)])
def test_install_asks_on_a_terminal(
    smith: Smith, senv: SmithEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    answer: str, code: int,
) -> None:  # fmt: skip
    monkeypatch.setattr("sys.stdin", _Terminal(answer))
    r = smith("plugins", "install", str(_package(tmp_path / "pkg")))
    assert r.code == code, r.err
    assert "install pkg-review? [y/N] " in r.err
    assert (senv.data_home / "plugins" / "pkg-review").exists() == (code == 0)
    if code:
        assert "error: not installing pkg-review: the answer was no" in r.err


def test_new_and_help_come_from_the_sdk(smith: Smith, tmp_path: Path) -> None:
    r = smith("plugins", "new", "hello9", "--lang", "c", "--dir", str(tmp_path))
    assert r.code == 0, r.err
    assert (tmp_path / "hello9" / "plugin.kdl").is_file()
    assert f"smith plugins build {tmp_path / 'hello9'}" in r.out
    r = smith("plugins", "help")
    assert r.code == 0 and "tool_call" in r.out
    r = smith("plugins", "help", "no-such-topic")
    assert r.code != 0 and "no-such-topic" in r.err


def test_a_c_build_keeps_zigs_caches_in_smiths_cache_directory(
    smith: Smith, senv: SmithEnv, tmp_path: Path
) -> None:
    """zig builds its C library once (about half a minute) and keeps it: in smith's cache
    directory, so a new HOME (a container, a CI job, each test) does not build it again."""
    assert smith("plugins", "new", "hello8", "--lang", "c", "--dir", str(tmp_path)).code == 0
    r = smith("plugins", "build", str(tmp_path / "hello8"))
    assert r.code == 0, r.err
    assert any((Path(senv.env["SMITH_CACHE_HOME"]) / "zig").iterdir())
    home = Path(senv.env["HOME"])
    assert not (home / ".cache" / "zig").exists() and not list(home.rglob("zig"))
