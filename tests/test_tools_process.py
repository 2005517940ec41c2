"""bash, find and grep: processes that end when they must, searches that are sorted."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from smith.effects import EffectJournal, ToolContext, builtin_tools, run_tool
from smith.session import Session
from tests.conftest import SmithEnv, smith_executable, tool_world
from tests.process_kit import kill_tagged, new_tag, tagged

TOOLS = builtin_tools()


@pytest.fixture
def call(tmp_path: Path) -> Callable[..., object]:
    session, ctx, project = tool_world(tmp_path, spill_dir=str(tmp_path / "outputs"))
    journal = EffectJournal(session)

    def run(name: str, **args: object) -> object:
        return run_tool(journal, TOOLS[name], args, ctx).result

    run.project = project  # type: ignore[attr-defined]
    return run


def test_bash_runs_in_the_project_and_reports_the_exit_status(call: Callable[..., object]) -> None:
    project: Path = call.project  # type: ignore[attr-defined]
    (project / "sub").mkdir()
    ok = call("bash", command="pwd; echo smith-$((6*7))")
    assert ok.text == f"{project}\nsmith-42\n" and ok.ok  # type: ignore[attr-defined]
    sub = call("bash", command="pwd", cwd="sub")
    assert sub.text.strip() == str(project / "sub")  # type: ignore[attr-defined]
    failed = call("bash", command="printf 'last words'; exit 3")
    assert failed.text == "last words\n[exit status 3]"  # type: ignore[attr-defined]
    assert not failed.ok and failed.details["exit_status"] == 3  # type: ignore[attr-defined]
    outside = call("bash", command="true", cwd="..")
    assert "outside the project" in outside.text  # type: ignore[attr-defined]


def _gone(pids: list[int]) -> bool:
    """Whether every pid has ended (polled briefly: init reaps orphans asynchronously)."""
    for _ in range(200):
        alive = []
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().split(") ")[-1][0] != "Z":
                        alive.append(pid)
            except FileNotFoundError:
                pass
        if not alive:
            return True
        time.sleep(0.02)
    return False


def test_a_timeout_ends_the_whole_tree(call: Callable[..., object], tmp_path: Path) -> None:
    tag = new_tag()
    a, b, started = tmp_path / "a", tmp_path / "b", tmp_path / "started"
    command = (
        f"(touch {a}; exec -a {tag} sleep 30) & "
        f"setsid bash -c 'touch {b}; exec -a {tag} sleep 30' & "
        f"while [ ! -e {a} ] || [ ! -e {b} ]; do sleep 0.01; done; "
        f"touch {started}; echo started; exec -a {tag} sleep 30"
    )
    try:
        result = call("bash", command=command, timeout=1)
        assert "timed out after 1 s" in result.text  # type: ignore[attr-defined]
        assert result.mutation == "unknown" and "started" in result.text  # type: ignore[attr-defined]
        assert started.exists() and tagged(tag) == []
    finally:
        kill_tagged(tag)


def test_output_right_before_exit_is_kept_and_huge_output_is_saved(
    call: Callable[..., object],
) -> None:
    quick = call("bash", command="for i in 1 2 3; do echo line-$i; done; printf tail")
    assert quick.text.endswith("line-3\ntail")  # type: ignore[attr-defined]
    huge = call("bash", command="seq 1 300000")
    details = huge.details  # type: ignore[attr-defined]
    assert details["output_bytes"] == len("".join(f"{i}\n" for i in range(1, 300001)))
    assert huge.text.endswith("299999\n300000\n")  # type: ignore[attr-defined]
    assert Path(details["full_output"]).read_text().startswith("1\n2\n3\n")
    assert "all of it is in" in huge.text  # type: ignore[attr-defined]


def test_find_and_grep_are_sorted_and_honour_gitignore(call: Callable[..., object]) -> None:
    project: Path = call.project  # type: ignore[attr-defined]
    (project / ".gitignore").write_text("build/\n")
    for rel in ("z.py", "a.py", "pkg/m.py", "build/gen.py", ".github/ci.py", "notes.txt"):
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text("alpha = 1\nneedle(x)\nomega = 2\n")
    found = call("find", pattern="*.py")
    assert found.text.splitlines() == [".github/ci.py", "a.py", "pkg/m.py", "z.py"]  # type: ignore[attr-defined]
    hits = call("grep", pattern=r"needle\(", glob="*.py")
    assert hits.text.splitlines() == [  # type: ignore[attr-defined]
        ".github/ci.py:2:needle(x)",
        "a.py:2:needle(x)",
        "pkg/m.py:2:needle(x)",
        "z.py:2:needle(x)",
    ]
    literal = call("grep", pattern="needle(", literal=True, path="pkg", context=1)
    assert literal.text.splitlines() == [  # type: ignore[attr-defined]
        "pkg/m.py-1-alpha = 1",
        "pkg/m.py:2:needle(x)",
        "pkg/m.py-3-omega = 2",
    ]
    bad = call("grep", pattern="needle(")
    assert "unclosed group" in bad.text and "literal=true" in bad.text  # type: ignore[attr-defined]
    (project / "long.txt").write_text("x" * 5000 + "needle\n")
    long = call("grep", pattern="needle", path="long.txt")
    assert len(long.text) < 1000  # type: ignore[attr-defined]


def _wait_for(predicate: Callable[[], bool], what: str) -> None:
    for _ in range(400):
        if predicate():
            return
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def test_a_killed_run_leaves_an_unknown_effect_that_is_not_rerun(senv: SmithEnv) -> None:
    project = senv.make_project()
    counter = project / "runs.txt"
    tag = new_tag()
    proc = subprocess.Popen(
        [
            smith_executable(),
            "tools",
            "run",
            "bash",
            json.dumps({"command": f"echo run >> {counter}; exec -a {tag} sleep 60"}),
        ],
        cwd=project,
        env=senv.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _wait_for(counter.exists, "the command to start")
    proc.kill()  # SIGKILL smith mid-effect (its command ends with it: test_tools_escape)
    proc.communicate(timeout=30)
    try:
        r = subprocess.run(
            [smith_executable(), "tools", "run", "ls", "{}"],
            cwd=project,
            env=senv.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 0, r.stderr
        assert "has no recorded completion: its outcome is unknown" in r.stderr
        assert "echo run" in r.stderr
        assert counter.read_text() == "run\n"  # not re-run
        again = subprocess.run(
            [smith_executable(), "tools", "run", "ls", "{}"],
            cwd=project,
            env=senv.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "outcome is unknown" not in again.stderr  # reported once, recorded unknown
    finally:
        kill_tagged(tag)


def test_an_interrupted_command_is_ended_and_recorded_as_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from smith.effects.tools import bash

    project = tmp_path / "project"
    project.mkdir()
    session = Session.create(str(tmp_path / "s.smith"), cwd=str(project))
    ctx = ToolContext(root=str(project), cwd=str(project), session=session)
    tag = new_tag()

    def interrupted(self: object, chunk: bytes) -> None:
        raise KeyboardInterrupt  # Ctrl-C arrives while the command runs

    monkeypatch.setattr(bash._Output, "add", interrupted)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_tool(
                EffectJournal(session),
                TOOLS["bash"],
                {"command": f"(exec -a {tag} sleep 30) & echo go; wait"},
                ctx,
            )
        monkeypatch.undo()
        last = list(session.entries())[-1].content
        assert isinstance(last, dict)
        assert (last["outcome"], last["mutation"]) == ("cancelled", "unknown")
        assert tagged(tag) == []
    finally:
        kill_tagged(tag)
