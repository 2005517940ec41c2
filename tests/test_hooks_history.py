"""Hooks and file history (plugins/hooks.py, smith.runtime._batch, smith/vcs): what a
hook changes while a prompt runs (an after-tool formatter, a stop hook) is part of the
prompt's snapshots, so `smith undo` takes it back with the turn instead of refusing it
as files smith did not write."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import Result, SmithEnv
from tests.test_hooks import DONE, _call, _config, _eval


@pytest.mark.parametrize(
    "hook",
    [
        'hook "fmt" on="after-tool" match="write" command="echo formatted >> a.txt"',
        'hook "fmt" on="stop" command="echo formatted >> a.txt"',
    ],
    ids=["after-tool", "stop"],
)
def test_undo_takes_back_a_turn_and_what_its_hooks_changed(
    senv: SmithEnv, smith: Callable[..., Result], hook: str
) -> None:
    project = senv.make_project()
    (project / "keep.txt").write_text("the user's\n")
    _config(senv, hook + "\n")
    run = _eval(senv, smith, project, [_call("write", path="a.txt", content="A\n"), DONE])
    assert run.result.code == 0, run.result.err
    assert (project / "a.txt").read_text() == "A\nformatted\n"
    undo = smith("undo", cwd=project)
    assert undo.code == 0, undo.err
    assert not (project / "a.txt").exists()
    assert (project / "keep.txt").read_text() == "the user's\n"
    redo = smith("redo", cwd=project)
    assert redo.code == 0, redo.err
    assert (project / "a.txt").read_text() == "A\nformatted\n"


def test_a_turn_that_changed_no_file_takes_no_snapshot_after_its_stop_hook(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = senv.make_project()
    _config(senv, 'hook "fmt" on="stop" command="echo x >> b.txt"\n')
    run = _eval(senv, smith, project, [_call("ls", path="."), DONE])
    assert run.result.code == 0, run.result.err
    assert not any(e.get("type") == "error" for e in run.events), run.events
    undo = smith("undo", cwd=project)  # nothing of smith's to undo: b.txt is not its
    assert undo.code != 0 and (project / "b.txt").exists()
