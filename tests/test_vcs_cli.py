"""File history as a user runs it: `smith eval` makes changes (through edit and bash),
then `smith history`, `diff`, `undo`, `redo`, `restore` and `history gc`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import Result, SmithEnv
from tests.vcs_kit import git, git_dir_hash, git_project, picture

Smith = Callable[..., Result]


def script(senv: SmithEnv, name: str, *responses: dict[str, Any]) -> str:
    path = senv.root / f"{name}.json"
    path.write_text(json.dumps({"responses": list(responses)}))
    return f"scripted:{path}"


def running(*commands: str) -> list[dict[str, Any]]:
    calls = [{"name": "bash", "arguments": {"command": c}} for c in commands]
    return [{"tool_calls": calls, "stop": "tool_use"}, {"text": "done", "stop": "end"}]


def eval_(
    smith: Smith, senv: SmithEnv, project: Path, prompt: str, *commands: str, **kw: str
) -> Result:
    model = script(senv, prompt.replace(" ", "-"), *running(*commands))
    extra = [a for k, v in kw.items() for a in (f"--{k}", v)]
    r = smith("eval", "--model", model, *extra, prompt, cwd=project)
    assert r.code == 0, r.err
    return r


def test_undo_and_redo_a_turn_that_edited_and_ran_bash(
    senv: SmithEnv, smith_process: Smith
) -> None:
    project = git_project(senv.root / "project")
    (project / "data.txt").write_text("one\n")
    (project / "gone.txt").write_text("delete me\n")
    before, own_git = picture(project), git_dir_hash(project)
    change = {"path": "src/app.py", "old_text": "'hello'", "new_text": "'changed'"}
    command = "echo two >> data.txt && rm gone.txt && mkdir made && echo x > made/new"
    edit = {"name": "edit", "arguments": change}
    bash = {"name": "bash", "arguments": {"command": command + " && chmod +x data.txt"}}
    model = script(senv, "turn", {"tool_calls": [edit, bash], "stop": "tool_use"}, {"text": "ok"})
    assert smith_process("eval", "--model", model, "change the greeting", cwd=project).code == 0
    after = picture(project)

    listed = smith_process("history", cwd=project)
    assert listed.code == 0, listed.err
    assert "4 files" in listed.out and "+3 -2" in listed.out and "change the greeting" in listed.out
    stat = smith_process("diff", "--stat", cwd=project)
    assert "deleted   gone.txt" in stat.out and "created   made/new" in stat.out
    assert "+    return 'changed'" in smith_process("diff", cwd=project).out

    (project / "mine.txt").write_text("the user's\n")
    undo = smith_process("undo", cwd=project)
    assert undo.code == 0, undo.err
    assert "undid turn" in undo.out and "change the greeting" in undo.out
    assert (project / "mine.txt").read_text() == "the user's\n"
    (project / "mine.txt").unlink()
    assert picture(project) == before
    assert "(undone)" in smith_process("history", cwd=project).out

    redo = smith_process("redo", cwd=project)
    assert redo.code == 0, redo.err
    assert picture(project) == after
    assert git_dir_hash(project) == own_git
    shadow = next((senv.data_home / "vcs").iterdir())
    assert "after snapshot: change the greeting" in git("--git-dir", str(shadow), "log")


def test_a_conflict_fails_naming_the_files_and_force_goes_ahead(
    senv: SmithEnv, smith_process: Smith
) -> None:
    project = git_project(senv.root / "project")
    eval_(smith_process, senv, project, "add notes", "echo notes > notes.txt")
    (project / "notes.txt").write_text("edited by hand\n")
    r = smith_process("undo", cwd=project)
    assert r.code == 1
    assert "error: undo was refused" in r.err and "notes.txt" in r.err
    assert "smith undo --force" in r.err and "Traceback" not in r.err
    assert (project / "notes.txt").read_text() == "edited by hand\n"
    r = smith_process("undo", "--force", "--json", cwd=project)
    assert r.code == 0, r.err
    assert json.loads(r.out)["overwritten"] == ["notes.txt"]
    assert not (project / "notes.txt").exists()


def test_restore_an_entry_then_prune_old_snapshots(senv: SmithEnv, smith_process: Smith) -> None:
    project = git_project(senv.root / "project")
    eval_(smith_process, senv, project, "first", "echo 1 > a.txt", session="work")
    eval_(smith_process, senv, project, "second", "echo 2 > a.txt && echo b > b.txt",
          session="work")  # fmt: skip
    listed = smith_process("history", "--json", "--session", "work", cwd=project)
    turns = json.loads(listed.out)["turns"]
    assert [t["text"] for t in turns] == ["first", "second"]
    first = turns[0]["entry"]

    diff = smith_process("diff", first, "--stat", cwd=project)
    assert "created   b.txt" in diff.out and f"from entry {first} to the files now" in diff.out
    r = smith_process("restore", first, cwd=project)
    assert r.code == 0, r.err
    assert f"restored the files as they were at entry {first}" in r.out
    assert (project / "a.txt").read_text() == "1\n" and not (project / "b.txt").exists()

    r = smith_process("history", "gc", "--keep", "1", "--json", cwd=project)
    assert r.code == 0, r.err
    report = json.loads(r.out)
    assert report["pruned"] == report["snapshots"] - 1 >= 3
    shadow = next((senv.data_home / "vcs").iterdir())
    assert len(git("--git-dir", str(shadow), "log", "--format=%H").split()) == 1
    r = smith_process("restore", turns[1]["entry"], cwd=project)
    assert r.code == 1 and "is no longer in the file history" in r.err


def test_bad_input_gets_a_diagnostic(senv: SmithEnv, smith_process: Smith) -> None:
    project = git_project(senv.root / "project")
    r = smith_process("undo", cwd=project)
    assert r.code == 1 and "has no sessions yet" in r.err
    eval_(smith_process, senv, project, "look", "ls")
    r = smith_process("undo", cwd=project)
    assert r.code == 1 and "there is nothing to undo" in r.err and "smith history" in r.err
    r = smith_process("restore", "nope", cwd=project)
    assert r.code == 1 and "there is no entry 'nope'" in r.err
    r = smith_process("undo", "--session", "missing", cwd=project)
    assert r.code == 1 and "no session named 'missing'" in r.err
    off = {"SMITH_VCS_ENABLED": "false"}
    eval_(smith_process, senv, project, "quietly", "echo q > q.txt")
    r = smith_process("undo", cwd=project, env=off)
    assert r.code == 1 and "vcs.enabled is false" in r.err


def test_gc_says_which_undo_or_redo_it_takes_away(senv: SmithEnv, smith: Smith) -> None:
    project = git_project(senv.root / "project")
    eval_(smith, senv, project, "first", "echo 1 > a.txt", session="work")
    eval_(smith, senv, project, "second", "echo 2 > a.txt", session="work")
    turns = json.loads(smith("history", "--json", cwd=project).out)["turns"]
    second = turns[1]["entry"]

    r = smith("history", "gc", "--keep", "2", cwd=project)
    assert r.code == 0, r.err
    assert "dropped 1 of 3 snapshots" in r.out and "no longer" not in r.out
    r = smith("history", "gc", "--keep", "1", "--dry-run", cwd=project)
    assert f"would make the undo of turn {second}" in r.out and "impossible" in r.out
    r = smith("history", "gc", "--keep", "1", "--json", cwd=project)
    assert [item["entry"] for item in json.loads(r.out)["lost"]] == [second]
    assert "is no longer in the file history" in smith("undo", cwd=project).err


def test_restore_never_takes_a_file_a_forced_undo_recorded_as_the_users(
    senv: SmithEnv, smith: Smith
) -> None:
    # The probe: a --force undo records the user's files (so restore can bring them
    # back); a later restore without --force must not count them as smith's to delete.
    project = git_project(senv.root / "project")
    write = {"name": "write", "arguments": {"path": "a.txt", "content": "v1\n"}}
    model = script(senv, "write", {"tool_calls": [write], "stop": "tool_use"}, {"text": "ok"})
    assert smith("eval", "--model", model, "write a", cwd=project).code == 0
    (project / "a.txt").write_text("user edit\n")
    (project / "u.txt").write_text("mine\n")

    refused = smith("undo", cwd=project)
    assert refused.code != 0 and "undo was refused" in refused.err
    assert (project / "a.txt").read_text() == "user edit\n"
    forced = smith("undo", "--force", cwd=project)
    assert forced.code == 0, forced.err
    assert not (project / "a.txt").exists() and (project / "u.txt").read_text() == "mine\n"

    turns = json.loads(smith("history", "--json", cwd=project).out)["turns"]
    entry = turns[0]["entry"]
    restore = smith("restore", entry, cwd=project)
    assert restore.code != 0 and "restore was refused" in restore.err and "u.txt" in restore.err
    assert (project / "u.txt").read_text() == "mine\n" and not (project / "a.txt").exists()
    again = smith("restore", "--force", entry, cwd=project)
    assert again.code == 0, again.err
    assert (project / "a.txt").read_text() == "v1\n" and not (project / "u.txt").exists()
    back = smith("undo", cwd=project)  # the forced restore recorded u.txt first
    assert back.code == 0, back.err
    assert (project / "u.txt").read_text() == "mine\n"
