"""File history under the hardening probe (issue 26): nested repositories are in history
(undo takes their changes back; their .git is never touched), everything smith keeps
under SMITH_HOME is owner-only (the project's files keep their usual modes), and no rule
file can hang a snapshot, nor can a slow one keep SIGTERM from ending smith."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from smith._atomic import private_dirs, private_home
from smith.diagnostics import SmithError
from smith.session import Session
from smith.vcs import FileHistory, HistorySettings
from smith.vcs._guard import Job, off_main, run
from smith.vcs._repo import ShadowRepo
from smith.vcs._rules import hanging_line, neutralised
from tests.conftest import Result, SmithEnv, smith_executable
from tests.process_kit import wait_for
from tests.vcs_kit import git, git_dir_hash, git_project

Smith = Callable[..., Result]
WRITE = {"name": "write", "arguments": {"path": "new.txt", "content": "hi\n"}}


def script(senv: SmithEnv, name: str, *calls: dict[str, Any]) -> str:
    path = senv.root / f"{name}.json"
    responses = [{"tool_calls": list(calls), "stop": "tool_use"}, {"text": "done", "stop": "end"}]
    path.write_text(json.dumps({"responses": responses}))
    return f"scripted:{path}"


def bash(command: str) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"command": command}}


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


# -- nested repositories -----------------------------------------------------------------


def vendored(project: Path) -> Path:
    """vendor/lib: a git clone of its own inside `project`, which does not track it."""
    lib = git_project(project / "vendor" / "lib", {"x.py": "x = 1\n", "y.py": "y = 1\n"})
    (lib / ".gitignore").write_text("*.log\n")
    git("add", ".gitignore", cwd=lib)
    git("commit", "-qm", "ignore logs", cwd=lib)
    return lib


def test_undo_takes_back_a_turn_inside_a_nested_repository_and_leaves_its_git(
    senv: SmithEnv, smith_process: Smith
) -> None:
    project = git_project(senv.root / "project")
    lib = vendored(project)
    (lib / "keep.log").write_text("ignored by the nested repository's rules\n")
    own_git, nested_git = git_dir_hash(project), git_dir_hash(lib)
    edit = {"name": "edit", "arguments": {"path": "vendor/lib/x.py", "old_text": "1",
                                          "new_text": "2"}}  # fmt: skip
    command = "echo 'y = 2' > vendor/lib/y.py && echo new > vendor/lib/new.py"
    model = script(senv, "nested", edit, bash(command))
    done = smith_process("eval", "--model", model, "change the vendored lib", cwd=project)
    assert done.code == 0, done.err
    assert (lib / "x.py").read_text() == "x = 2\n" and (lib / "new.py").exists()
    assert "vendor/lib/new.py" in smith_process("diff", "--stat", cwd=project).out

    undo = smith_process("undo", cwd=project)
    assert undo.code == 0, undo.err
    assert "vendor/lib/x.py" in undo.out and "vendor/lib/new.py" in undo.out
    assert (lib / "x.py").read_text() == "x = 1\n"
    assert (lib / "y.py").read_text() == "y = 1\n"
    assert not (lib / "new.py").exists()
    assert (lib / "keep.log").exists()  # ignored there: never in history, left alone
    assert git_dir_hash(lib) == nested_git and git_dir_hash(project) == own_git
    shadow = next((senv.data_home / "vcs").iterdir())
    listed = git("--git-dir", str(shadow), "ls-tree", "-r", "--name-only", "snapshots")
    assert "vendor/lib/x.py" in listed.split()
    assert not [p for p in listed.split() if ".git/" in p or p.endswith(".git")]


class Project:
    def __init__(self, tmp_path: Path, *, watch: bool = False) -> None:
        self.root = tmp_path / "project"
        self.root.mkdir(exist_ok=True)
        self.session = Session.create(str(tmp_path / "s.smith"), cwd=str(self.root))
        settings = HistorySettings(str(tmp_path / "home"), user_home=str(tmp_path / "user"))
        self.history = FileHistory(settings, self.session, str(self.root), watch=watch)

    def turn(self, change: Callable[[Path], object]) -> None:
        text = [{"type": "text", "text": "a prompt"}]
        self.session.append("message", {"role": "user", "content": text})
        before = self.history.snapshot("before")
        assert not before.warnings, before.warnings
        change(self.root)
        after = self.history.snapshot("after", base=before.tree)
        assert not after.warnings, after.warnings

    def files(self) -> set[str]:
        repo = self.history.repo()
        tree = repo.head()
        assert tree is not None
        return {c.path for c in repo.changes(None, tree[1])}


@pytest.mark.parametrize("watch", [False, True])
def test_nested_repositories_at_any_depth_are_snapshotted_but_never_their_git(
    tmp_path: Path, watch: bool
) -> None:
    p = Project(tmp_path, watch=watch)
    lib = vendored(p.root)
    deeper = git_project(lib / "sub" / "inner", {"i.py": "i = 1\n"})
    (p.root / "repos" / "a").mkdir(parents=True)
    git("init", "-q", cwd=p.root / "repos" / "a")  # a folder of repositories, one empty
    (lib / "debug.log").write_text("ignored\n")
    p.turn(lambda root: (root / "repos" / "a" / "made.txt").write_text("made\n"))
    files = p.files()
    assert {"vendor/lib/x.py", "vendor/lib/.gitignore", "vendor/lib/sub/inner/i.py",
            "repos/a/made.txt"} <= files  # fmt: skip
    assert "vendor/lib/debug.log" not in files
    assert not [f for f in files if ".git/" in f]
    nested, inner = git_dir_hash(lib), git_dir_hash(deeper)

    # A later change inside it is seen (with the change tracker too), and undone.
    p.turn(lambda root: (root / "vendor" / "lib" / "sub" / "inner" / "i.py").write_text("i = 2\n"))
    p.history.undo()
    assert (deeper / "i.py").read_text() == "i = 1\n"
    assert git_dir_hash(lib) == nested and git_dir_hash(deeper) == inner
    p.history.close()


def test_undo_of_a_clone_deletes_its_files_and_leaves_its_git(tmp_path: Path) -> None:
    p = Project(tmp_path)
    source = git_project(tmp_path / "upstream", {"u.py": "u = 1\n"})
    p.turn(lambda root: git("clone", "-q", str(source), str(root / "cloned")))
    assert "cloned/u.py" in p.files()
    p.history.undo()
    assert not (p.root / "cloned" / "u.py").exists()
    assert (p.root / "cloned" / ".git" / "HEAD").exists()  # git's data: never deleted


# -- owner-only under SMITH_HOME ---------------------------------------------------------


def loose_paths(top: Path) -> list[str]:
    return [
        f"{oct(p.lstat().st_mode & 0o777)} {p.relative_to(top)}"
        for p in [top, *top.rglob("*")]
        if not p.is_symlink() and p.lstat().st_mode & 0o077
    ]


def test_everything_under_smith_home_is_owner_only_and_the_projects_files_are_not(
    senv: SmithEnv, smith_process: Smith
) -> None:
    project = git_project(senv.root / "project")
    model = script(senv, "write", WRITE, bash("echo out > made.txt"))
    with umask(0o022):
        done = smith_process("eval", "--model", model, "write it", cwd=project)
        assert done.code == 0, done.err
        undo = smith_process("undo", cwd=project)
        assert undo.code == 0, undo.err
        redo = smith_process("redo", cwd=project)
        assert redo.code == 0, redo.err
    assert (senv.data_home / "vcs").is_dir() and (senv.data_home / "sessions").is_dir()
    assert loose_paths(senv.data_home) == []
    # The project's files are the user's: the usual modes (umask 022), through every path.
    assert stat.S_IMODE((project / "new.txt").stat().st_mode) == 0o644
    assert stat.S_IMODE((project / "made.txt").stat().st_mode) == 0o644


def test_a_home_an_earlier_smith_left_open_is_repaired_once(
    senv: SmithEnv, smith_process: Smith
) -> None:
    project = git_project(senv.root / "project")
    with umask(0o022):
        model = script(senv, "first", WRITE)
        assert smith_process("eval", "--model", model, "write it", cwd=project).code == 0
        for path in [senv.data_home, *senv.data_home.rglob("*")]:  # as smith 0.x left it
            if not path.is_symlink():
                path.chmod(0o755 if path.is_dir() else 0o644)
        model = script(senv, "second", bash("echo again > new.txt"))
        assert smith_process("eval", "--model", model, "again", cwd=project).code == 0
    assert loose_paths(senv.data_home) == []


def test_private_dirs_makes_each_missing_directory_owner_only(tmp_path: Path) -> None:
    with umask(0o022):
        made = private_dirs(str(tmp_path / "a" / "b" / "c"))
        assert made == str(tmp_path / "a" / "b" / "c")
        for d in ("a", "a/b", "a/b/c"):
            assert stat.S_IMODE((tmp_path / d).stat().st_mode) == 0o700
        (tmp_path / "open").mkdir(mode=0o755)
        private_dirs(str(tmp_path / "open"))
        assert stat.S_IMODE((tmp_path / "open").stat().st_mode) == 0o700
        (tmp_path / "file").write_text("")
        with pytest.raises(FileExistsError):
            private_dirs(str(tmp_path / "file" / "x"))
        home = tmp_path / "home"
        (home / "old").mkdir(parents=True, mode=0o755)
        (home / "old" / "f").write_text("")
        home.chmod(0o755)
        private_home(str(home))
        assert loose_paths(home) == []


# -- rule files that would hang libgit2 ---------------------------------------------------

HANGING = [b"\vfoo\n", b"  \f\n", b"!\v\n", b"/\v\n", b"\t\vx\n", b"\r\v\n", b"ok\n\vx"]
HARMLESS = [b"foo\vbar\n", b"# \v\n", b"\\\vx\n", b"a \v\n", b"plain\n"]


def libgit2_reads(rules: bytes, tmp_path: Path) -> bool:
    """Whether libgit2 reads `rules` as a .gitignore and ends (in a child: it may not)."""
    code = (
        "import pygit2, sys\n"
        "r = pygit2.init_repository(sys.argv[1], bare=True)\n"
        "r.config['core.bare'] = False; r.config['core.worktree'] = sys.argv[2]\n"
        "pygit2.Repository(sys.argv[1]).index.diff_to_workdir(pygit2.enums.DiffOption.INCLUDE_UNTRACKED)\n"
    )
    work = tmp_path / f"w{len(list(tmp_path.iterdir()))}"
    work.mkdir()
    (work / ".gitignore").write_bytes(rules)
    try:
        subprocess.run([sys.executable, "-c", code, str(work) + ".git", str(work)],
                       timeout=10, check=True, capture_output=True)  # fmt: skip
    except subprocess.TimeoutExpired:
        return False
    return True


def test_the_lines_libgit2_loops_on_are_found_and_neutralised_as_git_reads_them(
    tmp_path: Path,
) -> None:
    for rules in HANGING:
        assert hanging_line(rules) is not None, rules
        assert hanging_line(neutralised(rules)) is None, rules
    for rules in HARMLESS:
        assert hanging_line(rules) is None, rules
    assert not libgit2_reads(HANGING[0], tmp_path)  # the quirk itself: still there
    assert all(libgit2_reads(neutralised(r), tmp_path) for r in HANGING + HARMLESS)
    # Neutralised, a rule ignores what git's reading of the original ignores.
    work = git_project(tmp_path / "same", {"a.txt": "a\n"})
    names = ["\vfoo", "foo\vbar", "x"]
    for name in names:
        (work / name).write_text("")
    (work / ".gitignore").write_bytes(b"\vfoo\nfoo\vbar\n")
    asked = subprocess.run(
        ["git", "check-ignore", "-z", "--stdin", "--no-index"], cwd=work, capture_output=True,
        input="\0".join(names).encode(), check=True,
    )  # fmt: skip
    by_git = asked.stdout.decode().split("\0")
    shadow = ShadowRepo.open(str(tmp_path / "home"), str(work))
    assert shadow is not None
    (work / ".gitignore").write_bytes(neutralised(b"\vfoo\nfoo\vbar\n"))
    assert [n for n in names if shadow.ignored(n)] == [n for n in by_git if n]


def test_a_committed_gitignore_that_hangs_libgit2_pauses_history_and_eval_completes(
    senv: SmithEnv, smith_process: Smith
) -> None:
    project = git_project(senv.root / "project", {".gitignore": "build/\n\vsecret\n"})
    model = script(senv, "write", WRITE)
    done = smith_process("eval", "--json", "--model", model, "write it", cwd=project)
    assert done.code == 0, done.err
    assert (project / "new.txt").read_text() == "hi\n"
    said = done.out + done.err
    assert "history.unsafe-rules" in said and ".gitignore" in said and "line 2" in said
    # Fixed, file history goes on by itself.
    (project / ".gitignore").write_text("build/\n")
    again = script(senv, "again", bash("echo two >> new.txt"))
    assert smith_process("eval", "--model", again, "again", cwd=project).code == 0
    assert smith_process("undo", cwd=project).code == 0
    assert (project / "new.txt").read_text() == "hi\n"


@pytest.mark.parametrize(
    "plant",
    [
        "mkdir -p deep/er && printf 'x\\n\\fy\\n' > deep/er/.gitignore",  # made by a command
        "mkfifo .gitattributes",  # libgit2 would block opening it
        "mkdir sub && mkfifo sub/.gitignore",
        "ln -s /dev/zero .gitignore && mkfifo pipe && ln -sf pipe .gitignore",
    ],
)
def test_a_rule_file_a_command_plants_pauses_history_and_hangs_nothing(
    senv: SmithEnv, smith_process: Smith, plant: str
) -> None:
    project = git_project(senv.root / "project")
    model = script(senv, "plant", bash(plant), WRITE)
    done = smith_process("eval", "--json", "--model", model, "plant it", cwd=project)
    assert done.code == 0, done.err
    assert "history.unsafe-rules" in done.out + done.err
    assert (project / "new.txt").exists()


def test_global_excludes_and_the_projects_own_git_files_cannot_hang_a_snapshot(
    senv: SmithEnv, smith_process: Smith
) -> None:
    ignore = Path(senv.env["XDG_CONFIG_HOME"]) / "git" / "ignore"
    ignore.parent.mkdir(parents=True)
    ignore.write_bytes(b"\v*.tmp\n*.bak\n")  # the user's own: libgit2 reads a neutralised copy
    os.mkfifo(ignore.parent / "attributes")  # global attributes: not read at all
    project = git_project(senv.root / "project")
    os.unlink(project / ".git" / "config")
    os.mkfifo(project / ".git" / "config")  # as a hostile archive's .git could have it
    model = script(
        senv,
        "files",
        bash("printf x > a.txt; printf x > b.bak; printf x > \"$(printf '\\v').tmp\""),
    )
    done = smith_process("eval", "--json", "--model", model, "make files", cwd=project)
    assert done.code == 0, done.err
    assert "history.unsafe-rules" not in done.out + done.err
    shadow = next((senv.data_home / "vcs").iterdir())
    listed = git("--git-dir", str(shadow), "ls-tree", "-r", "--name-only", "snapshots").split()
    assert "a.txt" in listed and "b.bak" not in listed
    assert not [name for name in listed if name.endswith(".tmp")]  # both rules hold, as in git


def test_an_unsafe_rule_file_refuses_undo_naming_it(tmp_path: Path) -> None:
    p = Project(tmp_path)
    p.turn(lambda root: (root / "a.txt").write_text("a\n"))
    (p.root / ".gitignore").write_bytes(b"\fx\n")
    with pytest.raises(SmithError) as caught:
        p.history.undo()
    assert caught.value.diagnostic.code == "history.unsafe-rules"
    assert (p.root / "a.txt").exists()


# -- a slow snapshot never keeps smith from ending ----------------------------------------


def test_sigterm_ends_smith_during_a_snapshot_that_cannot_finish(
    senv: SmithEnv, smith_process: Smith
) -> None:
    project = git_project(senv.root / "project")
    first = script(senv, "first", WRITE)
    assert smith_process("eval", "--model", first, "first", cwd=project).code == 0
    lock = next((senv.data_home / "vcs").iterdir()) / "smith.lock"
    model = script(senv, "second", bash("echo more >> new.txt"))
    with open(lock, "a") as held:  # another smith's snapshot, stuck: the lock never frees
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = subprocess.Popen(
            [smith_executable(), "eval", "--json", "--model", model, "second"],
            cwd=project, env=senv.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            wait_for(lambda: _has_open(proc.pid, lock), "smith to wait for the history's lock")
            proc.send_signal(signal.SIGTERM)
            # It waits 30 s for that lock unless it gives up on the snapshot when stopped.
            out, err = proc.communicate(timeout=20)
        finally:
            proc.kill()
            proc.wait()
    assert "history.snapshot-abandoned" in out.decode() + err.decode()
    assert (project / "new.txt").read_text() == "hi\n"  # the batch never ran


def _has_open(pid: int, path: Path) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path):
                return True
    return False


def test_stopped_work_is_abandoned_and_may_commit_nothing_after() -> None:
    release, committed = threading.Event(), []
    job = Job()

    def work() -> str:
        release.wait()
        committed.append(job.commit())
        return "done"

    assert run(job, work, stopping=lambda: True, grace=0) is None
    assert job.abandoned
    release.set()
    wait_for(lambda: job.done, "the abandoned work to end")
    assert committed == [False]  # it learns it was abandoned before recording anything


def test_work_that_is_committing_is_waited_for_even_when_stopped() -> None:
    asked = threading.Event()
    job = Job()
    assert job.commit()

    def stopping() -> bool:
        asked.set()
        return True

    assert run(job, lambda: (asked.wait(), "done")[1], stopping=stopping, grace=0) == "done"
    assert not job.abandoned


class Interrupted(Exception):
    pass


def test_off_main_leaves_the_main_thread_free_to_take_a_signal() -> None:
    assert threading.current_thread() is threading.main_thread()
    where: list[str] = []

    def stuck_in_c() -> None:  # a long call in C, as libgit2's is: no signal gets in
        hashlib.pbkdf2_hmac("sha256", b"x", b"salt", 5_000_000)

    def interrupt(_: int, frame: FrameType | None) -> None:
        where.append(frame.f_code.co_name if frame else "")
        raise Interrupted

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.05)
    try:
        with pytest.raises(Interrupted):
            off_main(stuck_in_c)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    # Taken while waiting for the call, not once the call had ended.
    assert where and where[0] != "stuck_in_c"


def test_an_abandoned_snapshot_keeps_the_history_busy_until_it_ends(tmp_path: Path) -> None:
    p = Project(tmp_path)
    p.turn(lambda root: (root / "a.txt").write_text("a\n"))
    stopping = threading.Event()
    p.history.stopping = stopping.is_set
    stopping.set()
    lock = Path(p.history.repo().path) / "smith.lock"
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # the snapshot waits for it
        first = p.history.snapshot("before")
        assert [w.code for w in first.warnings] == ["history.snapshot-abandoned"]
        assert first.tree is None and first.entry is None
        with pytest.raises(SmithError) as busy:
            p.history.undo()
        assert busy.value.diagnostic.code == "history.busy"
        second = p.history.snapshot("before")  # at once, said once already
        assert second.tree is None and not second.warnings
    job = p.history._job
    assert job is not None
    wait_for(lambda: job.done, "the abandoned snapshot to end once the lock is free")
    stopping.clear()
    p.history.undo()  # usable again
    assert not (p.root / "a.txt").exists()


def test_a_directory_a_rule_outside_the_tree_stops_hiding_is_checked_before_libgit2_enters(
    tmp_path: Path,
) -> None:
    p = Project(tmp_path)
    (p.root / "hidden").mkdir()
    (p.root / "hidden" / ".gitignore").write_bytes(b"\vx\n")
    exclude = Path(p.history.repo().path) / "info" / "exclude"
    kept = exclude.read_bytes()
    exclude.write_bytes(kept + b"hidden/\n")  # as the user's global excludes may say
    p.turn(lambda root: (root / "a.txt").write_text("a\n"))  # hidden/ is never entered
    exclude.write_bytes(kept)  # no longer hidden: its .gitignore is read from now on
    snap = p.history.snapshot("before")
    assert [w.code for w in snap.warnings] == ["history.unsafe-rules"]
