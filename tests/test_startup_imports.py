"""What a command's start imports (issue 27: `smith tools run` and `smith eval` start in
little more than `smith --help`'s time plus their work): `tools run` runs no agent loop,
so it imports neither the runtime's loop nor asyncio; `eval` with a prompt that changes
no file never imports pygit2 (the environment block's git state is read by a child
process, smith.vcs._status); neither imports the HTTP stack or textual for the demo
model. Checked in a fresh interpreter, through `sys.modules`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import SmithEnv

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]

# Runs smith's main with the arguments given, then prints which of these it imported.
WATCHED = ["asyncio", "httpx", "textual", "pygit2", "email", "difflib", "smith.providers._stream",
           "smith.runtime._runtime", "smith.runtime.ops", "smith.plugins._bashrules"]  # fmt: skip
COMMAND = (
    "import json, sys\n"
    "from smith.cli import main\n"
    "code = main(sys.argv[1:])\n"
    f"print(json.dumps([m for m in {WATCHED!r} if m in sys.modules]), file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _repository(root: Path) -> Path:
    project = root / "project"
    subprocess.run(["git", "init", "-q", "-b", "main", str(project)], check=True)
    (project / "notes.txt").write_text("x\n")
    return project


def _imported(senv: SmithEnv, cwd: Path, *args: str) -> list[str]:
    r = subprocess.run([sys.executable, "-c", COMMAND, *args], cwd=cwd, env=senv.env,
                       capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr
    found: list[str] = json.loads(r.stderr.strip().splitlines()[-1])
    return found


def test_tools_run_imports_no_agent_loop(senv: SmithEnv) -> None:
    project = _repository(senv.root)
    bash = _imported(senv, project, "tools", "run", "bash", '{"command": "true"}')
    # pygit2: bash may change files, so they are snapshotted around it (smith undo).
    assert bash == ["pygit2"]
    assert _imported(senv, project, "tools", "run", "read", '{"path": "notes.txt"}') == []


def test_eval_with_the_demo_model_imports_no_pygit2_http_or_textual(senv: SmithEnv) -> None:
    project = _repository(senv.root)
    assert _imported(senv, project, "eval", "--model", "demo", "hi") == [
        "asyncio",
        "smith.providers._stream",
        "smith.runtime._runtime",
        "smith.runtime.ops",
    ]


# -- the git state, read without pygit2 in smith's own process ---------------------------

STATE = (
    "import json, sys\n"
    "from smith.vcs import git_state\n"
    "state = git_state(sys.argv[1])\n"
    "print(json.dumps([None if state is None else state.summary(), 'pygit2' in sys.modules]))\n"
)


def _state(path: Path) -> tuple[str | None, bool]:
    r = subprocess.run([sys.executable, "-c", STATE, str(path)], capture_output=True,
                       text=True, timeout=60, check=True)  # fmt: skip
    summary, imported = json.loads(r.stdout)
    return summary, imported


def test_the_reader_names_the_branch_and_status_so_smith_imports_no_pygit2(
    tmp_path: Path,
) -> None:
    project = _repository(tmp_path)
    assert _state(project) == ("branch main (no commits yet); 0 changed, 1 untracked: "
                               "notes.txt", False)  # fmt: skip
    subprocess.run([*GIT, "-C", str(project), "add", "."], check=True)
    subprocess.run([*GIT, "-C", str(project), "commit", "-qm", "one"], check=True)
    (project / "notes.txt").write_text("y\n")
    (project / "sub").mkdir()
    assert _state(project / "sub") == ("branch main; 1 changed, 0 untracked: notes.txt", False)
    subprocess.run([*GIT, "-C", str(project), "checkout", "-q", "--detach"], check=True)
    summary, imported = _state(project)
    assert summary is not None and summary.startswith("branch detached at ") and not imported
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    assert _state(bare) == ("branch main (no commits yet); status not known (a bare "
                            "repository)", False)  # fmt: skip


def test_no_repository_is_said_without_pygit2(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert _state(plain) == (None, False)  # nothing a repository is made of: no reader
    (plain / ".git").mkdir()  # an empty .git is not one either
    assert _state(plain) == (None, False)
    (plain / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # the reader finds none
    assert _state(plain) == (None, False)


def test_a_confined_reader_that_sees_no_repository_above_the_path_is_checked_here(
    tmp_path: Path,
) -> None:
    """A sandbox shows the reader the project, not what is above it (the private /tmp):
    where discovery would look there, smith finds the repository itself and reads its
    status again, the work tree confined with it."""
    from smith.vcs import git_state

    project = _repository(tmp_path)
    sub = project / "sub"
    sub.mkdir()
    hidden = tmp_path / "nothing-here"
    hidden.mkdir()
    runs: list[tuple[list[str], str]] = []

    def confine(argv: list[str], cwd: str) -> list[str]:
        runs.append((argv[6:], cwd))
        # Discovery from the path finds nothing: the repository is not shown.
        return argv if "--found" in argv else [*argv[:6], str(hidden)]

    state = git_state(str(sub), confine=confine)
    assert state is not None
    assert state.summary() == "branch main (no commits yet); 0 changed, 1 untracked: notes.txt"
    assert runs == [([str(sub)], str(sub)),
                    ([str(project / ".git") + "/", "--found"], str(project) + "/")]  # fmt: skip
    # Confined, a .git at the path itself is all the reader needed to see.
    runs.clear()
    (hidden / ".git").mkdir()
    assert git_state(str(hidden), confine=confine) is None
    assert runs == []  # an empty .git is no repository: no reader
    (hidden / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert git_state(str(hidden), confine=confine) is None
    assert runs == [([str(hidden)], str(hidden))]
