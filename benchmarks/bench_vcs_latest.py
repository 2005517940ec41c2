"""Finding the session of a project's latest file change (smith.vcs.latest_session, what
`smith undo`, `redo` and `history` act on): one session changed a file, then FEW or MANY
later sessions changed nothing (evals that only read). The lookup walks the shadow
repository's branch from its head and reads only the sessions its commits name, so its
time should not follow the number of sessions. Measured in the same run: the lookup with
FEW and with MANY sessions (target: MANY within 1.2x FEW), and beside it listing the
project's sessions newest first (SessionStore.latest, what the commands did before),
which does follow it.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable

from smith.session import SessionStore
from smith.vcs import FileHistory, HistorySettings, latest_session

FEW, MANY = 10, 1000


def make(directory: str, sessions: int) -> tuple[HistorySettings, SessionStore, str, str]:
    """A project whose first session changed a file, then `sessions` that did not; and
    the first session's file."""
    home, project = os.path.join(directory, "home"), os.path.join(directory, "project")
    os.makedirs(os.path.join(project, ".git"))
    with open(os.path.join(project, "app.py"), "w") as f:
        f.write("x = 1\n")
    settings, store = HistorySettings(home), SessionStore(home)
    with store.create(name="app", cwd=project) as session:
        history = FileHistory(settings, session, project)
        before = history.snapshot("before")
        with open(os.path.join(project, "app.py"), "w") as f:
            f.write("x = 2\n")
        history.snapshot("after", base=before.tree)
        changed = session.path
    for n in range(sessions):
        store.create(name=f"eval {n}", cwd=project).close()
    return settings, store, project, changed


def _median_ms(call: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def measure(sessions: int, repeat: int) -> tuple[float, float]:
    """(the lookup, the listing) in milliseconds, with `sessions` later sessions."""
    directory = tempfile.mkdtemp(prefix="smith-bench-latest-")
    try:
        settings, store, project, changed = make(directory, sessions)
        assert latest_session(settings, store, project, "undo") == changed
        lookup = _median_ms(lambda: latest_session(settings, store, project, "undo"), repeat)
        return lookup, _median_ms(lambda: store.latest(project), repeat)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def figures(repeat: int = 21) -> dict[str, float]:
    found: dict[str, float] = {}
    for label, count in (("few", FEW), ("many", MANY)):
        found[f"lookup_{label}_ms"], found[f"listing_{label}_ms"] = measure(count, repeat)
    found["lookup_many_over_few"] = found["lookup_many_ms"] / found["lookup_few_ms"]
    return found


def line(f: dict[str, float]) -> str:
    return (
        f"vcs latest       the latest change's session {f['lookup_few_ms']:.2f} ms with "
        f"{FEW} sessions, {f['lookup_many_ms']:.2f} ms with {MANY} "
        f"({f['lookup_many_over_few']:.2f}x); listing them {f['listing_few_ms']:.2f} -> "
        f"{f['listing_many_ms']:.2f} ms"
    )


class LatestChange:
    """asv: the lookup's time with many sessions over its time with few."""

    timeout = 300

    def setup_cache(self) -> dict[str, float]:
        return figures(repeat=9)

    def track_lookup_many_over_few(self, f: dict[str, float]) -> float:
        return f["lookup_many_over_few"]

    def track_lookup_many_ms(self, f: dict[str, float]) -> float:
        return f["lookup_many_ms"]


if __name__ == "__main__":
    print(line(figures()))
