"""write and edit never change protected paths (tools.protected: .git and .smith by
default), however the path is spelled: relative, through `..`, absolute, or by way of a
symbolic link."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from smith.effects import EffectJournal, ToolResult, builtin_tools, run_tool
from tests.conftest import Result, SmithEnv, tool_world

TOOLS = builtin_tools()


def _git_project(project: Path) -> bytes:
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / "src").mkdir()
    config = b"[core]\n\tbare = false\n"
    (project / ".git" / "config").write_bytes(config)
    return config


def test_eval_refuses_every_spelling_of_git_and_smith(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = senv.make_project()
    config = _git_project(project)
    hooks = project / ".git" / "hooks"
    calls = [
        {"id": "w1", "name": "write", "arguments": {"path": ".git/hooks/x", "content": "x"}},
        {"id": "w2", "name": "write", "arguments": {"path": "src/../.git/hooks/y", "content": "y"}},
        {"id": "w3", "name": "write", "arguments": {"path": str(hooks / "z"), "content": "z"}},
        {"id": "e1", "name": "edit", "arguments": {"path": ".git/config", "old_text": "[core]",
                                                   "new_text": "[core]\n\thooksPath = /tmp/e"}},
        {"id": "w4", "name": "write", "arguments": {"path": ".smith/config.kdl", "content": "m"}},
        {"id": "w5", "name": "write", "arguments": {"path": "ok.txt", "content": "fine"}},
    ]  # fmt: skip
    script = senv.root / "script.json"
    script.write_text(json.dumps({"responses": [{"tool_calls": calls}, {"text": "done"}]}))
    r = smith("eval", "--json", "--model", f"scripted:{script}", "plant a hook", cwd=project)
    assert r.code == 0, r.err
    assert sorted(os.listdir(hooks)) == []
    assert (project / ".git" / "config").read_bytes() == config
    assert not (project / ".smith" / "config.kdl").exists()
    assert (project / "ok.txt").read_text() == "fine"
    ends = {
        ev["tool_call_id"]: ev
        for ev in map(json.loads, r.out.splitlines())
        if ev.get("type") == "tool_end"
    }
    for cid in ("w1", "w2", "w3", "e1", "w4"):
        assert ends[cid]["is_error"] is True, ends[cid]
        assert "is protected" in ends[cid]["result"]["text"]
        assert "tools.protected" in ends[cid]["result"]["text"]
    assert ends["w5"]["is_error"] is False


def test_the_setting_lists_git_and_smith_by_default(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    r = smith("config", "get", "tools.protected", "--json", cwd=senv.make_project())
    assert r.code == 0, r.err
    value = json.loads(r.out)
    assert (value.get("value") if isinstance(value, dict) else value) == [".git", ".smith"]


@pytest.mark.parametrize("tool", ["write", "edit"])
def test_a_symbolic_link_into_git_is_refused(tmp_path: Path, tool: str) -> None:
    session, ctx, project = tool_world(tmp_path)
    config = _git_project(project)
    os.symlink(".git", project / "innocent")
    os.symlink(".git/config", project / "settings.ini")
    args = (
        {"path": "innocent/config", "content": "x"}
        if tool == "write"
        else {"path": "settings.ini", "old_text": "[core]", "new_text": "[evil]"}
    )
    out = run_tool(EffectJournal(session), TOOLS[tool], args, ctx)  # type: ignore[arg-type]
    assert not out.result.ok and "is protected" in out.result.text
    assert (project / ".git" / "config").read_bytes() == config


def test_nested_repositories_and_configured_paths_are_protected(tmp_path: Path) -> None:
    session, ctx, _ = tool_world(tmp_path, protected=(".git", "secrets/keys"))
    journal = EffectJournal(session)

    def write(path: str) -> bool:
        args = {"path": path, "content": "x"}
        return run_tool(journal, TOOLS["write"], args, ctx).result.ok  # type: ignore[arg-type]

    assert not write("vendor/lib/.git/hooks/pre-commit")
    assert not write("secrets/keys/id")
    assert write("other/secrets/keys/id")  # a path with a slash is anchored at the root
    assert write("secrets/notes.txt")
    assert write(".smith-like.txt")  # names match whole, not as a prefix
    read = run_tool(journal, TOOLS["read"], {"path": "secrets/notes.txt"}, ctx)  # type: ignore[arg-type]
    assert read.result.ok  # reading is not refused


def test_a_git_directory_under_another_name_is_protected(tmp_path: Path) -> None:
    """The bare repository with worktrees layout: `.git` is a file saying `gitdir: ./.bare`,
    so the repository's hooks and config live in `.bare`, which git runs like `.git`."""
    session, ctx, project = tool_world(tmp_path)
    bare = project / ".bare"
    for sub in ("hooks", "objects", "refs"):
        (bare / sub).mkdir(parents=True)
    (bare / "HEAD").write_text("ref: refs/heads/main\n")
    (bare / "config").write_text("[core]\n\tbare = true\n")
    (project / ".git").write_text("gitdir: ./.bare\n")
    journal = EffectJournal(session)

    def write(path: str) -> ToolResult:
        args = {"path": path, "content": "#!/bin/sh\necho pwned\n"}
        return run_tool(journal, TOOLS["write"], args, ctx).result  # type: ignore[arg-type]

    for path in (".bare/hooks/pre-commit", ".bare/config", str(bare / "hooks" / "post-merge")):
        result = write(path)
        assert not result.ok, path
        assert ".bare, a git directory" in result.text
    assert sorted(os.listdir(bare / "hooks")) == []
    assert (bare / "config").read_text() == "[core]\n\tbare = true\n"
    assert write(".bare-notes.txt").ok
    assert write("docs/HEAD").ok  # a HEAD file alone is not a repository
