"""File history never destroys what it cannot bring back: nothing through a symbolic link
out of the project, no file too large or too ignored to be recorded (not even with
--force), no file a turn merely un-ignored, no change the user made while a turn ran; an
operation that stops part-way (a full disk, a snapshot pruned by another smith) says so
and can be finished; names that are not UTF-8 work; a crashed smith's lock files and a
busy history do not leave the user guessing."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smith.diagnostics import SmithError
from smith.session import Session
from smith.vcs import FileHistory, HistorySettings
from smith.vcs._repo import ShadowRepo
from tests.vcs_kit import picture


class Project:
    """A project with file history, and turns run by hand (as the runtime runs them)."""

    def __init__(self, tmp_path: Path, **kw: Any) -> None:
        self.root = tmp_path / "project"
        self.root.mkdir()
        self.session = Session.create(str(tmp_path / "s.smith"), cwd=str(self.root))
        kw.setdefault("user_home", str(tmp_path / "user"))
        self.settings = HistorySettings(str(tmp_path / "home"), **kw)
        self.history = FileHistory(self.settings, self.session, str(self.root))
        self.turns = 0

    def prompt(self) -> None:
        self.turns += 1
        text = [{"type": "text", "text": f"prompt {self.turns}"}]
        self.session.append("message", {"role": "user", "content": text})

    def batch(self, change: Callable[[Path], object]) -> None:
        """One batch of mutating tool calls: snapshots before and after it."""
        before = self.history.snapshot("before")
        change(self.root)
        self.history.snapshot("after", base=before.tree)

    def turn(self, change: Callable[[Path], object]) -> None:
        self.prompt()
        self.batch(change)

    def refused(self, op: Callable[[], object]) -> SmithError:
        state = picture(self.root)
        with pytest.raises(SmithError) as caught:
            op()
        assert picture(self.root) == state  # refused means untouched
        return caught.value


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    made = Project(tmp_path)
    yield made
    made.session.close()


def test_force_never_writes_or_deletes_through_a_link_out_of_the_project(
    tmp_path: Path, project: Project
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "c").write_text("outside, not the project's\n")
    (outside / "e").write_text("outside too\n")
    root = project.root
    (root / "d").mkdir()
    (root / "d" / "c").write_text("v1\n")
    project.turn(lambda r: ((r / "d" / "c").write_text("v2\n"), (r / "d" / "e").write_text("e\n")))
    shutil.rmtree(root / "d")
    os.symlink(outside, root / "d")  # the user's link, where the turn had a directory

    refused = project.refused(lambda: project.history.undo(force=True))
    assert refused.diagnostic.code == "history.blocked"
    assert "d/c (d is a symbolic link" in refused.diagnostic.what
    assert (outside / "c").read_text() == "outside, not the project's\n"
    assert (outside / "e").read_text() == "outside too\n"


def test_force_never_deletes_a_file_too_large_to_be_recorded(tmp_path: Path) -> None:
    project = Project(tmp_path, max_file_size=100)
    project.turn(lambda r: (r / "data.bin").write_bytes(b"small"))
    (project.root / "data.bin").write_bytes(b"B" * 1000)  # grown past vcs.max-file-size

    refused = project.refused(lambda: project.history.undo(force=True))
    assert refused.diagnostic.code == "history.blocked"
    assert "data.bin (too large to record: 1000 bytes" in refused.diagnostic.what
    assert "vcs.max-file-size" in refused.diagnostic.fix
    project.session.close()


def test_an_ignored_file_where_undo_would_write_is_not_overwritten(project: Project) -> None:
    (project.root / "dist").mkdir()
    (project.root / "dist" / "app.js").write_text("the old build\n")

    def ignore_dist(root: Path) -> None:
        shutil.rmtree(root / "dist")
        (root / ".gitignore").write_text("dist/\n")

    project.turn(ignore_dist)
    (project.root / "dist").mkdir()
    (project.root / "dist" / "app.js").write_text("the user's, not in history\n")

    for force in (False, True):
        refused = project.refused(lambda force=force: project.history.undo(force=force))
        assert refused.diagnostic.code == "history.blocked"
        assert "dist/app.js (ignored" in refused.diagnostic.what
    (project.root / "dist" / "app.js").unlink()  # as the fix says: move it aside
    project.history.undo()
    assert (project.root / "dist" / "app.js").read_text() == "the old build\n"


def test_undoing_a_turn_that_unignored_a_file_does_not_delete_it(project: Project) -> None:
    (project.root / ".gitignore").write_text(".env\nbuild/\n")
    (project.root / ".env").write_text("SECRET=hunter2\n")  # the user's, ignored: unrecorded
    project.turn(lambda r: (r / ".gitignore").write_text("build/\n"))  # the agent drops a line
    before_undo = picture(project.root)

    result = project.history.undo()
    assert (project.root / ".env").read_text() == "SECRET=hunter2\n"
    assert result["left"] == [".env"]
    assert [c["path"] for c in result["changed"]] == [".gitignore"]  # type: ignore[index]
    project.history.redo()
    assert picture(project.root) == before_undo
    project.history.undo()
    assert (project.root / ".env").read_text() == "SECRET=hunter2\n"


def test_a_directory_holding_other_files_where_a_file_goes_is_refused_even_forced(
    project: Project,
) -> None:
    (project.root / "d").write_text("a file\n")
    project.turn(lambda r: (r / "d").write_text("changed\n"))
    (project.root / "d").unlink()
    (project.root / "d").mkdir()
    (project.root / "d" / "mine.txt").write_text("the user's\n")

    refused = project.refused(lambda: project.history.undo(force=True))
    assert refused.diagnostic.code == "history.blocked"
    assert "d (a directory holding other files" in refused.diagnostic.what


def test_a_change_the_user_made_while_a_turn_ran_survives_its_undo(project: Project) -> None:
    (project.root / "notes.txt").write_text("mine\n")
    project.prompt()
    project.batch(lambda r: (r / "a.txt").write_text("agent, batch 1\n"))
    (project.root / "notes.txt").write_text("mine, typed while the agent worked\n")
    project.batch(lambda r: (r / "b.txt").write_text("agent, batch 2\n"))

    units = project.history.history()
    assert [u["files"] for u in units] == [1, 1]  # the user's change split the turn
    for _ in units:
        project.history.undo()
    assert not (project.root / "a.txt").exists() and not (project.root / "b.txt").exists()
    assert (project.root / "notes.txt").read_text() == "mine, typed while the agent worked\n"


def test_restore_does_not_take_what_only_a_snapshot_recorded_as_the_users(
    project: Project,
) -> None:
    (project.root / "notes.txt").write_text("the user's\n")
    project.turn(lambda r: (r / "a.txt").write_text("smith's\n"))
    (project.root / "notes.txt").write_text("edited by the user\n")
    (project.root / "mine.txt").write_text("made by the user\n")
    project.turn(lambda r: (r / "b.txt").write_text("smith's\n"))  # records them: `before`
    first = next(e.id for e in project.session.entries() if e.kind == "vcs")
    error = project.refused(lambda: project.history.restore(first))
    assert error.diagnostic.code == "history.conflict"
    assert "mine.txt" in error.diagnostic.what and "notes.txt" in error.diagnostic.what
    assert "a.txt" not in error.diagnostic.what and "b.txt" not in error.diagnostic.what
    # What smith wrote goes back and forth without --force: undo, redo, undo again.
    for _ in range(2):
        project.history.undo()
        project.history.undo()
        assert not (project.root / "a.txt").exists() and not (project.root / "b.txt").exists()
        project.history.redo()
        project.history.redo()
        assert (project.root / "b.txt").read_text() == "smith's\n"
    project.history.restore(first, force=True)
    assert not (project.root / "mine.txt").exists()
    assert (project.root / "notes.txt").read_text() == "the user's\n"
    project.history.undo()  # the forced restore recorded them first
    assert (project.root / "mine.txt").read_text() == "made by the user\n"
    assert (project.root / "notes.txt").read_text() == "edited by the user\n"


def test_a_snapshot_pruned_by_another_smith_is_refused_before_any_file_changes(
    project: Project,
) -> None:
    (project.root / "a.txt").write_text("v0\n")
    project.turn(lambda r: ((r / "a.txt").write_text("v1\n"), (r / "c.txt").write_text("c\n")))
    project.turn(lambda r: (r / "a.txt").write_text("v2\n"))
    first = project.history.history()[0]  # this process has read the first turn's trees
    other = ShadowRepo.open(project.settings.home, str(project.root))
    assert other is not None
    with other.locked():
        other.gc(keep_days=30, keep_count=1)

    refused = project.refused(lambda: project.history.restore(str(first["prompt"])))
    assert refused.diagnostic.code == "history.pruned"


def test_an_operation_stopped_part_way_says_so_and_running_it_again_finishes_it(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    from smith.vcs import _worktree

    before = picture(project.root)
    project.turn(lambda r: [(r / f"{n}.txt").write_text(n) for n in "abc"])
    write = _worktree.write

    def full_disk(root: str, path: str, data: bytes, mode: int) -> None:
        if path == "b.txt":
            raise OSError(28, "No space left on device", os.path.join(root, path))
        write(root, path, data, mode)

    monkeypatch.setattr(_worktree, "write", full_disk)
    project.turn(lambda r: [(r / f"{n}.txt").unlink() for n in "abc"])
    with pytest.raises(SmithError) as caught:
        project.history.undo()
    diagnostic = caught.value.diagnostic
    assert diagnostic.code == "history.interrupted"
    assert "No space left on device" in diagnostic.what and "smith undo" in diagnostic.fix
    assert (project.root / "a.txt").read_text() == "a" and not (project.root / "b.txt").exists()

    monkeypatch.setattr(_worktree, "write", write)
    project.history.undo()  # no conflict over what the first attempt already did
    assert [(project.root / f"{n}.txt").read_text() for n in "abc"] == ["a", "b", "c"]
    project.history.undo()
    assert picture(project.root) == before


def test_names_that_are_not_utf8_or_hold_a_newline_round_trip(project: Project) -> None:
    root = os.fsencode(project.root)
    latin1 = os.path.join(root, b"caf\xe9.txt")
    before = picture(project.root)

    def odd_names(_: Path) -> None:
        with open(latin1, "wb") as f:
            f.write(b"a latin-1 name\n")
        with open(os.path.join(root, b"new\nline.txt"), "wb") as f:
            f.write(b"a newline in the name\n")

    project.turn(odd_names)
    after = picture(project.root)
    snapshots = [e.content for e in project.session.entries() if e.kind == "vcs"]
    assert [c["phase"] for c in snapshots] == ["before", "after"]  # type: ignore[index]
    result = project.history.undo()
    assert picture(project.root) == before
    assert {c["path"] for c in result["changed"]} == {"caf\\xe9.txt", "new\nline.txt"}  # type: ignore[attr-defined]
    project.history.redo()
    assert picture(project.root) == after


def test_apply_itself_never_reaches_through_a_link(tmp_path: Path, project: Project) -> None:
    """Beneath the checks of the operations: the one place that writes files."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "old").write_text("outside\n")
    (project.root / "d").mkdir()
    (project.root / "d" / "old").write_text("in the project\n")
    project.turn(lambda r: ((r / "d" / "old").unlink(), (r / "d" / "new").write_text("n\n")))
    repo = project.history.repo()
    unit = project.history.history()[0]
    tree = repo.head()
    assert tree is not None
    shutil.rmtree(project.root / "d")
    os.symlink(outside, project.root / "d")
    writing = [c for c in repo.changes(None, tree[1]) if c.path == "d/new"]
    deleting = [c for c in repo.changes(tree[1], None) if c.path == "d/new"]
    assert writing and deleting and unit["files"] == 2
    (outside / "new").write_text("outside\n")
    repo.apply(deleting, None)  # a deletion under a link: nothing of the project there
    assert (outside / "new").read_text() == "outside\n"
    with pytest.raises(NotADirectoryError):
        repo.apply(writing, tree[1])
    assert (outside / "new").read_text() == "outside\n"


def test_lock_files_left_by_a_smith_killed_mid_write_do_not_stop_history(
    project: Project,
) -> None:
    project.turn(lambda r: (r / "a.txt").write_text("a\n"))
    shadow = Path(project.history.repo().path)
    for stale in ("index.lock", "refs/heads/snapshots.lock"):
        (shadow / stale).write_text("")  # git's lock files, the writer killed before rename
        project.prompt()
        before = project.history.snapshot("before")
        (project.root / "a.txt").write_text(stale)
        after = project.history.snapshot("after", base=before.tree)
        assert before.warnings == after.warnings == [] and after.entry is not None
        assert project.history.history()[-1]["entry"] == after.entry


NAMES = ("a", "b.txt", "d", "d/c", "d/e/f", ".gitignore")
change = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(NAMES), st.binary(max_size=30)),
    st.tuples(st.just("delete"), st.sampled_from(NAMES), st.none()),
    st.tuples(st.just("link"), st.sampled_from(NAMES), st.sampled_from(("a", "OUT", "OUT/x"))),
    st.tuples(st.just("ignore"), st.just(".gitignore"), st.sampled_from(("a", "d/", "*.txt"))),
)


def _do(root: Path, outside: Path, kind: str, name: str, arg: object) -> None:
    path = root / name
    if any(p.is_symlink() or p.is_file() for p in path.parents if root in p.parents):
        return  # (would go through a link or a file: the user's tools would not either)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()
    if kind == "delete":
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "write":
        assert isinstance(arg, bytes)
        if name == ".gitignore":  # libgit2 1.9 loops forever on a line that starts with
            arg = arg.translate(None, b"\v\f")  # \v or \f (see docs/history.md)
        path.write_bytes(arg)
    elif kind == "link":
        os.symlink(str(arg).replace("OUT", str(outside)), path)
    else:
        path.write_text(f"{arg}\n")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(change, min_size=1, max_size=5),
    st.lists(change, min_size=1, max_size=5),
    st.booleans(),
)
def test_an_undo_destroys_nothing_it_did_not_record(
    turn: list[tuple[str, str, object]], user: list[tuple[str, str, object]], force: bool
) -> None:
    """Whatever the user did after a turn, an undo either changes nothing, or: every file it
    overwrote or deleted is in the snapshot it recorded first, and unless forced it was as
    the turn left it; and nothing outside the project ever changes."""
    with tempfile.TemporaryDirectory() as tmp:
        project = Project(Path(tmp), max_file_size=20)
        outside = Path(tmp, "outside")
        outside.mkdir()
        (outside / "x").write_text("not the project's\n")
        project.prompt()
        project.batch(lambda root: [_do(root, outside, *op) for op in turn])
        left = picture(project.root)
        for op in user:
            _do(project.root, outside, *op)
        there, theirs = picture(outside), picture(project.root)
        try:
            project.history.undo(force=force)
        except SmithError as exc:
            codes = ("history.blocked", "history.nothing-to-undo", "history.conflict")
            assert exc.diagnostic.code in codes[: 3 if not force else 2]
            assert picture(project.root) == theirs
        else:
            record = [e.content for e in project.session.entries() if e.kind == "vcs"][-1]
            assert isinstance(record, dict) and record["op"] == "undo"
            repo, now = project.history.repo(), picture(project.root)
            for path, (kind, data, _) in theirs.items():
                if now.get(path, (None, None, 0))[:2] != (kind, data):
                    assert force or left.get(path) == theirs[path], f"{path}: not as left"
                    kept = repo.entry(str(record["before"]), path)
                    assert kept is not None, f"{path} was changed but never recorded"
                    assert repo.repo[kept[0]].data == data  # type: ignore[attr-defined]
        assert picture(outside) == there
        project.session.close()


def test_the_apps_undo_says_whose_changes_it_overwrote_and_what_it_left() -> None:
    from smith.plugins.product import _op

    class Host:
        def __init__(self) -> None:
            self.told: list[str] = []

        class runtime:  # the attribute of a command host
            @staticmethod
            def submit(op: object) -> dict[str, object]:
                from smith.runtime import ops

                assert op == ops.Undo(force=True)
                changed = [{"path": "notes.txt", "change": "deleted"}]
                return {"changed": changed, "overwritten": ["notes.txt"], "left": [".env"]}

        def tell(self, text: str, *, error: bool = False) -> None:
            self.told.append(text)

    host = Host()
    _op("undo")(host, "--force")  # type: ignore[arg-type]
    assert host.told[0] == "undone: notes.txt (deleted)"
    assert "overwrote your changes to notes.txt" in host.told[1] and "/restore" in host.told[1]
    assert host.told[2].startswith("left .env as it is")


def test_a_busy_history_names_the_process_that_holds_it(project: Project) -> None:
    project.turn(lambda r: (r / "a.txt").write_text("a\n"))
    mine = project.history.repo()
    other = ShadowRepo.open(project.settings.home, str(project.root))  # as another smith
    assert other is not None
    with mine.locked(), pytest.raises(SmithError) as caught, other.locked(timeout=0.05):
        pass
    assert caught.value.diagnostic.code == "history.locked"
    assert f"(process {os.getpid()})" in caught.value.diagnostic.what
