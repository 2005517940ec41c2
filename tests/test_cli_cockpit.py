"""The command line as a daily user meets it (issue 27): a mistyped command is named, not
sent to the model; undo, redo and history act on the project's latest change whichever
session made it; help leads with the command's own options; and the wording of counts
and new files."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Result, SmithEnv
from tests.vcs_kit import git_project

Smith = Callable[..., Result]
APP = "the interactive app needs a terminal"  # what a prompt meets without a terminal


# -- a mistyped command ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "meant"),
    [
        (["sesions", "list"], "smith sessions list"),
        (["sesions", "lst", "--json"], "smith sessions list --json"),
        (["hsitory", "gc", "--dry-run"], "smith history gc --dry-run"),
        (["undp", "--force"], "smith undo --force"),
        (["confg"], "smith config"),
        (["--model", "demo", "sesions", "list"], "smith sessions list"),
    ],
)
def test_a_mistyped_command_is_named_not_sent_as_a_prompt(
    smith_process: Smith, words: list[str], meant: str
) -> None:
    r = smith_process(*words)
    assert r.code == 2, r.err
    assert r.out == ""
    typed = next(w for w in words if w not in ("--model", "demo"))
    assert r.err.startswith(f"error: '{typed}' is not a smith command")
    assert f"did you mean `{meant}`?" in r.err
    assert "smith -- " in r.err  # how to send the words as a prompt after all
    assert APP not in r.err and "Traceback" not in r.err


@pytest.mark.parametrize(
    "words",
    [
        ["fix", "the", "tests"],
        ["evl", "fix", "the", "tests"],  # close to eval, but prose follows
        ["sesions", "list", "all", "my", "files"],  # `sessions list` takes no words
        ["dif", "between", "a", "and", "b"],
        ["hello"],
    ],
)
def test_a_prompt_that_begins_like_a_command_stays_a_prompt(
    smith_process: Smith, words: list[str]
) -> None:
    r = smith_process(*words)
    assert r.code == 2 and APP in r.err, r.err  # it went to the app


def test_dash_dash_forces_a_prompt_even_for_a_command_name(
    smith_process: Smith, smith: Smith, monkeypatch: pytest.MonkeyPatch
) -> None:
    for words in (["--", "sesions", "list"], ["--", "config", "show"]):
        r = smith_process(*words)
        assert r.code == 2 and APP in r.err, r.err
    # The app gets the words after `--` as they are.
    from smith.cli import _main

    prompts: list[str | None] = []

    def app(*args: Any) -> int:
        prompts.append(args[-1])
        return 0

    monkeypatch.setattr(_main, "_interactive", app)
    assert smith("--thinking", "high", "--", "undo", "the", "last", "change").code == 0
    assert smith("--", "sesions", "list").code == 0
    assert smith("fix", "the", "tests").code == 0
    assert prompts == ["undo the last change", "sesions list", "fix the tests"]
    # A `--` after a command's name is that command's.
    r = smith("config", "get", "--", "model")
    assert r.code == 0 and prompts == ["undo the last change", "sesions list", "fix the tests"]


@pytest.mark.parametrize(
    ("words", "why"),
    [
        (["undo", "the", "last", "change"], "unrecognized arguments: the last change"),
        (["sessions", "are", "broken"], "invalid choice: 'are'"),
    ],
)
def test_prose_after_a_command_says_how_to_send_it_as_a_prompt(
    smith_process: Smith, words: list[str], why: str
) -> None:
    """`smith undo` is a command, so `smith undo the last change` is its command line: the
    error says so, and how to make the words a prompt."""
    r = smith_process(*words)
    assert r.code == 2 and why in r.err, r.err
    assert f"`smith {words[0]}` is a smith command" in r.err
    assert f"`smith -- {' '.join(words)}`" in r.err
    plain = smith_process("undo", "--bogus")  # a flag is no prompt: the usual usage error
    assert plain.code == 2 and "smith -- " not in plain.err


def test_help_for_a_word_that_is_no_command_says_so(smith_process: Smith) -> None:
    r = smith_process("help", "sesions")
    assert r.code == 2 and APP not in r.err, r.err  # it opened the app with "sesions --help"
    assert "'sesions' is not a smith command" in r.err
    assert "did you mean `smith help sessions`?" in r.err
    assert smith_process("help", "sessions").out.startswith("usage: smith sessions")


def test_the_suggestion_is_a_command_line_that_works(smith_process: Smith) -> None:
    """What the diagnostic offers runs."""
    r = smith_process("sesions", "lst", "--json")
    assert "did you mean `smith sessions list --json`?" in r.err
    fixed = smith_process("sessions", "list", "--json")
    assert fixed.code == 0 and json.loads(fixed.out)["sessions"] == []


# -- help ------------------------------------------------------------------------------


def test_smith_help_fits_two_screens_and_points_to_help_all(smith_process: Smith) -> None:
    r = smith_process("--help")
    assert r.code == 0
    lines = r.out.splitlines()
    assert len(lines) <= 70, len(lines)
    assert lines[0].startswith("usage: smith")
    assert "commands:" in r.out and "  sessions  " in r.out
    assert "--model TEXT" in r.out and "--help-all" in r.out
    assert "--tui-keys-abort" not in r.out  # one of the many others
    every = smith_process("--help-all")
    assert every.code == 0 and "--tui-keys-abort" in every.out
    assert len(every.out.splitlines()) > 3 * len(lines) // 2


@pytest.mark.parametrize(
    ("words", "own"),
    [
        (["undo"], ["--session NAME", "--force", "--json"]),
        (["history", "gc"], ["--keep-days DAYS", "--dry-run"]),
        (["sessions", "list"], ["--json"]),
        (["eval"], ["PROMPT", "--image FILE"]),
    ],
)
def test_a_commands_help_leads_with_its_own_usage_and_options(
    smith_process: Smith, words: list[str], own: list[str]
) -> None:
    r = smith_process(*words, "--help")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    name = " ".join(words)
    # The usage line names the command's own arguments, not 70 settings flags.
    assert lines[0].startswith(f"usage: smith {name} [-h]") and lines[0].endswith("[settings]")
    assert "--agent-deadline" not in r.out and "--tui-keys-abort" not in r.out
    settings = r.out.index("\nsettings:")
    for option in own:
        assert 0 < r.out.index(option) < settings, option  # before the settings
    assert len(r.out[settings:].splitlines()) <= 5  # the settings are a short group
    assert f"`smith {name} --help-all`" in r.out
    every = smith_process(*words, "--help-all")
    assert every.code == 0 and "--agent-deadline N" in every.out and "--tui-keys-abort" in every.out


# -- undo, redo and history across sessions ----------------------------------------------


def _turn(smith: Smith, senv: SmithEnv, project: Path, prompt: str, *calls: dict[str, Any],
          session: str | None = None) -> str:  # fmt: skip
    """Run `prompt` through `smith eval` with a scripted model making `calls`; the id of
    the session it ran in."""
    path = senv.root / f"{prompt.replace(' ', '-')}.json"
    responses = [{"tool_calls": list(calls), "stop": "tool_use"}, {"text": "done", "stop": "end"}]
    path.write_text(json.dumps({"responses": responses}))
    where = ["--session", session] if session else []
    r = smith("eval", "--json", "--model", f"scripted:{path}", *where, prompt, cwd=project)
    assert r.code == 0, r.err
    result = json.loads(r.out.splitlines()[-1])
    return str(result["session"]["id"])


def _write(path: str, text: str) -> dict[str, Any]:
    return {"name": "write", "arguments": {"path": path, "content": text}}


def _bash(command: str) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"command": command}}


@pytest.fixture
def project(senv: SmithEnv) -> Path:
    return git_project(senv.root / "project", {"a.txt": "a0\n", "b.txt": "b0\n"})


def test_undo_after_a_later_session_that_changed_nothing_takes_back_the_earlier_change(
    senv: SmithEnv, smith_process: Smith, project: Path
) -> None:
    """The probe: a session edits (the app's), a later `smith eval` only reads; undo,
    history and redo act on the edit, naming its session."""
    app = _turn(smith_process, senv, project, "change a", _write("a.txt", "a1\n"))
    _turn(smith_process, senv, project, "look around", _bash("cat a.txt"))
    listed = smith_process("history", cwd=project)
    assert listed.code == 0, listed.err
    assert app in listed.out.splitlines()[0] and "change a" in listed.out
    undone = smith_process("undo", cwd=project)
    assert undone.code == 0, undone.err
    assert (project / "a.txt").read_text() == "a0\n"
    assert undone.out.startswith("undid turn ") and "(change a)" in undone.out
    assert "in session eval " in undone.out and f"({app})" in undone.out
    assert "(undone)" in smith_process("history", cwd=project).out
    redone = smith_process("redo", "--json", cwd=project)
    assert redone.code == 0, redone.err
    assert json.loads(redone.out)["session"]["id"] == app
    assert (project / "a.txt").read_text() == "a1\n"


def test_undo_and_redo_walk_the_projects_changes_across_sessions(
    senv: SmithEnv, smith: Smith, project: Path
) -> None:
    first = _turn(smith, senv, project, "change a", _write("a.txt", "a1\n"))
    second = _turn(smith, senv, project, "change b", _write("b.txt", "b1\n"))
    # The first session again, later: its newest turn is now the project's latest change.
    _turn(smith, senv, project, "change a again", _write("a.txt", "a2\n"), session=first)

    def state() -> tuple[str, str]:
        return (project / "a.txt").read_text(), (project / "b.txt").read_text()

    def run(op: str) -> str:
        r = smith(op, "--json", cwd=project)
        assert r.code == 0, r.err
        return str(json.loads(r.out)["session"]["id"])

    assert (run("undo"), state()) == (first, ("a1\n", "b1\n"))
    assert (run("undo"), state()) == (second, ("a1\n", "b0\n"))  # newer than `change a`
    assert (run("undo"), state()) == (first, ("a0\n", "b0\n"))
    nothing = smith("undo", cwd=project)
    assert nothing.code == 1 and "nothing to undo" in nothing.err
    assert (run("redo"), state()) == (first, ("a1\n", "b0\n"))
    assert (run("redo"), state()) == (second, ("a1\n", "b1\n"))
    assert (run("redo"), state()) == (first, ("a2\n", "b1\n"))
    assert "nothing to redo" in smith("redo", cwd=project).err
    # --session still picks one.
    r = smith("undo", "--session", second, cwd=project)
    assert r.code == 0 and state() == ("a2\n", "b0\n") and f"({second})" in r.out


def test_a_new_change_in_another_session_ends_what_can_be_redone(
    senv: SmithEnv, smith: Smith, project: Path
) -> None:
    first = _turn(smith, senv, project, "change a", _write("a.txt", "a1\n"))
    assert smith("undo", cwd=project).code == 0
    later = _turn(smith, senv, project, "change b", _write("b.txt", "b1\n"))
    r = smith("redo", cwd=project)
    assert r.code == 1 and f"nothing to redo in session '{later}'" in r.err
    assert (project / "a.txt").read_text() == "a0\n"
    assert smith("redo", "--session", first, cwd=project).code == 0  # asked for by name
    assert (project / "a.txt").read_text() == "a1\n"


def test_finding_the_latest_change_reads_only_the_sessions_it_walks(
    senv: SmithEnv, smith: Smith, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Other sessions of the project (here 12 that changed nothing, and one whose change
    is older) are never read to find the latest change."""
    _turn(smith, senv, project, "change b", _write("b.txt", "b1\n"))
    latest = _turn(smith, senv, project, "change a", _write("a.txt", "a1\n"))
    for n in range(12):
        _turn(smith, senv, project, f"look {n}", _bash("true"))
    from smith.session import Session, SessionStore
    from smith.vcs import HistorySettings, latest_session

    loaded: list[str] = []
    load = Session.load.__func__  # type: ignore[attr-defined]

    def counting(cls: type[Session], path: str, **kw: Any) -> Session:
        loaded.append(path)
        return load(cls, path, **kw)  # type: ignore[no-any-return]

    monkeypatch.setattr(Session, "load", classmethod(counting))
    store = SessionStore(str(senv.data_home))
    settings = HistorySettings(str(senv.data_home))
    found = latest_session(settings, store, str(project), "undo")
    assert found is not None and found.endswith(f"{latest}.smith")
    assert loaded == [found]


# -- wording -----------------------------------------------------------------------------


def test_one_ignored_entry_is_one_entry(senv: SmithEnv, smith_process: Smith) -> None:
    project = git_project(senv.root / "project", {"a.txt": "a\n"})
    r = smith_process("tools", "run", "ls", '{"path": "."}', cwd=project)
    assert r.code == 0, r.err
    assert r.out.endswith("[1 ignored entry hidden]\n")  # .git
    assert "entries" not in r.out
    (project / "build.log").write_text("x\n")
    (project / ".git" / "info" / "exclude").write_text("build.log\n")
    shown = smith_process("tools", "run", "ls", '{"path": "."}', cwd=project).out
    assert shown.endswith("[2 ignored entries hidden]\n")


def test_a_new_file_is_said_to_be_created(senv: SmithEnv, smith_process: Smith) -> None:
    project = git_project(senv.root / "project", {"a.txt": "a\n"})
    script = senv.root / "write.json"
    call = _write("hello.py", "print('hi')\n")
    responses = [{"tool_calls": [call], "stop": "tool_use"}, {"text": "done", "stop": "end"}]
    script.write_text(json.dumps({"responses": responses}))
    r = smith_process("eval", "--model", f"scripted:{script}", "make hello", cwd=project)
    assert r.code == 0, r.err
    assert "✓ write: created hello.py (12 bytes)" in r.err  # eval's account of the tool
    assert "no change" not in r.out + r.err
    stat = smith_process("diff", "--stat", cwd=project)
    assert "created   hello.py" in stat.out and "+1 -0 lines" in stat.out
    undone = smith_process("undo", cwd=project)
    assert "deleted   hello.py" in undone.out and not (project / "hello.py").exists()


# -- the README ----------------------------------------------------------------------------


def test_the_readme_names_every_command_and_what_the_tests_need() -> None:
    from smith.cli._commands import COMMANDS

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    table = readme[readme.index("| command |") :]
    for command in COMMANDS:
        assert f"| `{command.name}" in table or f", `{command.name}" in table, command.name
    setup = readme[readme.index("## Set-up") : readme.index("## Usage")]
    for needed in ("bubblewrap", "libseccomp", "tmux", "chromium", "git"):
        assert needed in setup, needed
    assert "minutes" in setup  # how long the suite takes


def test_a_session_of_one_entry_is_one_entry(
    senv: SmithEnv, smith_process: Smith, project: Path
) -> None:
    session = _turn(smith_process, senv, project, "change a", _write("a.txt", "a1\n"))
    shown = smith_process("sessions", "show", "--json", session, cwd=project)
    first = json.loads(shown.out)["entries"][0]["id"]
    forked = smith_process("sessions", "fork", session, "--at", first, cwd=project)
    assert forked.code == 0, forked.err
    listed = smith_process("sessions", "list", cwd=project).out
    assert "       1 entry    " in listed and " 1 entries" not in listed
    one = next(line.split()[0] for line in listed.splitlines() if " 1 entry " in line)
    assert "(1 entry, cwd " in smith_process("sessions", "show", one, cwd=project).out


def test_counts_read_in_the_right_number() -> None:
    from smith.frontends.tui import _farewell
    from smith.frontends.tui._pastes import CHIP, chip_for
    from smith.text import counted

    said = [counted(1, "line"), counted(2, "line"), counted(1, "entry"), counted(3, "entry")]
    assert said == ["1 line", "2 lines", "1 entry", "3 entries"]
    assert [counted(2, "key"), counted(2, "match"), counted(1_204, "file")] == [
        "2 keys", "2 matches", "1,204 files"]  # fmt: skip
    assert counted(0, "child", "children") == "0 children"
    assert "(1 entry)" in _farewell("s1", 1, None)  # not "1 entries"
    assert chip_for(3, "one long line") == "[pasted #3 1 line]"
    assert CHIP.fullmatch("[pasted #3 1 line]") and CHIP.fullmatch("[pasted #4 1,204 lines]")


def test_a_changes_prompt_is_named_as_typed_without_its_attachments(tmp_path: Path) -> None:
    from smith.session import Session
    from smith.vcs._model import prompt_text

    session = Session.create(str(tmp_path / "s.smith"), id="s")
    attached = '<attached path="notes.md" lines="1-2 of 2">\nhello\n</attached>'
    session.append("message", {"role": "user", "content": [
        {"type": "text", "text": "@notes.md what is this"},
        {"type": "text", "text": attached}]}, id="m")  # fmt: skip
    assert prompt_text(session, "m") == "@notes.md what is this"  # (undo, redo, history)
    session.close()


def test_history_and_diff_read_a_session_an_app_holds_and_undo_says_where_to_go(
    senv: SmithEnv, smith_process: Smith, project: Path
) -> None:
    from smith.session import Session

    sid = _turn(smith_process, senv, project, "change a", _write("a.txt", "a1\n"))
    (path,) = senv.data_home.glob(f"sessions/*/{sid}.smith")
    held = Session.open(str(path))  # as the app holds it, open for writing
    try:
        listed = smith_process("history", cwd=project)
        assert listed.code == 0 and "change a" in listed.out, listed.err
        named = smith_process("history", "--session", sid, cwd=project)
        assert named.code == 0 and "change a" in named.out, named.err
        shown = smith_process("diff", cwd=project)
        assert shown.code == 0 and "+a1" in shown.out, shown.err
        undone = smith_process("undo", cwd=project)
        assert undone.code == 1 and (project / "a.txt").read_text() == "a1\n"
        assert f"'undo' acts on session {sid}, which another smith has open" in undone.err
        assert "run /undo in the app holding it" in undone.err
    finally:
        held.close()
    assert smith_process("undo", cwd=project).code == 0  # closed: it goes ahead
    assert (project / "a.txt").read_text() == "a0\n"
