"""Every process smith starts, its own helpers included: what it gets (no provider key,
no program of the repository's) and that it ends with its call and is waited for.

The CLI runs under a harness that is a subreaper: whatever smith leaves behind comes back
to the harness (a zombie smith did not wait for, or a process still running), where it is
found, instead of going to init unseen.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SmithEnv, smith_executable

KEY = "sk-ant-hardening-7Qm2Zr9Lx4Vb"
OKEY = "sk-openai-hardening-Vb8Hn3Jd"

# Runs smith (argv) in a new session, as a subreaper; with `term_when`, sends it SIGTERM
# once a process of that name runs in its session. Prints smith's exit status and output
# and what it left: orphans that came back here (zombies included) and processes of its
# session or group.
HARNESS = r"""
import ctypes, json, os, signal, subprocess, sys, time
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
spec = json.loads(sys.argv[1])
me = os.getpid()

def procs():
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            comm = stat[stat.index("(") + 1 : stat.rindex(")")]
            state, ppid, pgrp, sid = stat[stat.rindex(")") + 2 :].split()[:4]
            yield int(name), comm, state, int(ppid), int(pgrp), int(sid)

proc = subprocess.Popen(spec["argv"], cwd=spec["cwd"], env=spec["env"], start_new_session=True,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
seen = None
if spec.get("term_when"):
    deadline = time.monotonic() + 60
    while seen is None and time.monotonic() < deadline and proc.poll() is None:
        seen = next((p[0] for p in procs() if p[1] == spec["term_when"] and p[5] == proc.pid), None)
        time.sleep(0.02)
    proc.send_signal(spec.get("signal", signal.SIGTERM))
try:
    out, err = proc.communicate(timeout=spec.get("timeout", 120))
    hung = False
except subprocess.TimeoutExpired:
    os.killpg(proc.pid, signal.SIGKILL)
    out, err = proc.communicate()
    hung = True
def leftovers():
    return [p for p in procs() if p[0] != me and (me in (p[3],) or proc.pid in (p[4], p[5]))]
deadline = time.monotonic() + spec.get("grace", 0)  # for what dies with smith, not by it
while any(p[2] != "Z" for p in leftovers()) and time.monotonic() < deadline:
    time.sleep(0.02)
left = leftovers()
for p in left:
    try:
        os.kill(p[0], signal.SIGKILL)
    except OSError:
        pass
print(json.dumps({"code": proc.returncode, "out": out.decode(), "err": err.decode(),
                  "left": left, "hung": hung, "seen": seen}))
"""

# smith's CLI, with the grep tool's check for a FIFO taken away: the FIFO stands for one
# put in place of a file after the check (rg then waits on it for ever).
RACED = """
import sys
from smith.effects.tools import _rg
_rg.special = lambda path: ""
from smith.cli import main
sys.exit(main(sys.argv[1:]))
"""


def harnessed(senv: SmithEnv, cwd: Path, *args: str, env: dict[str, str] | None = None,
              raced: bool = False, term_when: str = "",
              sig: int = signal.SIGTERM) -> dict[str, Any]:  # fmt: skip
    """Run `smith ARGS` under the harness: its result and what it left behind."""
    argv = [sys.executable, "-c", RACED, *args] if raced else [smith_executable(), *args]
    spec = {"argv": argv, "cwd": str(cwd), "env": {**senv.env, **(env or {})},
            "term_when": term_when, "signal": int(sig),
            "grace": 10 if sig == signal.SIGKILL else 0}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", HARNESS, json.dumps(spec)],
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _project(senv: SmithEnv, name: str = "p") -> Path:
    project = senv.root / name
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text("def main():\n    return 'hello'\n")
    subprocess.run(["git", "init", "-q", "-b", "main", str(project)], check=True)
    subprocess.run(["git", "-C", str(project), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-qm", "init"], check=True)  # fmt: skip
    return project


def _script(senv: SmithEnv, responses: list[dict[str, Any]]) -> tuple[Path, Path]:
    log = senv.root / "requests.jsonl"
    script = senv.root / "script.json"
    script.write_text(json.dumps({"responses": responses, "requests_log": str(log)}))
    return script, log


# -- item 3: smith's own git status ------------------------------------------------------


def _leaky_repository(senv: SmithEnv) -> tuple[Path, Path]:
    """A repository that arrives with its own .git: every program its configuration can
    name is a script that marks it ran and prints the provider keys, base64-encoded."""
    project = _project(senv)
    marker = senv.root / "the-repository-ran-a-program"
    leak = project / ".git" / "leak.sh"
    keys = '"$ANTHROPIC_API_KEY$OPENAI_API_KEY"'
    leak.write_text(f"#!/bin/sh\necho ran >> {marker}\n"
                    f'printf "%s" {keys} | base64 -w0 >&2\necho >&2\nexit 1\n')  # fmt: skip
    leak.chmod(0o755)
    for key, value in [("filter.leak.clean", leak), ("filter.leak.smudge", leak),
                       ("filter.leak.process", leak), ("filter.leak.required", "true"),
                       ("core.fsmonitor", leak), ("core.hooksPath", leak.parent),
                       ("diff.external", leak), ("core.pager", leak)]:  # fmt: skip
        subprocess.run(["git", "-C", str(project), "config", key, str(value)], check=True)
    (project / ".gitattributes").write_text("*.py filter=leak\n")
    os.utime(project / "src" / "app.py", (1893456000, 1893456000))  # git must read it again
    return project, marker


def test_a_repositorys_filter_never_runs_for_smiths_git_status_nor_sees_a_key(
    senv: SmithEnv,
) -> None:
    project, marker = _leaky_repository(senv)
    # git itself would run it, with the key: the probe is live
    keyed = {**senv.env, "ANTHROPIC_API_KEY": KEY}
    ran = subprocess.run(["git", "status", "--porcelain"], cwd=project, env=keyed,
                         capture_output=True, text=True, check=False)  # fmt: skip
    assert base64.b64encode(KEY.encode()).decode() in ran.stderr and marker.exists()
    marker.unlink()

    script, log = _script(senv, [{"text": "ok"}])
    r = harnessed(senv, project, "eval", "--json", "--model", f"scripted:{script}", "hi",
                  env={"ANTHROPIC_API_KEY": KEY, "OPENAI_API_KEY": OKEY})  # fmt: skip
    assert r["code"] == 0, r["err"]
    assert not marker.exists()  # no program of the repository's ran
    sent = log.read_text()
    (environment,) = [m["content"] for m in json.loads(sent.splitlines()[0])["messages"]
                      if m.get("context") == "environment"]  # fmt: skip
    assert "Git: branch main; 0 changed, 1 untracked: .gitattributes" in json.dumps(environment)
    stored = [p.read_bytes().decode("latin-1") for p in Path(senv.env["SMITH_HOME"]).rglob("*")
              if p.is_file()]  # fmt: skip
    spellings = [KEY, OKEY] + [base64.b64encode(k.encode()).decode()[:16]
                               for k in (KEY + OKEY, KEY, OKEY)]  # fmt: skip
    for text in [sent, r["out"], r["err"], *stored]:
        assert not any(s in text for s in spellings)
    assert r["left"] == []


def test_the_status_readers_environment_has_no_provider_key(
    senv: SmithEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the reader sees is what a command sees: no provider key, whatever variable
    holds it (a configured api-key-env too, once the key was read)."""
    from smith.diagnostics import register_secret
    from smith.runtime._environment import helper_env

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("MY_GATEWAY_KEY", OKEY)
    monkeypatch.setenv("SMITH_TEST_PLAIN", "kept")
    register_secret(OKEY)  # as reading it from providers.NAME.api-key-env does
    env = helper_env()
    assert "ANTHROPIC_API_KEY" not in env and "MY_GATEWAY_KEY" not in env
    assert env["SMITH_TEST_PLAIN"] == "kept"


def test_why_a_status_is_not_known_is_short_and_masked(
    senv: SmithEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """libgit2's reason reaches the model cut to one short masked line; what the reader
    printed on stderr (where a repository's program would write) never does."""
    from smith.diagnostics import register_secret
    from smith.vcs import _status, git_state

    project = _project(senv)
    register_secret(KEY)
    long = f"bad index\\n{KEY} " + "x" * 5000
    monkeypatch.setattr(_status, "READER", f"import sys; sys.stdout.write('!{long}')")
    unknown = git_state(str(project)).unknown  # type: ignore[union-attr]
    assert unknown.startswith("bad index [secret] xxx") and len(unknown) <= 120
    said = f"import sys; sys.stderr.write({KEY!r}); sys.exit(3)"
    monkeypatch.setattr(_status, "READER", said)
    assert git_state(str(project)).unknown == "its reader failed (exit status 3)"  # type: ignore[union-attr]


# -- item 8: a FIFO in the project -------------------------------------------------------


def test_grep_find_and_ls_over_a_project_holding_a_fifo_end_and_find_the_file(
    senv: SmithEnv,
) -> None:
    project = _project(senv)
    os.mkfifo(project / "pipe.log")
    r = harnessed(senv, project, "tools", "run", "grep", '{"pattern": "hello"}')
    assert (r["code"], r["out"].strip(), r["left"]) == (0, "src/app.py:2:    return 'hello'", [])
    r = harnessed(senv, project, "tools", "run", "find", '{"pattern": "*"}')
    assert (r["code"], r["out"].split(), r["left"]) == (0, ["src/app.py"], [])
    r = harnessed(senv, project, "tools", "run", "ls", "{}")
    assert r["code"] == 0 and r["left"] == []
    assert "pipe.log" not in r["out"] and "[1 FIFO, socket or device left out]" in r["out"]


def test_grep_refuses_a_fifo_named_as_its_path(senv: SmithEnv) -> None:
    project = _project(senv)
    os.mkfifo(project / "pipe.log")
    r = harnessed(senv, project, "tools", "run", "grep", '{"pattern": "x", "path": "pipe.log"}')
    assert r["code"] == 1 and r["left"] == []
    assert "pipe.log is a FIFO, not a file or directory" in r["out"]


def test_tools_run_ends_a_hung_search_at_tools_timeout(senv: SmithEnv) -> None:
    project = _project(senv)
    os.mkfifo(project / "pipe.log")
    args = ("tools", "run", "--json", "--tools-timeout", "1", "grep",
            '{"pattern": "x", "path": "pipe.log"}')  # fmt: skip
    r = harnessed(senv, project, *args, raced=True)
    assert not r["hung"] and r["code"] == 1, r["err"]
    done = json.loads(r["out"])
    assert done["result"]["text"].startswith("[timed out after 1 s] [cancelled")
    assert done["effect"]["outcome"] == "cancelled"
    assert r["left"] == []


def test_sigterm_ends_smith_and_its_hung_search_and_waits_for_it(senv: SmithEnv) -> None:
    project = _project(senv)
    os.mkfifo(project / "pipe.log")
    args = ("tools", "run", "grep", '{"pattern": "x", "path": "pipe.log"}')
    r = harnessed(senv, project, *args, raced=True, term_when="rg")
    assert r["seen"] is not None  # rg was waiting on the FIFO when SIGTERM came
    assert not r["hung"] and r["code"] == 130, r["err"]
    assert r["left"] == []


def test_kill_9_of_smith_ends_its_hung_search_too(senv: SmithEnv) -> None:
    """smith cannot wait for anything once killed; what it started dies with it
    (PR_SET_PDEATHSIG): only zombies come back to the harness, no live process."""
    project = _project(senv)
    os.mkfifo(project / "pipe.log")
    args = ("tools", "run", "grep", '{"pattern": "x", "path": "pipe.log"}')
    r = harnessed(senv, project, *args, raced=True, term_when="rg", sig=signal.SIGKILL)
    assert r["seen"] is not None and r["code"] == -signal.SIGKILL
    assert [p for p in r["left"] if p[2] != "Z"] == []


def test_eval_exits_after_a_search_that_hung_timed_out(senv: SmithEnv) -> None:
    project = _project(senv)
    os.mkfifo(project / "pipe.log")
    call = {"id": "g", "name": "grep", "arguments": {"pattern": "x", "path": "pipe.log"}}
    script, _ = _script(senv, [{"tool_calls": [call]}, {"text": "done"}])
    r = harnessed(senv, project, "eval", "--json", "--tools-timeout", "1", "--model",
                  f"scripted:{script}", "hi", raced=True)  # fmt: skip
    assert not r["hung"] and r["code"] == 0, r["err"]
    (end,) = [e for e in map(json.loads, r["out"].splitlines()) if e.get("type") == "tool_end"]
    assert "timed out after 1 s" in json.dumps(end)
    assert r["left"] == []


# -- item 13: every child is waited for --------------------------------------------------


@pytest.mark.parametrize(
    "tool, args",
    [
        ("bash", {"command": "sleep 0.1 &"}),
        ("bash", {"command": "echo hi"}),
        ("grep", {"pattern": "hello"}),
        ("ls", {}),
    ],
)
def test_nothing_smith_started_outlives_tools_run(
    senv: SmithEnv, tool: str, args: dict[str, object]
) -> None:
    """bwrap's own init outlived the bwrap smith waited for and was left to init; now it
    comes back to smith (a subreaper) and is waited for, like everything of a call."""
    project = _project(senv)
    r = harnessed(senv, project, "tools", "run", tool, json.dumps(args))
    assert r["code"] == 0, r["err"]
    assert r["left"] == []


def test_a_helpers_leftovers_are_ended_and_reaped_when_it_ends(tmp_path: Path) -> None:
    from smith._spawn import Child

    with Child(["sh", "-c", "sleep 300 & echo $!"], cwd=str(tmp_path), env={}) as child:
        assert child.proc.stdout is not None
        grandchild = int(child.proc.stdout.readline())
        assert child.proc.wait() == 0  # sh is done; its sleep runs on
        assert os.path.exists(f"/proc/{grandchild}")
    assert not os.path.exists(f"/proc/{grandchild}")  # ended, and reaped: not even a zombie


def test_a_helper_is_ended_when_its_call_is_interrupted(tmp_path: Path) -> None:
    from smith._spawn import Child

    sleeper = Child(["sleep", "300"], cwd=str(tmp_path), env={})
    with pytest.raises(KeyboardInterrupt), sleeper:
        pid = sleeper.pid
        raise KeyboardInterrupt
    assert not os.path.exists(f"/proc/{pid}")


def test_the_apps_editor_and_clipboard_tools_get_no_provider_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from smith.frontends.tui._external import _editor_env
    from smith.frontends.tui._images import ImageInput

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("EDITOR", "vi")
    for env in (_editor_env(), ImageInput(lambda: None).env):
        assert "ANTHROPIC_API_KEY" not in env and env["EDITOR"] == "vi"
