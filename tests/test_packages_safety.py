"""What a hostile package source cannot do through `smith plugins` (issue 30, the review of
the store): write out of smith's directories while unpacking (chains of links in a zip or a
tar), have a name that reaches out of the store, load unapproved in a trusted project,
change between the question and the copy, or stay broken unnoticed."""

from __future__ import annotations

import io
import os
import stat
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result, SmithEnv

Smith = Callable[..., Result]
MANIFEST = b'name "evil"\nversion "1.0"\n'
DEPTH = 40  # links enough to climb from any scratch folder to /


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where smith unpacks sources (tempfile's folder, taken in-process), so a test can
    name the path an escaping member would really reach."""
    where = tmp_path / "tmp" / "a" / "b"
    where.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    return where


def _chain_members(target: Path) -> list[tuple[str, bytes, int]]:
    """`d/up -> ..`, `l1 -> d/up/..`, `l2 -> l1/..`, ...: each link's text stays inside
    the package, while the chain followed on disk climbs to /; then a file through it."""
    link, folder = stat.S_IFLNK | 0o777, stat.S_IFDIR | 0o755
    members = [("plugin.kdl", MANIFEST, stat.S_IFREG | 0o644), ("d/", b"", folder),
               ("d/up", b"..", link), ("l1", b"d/up/..", link)]  # fmt: skip
    members += [(f"l{i}", f"l{i - 1}/..".encode(), link) for i in range(2, DEPTH)]
    members.append((f"l{DEPTH - 1}{target}", b"pwned\n", stat.S_IFREG | 0o644))
    return members


def _zip(path: Path, members: list[tuple[str, bytes, int]]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, data, mode in members:
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            z.writestr(info, data)
    return path


def test_a_zip_whose_chain_of_links_climbs_out_writes_nothing(
    smith: Smith, senv: SmithEnv, tmp_path: Path, scratch: Path
) -> None:
    target = tmp_path / "PWNED_BY_ZIP"
    archive = _zip(tmp_path / "chain.zip", _chain_members(target))
    r = smith("plugins", "install", str(archive), "--yes")
    assert r.code == 1 and not target.exists()
    assert "the archive chain.zip holds d/up, which is a link to '..', which climbs" in r.err
    assert not (senv.data_home / "plugins" / "evil").exists()


def test_a_tar_whose_chain_of_links_climbs_out_writes_nothing(
    smith: Smith, senv: SmithEnv, tmp_path: Path, scratch: Path
) -> None:
    target = tmp_path / "PWNED_BY_TAR"
    archive = tmp_path / "chain.tar"
    with tarfile.open(archive, "w") as tar:
        for name, data, mode in _chain_members(target):
            info = tarfile.TarInfo(name.rstrip("/"))
            if stat.S_ISLNK(mode):
                info.type, info.linkname = tarfile.SYMTYPE, data.decode()
                tar.addfile(info)
            elif stat.S_ISDIR(mode):
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    r = smith("plugins", "install", str(archive), "--yes")
    assert r.code == 1 and not target.exists()
    assert "the archive chain.tar holds d/up, which is a link to '..', which climbs" in r.err


@pytest.mark.parametrize(
    ("members", "says"),
    [
        (
            [("sub/", b"", stat.S_IFDIR | 0o755), ("ln", b"sub", stat.S_IFLNK | 0o777),
             ("ln/x.md", b"x", stat.S_IFREG | 0o644)],
            "holds ln/x.md, which is inside the link ln",
        ),
        ([("a.md", b"1", stat.S_IFREG | 0o644), ("a.md", b"2", stat.S_IFREG | 0o644)],
         "holds a.md, which is in it twice"),
    ],
)  # fmt: skip
def test_a_zip_member_through_a_link_or_twice_is_refused_naming_it(
    smith: Smith, tmp_path: Path, scratch: Path, members: list[tuple[str, bytes, int]], says: str
) -> None:
    with pytest.warns(UserWarning) if len({m[0] for m in members}) < len(members) else _none():
        archive = _zip(tmp_path / "odd.zip", [("plugin.kdl", MANIFEST, stat.S_IFREG | 0o644),
                                              *members])  # fmt: skip
    r = smith("plugins", "install", str(archive), "--yes")
    assert r.code == 1 and f"the archive odd.zip {says}" in r.err, r.err


def test_a_zip_link_pointing_down_is_kept(
    smith: Smith, senv: SmithEnv, tmp_path: Path, scratch: Path
) -> None:
    archive = _zip(tmp_path / "ok.zip", [
        ("plugin.kdl", MANIFEST, stat.S_IFREG | 0o644),
        ("prompts/evil.md", b"EVILTOKEN $1", stat.S_IFREG | 0o644),
        ("prompts/same.md", b"evil.md", stat.S_IFLNK | 0o777),
    ])  # fmt: skip
    r = smith("plugins", "install", str(archive), "--yes")
    assert r.code == 0, r.err
    kept = senv.data_home / "plugins" / "evil" / "prompts" / "same.md"
    assert kept.is_symlink() and os.readlink(kept) == "evil.md"


class _none:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


@pytest.mark.parametrize("name", ["ABS", "../victim", "", ".", "installed.json", "a/../../victim"])
def test_remove_takes_only_a_package_name_and_deletes_nothing_else(
    smith: Smith, senv: SmithEnv, tmp_path: Path, name: str
) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine")
    (senv.data_home / "victim").mkdir(parents=True)
    (senv.data_home / "plugins").mkdir()
    name = str(victim) if name == "ABS" else name
    r = smith("plugins", "remove", name)
    assert r.code == 1, r.err
    assert f"error: {name!r} cannot name an installed package" in r.err
    assert (victim / "keep.txt").read_text() == "mine"
    assert (senv.data_home / "victim").is_dir() and (senv.data_home / "plugins").is_dir()


def _local(project: Path, name: str, token: str) -> Path:
    where = project / ".smith" / "plugins" / name
    (where / "prompts").mkdir(parents=True, exist_ok=True)
    (where / "plugin.kdl").write_text(f'name "{name}"\nversion "0.1.0"\n')
    (where / "prompts" / f"{name}.md").write_text(f"Say {token}\n")
    return where


@pytest.mark.parametrize("config", [None, ""], ids=["no-config-kdl", "config-kdl"])
def test_a_project_package_loads_only_as_trust_approved_it(
    smith: Smith, senv: SmithEnv, config: str | None
) -> None:
    import json

    project = senv.make_project(config=config)
    first = _local(project, "projpkg", "FIRST")

    def listed() -> tuple[list[str], str]:
        r = smith("plugins", "list", "--json", cwd=project)
        assert r.code == 0, r.err
        return [p["name"] for p in json.loads(r.out)["plugins"]], r.err

    assert "projpkg" not in listed()[0]  # not trusted: not even looked at
    r = smith("trust", str(project), cwd=project)
    assert r.code == 0, r.err
    names, err = listed()
    assert "projpkg" in names, err  # trusted, with a config.kdl or none
    (first / "prompts" / "projpkg.md").write_text("Say CHANGED\n")  # changed after trust
    later = _local(project, "laterpkg", "LATER")  # added after trust
    names, err = listed()
    assert "projpkg" not in names and "laterpkg" not in names
    for name, path in (("projpkg", first), ("laterpkg", later)):
        assert f"the project package {name} is not loaded: it was added or changed" in err
        assert f"run `smith trust {project}` to approve it as it is now" in err, err
        assert str(path) in err
    assert smith("trust", str(project), cwd=project).code == 0
    names, err = listed()
    assert {"projpkg", "laterpkg"} <= set(names), err


class _Answer(io.StringIO):
    """A terminal whose user answers y, while someone changes the source meanwhile."""

    def __init__(self, meanwhile: Callable[[], None]) -> None:
        super().__init__("y\n")
        self.meanwhile = meanwhile

    def isatty(self) -> bool:
        return True

    def readline(self, size: int | None = -1) -> str:
        self.meanwhile()
        return super().readline()


def test_what_is_installed_is_what_was_shown_though_the_source_changed_meanwhile(
    smith: Smith, senv: SmithEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    source = tmp_path / "mut"
    source.mkdir()
    (source / "plugin.kdl").write_text('name "mut"\nversion "1.0"\n')

    def swap() -> None:
        (source / "plugin.kdl").write_text(
            'name "mut"\nversion "1.0"\ngrants {\n    command "rm"\n    host "evil.example"\n}\n'
        )

    monkeypatch.setattr("sys.stdin", _Answer(swap))
    r = smith("plugins", "install", str(source))
    assert r.code == 0, r.err
    assert "asks for no grants" in r.err
    installed = senv.data_home / "plugins" / "mut"
    assert "grants" not in (installed / "plugin.kdl").read_text()
    record = json.loads((senv.data_home / "plugins" / "installed.json").read_text())["mut"]
    assert record["grants"] == []


def test_a_link_out_of_a_directory_source_is_refused_before_asking(
    smith: Smith, senv: SmithEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "leaky"
    source.mkdir()
    (source / "plugin.kdl").write_text('name "leaky"\nversion "1.0"\n')
    (source / "secret.md").symlink_to(tmp_path / "outside.txt")
    asked: list[bool] = []
    monkeypatch.setattr("sys.stdin", _Answer(lambda: asked.append(True)))
    r = smith("plugins", "install", str(source))
    assert r.code == 1 and asked == [] and "[y/N]" not in r.err
    assert "secret.md is a link to" in r.err


def test_installed_again_from_its_own_copy_it_still_came_from_its_source(
    smith: Smith, senv: SmithEnv, tmp_path: Path
) -> None:
    import json

    source = tmp_path / "orig"
    source.mkdir()
    (source / "plugin.kdl").write_text('name "orig"\nversion "1.0"\n')
    assert smith("plugins", "install", str(source), "--yes").code == 0
    copy = senv.data_home / "plugins" / "orig"
    r = smith("plugins", "install", str(copy), "--yes")
    assert r.code == 0, r.err
    record = json.loads((senv.data_home / "plugins" / "installed.json").read_text())["orig"]
    assert record["source"] == str(source)


@pytest.mark.parametrize("damage", ["deleted", "garbage"])
def test_a_damaged_installed_module_is_said_listed_and_repaired_by_update(
    smith: Smith, senv: SmithEnv, tmp_path: Path, damage: str
) -> None:
    import json

    source = tmp_path / "modpkg"
    source.mkdir()
    (source / "plugin.kdl").write_text('name "modpkg"\nversion "1.0"\nmodule "plugin.wasm"\n')
    header = b"\0asm\x0d\x00\x01\x00"  # what a component begins with (the host says the rest)
    (source / "plugin.wasm").write_bytes(header)
    assert smith("plugins", "install", str(source), "--yes").code == 0
    module = senv.data_home / "plugins" / "modpkg" / "plugin.wasm"
    if damage == "deleted":
        module.unlink()
        why = "its module plugin.wasm is not there"
    else:
        module.write_bytes(b"garbage")
        why = "its module plugin.wasm is no WebAssembly"
    r = smith("plugins", "list", "--json")
    assert r.code == 0, r.err
    assert f"warning: {module}: the user package modpkg is not loaded: {why}" in r.err
    entry = next(p for p in json.loads(r.out)["plugins"] if p["name"] == "modpkg")
    assert entry["state"] == "broken" and entry["enabled"] is False and why in entry["reason"]
    r = smith("plugins", "list")
    assert any(line.split()[:1] == ["modpkg"] and "broken" in line for line in r.out.splitlines())
    r = smith("plugins", "info", "modpkg")
    assert r.code == 0 and "modpkg (broken: not loaded)" in r.out and why in r.out
    r = smith("plugins", "update", "modpkg", "--yes")
    assert r.code == 0 and "installed modpkg 1.0" in r.out, (r.out, r.err)
    assert module.read_bytes() == header
    assert "modpkg" not in smith("plugins", "list").err


def _simple(where: Path, name: str, version: str = "1.0") -> Path:
    where.mkdir(parents=True, exist_ok=True)
    (where / "plugin.kdl").write_text(f'name "{name}"\nversion "{version}"\n')
    return where


def test_update_of_all_goes_on_past_a_package_that_fails_and_says_which(
    smith: Smith, senv: SmithEnv, tmp_path: Path
) -> None:
    import shutil

    gone, later = _simple(tmp_path / "aa", "aa"), _simple(tmp_path / "zz", "zz")
    for source in (gone, later):
        assert smith("plugins", "install", str(source), "--yes").code == 0
    shutil.rmtree(gone)
    _simple(later, "zz", "2.0")
    r = smith("plugins", "update", "--yes")
    assert r.code == 1
    index = senv.data_home / "plugins" / "installed.json"
    assert f"error: {index}: cannot update aa: it was installed from {gone}, and nothing" in r.err
    assert "installed zz 2.0" in r.out and "not updated: aa" in r.out
    # nobody to ask: each is refused, and each is said
    _simple(later, "zz", "3.0")
    (tmp_path / "aa").mkdir()
    _simple(tmp_path / "aa", "aa", "2.0")
    r = smith("plugins", "update")
    assert r.code == 1 and "not updated: aa, zz" in r.out
    assert r.err.count("nobody confirmed it") == 2


def test_disabling_what_smith_needs_says_the_file_was_put_back(
    smith: Smith, senv: SmithEnv
) -> None:
    r = smith("plugins", "disable", "queue")
    assert r.code != 0
    assert "error: queue cannot be turned off: the queue plugin cannot be disabled" in r.err
    assert "fix: leave queue on: " in r.err and "was put back as it was" in r.err
    assert "remove queue from plugins.disabled" not in r.err


def test_a_ref_given_to_a_plain_folder_is_said_as_such(smith: Smith, tmp_path: Path) -> None:
    folder = _simple(tmp_path / "pk1", "pk1")
    r = smith("plugins", "install", f"{folder}@v1", "--yes")
    assert r.code == 1
    assert f"{folder}@v1 was read as the folder {folder} at the git ref 'v1', but" in r.err
    assert "is no git repository" in r.err and "repository does not exist" not in r.err


def test_a_package_named_like_a_builtin_is_told_to_rename(smith: Smith, tmp_path: Path) -> None:
    r = smith("plugins", "install", str(_simple(tmp_path / "h", "hooks")), "--yes")
    assert r.code != 0 and "give the package another name in its plugin.kdl" in r.err
    assert "smith plugins disable hooks" not in r.err
    r = smith("plugins", "remove", "hooks")
    assert r.code != 0 and "turn it off with `smith plugins disable hooks` instead" in r.err


def test_an_unreadable_installed_json_leaves_the_builtins_alone(
    smith: Smith, senv: SmithEnv, tmp_path: Path
) -> None:
    index = senv.data_home / "plugins" / "installed.json"
    index.parent.mkdir(parents=True)
    index.write_text("{bad")
    r = smith("plugins", "info", "queue")
    assert r.code == 0 and r.out.startswith("queue "), r.err
    r = smith("plugins", "remove", "nothing")
    assert r.code == 1
    assert f"error: {index}: the list of installed packages cannot be read" in r.err
    assert f"move {index} away" in r.err


def test_a_git_clone_past_the_bound_is_stopped_and_leaves_nothing(
    smith: Smith, senv: SmithEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    repo = _simple(tmp_path / "big", "big")
    (repo / "blob.bin").write_bytes(os.urandom(200_000))  # random: git cannot compress it
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "big"]):
        subprocess.run(["git", "-c", "user.email=p@x", "-c", "user.name=p", *args], cwd=repo,
                       check=True, capture_output=True)  # fmt: skip
    monkeypatch.setattr("smith.packages._sources.MAX_BYTES", 100_000)
    r = smith("plugins", "install", f"file://{repo}", "--yes")
    assert r.code == 1 and "more than a package may" in r.err, r.err
    assert not (senv.data_home / "plugins" / "big").exists()


def test_a_package_installed_again_is_swapped_in_one_step(
    smith: Smith, senv: SmithEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _simple(tmp_path / "swap", "swap")
    assert smith("plugins", "install", str(source), "--yes").code == 0
    target = senv.data_home / "plugins" / "swap"
    seen: list[bool] = []
    rename = os.rename

    def watched(a: str, b: str) -> None:
        seen.append(target.is_dir())  # what a starting smith would find
        rename(a, b)

    monkeypatch.setattr(os, "rename", watched)
    _simple(source, "swap", "2.0")
    r = smith("plugins", "install", str(source), "--yes")
    assert r.code == 0 and "installed swap 2.0" in r.out, r.err
    assert all(seen), seen
    assert 'version "2.0"' in (target / "plugin.kdl").read_text()
    assert sorted(os.listdir(target.parent)) == ["installed.json", "swap"]


def test_verify_links_refuses_a_link_whose_chain_leads_out(tmp_path: Path) -> None:
    """The last check after unpacking (and of a staged copy): every link, followed to
    the end of its chain on disk, stays inside; a link inside is left alone."""
    from smith.diagnostics import SmithError
    from smith.packages._sources import verify_links

    root = tmp_path / "pkg"
    (root / "d").mkdir(parents=True)
    (root / "in.md").write_text("x")
    (root / "d" / "ok").symlink_to("../in.md")
    verify_links(str(root), "pkg.zip")  # inside: nothing said
    (root / "d" / "up").symlink_to("..")
    (root / "x").symlink_to("d/up/..")  # text inside, chain out
    with pytest.raises(SmithError) as caught:
        verify_links(str(root), "pkg.zip")
    assert "the archive pkg.zip holds x, which is a link to 'd/up/..', out of" in str(caught.value)


def test_a_tar_hard_link_out_is_said_as_a_link(smith: Smith, tmp_path: Path) -> None:
    archive = tmp_path / "hard.tar"
    with tarfile.open(archive, "w") as tar:
        info = tarfile.TarInfo("plugin.kdl")
        info.size = len(MANIFEST)
        tar.addfile(info, io.BytesIO(MANIFEST))
        link = tarfile.TarInfo("h")
        link.type, link.linkname = tarfile.LNKTYPE, "/etc/passwd"
        tar.addfile(link)
    r = smith("plugins", "install", str(archive), "--yes")
    assert r.code == 1
    assert "the archive hard.tar holds h, which is a hard link to '/etc/passwd', out of" in r.err
