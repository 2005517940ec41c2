"""File history: snapshots of the project's files around turns, and diff, undo, redo and
restore over them, in a pygit2 shadow repository per project (never the project's .git).

    from smith.vcs import FileHistory, HistorySettings
    history = FileHistory(HistorySettings.from_config(config), session, config.project_root)
    history.undo()                      # the newest turn that changed files, taken back
    history.restore("a1b2c3d4")         # the files as they were at that session entry

The CLI (`smith undo/redo/restore/diff/history`), the runtime (`Runtime.undo()`, RPC
`{"op": "undo"}`) and plugins all use this one API. pygit2 is imported only when a
repository is opened (smith/vcs/_repo.py), so importing this package costs little.
See docs/history.md.
"""

from smith._lazy import lazy_exports
from smith.vcs._history import FileHistory, Snapshot
from smith.vcs._settings import HistorySettings

__all__ = [
    "HISTORY_OFF",
    "FileHistory",
    "GitState",
    "HistorySettings",
    "ShadowRepo",
    "Snapshot",
    "git_state",
    "latest_session",
    "needed_trees",
]


TYPE_CHECKING = False
# Exported on first use (PEP 562): these modules are not imported with the package.
if TYPE_CHECKING:
    from smith.vcs._history import HISTORY_OFF as HISTORY_OFF
    from smith.vcs._latest import latest_session as latest_session
    from smith.vcs._ops import needed_trees as needed_trees
    from smith.vcs._repo import ShadowRepo as ShadowRepo
    from smith.vcs._status import GitState as GitState
    from smith.vcs._status import git_state as git_state


_LAZY = {
    "HISTORY_OFF": "smith.vcs._history",
    "latest_session": "smith.vcs._latest",
    "ShadowRepo": "smith.vcs._repo",
    "GitState": "smith.vcs._status",
    "git_state": "smith.vcs._status",
    "needed_trees": "smith.vcs._ops",
}

__getattr__ = lazy_exports(__name__, _LAZY)
