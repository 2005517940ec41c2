"""File history: a snapshot of a 10,000-file project with 10 changed files, against
`git add -A && git write-tree` on an equivalent repository, in the same run, and the
no-change check. Targets: the snapshot within 100 ms and no slower than git; the no-change
check under 20 ms. A scan needs about one `lstat` per file, which bounds it from below, so
the history watches the files (the inotify change tracker, as the runtime's does) and the
no-change check reads events instead; the same check by a full scan (the history without
the tracker) and the one-off cost of arming the tracker are measured beside it.

The same tree in which ten top directories are nested git repositories (a vendored clone,
a folder of repositories: 1,000 files, the ten changed ones among them) is snapshotted in
the same run; its files are in history like the others. Target: within 1.2x the plain
tree, the first snapshot (which walks each nested repository once) too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time

from smith.session import Session
from smith.vcs import FileHistory, HistorySettings

FILES = 10_000
CHANGED = 10
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}  # fmt: skip


def make_tree(root: str, files: int = FILES, *, nested: bool = False) -> None:
    """`files` small text files, 10 per directory, 100 directories per top directory;
    `nested`: every tenth top directory (d000, d010, ...) is a git repository of its own."""
    for i in range(files):
        directory = os.path.join(root, f"d{i // 100:03d}", f"s{(i // 10) % 10}")
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, f"f{i}.py"), "w") as f:
            f.write(f"def f{i}():\n    return {i}\n" * 10)
    for top in range(0, files // 100, 10) if nested else ():
        _git("init", "-q", cwd=os.path.join(root, f"d{top:03d}"))


def touch(root: str, round: int) -> None:
    """Change `CHANGED` files spread over the tree (new content each round)."""
    for k in range(CHANGED):
        i = k * (FILES // CHANGED) + 7
        path = os.path.join(root, f"d{i // 100:03d}", f"s{(i // 10) % 10}", f"f{i}.py")
        with open(path, "a") as f:
            f.write(f"# round {round}\n")


def _git(*args: str, cwd: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True)


class Snapshot:
    timeout = 600
    number = 1
    repeat = (1, 1, 600.0)

    def setup(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="smith-bench-vcs-")
        self.project = os.path.join(self.dir, "project")
        self.mirror = os.path.join(self.dir, "mirror")  # the same tree under plain git
        self.nested = os.path.join(self.dir, "nested")  # with nested repositories
        make_tree(self.project)
        make_tree(self.mirror)
        make_tree(self.nested, nested=True)
        _git("init", "-q", cwd=self.mirror)
        _git("add", "-A", cwd=self.mirror)
        self.session = Session.create(os.path.join(self.dir, "s.smith"), cwd=self.project)
        settings = HistorySettings(os.path.join(self.dir, "home"))
        self.history = FileHistory(settings, self.session, self.project, watch=True)
        self.nested_session = Session.create(os.path.join(self.dir, "n.smith"), cwd=self.nested)
        self.nested_history = FileHistory(settings, self.nested_session, self.nested, watch=True)
        start = time.perf_counter()
        self.history.snapshot("before")  # the first snapshot stores every file
        self.first_s = time.perf_counter() - start
        start = time.perf_counter()
        snap = self.nested_history.snapshot("before")
        self.nested_first_s = time.perf_counter() - start
        assert not snap.warnings, snap.warnings
        self.scanning = FileHistory(settings, self.session, self.project)  # no tracker
        self.round = 0

    def teardown(self) -> None:
        self.history.close()
        self.nested_history.close()
        self.session.close()
        self.nested_session.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _snapshot(self, nested: bool = False) -> float:
        self.round += 1
        touch(self.nested if nested else self.project, self.round)
        history = self.nested_history if nested else self.history
        start = time.perf_counter()
        snap = history.snapshot("before")
        took = time.perf_counter() - start
        assert snap.entry is not None and not snap.warnings, snap.warnings
        return took

    def _git(self) -> float:
        self.round += 1
        touch(self.mirror, self.round)
        start = time.perf_counter()
        subprocess.run(
            "git add -A && git write-tree", shell=True, cwd=self.mirror, env=GIT_ENV,
            check=True, capture_output=True,
        )  # fmt: skip
        return time.perf_counter() - start

    def _no_change(self) -> float:
        start = time.perf_counter()
        snap = self.history.snapshot("before")
        took = time.perf_counter() - start
        assert snap.entry is None, "nothing changed, so nothing may be recorded"
        return took

    def _no_change_scanning(self) -> float:
        self.scanning.snapshot("before")  # reads the index the other history wrote
        start = time.perf_counter()
        snap = self.scanning.snapshot("before")
        took = time.perf_counter() - start
        assert snap.entry is None, "nothing changed, so nothing may be recorded"
        return took

    def _arm(self) -> float:
        """Arming a change tracker on the tree (once per process, before its first scan)."""
        from smith.vcs._scope import Scope
        from smith.vcs._watch import ChangeTracker

        repo = self.history.repo()
        tracker, scope = ChangeTracker(self.project), Scope(repo)
        with repo.locked():
            start = time.perf_counter()
            tracker.prepare(scope)
            took = time.perf_counter() - start
        assert tracker.doubt is None and len(tracker.watches) > FILES // 10, tracker.doubt
        tracker.close()
        return took

    def figures(self, repeat: int = 9) -> dict[str, float]:
        """Best of `repeat` of each, interleaved so machine noise hits all alike."""
        ours, git, same, scanning, arm, nested = [], [], [], [], [], []
        for _ in range(repeat):
            ours.append(self._snapshot())
            nested.append(self._snapshot(nested=True))
            git.append(self._git())
            same.append(self._no_change())
            scanning.append(self._no_change_scanning())
            arm.append(self._arm())
        return {
            "snapshot_ms": min(ours) * 1e3,
            "git_ms": min(git) * 1e3,
            "no_change_ms": min(same) * 1e3,
            "no_change_scan_ms": min(scanning) * 1e3,
            "arm_ms": min(arm) * 1e3,
            "snapshot_over_git": min(ours) / min(git),
            "nested_ms": min(nested) * 1e3,
            "nested_over_plain": min(nested) / min(ours),
            "first_s": self.first_s,
            "nested_first_over_plain": self.nested_first_s / self.first_s,
        }

    def track_snapshot_ms(self) -> float:
        return self.figures()["snapshot_ms"]

    def track_no_change_ms(self) -> float:
        return self.figures()["no_change_ms"]

    def track_snapshot_over_git(self) -> float:
        return self.figures()["snapshot_over_git"]

    def track_no_change_scan_ms(self) -> float:
        return self.figures()["no_change_scan_ms"]

    def track_arm_ms(self) -> float:
        return self.figures()["arm_ms"]

    def track_nested_over_plain(self) -> float:
        return self.figures()["nested_over_plain"]

    track_snapshot_ms.unit = "ms"  # type: ignore[attr-defined]
    track_no_change_ms.unit = "ms"  # type: ignore[attr-defined]
    track_no_change_scan_ms.unit = "ms"  # type: ignore[attr-defined]
    track_arm_ms.unit = "ms"  # type: ignore[attr-defined]
    track_snapshot_over_git.unit = "x git add -A && git write-tree"  # type: ignore[attr-defined]
    track_nested_over_plain.unit = "x the tree without nested repositories"  # type: ignore[attr-defined]


def figures() -> dict[str, float]:
    bench = Snapshot()
    bench.setup()
    try:
        return bench.figures()
    finally:
        bench.teardown()


def line(f: dict[str, float]) -> str:
    return (
        f"vcs snapshot     {f['snapshot_ms']:.1f} ms for {CHANGED} changed files of "
        f"{FILES:,}: {f['snapshot_over_git']:.2f}x `git add -A && git write-tree` "
        f"({f['git_ms']:.1f} ms); no-change check {f['no_change_ms']:.2f} ms "
        f"(by a full scan {f['no_change_scan_ms']:.1f} ms; arming the change tracker "
        f"{f['arm_ms']:.1f} ms, once)\n"
        f"vcs nested repos {f['nested_ms']:.1f} ms for the same with 10 nested repositories "
        f"holding the changed files: {f['nested_over_plain']:.2f}x the plain tree; first "
        f"snapshot {f['nested_first_over_plain']:.2f}x ({f['first_s']:.2f} s plain)"
    )


if __name__ == "__main__":
    print(line(figures()))
