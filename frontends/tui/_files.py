"""The project's paths that `@` completes: the files the find tool sees, and their
directories.

The list is what `rg --files` prints in the runtime's working directory (its ListFiles
operation, smith.effects.list_files: hidden files included, `.git` and whatever
.gitignore or tools.ignore ignore left out, as find does), at most MAX_FILES of them,
each directory once with a trailing `/`. Only paths an `@PATH` can name are kept
(smith.runtime.mentionable: no whitespace or `@` in them, no punctuation the mention
parser leaves off at the end); the rest could never be attached, so completing them
would only mislead. Reading it runs in a thread, never on the app's loop; `ProjectFiles`
keeps the latest list and reads a new one when completion opens on a stale list, showing
the old one until the new one is ready: older than FRESH seconds, or in a tree so large
that reading it took more than a tenth of FRESH, older than ten times that (a
100,000-file tree takes about 1.5 s, so it is read again at most every 15 s, not on
every `@`). A turn that created files is seen at the next `@` after that.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ._fuzzy import PathIndex

if TYPE_CHECKING:
    from smith.effects import ToolContext
    from smith.runtime import Runtime

# What lists the project's files: at most N of them, and whether there were more.
Lister = Callable[[int], tuple[list[str], bool]]

MAX_FILES = 200_000  # files listed at most (a note says so when a tree has more)
FRESH = 3.0  # seconds a list is reused before opening completion reads it again
SLOWER = 10  # ... or this many times as long as reading it took, if that is longer


class Listing:
    """One reading of the project's paths, ready to match."""

    def __init__(
        self, index: PathIndex, files: int, cut: bool, problem: str = "", took: float = 0.0
    ) -> None:
        self.index = index
        self.files = files  # how many files (the index also holds their directories)
        self.cut = cut  # the tree has more than MAX_FILES files
        self.problem = problem  # why there is no list (rg failed), or ""
        self.read_at = time.monotonic()
        self.took = took  # seconds the reading took

    @property
    def note(self) -> str:
        """What the completion list says below the matches, or ""."""
        if self.problem:
            return f"no file list: {self.problem}"
        if self.cut:
            return f"only the first {self.files:,} files are completed"
        return ""


def runtime_lister(runtime: Runtime) -> Lister:
    """The project's files as `runtime` lists them (its ListFiles operation)."""
    from smith.runtime.ops import ListFiles

    def listed(limit: int) -> tuple[list[str], bool]:
        found = runtime.submit(ListFiles(limit))
        assert isinstance(found, dict)
        return found["files"], found["cut"]

    return listed


def context_lister(ctx: ToolContext) -> Lister:
    """The files under a tool context's working directory (smith.effects.list_files)."""
    from smith.effects import list_files

    return lambda limit: list_files(ctx, limit)


def read_listing(lister: Lister, limit: int = MAX_FILES) -> Listing:
    """The project's paths `lister` gives (blocking: run it in a thread)."""
    from smith.effects import ToolError
    from smith.runtime import mentionable
    from smith.text import inert

    start = time.monotonic()
    try:
        files, cut = lister(limit)
    except (ToolError, OSError) as exc:
        return Listing(PathIndex([]), 0, False, str(exc))
    # A name with control characters can be neither shown nor typed as it is: not offered.
    kept = [p for p in files if mentionable(p) and inert(p) == p]
    directories: set[str] = set()
    for path in kept:
        slash = path.rfind("/")
        while slash > 0:
            parent = path[: slash + 1]
            if parent in directories:
                break
            directories.add(parent)
            slash = path.rfind("/", 0, slash)
    # (a directory is the start of a kept path: it has no control character either)
    index = PathIndex(kept + [d for d in directories if mentionable(d)])
    return Listing(index, len(kept), cut, took=time.monotonic() - start)


Spawn = Callable[[Callable[[], Listing], Callable[[Listing], None]], None]


class ProjectFiles:
    """The latest listing of a project, read again in the background when stale.

    `spawn(work, then)` is the caller's way of running `work` off its loop and calling
    `then` with its result back on the loop."""

    def __init__(self, spawn: Spawn) -> None:
        self._spawn = spawn
        self.listing: Listing | None = None
        self.reading = False

    def stale(self) -> bool:
        listing = self.listing
        if listing is None:
            return True
        return time.monotonic() - listing.read_at > max(FRESH, SLOWER * listing.took)

    def start(self, lister: Lister, done: Callable[[Listing], None]) -> None:
        """Read the list again unless a reading is under way; `done` is called with it."""
        if self.reading:
            return
        self.reading = True

        def arrived(listing: Listing) -> None:
            self.reading = False
            self.listing = listing
            done(listing)

        self._spawn(lambda: read_listing(lister), arrived)


__all__ = [
    "FRESH",
    "MAX_FILES",
    "Lister",
    "Listing",
    "ProjectFiles",
    "context_lister",
    "read_listing",
    "runtime_lister",
]
