"""Edge cases found in review: each would otherwise hang, crash, or record a falsehood."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from smith.effects import EffectJournal, ToolContext, builtin_tools, run_tool
from smith.session import Session
from tests.conftest import SmithEnv, smith_executable, tool_world

TOOLS = builtin_tools()


@pytest.fixture
def world(tmp_path: Path) -> tuple[Session, ToolContext, Path]:
    return tool_world(  # type: ignore[return-value]
        tmp_path, limits={"read.max-bytes": 2000}, spill_dir=str(tmp_path / "out")
    )


def _call(world: tuple[Session, ToolContext, Path], name: str, **args: object) -> object:
    session, ctx, _ = world
    return run_tool(EffectJournal(session), TOOLS[name], args, ctx)


def test_a_command_that_closes_its_output_still_times_out(
    world: tuple[Session, ToolContext, Path],
) -> None:
    start = time.monotonic()
    out = _call(world, "bash", command="exec >&- 2>&-; sleep 20", timeout=1)
    assert time.monotonic() - start < 10
    assert "timed out" in out.result.text and out.outcome == "error"  # type: ignore[attr-defined]


def test_failed_commands_are_recorded_as_errors(world: tuple[Session, ToolContext, Path]) -> None:
    session, _, _ = world
    out = _call(world, "bash", command="exit 3")
    assert out.outcome == "error"  # type: ignore[attr-defined]
    assert list(session.entries())[-1].content["outcome"] == "error"  # type: ignore[index]
    killed = _call(world, "bash", command="kill -9 $$")
    assert "[killed by signal 9]" in killed.result.text  # type: ignore[attr-defined]


def test_arguments_that_cannot_be_recorded_are_invalid(
    world: tuple[Session, ToolContext, Path],
) -> None:
    session, _, _ = world
    out = _call(world, "write", path="x", content="\ud800")
    assert out.effect_id is None and "lone surrogate" in out.result.text  # type: ignore[attr-defined]
    assert len(session) == 0
    nul = _call(world, "read", path="a\0b")
    assert "NUL character" in nul.result.text  # type: ignore[attr-defined]


def test_whole_number_floats_are_integers(world: tuple[Session, ToolContext, Path]) -> None:
    _, _, project = world
    (project / "a.txt").write_text("one\ntwo\n")
    assert _call(world, "read", path="a.txt", offset=2.0).result.text == "two\n"  # type: ignore[attr-defined]
    assert _call(world, "grep", pattern="one", context=1.0).result.ok  # type: ignore[attr-defined]


def test_os_errors_are_tool_errors_with_the_file_untouched(
    world: tuple[Session, ToolContext, Path],
) -> None:
    _, _, project = world
    (project / "a.txt").write_text("x")
    out = _call(world, "write", path="a.txt/b.txt", content="y")
    assert not out.result.ok and "cannot be written" in out.result.text  # type: ignore[attr-defined]
    assert out.result.mutation == "not-applied"  # type: ignore[attr-defined]
    long = _call(world, "write", path="n" * 300, content="y")
    assert "File name too long" in long.result.text  # type: ignore[attr-defined]


def test_pipes_and_huge_lines_do_not_hang_or_flood_read(
    world: tuple[Session, ToolContext, Path],
) -> None:
    _, _, project = world
    os.mkfifo(project / "fifo")
    assert "not a regular file" in _call(world, "read", path="fifo").result.text  # type: ignore[attr-defined]
    assert (
        "not a regular file"
        in _call(
            world,
            "edit",
            path="fifo",
            old_text="a",  # type: ignore[attr-defined]
            new_text="b",
        ).result.text
    )
    (project / "wide.txt").write_text("x" * 100_000 + "\nnext\n")
    wide = _call(world, "read", path="wide.txt").result.text  # type: ignore[attr-defined]
    assert len(wide) < 3000 and "line cut: 100001 characters" in wide


def test_read_grep_and_edit_count_lines_alike(world: tuple[Session, ToolContext, Path]) -> None:
    _, _, project = world
    (project / "f.txt").write_text("a\fb\rc\nd\n")
    assert _call(world, "read", path="f.txt", offset=2).result.text == "d\n"  # type: ignore[attr-defined]
    assert _call(world, "grep", pattern="^d").result.text == "f.txt:2:d"  # type: ignore[attr-defined]


def test_edit_counts_overlapping_matches_and_hints_at_crlf(
    world: tuple[Session, ToolContext, Path],
) -> None:
    _, _, project = world
    (project / "a.txt").write_text("aaa")
    assert (
        "matches 2 places"
        in _call(
            world,
            "edit",
            path="a.txt",
            old_text="aa",  # type: ignore[attr-defined]
            new_text="X",
        ).result.text
    )
    (project / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    crlf = _call(world, "edit", path="w.txt", old_text="one\ntwo", new_text="1\n2")
    assert "CRLF line endings" in crlf.result.text  # type: ignore[attr-defined]
    both = _call(
        world,
        "edit",
        path="a.txt",
        old_text="aaa",
        new_text="b",
        edits=[{"old_text": "aaa", "new_text": "c"}],
    )
    assert "not both" in both.result.text  # type: ignore[attr-defined]
    same = _call(world, "edit", path="a.txt", old_text="aaa", new_text="aaa")
    assert same.result.mutation == "not-applied" and not same.result.ok  # type: ignore[attr-defined]


def test_find_and_grep_names_and_ignores(world: tuple[Session, ToolContext, Path]) -> None:
    session, ctx, project = world
    (project / ".gitignore").write_text("*.tmp\n!keep.tmp\nsub/\n")
    for rel in ("keep.tmp", "x.tmp", "sub/hidden.py", "ok.py", "b\udcffad.py"):
        path = os.path.join(os.fsencode(project), os.fsencode(rel))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("needle\n")
    everything = _call(world, "find", pattern="*").result.text.splitlines()  # type: ignore[attr-defined]
    assert "" not in everything and "x.tmp" not in everything
    assert "b\\xffad.py" in everything and "keep.tmp" in everything
    tmp = _call(world, "grep", pattern="needle", glob="*.tmp").result.text  # type: ignore[attr-defined]
    assert tmp == "keep.tmp:1:needle"  # the glob does not bring x.tmp back
    strict = ToolContext(root=ctx.root, cwd=ctx.cwd, session=session, ignore=("keep.tmp",))
    found = run_tool(EffectJournal(session), TOOLS["find"], {"pattern": "*.tmp"}, strict)
    assert found.result.text == "no files match *.tmp"  # configured ignores win


def test_paths_from_find_work_in_read_from_a_subdirectory(
    world: tuple[Session, ToolContext, Path],
) -> None:
    session, ctx, project = world
    (project / "sub").mkdir()
    (project / "sub" / "x.txt").write_text("hi\n")
    inner = ToolContext(root=ctx.root, cwd=str(project / "sub"), session=session)
    journal = EffectJournal(session)
    found = run_tool(journal, TOOLS["find"], {"pattern": "*.txt"}, inner).result.text
    assert found == "x.txt"
    assert run_tool(journal, TOOLS["read"], {"path": found}, inner).result.text == "hi\n"


def test_ls_applies_nested_ignores_below_their_directory(
    world: tuple[Session, ToolContext, Path],
) -> None:
    _, _, project = world
    (project / "sub" / "deep").mkdir(parents=True)
    (project / "sub" / ".gitignore").write_text("*.log\n")
    (project / "sub" / "deep" / "b.log").write_text("")
    (project / "sub" / "deep" / "c.txt").write_text("")
    listing = _call(world, "ls", path="sub/deep").result.text  # type: ignore[attr-defined]
    assert listing.splitlines()[0] == "c.txt" and "b.log" not in listing


def test_an_intent_that_cannot_be_synced_leaves_nothing_pending(
    world: tuple[Session, ToolContext, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from smith.effects import JournalError

    session, ctx, project = world

    def failing(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing)
    with pytest.raises(JournalError):
        run_tool(EffectJournal(session), TOOLS["write"], {"path": "a", "content": "x"}, ctx)
    monkeypatch.undo()
    session.close()
    again = Session.open(session.path)
    assert EffectJournal(again).pending() == [] and not (project / "a").exists()


def test_unfinished_reads_reconcile_as_not_applied(
    world: tuple[Session, ToolContext, Path],
) -> None:
    session, _, _ = world
    journal = EffectJournal(session)
    journal.begin("read", {"path": "a"}, mutating=False)
    journal.begin("write", {"path": "b", "content": ""})
    journal.reconcile()
    states = [
        e.content["mutation"]
        for e in session.entries()  # type: ignore[index]
        if e.kind == "effect_completion"
    ]
    assert states == ["not-applied", "unknown"]


def test_sigterm_ends_the_command_and_records_it_cancelled(senv: SmithEnv) -> None:
    from tests.process_kit import kill_tagged, new_tag, tagged
    from tests.test_tools_process import _wait_for

    project = senv.make_project()
    ready = project / "ready"
    tag = new_tag()
    proc = subprocess.Popen(
        [
            smith_executable(),
            "tools",
            "run",
            "bash",
            json.dumps({"command": f"(exec -a {tag} sleep 30) & touch {ready}; wait"}),
        ],
        cwd=project,
        env=senv.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _wait_for(lambda: ready.exists() and bool(tagged(tag)), "the command to start")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    from smith.session import SessionStore

    [path] = SessionStore(str(senv.data_home)).paths()
    # The completion, then the snapshot after the call (what the command changed).
    *_, done, after = Session.load(path).entries()
    assert after.kind == "vcs"
    last = done.content
    assert isinstance(last, dict) and (last["outcome"], last["mutation"]) == (
        "cancelled",
        "unknown",
    )
    try:
        assert tagged(tag) == []
    finally:
        kill_tagged(tag)


def test_old_saved_output_is_pruned(senv: SmithEnv) -> None:
    from smith.effects import prune_outputs

    outputs = senv.data_home / "outputs"
    outputs.mkdir(parents=True)
    old, new = outputs / "bash-old.log", outputs / "bash-new.log"
    old.write_text("x")
    new.write_text("y")
    week_ago = time.time() - 8 * 86400
    os.utime(old, (week_ago, week_ago))
    prune_outputs(str(outputs))
    assert not old.exists() and new.exists()


def test_names_that_are_not_utf8_are_listed_and_recorded(
    world: tuple[Session, ToolContext, Path],
) -> None:
    """A file name with a byte that is not UTF-8 comes from os.listdir as a lone
    surrogate, which no record can hold: ls failed with "its result could not be
    recorded". It shows the byte escaped, as find and grep do."""
    session, ctx, project = world
    os.mkdir(os.path.join(os.fsencode(project), b"d\xfe"))
    with open(os.path.join(os.fsencode(project), b"g\xff.txt"), "wb") as f:
        f.write(b"y\n")
    out = run_tool(EffectJournal(session), TOOLS["ls"], {}, ctx)
    assert out.result.ok, out.result.text
    assert out.result.text.splitlines() == ["d\\xfe/", "g\\xff.txt"]
    [completion] = [e for e in session.entries() if e.kind == "effect_completion"]
    assert completion.content["outcome"] == "ok"  # type: ignore[index]
