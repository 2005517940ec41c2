"""The shell sandbox, from outside: commands the model runs through `smith eval` and
`smith tools run` are confined by bubblewrap as sandbox.mode says (smith.effects._sandbox).
Every probe here is a command a hostile model could send."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import Result, SmithEnv, smith_executable
from tests.process_kit import escapee, kill_tagged, new_tag, wait_gone

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is needed (.ci/run installs it)"
)


def _run(smith: Callable[..., Result], project: Path, command: str, *flags: str,
         env: dict[str, str] | None = None) -> dict[str, object]:  # fmt: skip
    """`smith [FLAGS] tools run bash` of `command`: its result (text and details)."""
    r = smith(*flags, "tools", "run", "--json", "bash", json.dumps({"command": command}),
              cwd=project, env=env)  # fmt: skip
    assert r.out.strip(), r.err
    result: dict[str, object] = json.loads(r.out)["result"]
    return result


def _text(result: dict[str, object]) -> str:
    return str(result["text"])


@pytest.fixture
def project(senv: SmithEnv) -> Path:
    project = senv.make_project()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "README.md").write_text("# a project\n")
    git = ["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    return project


def test_writes_land_only_in_the_project_and_a_private_tmp(
    project: Path, senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    outside = senv.root / "outside"
    outside.mkdir()
    shared = Path("/tmp") / f"smith-sandbox-{new_tag()}"
    command = (f"touch {outside}/a 2>&1; touch {shared} 2>&1; touch .git/forged 2>&1; "
               "echo in > inside.txt; f=$(mktemp) && echo private > $f && cat $f; "
               "git status --short; git log --oneline | wc -l")  # fmt: skip
    result = _run(smith, project, command)
    text = _text(result)
    assert not (outside / "a").exists()
    assert not shared.exists()  # written in the sandbox's own /tmp, gone with it
    assert not (project / ".git" / "forged").exists()
    assert text.count("cannot touch") == 2, text  # read-only, or not there at all (/tmp)
    assert (project / "inside.txt").read_text() == "in\n"
    assert "private\n" in text  # mktemp wrote in the sandbox's own /tmp
    assert "?? inside.txt" in text and text.rstrip().endswith("1")  # git reads the project
    details = result["details"]
    assert isinstance(details, dict) and details["sandbox"] == "workspace-write"
    # The sandboxed write is the session's effect like any other: undone by smith undo.
    undo = smith("undo", cwd=project)
    assert undo.code == 0, undo.err
    assert not (project / "inside.txt").exists()


def test_read_only_mode_leaves_only_the_private_tmp_writable(
    project: Path, smith: Callable[..., Result]
) -> None:
    command = "touch inside.txt 2>&1; f=$(mktemp) && echo ok-$((6*7)) > $f && cat $f"
    text = _text(_run(smith, project, command, "--sandbox-mode", "read-only"))
    assert "Read-only file system" in text and "ok-42" in text
    assert not (project / "inside.txt").exists()


@pytest.fixture
def listener() -> Iterator[tuple[int, list[object]]]:
    """A loopback listener outside any sandbox, counting the connections it sees."""
    seen: list[object] = []
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            seen.append(conn)
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], seen
    stop.set()
    thread.join()
    server.close()


CONNECT = ("python3 -c \"import socket\ntry:\n socket.create_connection(('127.0.0.1', {port}), 2)"
           "; print('connected')\nexcept OSError as e: print('refused:', e)\"")  # fmt: skip


def test_no_network_unless_sandbox_network(
    project: Path, smith: Callable[..., Result], listener: tuple[int, list[object]]
) -> None:
    port, seen = listener
    text = _text(_run(smith, project, CONNECT.format(port=port)))
    assert "refused:" in text and not seen  # its own loopback: nothing listens there
    text = _text(_run(smith, project, CONNECT.format(port=port), "--sandbox-network"))
    assert "connected" in text
    assert seen


def test_nothing_the_command_starts_outlives_it(
    project: Path, smith: Callable[..., Result]
) -> None:
    tag = new_tag()
    ready = project / "ready"
    command = escapee(tag, str(ready)) + f"(setsid sleep 300 &); exec -a {tag} sleep 0.5"
    try:
        _run(smith, project, command)
        assert ready.exists()
        wait_gone(tag)  # ended with the command: the sandbox's PID namespace is gone
    finally:
        kill_tagged(tag)


def test_smith_its_descriptors_its_data_and_credentials_are_out_of_reach(
    project: Path, senv: SmithEnv
) -> None:
    """Through a real `smith eval` process: the command sees no process of the host (not
    smith's, whose command line carries a unique tag), only the three standard
    descriptors, an empty data directory, no provider key; and writing to its parent's
    stdout through /proc reaches its own output, never smith's."""
    tag = new_tag()
    script = senv.root / f"script-{tag}.json"
    probe = (f"grep -l 'scrip[t]-{tag}' /proc/[0-9]*/cmdline 2>/dev/null | wc -l; "
             f"echo FORGED-{tag} > /proc/$PPID/fd/1; "
             "python3 -c 'import os; print(\"fds\", sorted(os.listdir(\"/proc/self/fd\")))'; "
             f"ls -A {senv.data_home} | wc -l; echo key=${{ANTHROPIC_API_KEY:-none}}")  # fmt: skip
    calls = [{"name": "bash", "arguments": {"command": probe}}]
    script.write_text(json.dumps({"responses": [{"tool_calls": calls}, {"text": "done"}]}))
    env = {**senv.env, "ANTHROPIC_API_KEY": "sk-ant-test-000000000000000000000000"}
    r = subprocess.run([smith_executable(), "eval", "--json", "--model", f"scripted:{script}",
                        "go"], cwd=project, env=env, capture_output=True, text=True,
                       timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert all(line.startswith("{") for line in lines), "a line not of smith's own"
    end = next(json.loads(x) for x in lines if '"tool_end"' in x)
    text = end["result"]["text"]
    first, forged, fds, data, key = text.splitlines()[:5]
    assert first == "0"  # no host process is visible
    assert forged == f"FORGED-{tag}"  # it only reached the command's own output
    assert fds == "fds ['0', '1', '2', '3']"  # 3: the listing's own descriptor
    assert data == "0"  # smith's data directory is an empty one in the sandbox
    assert key == "key=none"
    assert senv.data_home.exists() and any(senv.data_home.iterdir())  # it is there, outside


def test_timeouts_and_output_bounds_hold_in_the_sandbox(
    project: Path, smith: Callable[..., Result]
) -> None:
    r = smith("tools", "run", "--json", "bash", json.dumps({"command": "sleep 30", "timeout": 1}),
              cwd=project)  # fmt: skip
    result = json.loads(r.out)["result"]
    assert "timed out after 1 s" in result["text"]
    text = _text(_run(smith, project, "seq 1 200000"))
    assert text.startswith("[output was ") and text.rstrip().endswith("200000")


def test_off_runs_unconfined_with_a_warning(
    project: Path, senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    outside = senv.root / "outside"
    outside.mkdir()
    r = smith("--sandbox-mode", "off", "tools", "run", "--json", "bash",
              json.dumps({"command": f"touch {outside}/a"}), cwd=project)  # fmt: skip
    assert (outside / "a").exists()
    assert "the shell sandbox is off" in r.err and "--sandbox-mode" in r.err
    assert json.loads(r.out)["result"]["details"]["sandbox"] == "off"


def _without_bwrap(senv: SmithEnv) -> dict[str, str]:
    """PATH with the shell and python, and no bubblewrap."""
    bin_dir = senv.root / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("bash", "sh", "python3", "unshare", "touch"):
        found = shutil.which(name)
        if found and not (bin_dir / name).exists():
            (bin_dir / name).symlink_to(found)
    return {**senv.env, "PATH": str(bin_dir)}


@pytest.mark.parametrize("fallback", ["refuse", "off"])
def test_without_bubblewrap_smith_says_so_and_follows_the_fallback(
    project: Path, senv: SmithEnv, fallback: str
) -> None:
    env = _without_bwrap(senv)
    r = subprocess.run([smith_executable(), "--sandbox-fallback", fallback, "tools", "run",
                        "--json", "bash", json.dumps({"command": "touch made.txt"})],
                       cwd=project, env=env, capture_output=True, text=True,
                       timeout=60)  # fmt: skip
    assert "the shell sandbox cannot run here: bubblewrap (bwrap) is not installed" in r.stderr
    assert "apt-get install bubblewrap" in r.stderr
    if fallback == "refuse":
        assert r.returncode != 0 and not (project / "made.txt").exists()
        assert "this command was not run" in r.stdout + r.stderr
        assert "every command is refused" in r.stderr
    else:
        assert r.returncode == 0, r.stderr
        assert (project / "made.txt").exists()
        assert json.loads(r.stdout)["result"]["details"]["sandbox"] == "off"


def test_the_sandbox_mode_is_recorded_with_each_effect(
    project: Path, senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    from smith.session import Session, SessionStore

    _run(smith, project, "true")
    [path] = SessionStore(str(senv.data_home)).paths()
    session = Session.open(path)
    try:
        records = [e.content for e in session.entries() if e.kind == "effect_progress"]
        records += [e.content for e in session.entries() if e.kind == "effect_end"]
    finally:
        session.close()
    shown = json.dumps(records, default=str)
    assert '"sandbox": "workspace-write"' in shown


def test_no_capabilities_inside_so_nothing_is_unmounted_or_remounted(
    project: Path, smith: Callable[..., Result]
) -> None:
    """As root (CI, containers) a command once could remount / writable and unmount what
    hides smith's data."""
    probe = ("grep CapEff /proc/self/status; mount -o remount,rw,bind / 2>&1 | head -1; "
             "umount -l /tmp 2>&1 | head -1")  # fmt: skip
    text = _text(_run(smith, project, probe))
    assert "CapEff:\t0000000000000000" in text
    assert "permission denied" in text.lower() or "must be superuser" in text.lower()


def test_a_root_that_holds_the_system_or_home_is_never_writable(tmp_path: Path) -> None:
    from smith.effects import Sandbox

    home = os.path.realpath(os.path.expanduser("~"))
    for root in ("/", home, os.path.dirname(home)):
        argv = Sandbox().wrap(["true"], roots=[root], cwd=root, protected=())
        assert ["--bind", root, root] != argv[argv.index(root) - 1 : argv.index(root) + 2]
        assert "--bind" not in argv
    project = str(tmp_path)
    assert "--bind" in Sandbox().wrap(["true"], roots=[project], cwd=project, protected=())


def test_a_hostile_repository_runs_nothing_through_smiths_own_git_status(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    """A repository arrives with a core.fsmonitor script (a clone, an archive: one a
    command makes is moved out, tests/test_hardening_sandbox.py); smith's environment
    block runs `git status` on it: in a read-only sandbox, with the repository's programs
    off, so the script never runs outside."""
    project = senv.root / "fresh"
    (project / ".smith").mkdir(parents=True)
    marker = senv.root / "ran-outside"
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(["git", "-C", str(project), "config", "core.fsmonitor",
                    f"echo ran > {marker}; false"], check=True)  # fmt: skip
    r = smith("context", "--json", cwd=project)
    assert r.code == 0, r.err
    (env,) = [p["text"] for p in json.loads(r.out)["parts"] if p["name"] == "environment"]
    assert "Git: branch" in env  # the status was read
    assert not marker.exists()


def test_a_command_writing_to_its_reapers_pipe_gets_an_ordinary_result(
    project: Path, smith: Callable[..., Result]
) -> None:
    """The reaper's report pipe is reachable as /proc/$PPID/fd/N: junk written there
    once crashed the tool (int() of it); now the command's own status stands."""
    command = "for fd in /proc/$PPID/fd/*; do printf x > $fd 2>/dev/null; done; exit 3"
    r = smith("tools", "run", "--json", "bash", json.dumps({"command": command}), cwd=project)
    assert "internal error" not in r.err, r.err
    result = json.loads(r.out)["result"]
    assert result["details"]["exit_status"] == 3 or "[exit status" in result["text"]


def test_file_tools_refuse_smiths_own_directory_even_inside_the_project(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = senv.make_project()
    home = project / ".smithhome"
    env = {"SMITH_HOME": str(home)}
    assert smith("tools", "run", "ls", "{}", cwd=project, env=env).code == 0  # makes it
    (home / "auth.json").write_text('{"openai": "sk-secret"}')
    r = smith("tools", "run", "--json", "read", json.dumps({"path": ".smithhome/auth.json"}),
              cwd=project, env=env)  # fmt: skip
    assert "sk-secret" not in r.out + r.err
    assert "inside smith's own directory" in r.out + r.err


def test_a_moved_directory_is_seen_in_its_place_and_nothing_else_moves() -> None:
    from smith.effects import Sandbox

    box = Sandbox(moved=(("/tmp/copy/work", "/home/u/proj"),))
    assert box.seen_at("/tmp/copy/work") == "/home/u/proj"
    assert box.seen_at("/tmp/copy/work/src/a.py") == "/home/u/proj/src/a.py"
    assert box.seen_at("/tmp/copy/workshop") == "/tmp/copy/workshop"  # whole names only
    assert box.seen_at("/elsewhere") == "/elsewhere"
