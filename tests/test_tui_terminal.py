"""The TUI in a real terminal (tmux): it takes the screen, answers through a tool, and
every way of ending it restores the terminal."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import SmithEnv, smith_executable


class Tmux:
    def __init__(self, root: Path, env: dict[str, str]) -> None:
        assert shutil.which("tmux"), "tmux is needed for terminal tests (.ci/run installs it)"
        # A server of the test's own: a name made from id(self) was reused by the next
        # test, whose new session could land in the previous server as it shut down.
        self.cmd = ["tmux", "-L", f"smith-test-{uuid.uuid4().hex[:12]}"]
        self.env = env
        self.root = root

    def __call__(self, *args: str) -> str:
        r = subprocess.run([*self.cmd, *args], capture_output=True, text=True, env=self.env,
                           timeout=30)  # fmt: skip
        return r.stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "s")

    def flag(self, name: str) -> str:
        return self("display-message", "-p", "-t", "s", f"#{{{name}}}").strip()

    def wait(self, predicate: Callable[[], bool], seconds: float = 30) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.1)  # polling a separate process's screen: there is no event
        return False

    def smith_pids(self) -> list[int]:
        pane = self.flag("pane_pid")
        out = subprocess.run(["pgrep", "-P", pane], capture_output=True, text=True).stdout
        return [int(p) for p in out.split()]


def terminal_env(senv: SmithEnv) -> dict[str, str]:
    """The test's environment with this checkout's smith first on PATH, in a real terminal."""
    return {**senv.env, "PATH": os.path.dirname(smith_executable()) + os.pathsep
            + os.environ["PATH"], "TERM": "xterm-256color"}  # fmt: skip


@contextlib.contextmanager
def terminal(project: Path, env: dict[str, str], size: tuple[int, int] = (110, 35)
             ) -> Iterator[Tmux]:  # fmt: skip
    """A tmux server of its own with one bash session "s" in `project`, ended after."""
    t = Tmux(project, env)
    t("new-session", "-d", "-s", "s", "-x", str(size[0]), "-y", str(size[1]), "-c",
      str(project), "bash --norc --noprofile")  # fmt: skip
    try:
        yield t
    finally:
        t("kill-server")


@pytest.fixture
def tmux(senv: SmithEnv) -> Iterator[Tmux]:
    project = senv.make_project()
    (project / "README.md").write_text("# a project\n")
    with terminal(project, terminal_env(senv)) as t:
        yield t


def _start(tmux: Tmux) -> None:
    tmux("send-keys", "-t", "s", "smith --model demo", "Enter")
    started = tmux.wait(lambda: tmux.flag("alternate_on") == "1" and "demo" in tmux.screen())
    assert started, f"the app did not open; the pane shows:\n{tmux.screen()}"


def _restored(tmux: Tmux) -> None:
    assert tmux.wait(lambda: not tmux.smith_pids(), 15), "smith did not exit"
    assert tmux.wait(lambda: tmux.flag("alternate_on") == "0", 5), "alternate screen left on"
    assert tmux.flag("cursor_flag") == "1", "cursor left hidden"
    assert tmux.flag("mouse_any_flag") in ("0", ""), "mouse reporting left on"
    out = tmux.root / "stty.txt"
    tmux("send-keys", "-t", "s",
         f"stty -a | tr ' ;' '\\n\\n' | grep -x -e -echo -e -icanon > {out}; echo done-$((40+2))",
         "Enter")  # fmt: skip
    assert tmux.wait(lambda: "done-42" in tmux.screen(), 10)
    assert out.read_text().strip() == "", f"terminal modes not restored: {out.read_text()}"


def test_a_request_is_answered_through_a_tool(tmux: Tmux) -> None:
    _start(tmux)
    tmux("send-keys", "-t", "s", "list the files", "Enter")

    def answered() -> bool:
        screen = tmux.screen()
        return "README.md" in screen and "✓ ls" in screen and "ready" in screen

    assert tmux.wait(answered), tmux.screen()
    assert "cost $0.0000" in tmux.screen()  # the demo spends nothing, before and after


@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP", "SIGINT", "ctrl+c", "ctrl+d"])
def test_every_way_of_ending_restores_the_terminal(tmux: Tmux, how: str) -> None:
    _start(tmux)
    if how.startswith("SIG"):
        for pid in tmux.smith_pids():
            os.kill(pid, getattr(signal, how))
    else:
        # Ctrl+C quits on a second press (the first asks for it); Ctrl+D at once.
        tmux("send-keys", "-t", "s", *{"ctrl+c": ["C-c", "C-c"], "ctrl+d": ["C-d"]}[how])
    _restored(tmux)


def test_replay_plays_a_recorded_session_in_the_app(tmux: Tmux) -> None:
    """`smith replay NAME` in a terminal opens the app and plays the session in it."""
    env = {**tmux.env, "SMITH_MODEL": "demo"}
    subprocess.run([smith_executable(), "eval", "--session", "recorded", "list files"],
                   cwd=tmux.root, env=env, capture_output=True, check=True, timeout=60)  # fmt: skip
    tmux("send-keys", "-t", "s", "smith replay recorded --instant", "Enter")
    assert tmux.wait(lambda: tmux.flag("alternate_on") == "1" and "finished" in tmux.screen())
    screen = tmux.screen()
    assert "replay of recorded" in screen and "list files" in screen and "README.md" in screen
    tmux("send-keys", "-t", "s", "C-c")
    _restored(tmux)


CRASH = r"""
import sys
from smith.frontends.tui._app import SmithApp
from smith.session import Session

def factory(session):
    hidden_local = "sk-local-must-not-show-0123456789"
    raise RuntimeError("a bug in the runtime's assembly")

session = Session.create(sys.argv[1], name="crash", cwd=".")
app = SmithApp(factory, session, debug=sys.argv[2] == "debug")
app.run()
sys.exit(app.return_code)  # as smith's own run() returns it
"""


@pytest.mark.parametrize("debug", [False, True])
def test_an_internal_error_in_the_app_shows_no_traceback_without_debug(
    tmux: Tmux, debug: bool
) -> None:
    script, err = tmux.root / "crash.py", tmux.root / "crash.err"
    script.write_text(CRASH)
    python = os.path.join(os.path.dirname(smith_executable()), "python")
    mode = "debug" if debug else "plain"
    command = f"{python} {script} {tmux.root / 's.smith'} {mode} 2> {err}; echo rc-$?-end"
    tmux("send-keys", "-t", "s", command, "Enter")
    assert tmux.wait(lambda: re.search(r"rc-\d+-end", tmux.screen()) is not None), tmux.screen()
    assert "rc-1-end" in tmux.screen()
    shown = err.read_text()
    assert "a bug in the runtime's assembly" in shown
    if debug:
        assert "Traceback" in shown
    else:
        assert "internal error" in shown and "--debug" in shown
        assert "Traceback" not in shown and "sk-local-must-not-show" not in shown


def test_a_bracketed_paste_and_ctrl_j_reach_the_request_whole(tmux: Tmux, senv: SmithEnv) -> None:
    """tmux pastes 200 lines as a bracketed paste (its line ends as CR, as terminals do):
    the editor shows one chip, Ctrl+J adds a line, and the scripted model's request has
    every line."""
    import json

    log = senv.root / "requests.jsonl"
    script = senv.root / "script.json"
    script.write_text(json.dumps({"responses": [{"text": "ok"}], "requests_log": str(log)}))
    pasted = "".join(f"line {i}: {'*' * (i % 5)}\n" for i in range(1, 201))
    (senv.root / "paste.txt").write_text(pasted)
    tmux("send-keys", "-t", "s", f"smith --model scripted:{script}", "Enter")
    assert tmux.wait(lambda: tmux.flag("alternate_on") == "1" and "Ask smith" in tmux.screen())
    tmux("send-keys", "-t", "s", "-l", "see: ")
    tmux("load-buffer", str(senv.root / "paste.txt"))
    tmux("paste-buffer", "-p", "-t", "s")  # bracketed, as the app asked
    assert tmux.wait(lambda: "see: [pasted #1 200 lines]" in tmux.screen()), tmux.screen()
    tmux("send-keys", "-t", "s", "C-j")
    tmux("send-keys", "-t", "s", "-l", "end")
    tmux("send-keys", "-t", "s", "Enter")
    assert tmux.wait(lambda: log.exists() and "ok" in tmux.screen()), tmux.screen()
    (request,) = [json.loads(line) for line in log.read_text().splitlines()]
    users = [m for m in request["messages"] if m["role"] == "user" and not m.get("context")]
    assert [p["text"] for m in users for p in m["content"]] == [f"see: {pasted}\nend"]
    tmux("send-keys", "-t", "s", "C-d")
    _restored(tmux)


def _requests_of(log: Path) -> list[dict[str, object]]:
    import json

    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_enter_steers_and_tab_follows_up_a_slow_turn_in_a_terminal(
    tmux: Tmux, senv: SmithEnv
) -> None:
    """While a slow scripted response streams, Enter's message is queued as a steer and
    reaches the next request of the same turn, after the tool batch; Tab's waits until the
    agent would stop."""
    import json

    log = senv.root / "requests.jsonl"
    script = senv.root / "script.json"
    slow = {"text": "looking", "tool_calls": [{"name": "ls", "arguments": {"path": "."}}]}
    responses = [{**slow, "delay_ms": 1500}, {"text": "steered"}, {"text": "followed"}]
    script.write_text(json.dumps({"responses": responses, "requests_log": str(log)}))
    tmux("send-keys", "-t", "s", f"smith --model scripted:{script}", "Enter")
    assert tmux.wait(lambda: tmux.flag("alternate_on") == "1" and "Ask smith" in tmux.screen())
    tmux("send-keys", "-t", "s", "-l", "start")
    tmux("send-keys", "-t", "s", "Enter")
    assert tmux.wait(lambda: "you start" in tmux.screen()), tmux.screen()  # recorded: busy
    tmux("send-keys", "-t", "s", "-l", "now this")
    tmux("send-keys", "-t", "s", "Enter")
    tmux("send-keys", "-t", "s", "-l", "later")
    tmux("send-keys", "-t", "s", "Tab")  # Alt+Enter arrives as Enter here: Tab queues
    assert tmux.wait(lambda: "queued (steer): now this" in tmux.screen()), tmux.screen()
    assert tmux.wait(lambda: "queued (follow-up): later" in tmux.screen()), tmux.screen()
    assert tmux.wait(lambda: "followed" in tmux.screen() and len(_requests_of(log)) == 3)
    requests = _requests_of(log)
    said = [
        [p["text"] for m in r["messages"] if m["role"] == "user" and not m.get("context")
         for p in m["content"]]
        for r in requests
    ]  # fmt: skip
    assert said == [["start"], ["start", "now this"], ["start", "now this", "later"]]
    tmux("send-keys", "-t", "s", "C-d")
    _restored(tmux)


def test_ctrl_g_edits_the_input_in_the_users_editor(tmux: Tmux, senv: SmithEnv) -> None:
    """Ctrl+G hands the terminal to $EDITOR on the input's text and takes back what was
    saved, which Enter then sends."""
    import json

    log = senv.root / "requests.jsonl"
    script = senv.root / "script.json"
    script.write_text(json.dumps({"responses": [{"text": "ok"}], "requests_log": str(log)}))
    editor = senv.root / "editor.sh"
    seen = senv.root / "seen.txt"
    editor.write_text(f"#!/bin/sh\ncat \"$1\" > '{seen}'\nprintf 'from the editor\\n' > \"$1\"\n")
    editor.chmod(0o755)
    tmux("send-keys", "-t", "s", f"EDITOR={editor} smith --model scripted:{script}", "Enter")
    assert tmux.wait(lambda: tmux.flag("alternate_on") == "1" and "Ask smith" in tmux.screen())
    tmux("send-keys", "-t", "s", "-l", "typed first")
    assert tmux.wait(lambda: "typed first" in tmux.screen()), tmux.screen()  # all typed
    tmux("send-keys", "-t", "s", "C-g")
    assert tmux.wait(lambda: "from the editor" in tmux.screen()), tmux.screen()
    assert seen.read_text() == "typed first"  # the editor got the input's text
    tmux("send-keys", "-t", "s", "Enter")
    assert tmux.wait(lambda: log.exists() and "ok" in tmux.screen()), tmux.screen()
    (request,) = _requests_of(log)
    users = [m for m in request["messages"] if m["role"] == "user" and not m.get("context")]  # type: ignore[attr-defined]
    assert [p["text"] for m in users for p in m["content"]] == ["from the editor"]  # type: ignore[index]
    tmux("send-keys", "-t", "s", "C-d")
    _restored(tmux)


def test_bang_and_double_bang_run_the_users_commands_in_a_terminal(
    tmux: Tmux, senv: SmithEnv
) -> None:
    """`!cmd` and `!!cmd` run without asking the model, their output on screen; the next
    message carries the first's output as smith's note, never the second's."""
    import json

    log = senv.root / "requests.jsonl"
    script = senv.root / "script.json"
    script.write_text(json.dumps({"responses": [{"text": "ok"}], "requests_log": str(log)}))
    tmux("send-keys", "-t", "s", f"smith --model scripted:{script}", "Enter")
    assert tmux.wait(lambda: tmux.flag("alternate_on") == "1" and "Ask smith" in tmux.screen())
    tmux("send-keys", "-t", "s", "-l", "!echo told-$((6*7))")
    tmux("send-keys", "-t", "s", "Enter")
    # Its output streams while it runs: the next command waits for its end.
    assert tmux.wait(lambda: "told-42" in tmux.screen() and "exit 0" in tmux.screen())
    tmux("send-keys", "-t", "s", "-l", "!!echo kept-$((5*5))")
    tmux("send-keys", "-t", "s", "Enter")
    assert tmux.wait(lambda: "kept-25" in tmux.screen()), tmux.screen()
    assert not log.exists()  # the model was asked nothing
    tmux("send-keys", "-t", "s", "-l", "what did I run?")
    tmux("send-keys", "-t", "s", "Enter")
    assert tmux.wait(lambda: log.exists() and "ok" in tmux.screen()), tmux.screen()
    (request,) = _requests_of(log)
    notes = [m for m in request["messages"] if m.get("context") == "shell"]  # type: ignore[attr-defined]
    assert len(notes) == 1 and "told-42" in json.dumps(notes)
    assert "kept-25" not in json.dumps(request)
    tmux("send-keys", "-t", "s", "C-d")
    _restored(tmux)


def test_an_approval_is_the_apps_overlay_and_its_keys_answer(tmux: Tmux, senv: SmithEnv) -> None:
    """`--approval untrusted`: a write asks first in an overlay that owns the keys;
    Enter approves it once, "Deny" takes a reason that reaches the model (or none), and
    "always" for a command keeps its first words in the user's configuration. (Escape,
    which interrupts the turn, is test_tui_cockpit_approval's.)"""
    import json

    log = senv.root / "requests.jsonl"
    script = senv.root / "script.json"
    calls = [{"name": "write", "arguments": {"path": f"{n}.txt", "content": "x"}}
             for n in ("first", "second", "third")]  # fmt: skip
    calls.append({"name": "bash", "arguments": {"command": "git status --short"}})
    calls += [{"name": "bash", "arguments": {"command": c}} for c in ("date -u", "date -R")]
    calls += [{"name": "write", "arguments": {"path": f"{n}.txt", "content": "x"}}
              for n in ("fourth", "fifth")]  # fmt: skip
    responses = []
    for n, c in enumerate(calls):
        responses += [{"tool_calls": [c], "stop": "tool_use"}, {"text": f"done {n}"}]
    script.write_text(json.dumps({"responses": responses, "requests_log": str(log)}))
    tmux("send-keys", "-t", "s", f"smith --approval untrusted --model scripted:{script}", "Enter")
    assert tmux.wait(lambda: tmux.flag("alternate_on") == "1" and "Ask smith" in tmux.screen())

    def prompt(text: str, asked: str) -> None:
        tmux("send-keys", "-t", "s", "-l", text)
        tmux("send-keys", "-t", "s", "Enter")
        assert tmux.wait(lambda: asked in tmux.screen()), tmux.screen()

    prompt("write one", "smith wants to write the file first.txt")
    assert "Approve every write call this session" in tmux.screen()
    tmux("send-keys", "-t", "s", "Enter")  # the first choice: approve once
    assert tmux.wait(lambda: "done 0" in tmux.screen()), tmux.screen()
    assert (tmux.root / "first.txt").exists()

    prompt("write two", "smith wants to write the file second.txt")
    tmux("send-keys", "-t", "s", "Down", "Down", "Enter")  # Deny: a line for why
    assert tmux.wait(lambda: "Deny, and say why (optional): why?" in tmux.screen()), tmux.screen()
    tmux("send-keys", "-t", "s", "-l", "edit it instead")
    tmux("send-keys", "-t", "s", "Enter")
    assert tmux.wait(lambda: "done 1" in tmux.screen()), tmux.screen()
    assert not (tmux.root / "second.txt").exists()
    denied = "the user denied this write of second.txt: edit it instead"
    assert denied in json.dumps(_requests_of(log)[-1])

    prompt("write three", "smith wants to write the file third.txt")
    tmux("send-keys", "-t", "s", "n")  # deny's letter; Enter gives no reason
    assert tmux.wait(lambda: "why?" in tmux.screen()), tmux.screen()
    tmux("send-keys", "-t", "s", "Enter")
    assert tmux.wait(lambda: "done 2" in tmux.screen()), tmux.screen()
    assert not (tmux.root / "third.txt").exists()

    prompt("status", "Approve commands starting `git status` always")
    tmux("send-keys", "-t", "s", "Down", "Down", "Down", "Enter")  # the fourth: always
    assert tmux.wait(lambda: "done 3" in tmux.screen()), tmux.screen()
    assert 'approval.allow "git status"' in senv.user_config.read_text()

    prompt("date", "Approve commands starting `date` this session")
    tmux("send-keys", "-t", "s", "Down", "Down", "Enter")  # the third: its first words
    assert tmux.wait(lambda: "done 4" in tmux.screen()), tmux.screen()
    tmux("send-keys", "-t", "s", "-l", "date again")
    tmux("send-keys", "-t", "s", "Enter")  # `date -R`: approved for the session, not asked
    assert tmux.wait(lambda: "done 5" in tmux.screen()), tmux.screen()

    prompt("write four", "smith wants to write the file fourth.txt")
    tmux("send-keys", "-t", "s", "Down", "Enter")  # the second: every write this session
    assert tmux.wait(lambda: "done 6" in tmux.screen()), tmux.screen()
    tmux("send-keys", "-t", "s", "-l", "write five")
    tmux("send-keys", "-t", "s", "Enter")
    assert tmux.wait(lambda: "done 7" in tmux.screen()), tmux.screen()
    assert (tmux.root / "fourth.txt").exists() and (tmux.root / "fifth.txt").exists()
    assert len(_requests_of(log)) == 16  # eight prompts, each a call and an answer
    tmux("send-keys", "-t", "s", "C-d")
    _restored(tmux)


def test_at_completes_a_path_and_the_file_goes_with_the_message(tmux: Tmux, senv: SmithEnv) -> None:
    """`@` and part of a name show the list; Tab takes the best match into the input and
    Enter sends it: the scripted model's request carries the file's content."""
    import json

    log = senv.root / "requests.jsonl"
    script = senv.root / "script.json"
    script.write_text(json.dumps({"responses": [{"text": "ok"}], "requests_log": str(log)}))
    (tmux.root / "src").mkdir()
    (tmux.root / "src" / "widget_factory.py").write_text("MARKER = 'the factory makes widgets'\n")
    tmux("send-keys", "-t", "s", f"smith --model scripted:{script}", "Enter")
    assert tmux.wait(lambda: tmux.flag("alternate_on") == "1" and "Ask smith" in tmux.screen())
    tmux("send-keys", "-t", "s", "-l", "explain @wfac")
    assert tmux.wait(lambda: "▸ src/widget_factory.py" in tmux.screen()), tmux.screen()
    tmux("send-keys", "-t", "s", "Tab")
    assert tmux.wait(lambda: "explain @src/widget_factory.py" in tmux.screen()), tmux.screen()
    assert "▸ src/widget_factory.py" not in tmux.screen()  # accepted: the list is gone
    tmux("send-keys", "-t", "s", "Enter")
    assert tmux.wait(lambda: log.exists() and "ok" in tmux.screen()), tmux.screen()
    (request,) = _requests_of(log)
    users = [m for m in request["messages"] if m["role"] == "user" and not m.get("context")]  # type: ignore[attr-defined]
    said = [p["text"] for m in users for p in m["content"]]  # type: ignore[index]
    assert said[0] == "explain @src/widget_factory.py"
    assert said[1].startswith('<attached path="src/widget_factory.py"')
    assert "the factory makes widgets" in said[1]
    tmux("send-keys", "-t", "s", "C-d")
    _restored(tmux)


def test_the_app_says_when_the_sandbox_is_off(tmux: Tmux) -> None:
    tmux("send-keys", "-t", "s", "smith --sandbox-mode off --model demo", "Enter")
    assert tmux.wait(lambda: "the shell sandbox is off" in tmux.screen()), tmux.screen()
    tmux("send-keys", "-t", "s", "C-d")
    _restored(tmux)
