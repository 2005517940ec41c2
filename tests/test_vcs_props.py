"""Property: whatever a sequence of turns does to files (content, deletions, executable
bits, symbolic links, new directories), undoing the turns one by one brings back each
earlier state exactly, and redoing them all brings back the last."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smith.diagnostics import SmithError
from smith.session import Session
from smith.vcs import FileHistory, HistorySettings
from tests.vcs_kit import picture

NAMES = ("a", "b.txt", "d", "d/c", "d/e/f", "g/h")  # d: a file, a link or a directory

op = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(NAMES), st.binary(max_size=40)),
    st.tuples(st.just("delete"), st.sampled_from(NAMES), st.none()),
    st.tuples(st.just("exec"), st.sampled_from(NAMES), st.booleans()),
    st.tuples(st.just("link"), st.sampled_from(NAMES), st.sampled_from(NAMES)),
)


def clear(root: Path, path: Path) -> None:
    """Make room for a file at `path`: no directory there, only directories above."""
    for parent in reversed(path.relative_to(root).parents[:-1]):
        if (root / parent).is_symlink() or (root / parent).is_file():
            (root / parent).unlink()
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)


def apply(root: Path, kind: str, name: str, arg: object) -> None:
    path = root / name
    blocked = any(p.is_symlink() or p.is_file() for p in path.parents if root in p.parents)
    if kind == "write":
        clear(root, path)
        assert isinstance(arg, bytes)
        path.write_bytes(arg)
    elif kind == "delete" and not blocked and os.path.lexists(path):
        clear(root, path)
    elif kind == "exec" and path.is_file() and not path.is_symlink():
        mode = path.stat().st_mode
        path.chmod(mode | 0o111 if arg else mode & ~0o111)
    elif kind == "link":
        clear(root, path)
        os.symlink(str(arg), path)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(op, min_size=1, max_size=6), min_size=1, max_size=3))
def test_undo_and_redo_round_trip_any_turns(turns: list[list[tuple[str, str, object]]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp, "project")
        (root / "src").mkdir(parents=True)
        (root / "src" / "keep.py").write_text("x = 1\n")
        session = Session.create(os.path.join(tmp, "s.smith"), cwd=str(root))
        history = FileHistory(HistorySettings(os.path.join(tmp, "home")), session, str(root))
        states = [picture(root)]
        for i, ops in enumerate(turns):
            session.append(
                "message", {"role": "user", "content": [{"type": "text", "text": f"{i}"}]}
            )
            before = history.snapshot("before")
            for kind, name, arg in ops:
                apply(root, kind, name, arg)
            history.snapshot("after", base=before.tree)
            if picture(root) != states[-1]:  # a turn that changed nothing is no unit
                states.append(picture(root))
        final, units = states[-1], len(states) - 1
        while len(states) > 1:
            history.undo()
            states.pop()
            assert picture(root) == states[-1]
        for _ in range(units):
            history.redo()
        assert picture(root) == final
        with pytest.raises(SmithError, match="nothing to redo"):
            history.redo()
        session.close()
