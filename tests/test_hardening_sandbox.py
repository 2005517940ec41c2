"""The sandbox against a hostile repository or model (issue 26, items 4-7 and 9): every
probe is a command run through `smith tools run bash` in a separate smith process, with
smith's directories, the home and the project under /var/tmp: the sandbox's private /tmp
would hide anything under the test's own temporary directory, and prove nothing."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SmithEnv, clean_environ, smith_executable

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is needed (.ci/run installs it)"
)
VISIBLE = "/var/tmp"  # a place the sandbox shows as it is (read-only)


@pytest.fixture
def world() -> Iterator[SmithEnv]:
    """A home, smith's directories and a project (`world.root / "project"`, a git
    repository) where a sandboxed command can see them."""
    root = Path(tempfile.mkdtemp(prefix="smith-hard-", dir=VISIBLE))
    home = root / "home"
    home.mkdir()
    env = clean_environ()
    env.update(HOME=str(home), SMITH_HOME=str(root / "data"),
               SMITH_CONFIG_HOME=str(root / "config"),
               XDG_CONFIG_HOME=str(home / ".config"),
               XDG_DATA_HOME=str(home / ".local" / "share"))  # fmt: skip
    project = root / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    try:
        yield SmithEnv(root, env)
    finally:
        for top, dirs, _ in os.walk(root):  # a test may leave read-only directories
            for name in dirs:
                with contextlib.suppress(OSError):
                    os.chmod(os.path.join(top, name), 0o700)
        shutil.rmtree(root, ignore_errors=True)


def bash(world: SmithEnv, command: str, *flags: str, cwd: Path | None = None,
         env: dict[str, str] | None = None) -> dict[str, object]:  # fmt: skip
    """`smith [FLAGS] tools run --json bash COMMAND` in its own process: the result."""
    r = subprocess.run([smith_executable(), *flags, "tools", "run", "--json", "bash",
                        json.dumps({"command": command})], cwd=cwd or world.root / "project",
                       env={**world.env, **(env or {})}, capture_output=True, text=True,
                       timeout=120, stdin=subprocess.DEVNULL)  # fmt: skip
    assert r.stdout.strip(), r.stderr
    result: dict[str, object] = json.loads(r.stdout)["result"]
    return result


def text(result: dict[str, object]) -> str:
    return str(result["text"])


# -- item 5: host unix sockets -------------------------------------------------------


@contextlib.contextmanager
def listening(address: str) -> Iterator[list[int]]:
    """A unix socket server of the host at `address` (a path, or "\\0name": abstract),
    counting the connections it takes."""
    seen: list[int] = []
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(address)
    server.listen(8)
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            seen.append(1)
            with contextlib.suppress(OSError):
                conn.sendall(b"hello from the host\n")
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join()
        server.close()
        if not address.startswith("\0"):
            os.unlink(address)


CONNECT = ("python3 -c \"import socket\ntry:\n s=socket.socket(socket.AF_UNIX); "
           "s.connect({address!r}); print('got', s.recv(64))\nexcept OSError as e: "
           "print('refused:', e)\"")  # fmt: skip


def test_no_host_unix_socket_is_reachable_without_the_network(world: SmithEnv) -> None:
    """A socket in the (writable) project, one in a visible directory of the home and an
    abstract one: a read-only bind never stopped connect(); the filter does."""
    project = world.root / "project"
    places = [str(project / "ls.sock"), str(world.root / "home" / "agent.sock"),
              f"\0smith-test-{os.getpid()}"]  # fmt: skip
    for address in places:
        with listening(address) as seen:
            out = text(bash(world, CONNECT.format(address=address)))
            assert "refused:" in out and "Address family not supported" in out, out
            assert not seen and "hello from the host" not in out
    with listening(places[0]) as seen:  # sandbox.network opens the host's sockets too
        out = text(bash(world, CONNECT.format(address=places[0]), "--sandbox-network"))
        assert "hello from the host" in out and seen


def test_the_filter_closes_the_other_ways_to_a_socket(world: SmithEnv) -> None:
    """A datagram pair (it can send to any socket by path), vsock (the hypervisor's
    host), io_uring (its requests escape seccomp), a 32-bit call and a socket() whose
    family hides in the register's high half: all refused; a stream pair works."""
    probe = r"""
import ctypes, errno, socket
def tried(what, make):
    try:
        make(); print(what, "made")
    except OSError as e:
        print(what, "refused", errno.errorcode[e.errno])
tried("dgram-pair", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM))
tried("raw-pair", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_RAW))
tried("stream-pair", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM))
tried("seqpacket-pair", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET))
tried("vsock", lambda: socket.socket(40, socket.SOCK_STREAM))
tried("inet", lambda: socket.socket(socket.AF_INET))
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
params = (ctypes.c_byte * 120)()
print("io_uring", libc.syscall(425, 8, params), errno.errorcode[ctypes.get_errno()])
high = ctypes.c_long(0x100000001)  # AF_UNIX in the low half
print("high-half", libc.syscall(41, high, 1, 0), errno.errorcode[ctypes.get_errno()])
"""
    (world.root / "project" / "probe.py").write_text(probe)
    out = text(bash(world, "python3 probe.py"))
    for refused in ("dgram-pair", "raw-pair", "vsock"):
        assert f"{refused} refused EAFNOSUPPORT" in out, out
    for made in ("stream-pair", "seqpacket-pair", "inet"):
        assert f"{made} made" in out, out
    assert "io_uring -1 ENOSYS" in out and "high-half -1 EAFNOSUPPORT" in out, out


@pytest.mark.skipif(shutil.which("gcc") is None or os.uname().machine != "x86_64",
                    reason="needs gcc on x86_64")  # fmt: skip
def test_a_32_bit_system_call_is_filtered_too(world: SmithEnv) -> None:
    """A 64-bit program may make i386 calls (int 0x80), whose numbers differ, and
    socketcall, whose arguments seccomp cannot see: both refused."""
    source = world.root / "project" / "int80.c"
    source.write_text(r"""
#include <stdio.h>
int main(void) {
  long r; unsigned int args[3] = {1, 1, 0};
  __asm__ volatile("int $0x80" : "=a"(r) : "a"(359), "b"(1), "c"(1), "d"(0) : "memory");
  printf("socket %ld\n", r);
  __asm__ volatile("int $0x80" : "=a"(r) : "a"(102), "b"(1), "c"(args) : "memory");
  printf("socketcall %ld\n", r);
  __asm__ volatile("int $0x80" : "=a"(r) : "a"(359), "b"(2), "c"(1), "d"(0) : "memory");
  printf("inet %ld\n", r);
  return 0;
}
""")
    subprocess.run(["gcc", "-O0", "-o", str(source.with_suffix("")), str(source)], check=True)
    out = text(bash(world, "./int80"))
    assert "socket -97" in out and "socketcall -97" in out, out  # -EAFNOSUPPORT
    assert "inet -97" not in out and "inet -" not in out.replace("inet -9", ""), out


def test_ordinary_toolchains_still_work_under_the_filter(world: SmithEnv) -> None:
    project = world.root / "project"
    (project / "Makefile").write_text("all:\n\t@echo made-ok\n")
    (project / "test_it.py").write_text("def test_it():\n    assert 1\n")
    python = ("import multiprocessing as m, concurrent.futures as f, asyncio, socket\n"
              "async def main():\n"
              "    p = await asyncio.create_subprocess_exec('echo', 'async-ok',"
              " stdout=asyncio.subprocess.PIPE)\n"
              "    print((await p.communicate())[0].decode().strip())\n"
              "if __name__ == '__main__':\n"
              "    print('pool', m.Pool(2).map(abs, [-1, -2]))\n"
              "    print('spawn', m.get_context('spawn').Pool(1).map(abs, [-3]))\n"
              "    print('executor', list(f.ProcessPoolExecutor(2).map(abs, [-4])))\n"
              "    asyncio.run(main())\n"
              "    s = socket.create_server(('127.0.0.1', 0)); port = s.getsockname()[1]\n"
              "    c = socket.create_connection(('127.0.0.1', port)); a, _ = s.accept()\n"
              "    c.sendall(b'tcp-ok'); print(a.recv(6).decode())\n")  # fmt: skip
    (project / "tools.py").write_text(python)
    (project / "child.js").write_text("process.send(42)\n")
    command = "python3 tools.py; make; git status --short | head -1; python3 -m pytest -q -p no:cacheprovider test_it.py 2>&1 | tail -1"  # noqa: E501
    if shutil.which("node"):
        command += (
            "; timeout 20 node -e \"require('child_process').fork('./child.js')"
            ".on('message', m => { console.log('ipc', m); process.exit(0) })\""
        )
    out = text(bash(world, command))
    for expected in ("pool [1, 2]", "spawn [3]", "executor [4]", "async-ok", "tcp-ok",
                     "made-ok", "?? ", "1 passed"):  # fmt: skip
        assert expected in out, out
    if shutil.which("node"):
        assert "ipc 42" in out, out


# -- item 6: credentials -------------------------------------------------------------


def _credentials(home: Path, elsewhere: Path) -> None:
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("aws_secret_access_key = AWSSECRET\n")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("SSHKEYSECRET\n")
    (home / ".ssh" / "known_hosts").write_text("github.com KNOWNHOST\n")
    (home / ".netrc").write_text("machine x login u password NETRCSECRET\n")
    (elsewhere / "gh").mkdir(parents=True)  # a symlinked location (dotfiles)
    (elsewhere / "gh" / "hosts.yml").write_text("oauth_token: GHSECRET\n")
    (home / ".config").mkdir()
    (home / ".config" / "gh").symlink_to(elsewhere / "gh")
    (elsewhere / "npmrc").write_text("//registry/:_authToken=NPMSECRET\n")
    (home / ".npmrc").symlink_to(elsewhere / "npmrc")


SECRETS = ("AWSSECRET", "SSHKEYSECRET", "NETRCSECRET", "GHSECRET", "NPMSECRET")
READ_ALL = ("cat ~/.aws/credentials ~/.ssh/id_ed25519 ~/.netrc ~/.config/gh/hosts.yml "
            "~/.npmrc {elsewhere}/gh/hosts.yml {elsewhere}/npmrc 2>&1; "
            "echo files=$(ls -A ~/.ssh | wc -l) done")  # fmt: skip


def test_credential_locations_are_hidden_symlinks_and_all(world: SmithEnv) -> None:
    home, elsewhere = world.root / "home", world.root / "dotfiles"
    _credentials(home, elsewhere)
    out = text(bash(world, READ_ALL.format(elsewhere=elsewhere)))
    assert "done" in out
    assert not [s for s in SECRETS if s in out], out
    assert "files=0" in out  # ~/.ssh is an empty directory there
    assert (home / ".netrc").read_text().startswith("machine")  # untouched outside


def test_sandbox_reveal_lets_one_location_through_for_one_command(world: SmithEnv) -> None:
    home, elsewhere = world.root / "home", world.root / "dotfiles"
    _credentials(home, elsewhere)
    rules = {"SMITH_SANDBOX_REVEAL": "cat ~/.netrc=~/.netrc,ls -A=~/.ssh/known_hosts"}
    assert "NETRCSECRET" in text(bash(world, "cat ~/.netrc", env=rules))
    for other in ("cat ~/.netrc; true", "cat ~/.netrc ~/.aws/credentials 2>&1",
                  "cat \"$HOME/.netrc\"", "head ~/.netrc"):  # fmt: skip
        out = text(bash(world, other, env=rules))
        assert "NETRCSECRET" not in out and "AWSSECRET" not in out, (other, out)
    out = text(bash(world, "ls -A ~/.ssh", env=rules))  # one file of a hidden directory
    assert "known_hosts" in out and "id_ed25519" not in out, out


def test_sandbox_hide_is_yours_to_set_and_checked(world: SmithEnv) -> None:
    home = world.root / "home"
    (home / "token.txt").write_text("MYTOKEN\n")
    out = text(bash(world, "cat ~/token.txt", "--sandbox-hide", "~/token.txt"))
    assert "MYTOKEN" not in out
    r = subprocess.run([smith_executable(), "--sandbox-hide", "token.txt", "tools", "run",
                        "bash", '{"command": "true"}'], cwd=world.root / "project",
                       env=world.env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode != 0
    assert "sandbox.hide" in r.stderr and "token.txt" in r.stderr
    assert "absolute (/...) or in your home directory (~/...)" in r.stderr


# -- item 7: symlinked directories ---------------------------------------------------


@pytest.mark.parametrize("relative", [False, True])
def test_smiths_directories_and_the_project_may_be_symlinks(world: SmithEnv,
                                                            relative: bool) -> None:  # fmt: skip
    real, links = world.root / "real", world.root / "links"
    for name in ("config", "data", "work"):
        (real / name).mkdir(parents=True)
    (real / "config" / "config.kdl").write_text('model "demo"\n')
    links.mkdir()
    for name in ("config", "data", "work"):
        (links / name).symlink_to(Path("../real") / name if relative else real / name)
    subprocess.run(["git", "init", "-q", str(real / "work")], check=True)
    env = {"SMITH_CONFIG_HOME": str(links / "config"), "SMITH_HOME": str(links / "data")}
    result = bash(world, f"echo sym-ok; ls -A {links}/config {real}/config; touch made",
                  cwd=links / "work", env=env)  # fmt: skip
    out = text(result)
    assert result["ok"] and "sym-ok" in out, out
    assert "config.kdl" not in out  # hidden wherever it is named
    assert (real / "work" / "made").exists()  # the project, reached by its link, writable


# -- item 9: a project that is, or is in, smith's own directory -----------------------


def test_a_project_that_is_smiths_config_directory_cannot_rewrite_it(world: SmithEnv) -> None:
    config = world.config_home
    config.mkdir()
    (config / "config.kdl").write_text('model "demo"\n')
    subprocess.run(["git", "init", "-q", str(config)], check=True)
    out = text(bash(world, "printf 'sandbox {\\n mode \"off\"\\n}\\n' >> config.kdl; "
                    "echo rc=$?; cat config.kdl", cwd=config))  # fmt: skip
    assert "rc=1" in out and 'model "demo"' in out  # read-only, not hidden
    assert (config / "config.kdl").read_text() == 'model "demo"\n'


def test_a_project_inside_smiths_directories_sees_nothing_else_of_them(world: SmithEnv) -> None:
    config, data = world.config_home, world.data_home
    (config / "projects" / "p").mkdir(parents=True)
    (config / "config.kdl").write_text('model "SECRET-CONFIG"\n')
    (data / "work").mkdir(parents=True)
    (data / "auth.json").write_text("SECRET-AUTH\n")
    for project in (config / "projects" / "p", data / "work"):
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        out = text(bash(world, f"cat {config}/config.kdl {data}/auth.json 2>&1; ls -A {config}"
                        f" {data}; touch here 2>&1; echo end", cwd=project))  # fmt: skip
        assert "SECRET" not in out and "end" in out, out
        assert "Read-only file system" in out and not (project / "here").exists(), out


def test_a_stowed_config_file_in_the_project_is_hidden(world: SmithEnv) -> None:
    """GNU stow links ~/.config/smith/config.kdl to the dotfiles repository: opened as the
    project, its config.kdl is out of reach too."""
    dotfiles = world.root / "project"
    (dotfiles / "smith").mkdir()
    (dotfiles / "smith" / "config.kdl").write_text('model "demo"\n')
    world.config_home.mkdir()
    (world.config_home / "config.kdl").symlink_to(dotfiles / "smith" / "config.kdl")
    bash(world, "printf 'sandbox {\\n mode \"off\"\\n}\\n' >> smith/config.kdl")
    assert (dotfiles / "smith" / "config.kdl").read_text() == 'model "demo"\n'


# -- item 4: repositories inside the project -----------------------------------------


PLANT = (
    "printf '[core]\\n\\tfsmonitor = touch /var/tmp/pwned\\n' >> {git}/config; echo rc=$?; "
    "mkdir -p {git}/hooks; printf '#!/bin/sh\\n' > {git}/hooks/post-checkout; echo rc=$?"
)


def test_every_repository_already_in_the_project_is_read_only(world: SmithEnv) -> None:
    """A nested clone, a submodule's gitlink file, a bare repository, a nested .smith and
    the project's own .git: none can be written by a command."""
    project = world.root / "project"
    subprocess.run(["git", "init", "-q", str(project / "vendor" / "lib")], check=True)
    subprocess.run(["git", "init", "-q", "--bare", str(project / "mirror.git")], check=True)
    (project / "sub").mkdir()
    (project / "sub" / ".git").write_text("gitdir: ../.git/modules/sub\n")
    (project / "deep" / "er" / ".smith").mkdir(parents=True)
    before = {p: p.read_bytes() for p in (project / "vendor/lib/.git/config",
              project / "mirror.git/config", project / "sub/.git")}  # fmt: skip
    command = "; ".join([PLANT.format(git="vendor/lib/.git"), PLANT.format(git="mirror.git"),
                         PLANT.format(git=".git"), "echo 'gitdir: /elsewhere' > sub/.git",
                         "echo rc=$?; touch deep/er/.smith/x; echo rc=$?",
                         "touch vendor/lib/ok; echo ok=$?"])  # fmt: skip
    out = text(bash(world, command))
    assert "rc=0" not in out and "ok=0" in out, out  # the rest of the tree is writable
    assert all(p.read_bytes() == b for p, b in before.items())
    assert not (project / "vendor/lib/.git/hooks/post-checkout").exists()
    assert not (project / "deep/er/.smith/x").exists()


def test_a_repository_a_command_makes_is_moved_out_and_said(world: SmithEnv) -> None:
    project = world.root / "project"
    subprocess.run(["git", "init", "-q", str(project / "vendor" / "lib")], check=True)
    original = (project / "vendor/lib/.git").stat().st_ino
    command = (
        "git init -q made && git -C made config core.fsmonitor 'touch /var/tmp/x'; "
        "git init -q --bare bare.git; echo 'gitdir: /var/tmp' > other/.git 2>/dev/null "
        "|| { mkdir other && echo 'gitdir: /var/tmp' > other/.git; }; "
        "mv vendor/lib vendor/moved && git init -q vendor/lib; echo done"
    )
    result = bash(world, command)
    out = text(result)
    assert "done" in out
    for made in ("made/.git", "bare.git", "other/.git", "vendor/lib/.git"):
        assert not (project / made).exists(), made
        assert str(project / made) in out  # the result names each, and where it went
    assert (project / "vendor/moved/.git").stat().st_ino == original  # moved, not new
    assert (project / "made").is_dir()  # only the repository went
    assert "could run programs" in out
    quarantine = world.data_home / "quarantine"
    [batch] = list(quarantine.iterdir())
    kept = batch / str(project / "made" / ".git").lstrip("/")
    assert (kept / "config").read_text().count("fsmonitor") == 1
    loose = [
        p
        for p in (quarantine, *quarantine.rglob("*"))
        if not p.is_symlink() and p.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO)
    ]
    assert not loose  # owner-only, as everything under SMITH_HOME


def test_a_project_without_git_keeps_none_a_command_makes(world: SmithEnv) -> None:
    plain = world.root / "plain"
    (plain / ".smith").mkdir(parents=True)
    out = text(bash(world, "git init -q && git status >/dev/null && echo made", cwd=plain))
    assert "made" in out and not (plain / ".git").exists()
    assert str(plain / ".git") in out


def test_a_git_symlink_to_the_root_binds_nothing_over_the_sandbox(world: SmithEnv) -> None:
    """A `.git -> /` read-only bind would remount / over the private /tmp and /run."""
    project = world.root / "project"
    (project / "a").mkdir()
    (project / "a" / ".git").symlink_to("/")
    marker = Path(tempfile.mkdtemp(prefix="smith-host-tmp-", dir="/tmp"))  # the host's /tmp
    try:
        out = text(bash(world, f"ls -d {marker} 2>&1; touch a/ok; echo rc=$?"))
    finally:
        marker.rmdir()
    assert "No such file" in out and "rc=0" in out, out


def test_the_walk_lists_only_what_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from smith.effects import _repos

    monkeypatch.setattr(_repos, "RACY", -60.0)  # every listing may be kept
    for name in ("a/b", "a/c", "d"):
        (tmp_path / name).mkdir(parents=True)
    (tmp_path / "a" / "c" / ".git").mkdir()
    listed: list[str] = []
    real = os.scandir

    def counting(path: str) -> object:
        listed.append(path)
        return real(path)

    monkeypatch.setattr(os, "scandir", counting)
    first = _repos.scan([str(tmp_path)], [".smith"])
    assert list(first) == [str(tmp_path / "a" / "c" / ".git")] and len(listed) == 5
    listed.clear()
    assert _repos.scan([str(tmp_path)], [".smith"]) == first and not listed
    (tmp_path / "a" / "b" / ".git").mkdir()  # its directory's ctime changes
    found = _repos.scan([str(tmp_path)], [".smith"])
    assert listed == [str(tmp_path / "a" / "b")]
    assert _repos.appeared(first, found) == [found[str(tmp_path / "a" / "b" / ".git")]]
    # smith's own directory in the project (its quarantine) is never walked: a
    # repository moved there while another command runs is not moved again.
    listed.clear()
    (tmp_path / "d" / "quarantine" / ".git").mkdir(parents=True)
    found = _repos.scan([str(tmp_path)], [".smith"], skip=[str(tmp_path / "d")])
    assert str(tmp_path / "d") not in listed and len(found) == 2
