"""Finding sessions: odd entries in the sessions directory, one lookup for every command,
and a new session for every `smith eval` run without --session."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from smith.diagnostics import Diagnostic
from smith.session import SessionStore
from tests.conftest import Result, SmithEnv


def _script(senv: SmithEnv, texts: list[str], log: Path | None = None) -> str:
    path = senv.root / f"script-{len(list(senv.root.glob('script-*')))}.json"
    top: dict[str, object] = {"responses": [{"text": t} for t in texts]}
    if log is not None:
        top["requests_log"] = str(log)
    path.write_text(json.dumps(top))
    return f"scripted:{path}"


def _sessions(smith: Callable[..., Result], project: Path) -> list[dict[str, object]]:
    listed = smith("sessions", "list", "--json", cwd=project)
    assert listed.code == 0, listed.err
    found: list[dict[str, object]] = json.loads(listed.out)["sessions"]
    return found


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _dangling_link(path: Path) -> None:
    path.symlink_to(path.parent / "nowhere.smith")


@pytest.mark.parametrize(
    ("make", "kind"),
    [(_fifo, "FIFO"), (Path.mkdir, "a directory"), (_dangling_link, "symbolic link")],
    ids=["fifo", "directory", "dangling-link"],
)
def test_odd_entries_in_the_sessions_directory_are_skipped_with_a_warning(
    senv: SmithEnv,
    smith_process: Callable[..., Result],
    make: Callable[[Path], None],
    kind: str,
) -> None:
    """The probe: a FIFO x.smith hung `sessions list` and `eval` (opened blocking); a
    directory d.smith failed them. Nothing odd is opened now, and each is named on stderr."""
    project = senv.make_project()
    made = smith_process("eval", "--model", _script(senv, ["one"]), "--session", "work", "hi",
                         cwd=project)  # fmt: skip
    assert made.code == 0, made.err
    (session,) = _sessions(smith_process, project)
    odd = Path(str(session["path"])).parent / "x.smith"
    make(odd)

    listed = smith_process("sessions", "list", cwd=project)
    assert listed.code == 0, listed.err
    assert "work" in listed.out
    line = next((x for x in listed.err.splitlines() if "x.smith" in x), "")
    assert kind in line and "not a session file" in line, listed.err
    assert [s["id"] for s in _sessions(smith_process, project)] == [session["id"]]

    # --session looks the name up among this project's sessions, past the odd entry.
    again = smith_process("eval", "--model", _script(senv, ["two"]), "--session", "work", "more",
                          cwd=project)  # fmt: skip
    assert again.code == 0, again.err
    assert "x.smith" in again.err
    fresh = smith_process("eval", "--model", _script(senv, ["three"]), "hi", cwd=project)
    assert fresh.code == 0, fresh.err
    assert len(_sessions(smith_process, project)) == 2
    assert os.path.lexists(odd)  # left alone


def test_the_store_lists_regular_files_only_and_warns_once_each(tmp_path: Path) -> None:
    warnings: list[Diagnostic] = []
    store = SessionStore(str(tmp_path), warn=warnings.append)
    store.create(name="real", cwd="/p").close()
    directory = Path(store.directory("/p"))
    os.mkfifo(directory / "x.smith")
    (directory / "d.smith").mkdir()
    (directory / "notes.txt").write_text("not a session, not warned about")

    assert [Path(p).name for p in store.paths()] == [Path(store.lookup("real", "/p")).name]
    assert store.paths_for_project("/p") == store.paths()
    assert sorted(d.code for d in warnings) == ["session.odd-entry"] * 2
    assert {str(d.source) for d in warnings} == {
        str(directory / "x.smith"),
        str(directory / "d.smith"),
    }


def test_a_dangling_link_as_the_sessions_directory_is_named_for_what_it_is(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    """The probe: a dangling symlink in place of the project's sessions directory made
    eval say a session 'already exists'."""
    project = senv.make_project()
    first = smith("eval", "--model", _script(senv, ["one"]), "hi", cwd=project)
    assert first.code == 0, first.err
    (session,) = _sessions(smith, project)
    directory = Path(str(session["path"])).parent
    for child in directory.iterdir():
        child.unlink()
    directory.rmdir()
    directory.symlink_to(senv.root / "gone")

    r = smith("eval", "--model", _script(senv, ["two"]), "hi", cwd=project)
    assert r.code != 0
    assert "already exists" not in r.err
    assert "symbolic link" in r.err and "gone, which does not exist" in r.err, r.err
    assert "Traceback" not in r.err
    listed = smith("sessions", "list", cwd=project)
    assert listed.code == 0 and "symbolic link" in listed.err, listed.err


@pytest.mark.parametrize(
    "command",
    [
        ["sessions", "show"],
        ["sessions", "show", "--json"],
        ["sessions", "dump"],
        ["sessions", "fork"],
        ["sessions", "repair"],
        ["replay", "--instant"],
        ["sessions", "rm"],
    ],
)
def test_every_command_finds_a_session_by_the_name_eval_accepts(
    senv: SmithEnv, smith: Callable[..., Result], command: list[str]
) -> None:
    """The probe: `eval --session` and `replay` found a session by name, `sessions show`
    and `sessions dump` refused it."""
    project = senv.make_project()
    made = smith("eval", "--model", _script(senv, ["one"]), "--session", "my work", "hi",
                 cwd=project)  # fmt: skip
    assert made.code == 0, made.err
    (session,) = _sessions(smith, project)
    r = smith(*command, "my work", cwd=project)
    assert r.code == 0, r.err
    assert "session.not-found" not in r.err and "there is no session" not in r.err
    if command[-1] == "rm":
        assert _sessions(smith, project) == []
    elif command[-1] == "dump":
        assert json.loads(r.out.splitlines()[0])["id"] == session["id"]
    if command[-1] in ("show", "--json", "dump", "--instant"):  # nothing new was made
        # An id and an id prefix still work wherever the command runs.
        for which in (str(session["id"]), str(session["id"])[:17]):
            assert smith(*command, which, cwd=senv.root).code == 0


def test_two_evals_of_one_prompt_in_one_second_get_two_sessions(
    senv: SmithEnv, smith: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe: the generated name `eval DATE TIME PROMPT` was reopened by name, so the
    second run's request carried the first run's conversation. The clock is held at one
    second so the names are equal, as they are for runs in the same second."""
    real = time.strftime

    def one_second(fmt: str, t: time.struct_time | None = None) -> str:
        return real(fmt, time.gmtime(0) if t is None else t)

    monkeypatch.setattr(time, "strftime", one_second)
    project = senv.make_project()
    log = senv.root / "requests.jsonl"
    for answer in ("first answer", "second answer"):
        r = smith("eval", "--model", _script(senv, [answer], log), "same prompt", cwd=project)
        assert r.code == 0, r.err
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(requests) == 2
    texts = [m["content"][0]["text"] for m in requests[1]["messages"] if not m.get("context")]
    assert texts == ["same prompt"]
    listed = _sessions(smith, project)
    assert len(listed) == 2 and listed[0]["name"] == listed[1]["name"]
    assert {s["entry_count"] for s in listed} == {3}  # prompt, environment block, answer


def test_a_session_named_by_its_id_is_found_without_reading_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resuming by id (`smith rpc --session ID`) must not read every session of the
    project to compare names (a 70 MB session was read twice before its first answer);
    a name still is looked for in each."""
    from smith.session import Session

    store = SessionStore(str(tmp_path / "home"))
    project = str(tmp_path / "p")
    first = store.create(name="first", cwd=project)
    second = store.create(name="second", cwd=project)
    first.close()
    second.close()
    read: list[str] = []
    real = Session.load.__func__  # type: ignore[attr-defined]

    def counted(cls: type[Session], path: str, **kw: object) -> Session:
        read.append(os.path.basename(path))
        return real(cls, path, **kw)  # type: ignore[no-any-return]

    monkeypatch.setattr(Session, "load", classmethod(counted))
    assert store.lookup(first.id, project) == first.path and read == []
    assert store.lookup("first", project) == first.path and read
