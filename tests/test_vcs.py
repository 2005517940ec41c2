"""File history on real repositories: snapshots around turns (bash included), undo, redo,
restore, conflicts, what is left alone, and the project's own .git never touched."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from smith.diagnostics import SmithError
from smith.runtime import Runtime
from smith.vcs import FileHistory, HistorySettings
from tests.runtime_kit import Fake, World, call, run, say
from tests.vcs_kit import dirs, git, git_dir_hash, picture


def settings(tmp_path: Path, **kw: Any) -> HistorySettings:
    kw.setdefault("user_home", str(tmp_path / "user"))
    return HistorySettings(str(tmp_path / "home"), **kw)


def committed(w: World) -> Path:
    git("init", "-q", cwd=w.project)
    git("add", "-A", cwd=w.project)
    git("commit", "-qm", "init", cwd=w.project)
    return w.project


def bash(command: str) -> tuple[str, dict[str, Any]]:
    return ("bash", {"command": command})


def turns(w: World, tmp_path: Path, *commands: str, **kw: Any) -> Runtime:
    """One prompt per command, each running it with bash; file history on."""
    responses = [r for c in commands for r in (call(bash(c)), say("done"))]
    return w.converse(
        Fake(*responses),
        prompts=[f"prompt {i}" for i in range(len(commands))],
        history=kw.pop("history", None) or settings(tmp_path, **kw),
    )


def vcs(w: World) -> list[dict[str, Any]]:
    return [content for _, content in vcs_entries(w)]


def vcs_entries(w: World) -> list[tuple[str, dict[str, Any]]]:
    return [(e.id, e.content) for e in w.session.entries() if e.kind == "vcs"]  # type: ignore[misc]


def test_undo_restores_every_byte_and_mode_a_turn_changed_bash_included(tmp_path: Path) -> None:
    w = World(tmp_path)
    project = committed(w)
    (project / "data.txt").write_text("one\n")  # untracked: snapshotted too
    (project / "gone.txt").write_text("delete me\n")
    (project / "run.sh").write_text("#!/bin/sh\necho hi\n")
    os.symlink("data.txt", project / "link")
    before, own_git = picture(project), git_dir_hash(project)
    command = (
        "printf 'two\\r\\n' >> data.txt && rm gone.txt && mkdir -p made/deep && "
        "printf '\\000\\377' > made/deep/blob && chmod +x run.sh && ln -sfn src/app.py link"
    )
    edit = ("edit", {"path": "src/app.py", "old_text": "'hello'", "new_text": "'changed'"})
    rt = w.converse(Fake(call(edit, bash(command)), say("done")), history=settings(tmp_path))
    after = picture(project)
    assert after["made/deep/blob"][1] == b"\x00\xff" and after["run.sh"][2] & 0o100
    (project / "mine.txt").write_text("made by the user after the turn\n")

    result = rt.submit({"op": "undo"})  # the RPC form of Runtime.undo
    assert isinstance(result, dict) and result["op"] == "undo"
    assert (project / "mine.txt").read_text() == "made by the user after the turn\n"
    (project / "mine.txt").unlink()
    assert picture(project) == before
    assert "made" not in dirs(project)  # directories the turn made go with its files

    rt.redo()
    assert picture(project) == after
    assert git_dir_hash(project) == own_git  # the project's own .git: byte for byte


def test_a_turn_that_changes_nothing_records_nothing(tmp_path: Path) -> None:
    w = World(tmp_path)
    committed(w)
    rt = turns(w, tmp_path, "true", "ls > /dev/null")
    # Only the first sight of the files (the base any later undo needs); no-change
    # batches add no snapshot, and the repository has no commit for them either.
    assert [(c["op"], c["phase"]) for c in vcs(w)] == [("snapshot", "before")]
    assert rt.history is not None
    assert len(git("--git-dir", rt.history.repo().path, "log", "--format=%H").split()) == 1
    with pytest.raises(SmithError) as caught:
        rt.undo()
    assert caught.value.diagnostic.code == "history.nothing-to-undo"


def test_what_an_aborted_command_did_is_covered_too(tmp_path: Path) -> None:
    w = World(tmp_path)
    committed(w)
    command = "echo half > half.txt && echo ready && sleep 60"

    async def main() -> Runtime:
        rt = w.runtime(Fake(call(bash(command)), say("never")), history=settings(tmp_path))
        ready = asyncio.Event()
        rt.on_event(
            lambda e: (
                ready.set()
                if e["type"] == "tool_update" and "ready" in e["update"]["tail"]
                else None
            )
        )
        rt.prompt("go")
        await ready.wait()  # the file is written; the command is still running
        rt.abort()
        await rt.wait_idle()
        return rt

    rt: Runtime = run(main)
    assert w.of("agent_end")[-1]["stop"] == "abort"
    assert [c["phase"] for c in vcs(w)] == ["before", "after"]
    rt.undo()
    assert not (w.project / "half.txt").exists()


def test_a_conflict_is_refused_listing_the_files_and_force_keeps_the_users_version(
    tmp_path: Path,
) -> None:
    w = World(tmp_path)
    project = committed(w)
    rt = turns(w, tmp_path, "echo new > new.txt && echo '# more' >> src/app.py")
    (project / "new.txt").write_text("the user's edit\n")
    state = picture(project)
    with pytest.raises(SmithError) as caught:
        rt.undo()
    diagnostic = caught.value.diagnostic
    assert diagnostic.code == "history.conflict"
    assert "new.txt" in diagnostic.what and "src/app.py" not in diagnostic.what
    assert "smith undo --force" in diagnostic.fix
    assert picture(project) == state  # refused means untouched

    result = rt.undo(force=True)
    assert result["overwritten"] == ["new.txt"]
    assert not (project / "new.txt").exists()  # the undone turn created it
    assert "# more" not in (project / "src" / "app.py").read_text()
    # The user's version was recorded before it was overwritten.
    user = [id for id, content in vcs_entries(w) if content.get("phase") == "user"]
    rt.restore(user[-1])
    assert (project / "new.txt").read_text() == "the user's edit\n"


def test_restore_goes_to_any_entry_and_is_itself_undoable(tmp_path: Path) -> None:
    w = World(tmp_path)
    project = committed(w)
    rt = turns(w, tmp_path, "echo 1 > a.txt", "echo 2 > a.txt && echo b > b.txt")
    assert rt.history is not None
    first, second = rt.history.history()
    assert (first["text"], first["files"], first["insertions"]) == ("prompt 0", 1, 1)
    assert (second["files"], second["insertions"], second["deletions"]) == (2, 2, 1)
    latest = picture(project)

    rt.restore(str(first["entry"])[:6])  # a prefix is enough
    assert (project / "a.txt").read_text() == "1\n" and not (project / "b.txt").exists()
    rt.restore(str(first["prompt"]))  # the prompt's entry: before that turn ran
    assert not (project / "a.txt").exists()
    rt.undo()  # undoes the last restore
    assert (project / "a.txt").read_text() == "1\n"
    rt.undo()
    assert picture(project) == latest
    kinds = [(c["op"], c.get("phase")) for c in vcs(w) if c["op"] != "snapshot"]
    assert kinds == [("restore", None), ("restore", None), ("undo", None), ("undo", None)]


def test_restore_with_the_conversation_continues_the_session_from_the_entry(
    tmp_path: Path,
) -> None:
    w = World(tmp_path)
    committed(w)
    rt = turns(w, tmp_path, "echo 1 > a.txt", "echo 2 > a.txt")
    assert rt.history is not None
    first = rt.history.history()[0]
    rt.restore(str(first["entry"]), conversation=True)
    after = w.session.entries_between(str(first["entry"]))
    assert after is not None  # the selected branch runs through the entry, then the restore
    assert [e.kind for e in after] == ["effect_intent", "effect_completion", "vcs"]
    texts = [
        e.content["content"][0]["text"]  # type: ignore[index]
        for e in w.session.branch()
        if e.kind == "message" and e.content["role"] == "user"  # type: ignore[index]
    ]
    assert texts == ["prompt 0"]
    assert (w.project / "a.txt").read_text() == "1\n"


def test_each_operation_is_an_effect_and_a_vcs_entry_attributable_to_it(tmp_path: Path) -> None:
    w = World(tmp_path)
    committed(w)
    rt = turns(w, tmp_path, "echo 1 > a.txt")
    rt.undo()
    entries = list(w.session.entries())
    snapshot = [e.content for e in entries if e.kind == "vcs"][1]  # before, then after
    assert isinstance(snapshot, dict) and snapshot["phase"] == "after"
    assert snapshot["cause"]["turn"] == 1 and snapshot["cause"]["tool_calls"] == ["call_0"]
    assert snapshot["paths"] == ["a.txt"] and snapshot["project"] == str(w.project)
    undo = entries[-1].content
    assert isinstance(undo, dict) and undo["op"] == "undo" and undo["paths"] == ["a.txt"]
    paired = {e.kind: e.content for e in entries if e.pair == undo["effect"]}
    intent, completion = paired["effect_intent"], paired["effect_completion"]
    assert isinstance(intent, dict) and isinstance(completion, dict)
    assert (intent["kind"], intent["name"], intent["input"]["paths"]) == ("vcs", "undo", ["a.txt"])
    assert (completion["outcome"], completion["mutation"]) == ("ok", "applied")


def test_the_shadow_repository_is_a_git_repository_the_git_cli_reads(tmp_path: Path) -> None:
    w = World(tmp_path)
    project = committed(w)
    rt = turns(w, tmp_path, "echo hi > a.txt")
    assert rt.history is not None
    shadow = rt.history.repo().path
    assert not shadow.startswith(str(project))
    subjects = git("--git-dir", shadow, "log", "--format=%s").splitlines()
    assert subjects == ["after snapshot: prompt 0", "before snapshot: prompt 0"]
    assert git("--git-dir", shadow, "show", "HEAD:a.txt") == "hi\n"
    assert "a.txt" in git("--git-dir", shadow, "show", "--stat", "--format=", "HEAD")
    git("--git-dir", shadow, "fsck", "--strict")
    status = git("--git-dir", shadow, "--work-tree", str(project), "status", "--porcelain")
    assert status == ""  # its index matches the work tree


def test_a_project_without_git(tmp_path: Path) -> None:
    w = World(tmp_path)
    before = picture(w.project)
    rt = turns(w, tmp_path, "echo x >> src/app.py && mkdir out && echo y > out/y")
    rt.undo()
    assert picture(w.project) == before and "out" not in dirs(w.project)
    assert not (w.project / ".git").exists()
    rt.redo()
    assert (w.project / "out" / "y").read_text() == "y\n"


def test_ignored_files_are_left_alone_but_tracked_ones_are_kept_even_if_ignored(
    tmp_path: Path,
) -> None:
    w = World(tmp_path)
    (w.project / ".gitignore").write_text("*.log\nbuild/\n")
    (w.project / "keep.log").write_text("tracked although ignored\n")
    committed(w)
    git("add", "-f", "keep.log", cwd=w.project)
    git("commit", "-qm", "keep", cwd=w.project)
    rt = turns(w, tmp_path, "echo more >> keep.log && echo d > debug.log && mkdir build && "
               "echo o > build/out.o && echo x >> src/app.py")  # fmt: skip
    rt.undo()
    assert (w.project / "keep.log").read_text() == "tracked although ignored\n"
    assert "x" not in (w.project / "src" / "app.py").read_text()
    # Ignored files are not in history: undo neither deletes nor restores them.
    assert (w.project / "debug.log").read_text() == "d\n"
    assert (w.project / "build" / "out.o").read_text() == "o\n"


def test_large_untracked_files_are_skipped_and_reported_tracked_ones_kept(tmp_path: Path) -> None:
    w = World(tmp_path)
    (w.project / "data.csv").write_text("x" * 300)
    committed(w)
    command = "head -c 500 /dev/zero > big.bin && echo s > small.txt && echo y >> data.csv"
    rt = turns(w, tmp_path, command, max_file_size=100)
    warnings = [e["diagnostic"] for e in w.of("error")]
    assert [d["code"] for d in warnings] == ["history.files-skipped"]
    assert "big.bin (too large, 500 bytes)" in warnings[0]["what"]
    assert warnings[0]["severity"] == "warning"
    rt.undo()
    assert (w.project / "data.csv").read_text() == "x" * 300  # tracked: always kept
    assert not (w.project / "small.txt").exists()
    assert (w.project / "big.bin").stat().st_size == 500  # never in history: left alone


def test_the_size_cap_warns_before_it_is_reached_and_stops_snapshots_at_it(
    tmp_path: Path,
) -> None:
    w = World(tmp_path)
    history = FileHistory(settings(tmp_path, max_size=10_000), w.session, str(w.project))
    codes = []
    for name in "abcd":
        (w.project / f"{name}.bin").write_bytes(os.urandom(4_000))
        snap = history.snapshot("before")
        codes.append(([d.code for d in snap.warnings], snap.entry is not None))
    assert codes == [
        ([], True),
        ([], True),
        (["history.near-limit"], True),  # from 80 % of vcs.max-size
        (["history.over-limit"], False),  # at the limit: no more snapshots
    ]


def test_a_home_directory_or_a_huge_tree_needs_opting_in(tmp_path: Path) -> None:
    w = World(tmp_path)
    home = settings(tmp_path, user_home=str(w.project))
    snap = FileHistory(home, w.session, str(w.project)).snapshot("before")
    assert [d.code for d in snap.warnings] == ["history.off"]
    assert "vcs.allow-home" in snap.warnings[0].fix and snap.tree is None
    home.allow_home = True
    assert FileHistory(home, w.session, str(w.project)).snapshot("before").entry is not None

    for i in range(5):
        (w.project / f"f{i}.txt").write_text(str(i))
    small = settings(tmp_path / "other", max_files=3)
    history = FileHistory(small, w.session, str(w.project))
    snap = history.snapshot("before")
    assert [d.code for d in snap.warnings] == ["history.off"]
    assert "vcs.max-files" in snap.warnings[0].what and snap.entry is None
    stored = [p for p in Path(small.home, "vcs").rglob("*") if p.parent.parent.name == "objects"]
    assert [p for p in stored if len(p.parent.name) == 2] == []  # nothing stored
    with pytest.raises(SmithError, match=r"vcs\.max-files"):
        history.undo()


def test_gc_drops_old_snapshots_and_the_objects_only_they_held(tmp_path: Path) -> None:
    w = World(tmp_path)
    history = FileHistory(settings(tmp_path), w.session, str(w.project))
    entries = []
    for i in range(5):
        (w.project / "a.txt").write_text(f"version {i}\n")
        entries.append(history.snapshot("before").entry)
    repo = history.repo()
    report = repo.gc(keep_days=30, keep_count=2)
    assert (report["snapshots"], report["pruned"]) == (5, 3)
    assert report["bytes_after"] < report["bytes_before"]
    assert len(git("--git-dir", repo.path, "log", "--format=%H").split()) == 2
    git("--git-dir", repo.path, "fsck", "--strict")
    assert git("--git-dir", repo.path, "cat-file", "-p", "HEAD:a.txt") == "version 4\n"
    with pytest.raises(SmithError) as caught:
        history.restore(str(entries[0]))
    assert caught.value.diagnostic.code == "history.pruned"
    # Each version was the user's (recorded by `before` snapshots): only --force replaces it.
    history.restore(str(entries[3]), force=True)
    assert (w.project / "a.txt").read_text() == "version 3\n"
    # By age: everything but the newest is older than zero days.
    assert repo.gc(keep_days=0, keep_count=100)["pruned"] >= 1
    assert len(git("--git-dir", repo.path, "log", "--format=%H").split()) == 1


def test_bytes_are_kept_exactly_whatever_gitattributes_say(tmp_path: Path) -> None:
    w = World(tmp_path)
    (w.project / ".gitattributes").write_text("* text eol=crlf\n*.dat filter=lfs -text\n")
    (w.project / "mixed.txt").write_bytes(b"a\r\nb\nc\r")
    (w.project / "x.dat").write_bytes(b"raw\n")
    committed(w)
    before = picture(w.project)
    rt = turns(w, tmp_path, "printf 'z\\n' > mixed.txt && printf 'q' >> x.dat")
    rt.undo()
    assert picture(w.project) == before


def test_bad_targets_get_diagnostics(tmp_path: Path) -> None:
    w = World(tmp_path)
    committed(w)
    rt = turns(w, tmp_path, "echo 1 > a.txt")
    with pytest.raises(SmithError) as caught:
        rt.redo()
    assert caught.value.diagnostic.code == "history.nothing-to-redo"
    with pytest.raises(SmithError) as caught:
        rt.restore("zzzz")
    assert caught.value.diagnostic.code == "session.unknown-entry"
    w.session.append("label", {"text": "x"}, id="ab01")
    w.session.append("label", {"text": "y"}, id="ab02")
    with pytest.raises(SmithError) as caught:
        rt.restore("ab")
    assert caught.value.diagnostic.code == "history.ambiguous-entry"

    elsewhere = FileHistory(settings(tmp_path), w.session, str(tmp_path))
    with pytest.raises(SmithError) as caught:
        elsewhere.undo()
    assert caught.value.diagnostic.code == "history.other-project"
    off = FileHistory(settings(tmp_path, enabled=False), w.session, str(w.project))
    assert off.snapshot("before").tree is None
    with pytest.raises(SmithError, match=r"vcs\.enabled is false"):
        off.undo()
