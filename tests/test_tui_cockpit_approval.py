"""The approval overlay in a real terminal (tmux), as a user meets it under `--approval
untrusted` (issue 27, item 8): the change (a diff in colour) or the whole command is on
screen before anything is answered, at 80x24 and 120x40 with the choices in view; single
keys answer (`y`/`1` once, `a`/`2` for the session, `p` a command's prefix for the
session, `A` always, `n` deny with a reason); Escape denies the call and ends the turn,
the model told the user interrupted and asked nothing more."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SmithEnv
from tests.test_tui_terminal import Tmux, terminal, terminal_env

APP = "def main():\n    return 1\n"


class Run:
    """The app under one scripted model in tmux, and what the model was sent."""

    def __init__(self, senv: SmithEnv, tmux: Tmux, project: Path, log: Path) -> None:
        self.senv, self.tmux, self.project, self.log = senv, tmux, project, log

    def screen(self) -> str:
        return self.tmux.screen()

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "s", *keys)

    def wait_for(self, text: str, seconds: float = 30) -> str:
        assert self.tmux.wait(lambda: text in self.screen(), seconds), (
            f"{text!r} never appeared; the screen:\n{self.screen()}"
        )
        return self.screen()

    def asked(self) -> str:
        """The approval overlay, once it is up (its hint and first choice show)."""
        self.wait_for("Esc interrupts")
        return self.wait_for("1 y  Approve once")

    def requests(self) -> int:
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0

    def records(self, kind: str) -> list[dict[str, Any]]:
        from smith.session import Session, SessionStore

        found: list[dict[str, Any]] = []
        for path in SessionStore(str(self.senv.data_home)).paths():
            session = Session.load(path)  # read-only: the app holds it open
            try:
                found += [e.content for e in session.entries() if e.kind == kind]
            finally:
                session.close()
        return found

    def results(self) -> list[str]:
        return [m["content"][0]["text"] for m in self.records("message")
                if m.get("role") == "tool_result"]  # fmt: skip


@pytest.fixture
def app(senv: SmithEnv, request: pytest.FixtureRequest) -> Iterator[Any]:
    """`app(calls, size)`: the app at `size` whose model makes `calls`, one a response,
    then says "all done"; the prompt "go" is sent."""
    started: list[Any] = []

    def start(calls: list[dict[str, Any]], size: tuple[int, int] = (120, 40)) -> Run:
        project = senv.make_project()
        (project / "src").mkdir(exist_ok=True)
        (project / "src" / "app.py").write_text(APP)
        log = senv.root / "requests.jsonl"
        responses = [{"tool_calls": [c], "stop": "tool_use"} for c in calls]
        script = senv.root / "script.json"
        script.write_text(json.dumps({"responses": [*responses, {"text": "all done"}],
                                      "requests_log": str(log)}))  # fmt: skip
        context = terminal(project, terminal_env(senv), size)
        tmux = context.__enter__()
        started.append(context)
        run = Run(senv, tmux, project, log)
        run.keys(f"smith --approval untrusted --model scripted:{script}", "Enter")
        run.wait_for("ready")
        run.keys("go", "Enter")
        return run

    yield start
    for context in started:
        context.__exit__(None, None, None)


def _edit(old: str = "return 1", new: str = "return 2") -> dict[str, Any]:
    return {"name": "edit", "arguments": {"path": "src/app.py", "old_text": old,
                                          "new_text": new}}  # fmt: skip


def _bash(command: str) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"command": command}}


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
@pytest.mark.parametrize("key", ["y", "1"])
def test_an_edit_shows_its_diff_and_one_key_approves_it_once(
    app: Any, size: tuple[int, int], key: str
) -> None:
    run = app([_edit(), _edit("return 2", "return 3")], size)
    screen = run.asked()
    # The change itself, before any answer, with every choice and its keys in view.
    assert "-    return 1" in screen and "+    return 2" in screen, screen
    assert "1 y  Approve once" in screen and "2 a  Approve every edit call" in screen, screen
    assert "3 n  Deny, and say why" in screen, screen
    if size == (120, 40):  # below the overlay, the working line: the user, not the model
        assert "waiting for your answer" in screen, screen
    assert (run.project / "src" / "app.py").read_text() == APP
    run.keys(key)
    screen = run.wait_for("+    return 3")  # once: the second edit asks again
    assert "return 2" in (run.project / "src" / "app.py").read_text()
    run.keys(key)
    run.wait_for("all done")
    assert "return 3" in (run.project / "src" / "app.py").read_text()
    assert [q["choice"] for q in run.records("question")] == ["once", "once"]


@pytest.mark.parametrize("key", ["a", "2"])
def test_a_session_approval_lets_the_next_calls_of_that_tool_run_unasked(
    app: Any, key: str
) -> None:
    run = app([_edit(), _edit("return 2", "return 3"), _edit("return 3", "return 4")])
    run.asked()
    run.keys(key)
    run.wait_for("all done")
    assert "return 4" in (run.project / "src" / "app.py").read_text()
    assert [q["choice"] for q in run.records("question")] == ["session"]


def test_a_commands_prefix_approved_for_the_session_covers_it_and_no_other(app: Any) -> None:
    run = app([_bash("ls -la src"), _bash("ls src"), _bash("echo other")], (80, 24))
    screen = run.asked()
    assert "$ ls -la src" in screen, screen  # the whole command
    assert "3 p  Approve commands starting `ls` this session" in screen, screen
    assert "5 n  Deny" in screen, screen
    run.keys("p")
    screen = run.wait_for("$ echo other")  # `ls src` ran unasked; `echo` asks
    run.keys("y")
    run.wait_for("all done")
    assert [q["choice"] for q in run.records("question")] == ["prefix", "once"]


def test_always_keeps_the_prefix_in_the_users_configuration(app: Any, senv: SmithEnv) -> None:
    config = senv.write_user_config("// mine\n")
    run = app([_bash("ls -la")])
    screen = run.asked()
    assert "4 A  Approve commands starting `ls` always" in screen, screen
    run.keys("A")
    run.wait_for("all done")
    assert 'approval.allow "ls"' in config.read_text()
    assert [q["choice"] for q in run.records("question")] == ["always"]


def test_deny_with_a_reason_reaches_the_model(app: Any) -> None:
    run = app([_edit()])
    run.asked()
    run.keys("n")
    run.wait_for("why?")
    run.keys("keep it at one", "Enter")
    run.wait_for("all done")
    assert (run.project / "src" / "app.py").read_text() == APP
    (result,) = run.results()
    assert "the user denied this edit of src/app.py: keep it at one. Do not retry it" in result
    assert run.records("question")[0]["note"] == "keep it at one"
    assert run.requests() == 2  # the model was told, and answered


def test_escape_denies_the_call_and_ends_the_turn_with_the_model_told(app: Any) -> None:
    run = app([_edit(), _edit("return 1", "return 5")], (80, 24))
    run.asked()
    assert run.requests() == 1
    run.keys("Escape")
    assert run.tmux.wait(lambda: "Esc interrupts" not in run.screen(), 15), run.screen()
    assert run.tmux.wait(lambda: "ready" in run.screen(), 15), run.screen()
    assert (run.project / "src" / "app.py").read_text() == APP
    (asked,) = run.records("question")
    assert asked["interrupt"] is True and asked["refused"] == "the user interrupted"
    (result,) = run.results()
    assert "the edit call did not run: the user interrupted" in result
    assert run.requests() == 1  # the turn ended: nothing more was asked of the model
    assert "all done" not in run.screen()


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_a_long_change_scrolls_with_the_choices_in_view(app: Any, size: tuple[int, int]) -> None:
    content = "".join(f"line_{n:03d} = {n}\n" for n in range(120))
    run = app([{"name": "write", "arguments": {"path": "big.py", "content": content}}], size)
    screen = run.asked()
    assert "+line_000 = 0" in screen and "+line_119" not in screen, screen
    assert "1 y  Approve once" in screen and "n  Deny, and say why" in screen, screen
    for _ in range(30):
        if "+line_119 = 119" in run.screen():
            break
        run.keys("PageDown")
        run.tmux.wait(lambda: "+line_000" not in run.screen(), 2)
    screen = run.screen()
    assert "+line_119 = 119" in screen and "1 y  Approve once" in screen, screen
    run.keys("y")
    run.wait_for("all done")
    assert (run.project / "big.py").read_text() == content
